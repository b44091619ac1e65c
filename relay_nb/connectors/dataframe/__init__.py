"""DataFrame connector: pandas DataFrames in the notebook, queried as SQL tables via DuckDB.

``DataFrameConnector("sales", df)`` or ``DataFrameConnector("shop", {"orders": o, ...})``;
see :mod:`relay_nb.connectors.dataframe.connector`. DuckDB is imported only when a connector
is created; the connector's module (and the SQL connector it builds on) on first access, so
that the kind's record (:mod:`.kind`) stays cheap to list.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from relay_nb.connectors.dataframe.connector import DUCKDB_CONFIG, DataFrameConnector
    from relay_nb.connectors.dataframe.frames import FrameSource

__all__ = ["DUCKDB_CONFIG", "DataFrameConnector", "FrameSource"]


def __getattr__(name: str) -> Any:
    if name in ("DUCKDB_CONFIG", "DataFrameConnector"):
        from relay_nb.connectors.dataframe import connector

        return getattr(connector, name)
    if name == "FrameSource":
        from relay_nb.connectors.dataframe.frames import FrameSource

        return FrameSource
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
