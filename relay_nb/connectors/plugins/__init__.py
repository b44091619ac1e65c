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

The record itself is :mod:`relay_nb.connectors.types`; the built-in kinds are the same
record, declared beside their connector classes (each connector package's ``kind.py``) and
listed in :mod:`relay_nb.connectors.kinds`, re-exported here as what no plugin may take.

Modules: :mod:`.discovery` (entry points, and the check every type entering passes),
:mod:`.registry` (registering from cells, lookups, the listing).
"""

from __future__ import annotations

from relay_nb.connectors.kinds import (
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
from relay_nb.connectors.plugins.discovery import (
    ENTRY_POINT_GROUP,
    ConnectorPluginWarning,
    refuse_builtin_meaning,
)
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
from relay_nb.connectors.types import ConnectorType, LazyFactory

__all__ = [
    "BUILTIN_SCHEMES",
    "BUILTIN_TYPES",
    "BUILTIN_TYPE_NAMES",
    "ConnectorPluginWarning",
    "ConnectorType",
    "ConnectorTypeInfo",
    "ENTRY_POINT_GROUP",
    "LazyFactory",
    "RESERVED_TYPE_NAMES",
    "SQL_TYPE",
    "WEB_SEARCH_PROVIDERS",
    "builtin_type",
    "config_type",
    "connector_type_for_scheme",
    "connector_types",
    "find_connector_type",
    "is_builtin_scheme",
    "is_sql_dialect_scheme",
    "refuse_builtin_meaning",
    "register_connector_type",
    "unknown_type_message",
    "unregister_connector_type",
]
