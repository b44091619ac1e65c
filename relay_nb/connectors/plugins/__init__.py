"""Connector plugins: connector types nobody here wrote, used like the built-in ones.

A :class:`ConnectorType` names a kind of connector (its ``type`` in ``relay.config.json``),
says how to build one (``factory(connector_id, **options)``), what its options are (an
optional pydantic ``config_model``) and which URL schemes ``relay.connect(id, URL)`` hands
to it. Types come from two places:

- **installed packages**, through the ``relay_nb.connectors`` entry point group (the entry
  point's name is the type's name; its value a ``ConnectorType`` or a zero-argument function
  returning one). They are read lazily — only when a name or scheme that is not built-in is
  looked up, or the types are listed — and then kept for the process, so ``import
  relay_nb`` reads no package metadata and a package installed later needs a kernel
  restart. A broken plugin (it fails to import, gives the wrong object, or claims a built-in
  name) is skipped with a :class:`ConnectorPluginWarning` naming its entry point and
  distribution; the built-in connectors never depend on it.
- **notebook cells**, through :func:`register_connector_type`. A re-run cell replaces the
  type it registered before; overriding an installed plugin's type takes ``replace=True``.

No plugin can take a built-in type name (``sql``, ``postgres``, ``http``…), a web-search
provider's name (``tavily``…), a built-in URL scheme (``postgresql``, ``mongodb``,
``https``…) or a scheme SQLAlchemy reads as a database (``snowflake``…): what the built-ins
mean never depends on what else is installed.

The built-in kinds are the same record, declared beside their connector classes (each
connector package's ``kind.py``) and listed in :mod:`.builtins`.

Modules: :mod:`.builtins` (the built-in types, the reserved names and schemes),
:mod:`.connector_type` (the type, its option checks), :mod:`.discovery` (entry points),
:mod:`.registry` (lookups).
"""

from __future__ import annotations

from relay_nb.connectors.plugins.builtins import (
    BUILTIN_SCHEMES,
    BUILTIN_TYPE_NAMES,
    BUILTIN_TYPES,
    RESERVED_TYPE_NAMES,
    SQL_TYPE,
    WEB_SEARCH_PROVIDERS,
    builtin_type,
    is_builtin_scheme,
    is_sql_dialect_scheme,
)
from relay_nb.connectors.plugins.connector_type import (
    COMMON_OPTIONS,
    TYPE_NAME,
    ConnectorType,
    LazyFactory,
    describe_error,
    keyword_parameters,
)
from relay_nb.connectors.plugins.discovery import ENTRY_POINT_GROUP, ConnectorPluginWarning
from relay_nb.connectors.plugins.registry import (
    ConnectorTypeInfo,
    config_type,
    connector_type_for_scheme,
    connector_types,
    find_connector_type,
    register_connector_type,
    unknown_type_message,
    unregister_connector_type,
)

__all__ = [
    "BUILTIN_SCHEMES",
    "BUILTIN_TYPES",
    "BUILTIN_TYPE_NAMES",
    "COMMON_OPTIONS",
    "ENTRY_POINT_GROUP",
    "RESERVED_TYPE_NAMES",
    "SQL_TYPE",
    "TYPE_NAME",
    "WEB_SEARCH_PROVIDERS",
    "ConnectorPluginWarning",
    "ConnectorType",
    "ConnectorTypeInfo",
    "LazyFactory",
    "builtin_type",
    "config_type",
    "connector_type_for_scheme",
    "connector_types",
    "describe_error",
    "find_connector_type",
    "is_builtin_scheme",
    "is_sql_dialect_scheme",
    "keyword_parameters",
    "register_connector_type",
    "unknown_type_message",
    "unregister_connector_type",
]
