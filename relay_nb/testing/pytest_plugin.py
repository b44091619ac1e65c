"""pytest plugin: no test may reach a real model provider unless it opts in.

Loaded through ``-p relay_nb.testing.pytest_plugin`` (see pyproject). It sets the
model-request scope to ``"none"`` for the whole session; a test that talks to a local stub
opts in with ``relay_nb.runtime.allow_model_requests("loopback")``.
"""

from __future__ import annotations

import os
import tempfile

import pytest

from relay_nb.runtime.switch import set_model_request_scope


def pytest_configure(config: pytest.Config) -> None:
    # the environment variable reaches subprocesses too: notebook kernels, CLI runs
    os.environ["RELAY_MODEL_REQUESTS"] = "none"
    set_model_request_scope("none")
    # a session's default usage ledger must never land in the developer's home directory
    os.environ["RELAY_DATA_DIR"] = tempfile.mkdtemp(prefix="relay_nb_data_")


@pytest.fixture
def loopback_model_requests():
    """Allow model requests to 127.0.0.1 / explicit stub executables for one test."""
    from relay_nb.runtime.switch import allow_model_requests

    with allow_model_requests("loopback"):
        yield
