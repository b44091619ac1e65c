"""Connectors: each wraps one real system and contributes tools and prompt context.

Nothing here knows about the agent loop or notebooks. Drivers (psycopg, pymysql, duckdb,
pymongo, httpx) are imported only when a connector of that kind is created.

The names below are the face a connector plugin works with (``examples/relay_nb_csvdir``):

- the contract — :class:`Connector` (and :class:`ConnectorDocument`, what it publishes for
  the context layer), the :class:`~relay_nb.tools.Tool` it contributes, the
  :class:`QueryResult` its tools answer with, and the errors it raises;
- its registration — :class:`ConnectorType` (a :class:`LazyFactory` imports the connector
  only when one is built), :func:`register_connector_type` from a cell, or an entry point in
  :data:`ENTRY_POINT_GROUP`;
- for a connector that reads rows: :class:`ResultBudget` and the byte limits it enforces,
  :func:`frame_from_records` / :func:`build_frame` (bounded, redacted DataFrames) and
  :func:`preview_for_model`;
- for one that speaks SQL: :class:`GuardedSQLConnector` (the guarded ``query_<id>`` and
  ``describe_<id>`` tools over a catalog) with :class:`Estimate` and :class:`Preflight`.

The built-in connectors, to compose (the csvdir plugin's tables are a
``DataFrameConnector``), are in their kind's own package (:mod:`relay_nb.connectors.sql`,
``.dataframe``, ``.spark``, ``.mongo``, ``.http``, ``.websearch``, ``.mcp``) with its
``ConnectorType`` and its options models, and at the top level (``relay_nb.SQLConnector``);
:mod:`relay_nb.connectors.plugins` is the plugin registry. Every name loads on first use, so
importing this package costs nothing.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from relay_nb._lazy import lazy_exports

__all__ = [
    "ConfigurationError",
    "Connector",
    "ConnectorDocument",
    "ConnectorError",
    "ConnectorPluginWarning",
    "ConnectorType",
    "ConnectorTypeInfo",
    "DEFAULT_MAX_RESULT_BYTES",
    "DEFAULT_MAX_VALUE_BYTES",
    "ENTRY_POINT_GROUP",
    "Estimate",
    "GuardedSQLConnector",
    "LazyFactory",
    "Preflight",
    "QueryExecutionError",
    "QueryResult",
    "QueryTimeoutError",
    "ResultBudget",
    "Tool",
    "ToolResult",
    "UnsafeQueryError",
    "build_frame",
    "check_byte_limits",
    "check_connector_id",
    "clip_value",
    "connector_types",
    "frame_from_records",
    "preview_for_model",
    "register_connector_type",
    "unregister_connector_type",
]

_EXPORTS: dict[str, str] = {
    # the contract
    "Connector": "relay_nb.connectors.base",
    "ConnectorDocument": "relay_nb.connectors.base",
    "check_connector_id": "relay_nb.connectors.base",
    "QueryResult": "relay_nb.connectors.results",
    "Tool": "relay_nb.tools",
    "ToolResult": "relay_nb.tools",
    "ConfigurationError": "relay_nb.errors",
    "ConnectorError": "relay_nb.errors",
    "QueryExecutionError": "relay_nb.errors",
    "QueryTimeoutError": "relay_nb.errors",
    "UnsafeQueryError": "relay_nb.errors",
    # registration
    "ConnectorType": "relay_nb.connectors.types",
    "LazyFactory": "relay_nb.connectors.types",
    "ENTRY_POINT_GROUP": "relay_nb.connectors.plugins",
    "ConnectorPluginWarning": "relay_nb.connectors.plugins",
    "ConnectorTypeInfo": "relay_nb.connectors.plugins",
    "connector_types": "relay_nb.connectors.plugins",
    "register_connector_type": "relay_nb.connectors.plugins",
    "unregister_connector_type": "relay_nb.connectors.plugins",
    # reading rows, bounded
    "DEFAULT_MAX_RESULT_BYTES": "relay_nb.connectors.bounds",
    "DEFAULT_MAX_VALUE_BYTES": "relay_nb.connectors.bounds",
    "ResultBudget": "relay_nb.connectors.bounds",
    "check_byte_limits": "relay_nb.connectors.bounds",
    "clip_value": "relay_nb.connectors.bounds",
    "build_frame": "relay_nb.connectors.results",
    "frame_from_records": "relay_nb.connectors.results",
    "preview_for_model": "relay_nb.connectors.results",
    # speaking SQL
    "GuardedSQLConnector": "relay_nb.connectors.guarded",
    "Estimate": "relay_nb.connectors.preflight",
    "Preflight": "relay_nb.connectors.preflight",
}


__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)


if TYPE_CHECKING:  # let type checkers and IDEs see the real names
    from relay_nb.connectors.base import Connector, ConnectorDocument, check_connector_id
    from relay_nb.connectors.bounds import (
        DEFAULT_MAX_RESULT_BYTES,
        DEFAULT_MAX_VALUE_BYTES,
        ResultBudget,
        check_byte_limits,
        clip_value,
    )
    from relay_nb.connectors.guarded import GuardedSQLConnector
    from relay_nb.connectors.plugins import (
        ENTRY_POINT_GROUP,
        ConnectorPluginWarning,
        ConnectorTypeInfo,
        connector_types,
        register_connector_type,
        unregister_connector_type,
    )
    from relay_nb.connectors.preflight import Estimate, Preflight
    from relay_nb.connectors.results import (
        QueryResult,
        build_frame,
        frame_from_records,
        preview_for_model,
    )
    from relay_nb.connectors.types import ConnectorType, LazyFactory
    from relay_nb.errors import (
        ConfigurationError,
        ConnectorError,
        QueryExecutionError,
        QueryTimeoutError,
        UnsafeQueryError,
    )
    from relay_nb.tools import Tool, ToolResult
