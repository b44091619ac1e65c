"""The SQL connector: any SQLAlchemy database, guarded, read-only, results as DataFrames.

:class:`SQLConnector` (:mod:`.connector`; SQLAlchemy and the drivers load with it) and the
kind's record (:mod:`.kind`: :data:`SQL_TYPE`, the options models, ``relay.connect``'s typed
keywords). Both load on first use, so importing this package costs nothing.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

__all__ = [
    "SQLConnector",
    "SQLKeywords",
    "SQLOptions",
    "SQLPythonOptions",
    "SQL_SCHEMES",
    "SQL_TYPE",
    "is_engine",
]


def __getattr__(name: str) -> Any:
    if name not in __all__:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    module = "connector" if name == "SQLConnector" else "kind"
    return getattr(importlib.import_module(f"{__name__}.{module}"), name)


if TYPE_CHECKING:
    from relay_nb.connectors.sql.connector import SQLConnector
    from relay_nb.connectors.sql.kind import (
        SQL_SCHEMES,
        SQL_TYPE,
        SQLKeywords,
        SQLOptions,
        SQLPythonOptions,
        is_engine,
    )
