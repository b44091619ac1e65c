"""DataFrame connector: pandas DataFrames in the notebook, queried as SQL tables via DuckDB.

``DataFrameConnector("sales", df)`` or ``DataFrameConnector("shop", {"orders": o, ...})``;
see :mod:`relay_nb.connectors.dataframe.connector`. DuckDB is imported only when a connector
is created.
"""

from __future__ import annotations

from relay_nb.connectors.dataframe.connector import DUCKDB_CONFIG, DataFrameConnector
from relay_nb.connectors.dataframe.frames import FrameSource

__all__ = ["DUCKDB_CONFIG", "DataFrameConnector", "FrameSource"]
