"""The SQL connector: any SQLAlchemy database, guarded, read-only, results as DataFrames.

:class:`SQLConnector` (:mod:`.connector`; SQLAlchemy and the drivers load with it) and the
kind's record (:mod:`.kind`: :data:`SQL_TYPE`, the options models, ``relay.connect``'s typed
keywords). Both load on first use, so importing this package costs nothing.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from relay_nb._lazy import lazy_exports

__all__ = [
    "SQLConnector",
    "SQLKeywords",
    "SQLOptions",
    "SQLPythonOptions",
    "SQL_SCHEMES",
    "SQL_TYPE",
    "is_engine",
]

_EXPORTS = {
    "SQLConnector": "relay_nb.connectors.sql.connector",
    "SQLKeywords": "relay_nb.connectors.sql.kind",
    "SQLOptions": "relay_nb.connectors.sql.kind",
    "SQLPythonOptions": "relay_nb.connectors.sql.kind",
    "SQL_SCHEMES": "relay_nb.connectors.sql.kind",
    "SQL_TYPE": "relay_nb.connectors.sql.kind",
    "is_engine": "relay_nb.connectors.sql.kind",
}

__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)


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
