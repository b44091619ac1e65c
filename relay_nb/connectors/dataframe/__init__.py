"""DataFrame connector: pandas DataFrames in the notebook, queried as SQL tables via DuckDB.

``DataFrameConnector("sales", df)`` or ``DataFrameConnector("shop", {"orders": o, ...})``;
see :mod:`relay_nb.connectors.dataframe.connector`. DuckDB is imported only when a connector
is created; the connector's module (and the SQL connector it builds on) on first access, so
that the kind's record (:mod:`.kind`: :data:`DATAFRAME_TYPE`, its options) stays cheap to
list.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from relay_nb._lazy import lazy_exports

if TYPE_CHECKING:
    from relay_nb.connectors.dataframe.connector import DUCKDB_CONFIG, DataFrameConnector
    from relay_nb.connectors.dataframe.frames import FrameSource
    from relay_nb.connectors.dataframe.kind import (
        DATAFRAME_TYPE,
        DataFrameKeywords,
        DataFrameOptions,
        is_frame,
    )

__all__ = [
    "DATAFRAME_TYPE",
    "DUCKDB_CONFIG",
    "DataFrameConnector",
    "DataFrameKeywords",
    "DataFrameOptions",
    "FrameSource",
    "is_frame",
]

_EXPORTS = {
    "DUCKDB_CONFIG": "relay_nb.connectors.dataframe.connector",
    "DataFrameConnector": "relay_nb.connectors.dataframe.connector",
    "FrameSource": "relay_nb.connectors.dataframe.frames",
    "DATAFRAME_TYPE": "relay_nb.connectors.dataframe.kind",
    "DataFrameKeywords": "relay_nb.connectors.dataframe.kind",
    "DataFrameOptions": "relay_nb.connectors.dataframe.kind",
    "is_frame": "relay_nb.connectors.dataframe.kind",
}

__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
