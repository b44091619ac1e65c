"""What ``relay.connect(id, target)`` builds from what the analyst hands it.

One verb for every kind of data, chosen by the target and answered by the connector types
(:mod:`relay_nb.connectors.kinds`, :mod:`relay_nb.connectors.plugins`), built-in and plugin
alike: a URL goes to the type that
claims its scheme (``mongodb://`` Mongo, ``https://`` HTTP; a scheme a plugin or a cell
claims, ``csvdir:///data``, that type), any other URL to SQL (SQLAlchemy reads it); a bare
word to the web-search type when it names a provider (``"tavily"``), else to the plugin type
of that name (``relay.connect("files", "csvdir", path="data/")``, the JSON config's form); an
object to the built-in type that accepts it (a SQLAlchemy engine, a DataFrame, a mapping of
them, a function returning one, a Spark session). Keyword options go to that type, which
names the ones it takes when one is unknown.

Beyond the types: a ``Connector`` is registered as it is, and an object with a
``build_connector(connector_id, **options)`` method (a descriptor such as
``relay_nb.MCP(...)``) builds its own connector. Built-in schemes (``postgresql``,
``mongodb``, ``https``…) never reach a plugin, and the common SQL URLs are built without
reading the installed plugins at all.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from relay_nb.connectors.base import Connector
from relay_nb.connectors.dataframe.kind import is_frame
from relay_nb.connectors.kinds import (
    BUILTIN_TYPE_NAMES,
    BUILTIN_TYPES,
    SQL_TYPE,
    WEB_SEARCH_PROVIDERS,
    is_sql_dialect_scheme,
)
from relay_nb.connectors.plugins import (
    connector_type_for_scheme,
    find_connector_type,
    unknown_type_message,
)
from relay_nb.connectors.sql.kind import is_engine
from relay_nb.connectors.types import (
    COMMON_OPTIONS,
    TYPE_NAME,
    ConnectorType,
    describe_error,
    keyword_parameters,
)
from relay_nb.errors import ConfigurationError, RelayError

__all__ = ["WEB_SEARCH_PROVIDERS", "connector_for", "connector_type_for", "is_engine", "is_frame"]


def connector_for(connector_id: str, target: Any, options: Mapping[str, Any]) -> Connector:
    """The connector ``target`` calls for, built with ``options``."""
    if isinstance(target, Connector):
        if target.id != connector_id:
            raise ConfigurationError(f"the connector's id is {target.id!r}, not {connector_id!r}")
        if options:
            raise ConfigurationError(
                f"options {sorted(options)} cannot apply to an already-built connector; "
                "pass them to its constructor"
            )
        return target
    if _is_descriptor(target):
        return _from_descriptor(connector_id, target, options)
    ctype, given = connector_type_for(target)
    return ctype.connect(connector_id, options, url=given)


def connector_type_for(target: Any) -> tuple[ConnectorType, Any]:
    """``(type, target for its from_url)``: the type that builds from ``target`` (see the
    module docstring); the second item is None for a bare type name (no target to read)."""
    if isinstance(target, str):
        text = target.strip()
        if "://" in text:
            scheme = text.split("://", 1)[0].lower()
            base = scheme.split("+", 1)[0]
            for ctype in BUILTIN_TYPES:
                if scheme in ctype.url_schemes or base in ctype.url_schemes:
                    return ctype, target
            if is_sql_dialect_scheme(scheme, installed=False):
                return SQL_TYPE, target  # the common case: no plugin metadata is read
            plugin = connector_type_for_scheme(scheme)
            return (plugin, text) if plugin is not None else (SQL_TYPE, target)
        for ctype in BUILTIN_TYPES:
            if ctype.accepts is not None and ctype.accepts(text):
                return ctype, target
        word = text.lower()
        if word in BUILTIN_TYPE_NAMES or not TYPE_NAME.match(word):
            return SQL_TYPE, target  # SQLAlchemy says what is wrong with it as a URL
        found = find_connector_type(word)
        if found is None:
            raise ConfigurationError(unknown_type_message(text, in_config=False))
        return found, None
    for ctype in BUILTIN_TYPES:
        if ctype.accepts is not None and ctype.accepts(target):
            return ctype, target
    raise ConfigurationError(
        f"connect() takes a DataFrame, a database URL, a mongodb:// or https:// URL, a "
        f"web-search provider name {WEB_SEARCH_PROVIDERS}, a SQLAlchemy engine, a Spark "
        "session, a Connector, a connector plugin's type name or URL, or an object with a "
        f"build_connector(connector_id, **options) method — not {type(target).__name__}"
    )


def _is_descriptor(target: Any) -> bool:
    """An object (not a class) whose type has a ``build_connector`` method."""
    return not isinstance(target, type) and callable(getattr(type(target), "build_connector", None))


def _from_descriptor(connector_id: str, target: Any, options: Mapping[str, Any]) -> Connector:
    """``target.build_connector(connector_id, **options)``, checked like a built-in: unknown
    options are named with the accepted ones, ``name`` and ``description`` (every
    connector's) are set on the result when the descriptor does not take them, a failure
    other than a relay_nb error is reported short and redacted, and the result must be a
    Connector with the id asked for."""
    kind = type(target).__name__
    build = target.build_connector
    read = keyword_parameters(build, skip_first=True)
    own = None if read is None or read[1] else read[0]  # None: it takes any keyword
    common = {
        k: options[k] for k in COMMON_OPTIONS if k in options and own is not None and k not in own
    }
    rest = {k: v for k, v in options.items() if k not in common}
    _check_options(build, rest, kind=kind)
    try:
        connector = build(connector_id, **rest)
    except RelayError:
        raise
    except Exception as exc:
        raise ConfigurationError(f"{kind}.build_connector() failed: {describe_error(exc)}") from exc
    if not isinstance(connector, Connector):
        raise ConfigurationError(
            f"{kind}.build_connector() returned {type(connector).__name__}, "
            "not a relay_nb.Connector"
        )
    if connector.id != connector_id:
        connector.close()
        raise ConfigurationError(
            f"{kind}.build_connector() built a connector with id "
            f"{connector.id!r}, not {connector_id!r}"
        )
    for key, value in common.items():
        setattr(connector, key, value)
    return connector


def _check_options(factory: Callable[..., Any], options: Mapping[str, Any], *, kind: str) -> None:
    """Unknown options of a descriptor's ``build_connector``, named with the accepted ones
    (every connector's ``name`` and ``description`` included, which the caller sets)."""
    read = keyword_parameters(factory, skip_first=True)
    if read is None or read[1]:
        return  # it takes anything (or cannot be read): it checks its own options
    accepted = list(dict.fromkeys([*COMMON_OPTIONS, *read[0]]))
    unknown = sorted(set(options) - set(accepted))
    if unknown:
        raise ConfigurationError(
            f"{kind} does not take {', '.join(unknown)}; it takes: "
            f"{', '.join(accepted) or 'no options'}"
        )
