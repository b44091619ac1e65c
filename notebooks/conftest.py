"""Notebooks that need a database server run only when ``scripts/services`` started it.

Under ``CI=true`` a missing server fails the run (as the connector suites do), so a notebook
is never silently left out of CI.
"""

from __future__ import annotations

import os

import pytest

NEEDS = {"07_postgresql.ipynb": "RELAY_TEST_PG_URL"}


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        variable = NEEDS.get(item.path.name)
        if variable is None or os.environ.get(variable):
            continue
        message = f"{variable} is not set: run scripts/services start and source its env file"
        if os.environ.get("CI") == "true":
            raise pytest.UsageError(f"{item.path.name} needs a database server under CI: {message}")
        item.add_marker(pytest.mark.skip(reason=message))
