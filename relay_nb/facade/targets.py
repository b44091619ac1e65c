"""What ``relay.connect(id, target)`` builds from what the analyst hands it.

One verb for every kind of data, chosen by the target: a DataFrame (or a mapping of them, or
a function returning one) becomes a DuckDB-backed ``DataFrameConnector``; a ``mongodb://``
URL a ``MongoConnector``; an ``http(s)://`` URL an ``HTTPConnector``; a web-search provider
name (``"tavily"``, ``"brave"``, ``"serper"``) a ``WebSearchConnector``; any other URL or a
SQLAlchemy engine a ``SQLConnector``. Keyword options go to that connector; one it does not
take is reported with the ones it does.

Beyond the built-ins: an object with a ``build_connector(connector_id, **options)`` method (a
descriptor such as ``relay_nb.MCP(...)``) builds its own connector; a URL whose scheme a
connector type from a plugin or a cell claims (``csvdir:///data``), or that type's bare name
(``relay.connect("files", "csvdir", path="data/")``, the JSON config's form), builds that
type. Built-in schemes (``postgresql``, ``mongodb``, ``https``…) never reach a plugin, and
the common SQL URLs are built without reading the installed plugins at all.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from relay_nb.connectors.base import Connector
from relay_nb.connectors.plugins import (
    BUILTIN_TYPE_NAMES,
    COMMON_OPTIONS,
    TYPE_NAME,
    WEB_SEARCH_PROVIDERS,
    ConnectorType,
    connector_type_for_scheme,
    describe_error,
    find_connector_type,
    is_builtin_scheme,
    is_sql_dialect_scheme,
    keyword_parameters,
    unknown_type_message,
)
from relay_nb.errors import ConfigurationError, RelayError

__all__ = ["WEB_SEARCH_PROVIDERS", "connector_for", "is_engine", "is_frame"]


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
    if isinstance(target, str):
        plugin, url = _plugin_type(target)
        if plugin is not None:
            return plugin.connect(connector_id, options, url=url)
    factory, positional = _factory(target)
    _check_options(factory, options)
    return factory(connector_id, *positional, **options)


def is_frame(value: object) -> bool:
    """A pandas DataFrame, without importing pandas when the caller has not."""
    cls = type(value)
    return cls.__name__ == "DataFrame" and cls.__module__.startswith("pandas")


def _factory(target: Any) -> tuple[Callable[..., Connector], tuple[Any, ...]]:
    if is_frame(target) or (callable(target) and not isinstance(target, type)):
        from relay_nb.connectors.dataframe import DataFrameConnector

        return DataFrameConnector, (target,)
    if isinstance(target, Mapping):
        if target and all(is_frame(v) or callable(v) for v in target.values()):
            from relay_nb.connectors.dataframe import DataFrameConnector

            return DataFrameConnector, (dict(target),)
        raise ConfigurationError(
            "connect() takes a mapping only of table names to DataFrames, e.g. "
            "relay.connect('sales', {'orders': orders_df, 'customers': customers_df})"
        )
    if is_engine(target):
        return _sql(), (target,)
    if not isinstance(target, str):
        raise ConfigurationError(
            f"connect() takes a DataFrame, a database URL, a mongodb:// or https:// URL, a "
            f"web-search provider name {WEB_SEARCH_PROVIDERS}, a SQLAlchemy engine, a "
            "Connector, a connector plugin's type name or URL, or an object with a "
            f"build_connector(connector_id, **options) method — not {type(target).__name__}"
        )
    scheme = target.split("://", 1)[0].lower() if "://" in target else ""
    if scheme in ("mongodb", "mongodb+srv"):
        from relay_nb.connectors.mongo import MongoConnector

        return MongoConnector, (target,)
    if scheme in ("http", "https"):
        from relay_nb.connectors.http import HTTPConnector

        return HTTPConnector, (target,)
    provider = target.strip().lower().removeprefix("websearch:")
    if provider in WEB_SEARCH_PROVIDERS:
        from relay_nb.connectors.websearch import WebSearchConnector

        return _web_search(WebSearchConnector, provider), ()
    return _sql(), (target,)


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
    _check_options(build, rest, kind=kind, skip_first=True, common=True)
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


def _plugin_type(target: str) -> tuple[ConnectorType | None, str | None]:
    """The plugin (or notebook) type a string names: by its URL's scheme, or as a bare type
    name; ``(None, None)`` for everything the built-ins take. A bare word that is neither
    (``"csvdr"``) can be no SQLAlchemy URL either: it is reported as an unknown type."""
    text = target.strip()
    if "://" in text:
        scheme = text.split("://", 1)[0].lower()
        if is_builtin_scheme(scheme) or is_sql_dialect_scheme(scheme, installed=False):
            return None, None  # the common case: no plugin metadata is read
        return connector_type_for_scheme(scheme), text
    word = text.lower()
    if word in WEB_SEARCH_PROVIDERS or word in BUILTIN_TYPE_NAMES or not TYPE_NAME.match(word):
        return None, None
    found = find_connector_type(word)
    if found is None:
        raise ConfigurationError(unknown_type_message(text, in_config=False))
    return found, None


def _sql() -> Callable[..., Connector]:
    from relay_nb.connectors.sql.connector import SQLConnector

    return SQLConnector


def _web_search(cls: type[Connector], provider: str) -> Callable[..., Connector]:
    def build(connector_id: str, **options: Any) -> Connector:
        return cls(connector_id, provider=provider, **options)  # type: ignore[call-arg]

    build.__wrapped__ = cls  # type: ignore[attr-defined] - _check_options reads the real signature
    return build


def _check_options(
    factory: Callable[..., Any],
    options: Mapping[str, Any],
    *,
    kind: str | None = None,
    skip_first: bool = False,
    common: bool = False,
) -> None:
    """Unknown options, named with the accepted ones (``common``: also every connector's
    ``name`` and ``description``, which the caller sets itself)."""
    # a connector class's positional parameters (a URL, the frames) are not options; a
    # bound build_connector(connector_id, ...) takes all its keyword ones
    read = keyword_parameters(factory, skip_first=skip_first, keyword_only=not skip_first)
    if read is None or read[1]:
        return  # it takes anything (or cannot be read): it checks its own options
    accepted = [p for p in read[0] if skip_first or p != "provider"]  # web search's own
    if common:
        accepted = list(dict.fromkeys([*COMMON_OPTIONS, *accepted]))
    unknown = sorted(set(options) - set(accepted))
    if unknown:
        target = getattr(factory, "__wrapped__", factory)
        kind = kind or getattr(target, "__name__", "this connector")
        raise ConfigurationError(
            f"{kind} does not take {', '.join(unknown)}; it takes: "
            f"{', '.join(accepted) or 'no options'}"
        )


def is_engine(value: object) -> bool:
    """A SQLAlchemy engine, without importing SQLAlchemy when the caller has not."""
    cls = type(value)
    return cls.__name__ == "Engine" and cls.__module__.startswith("sqlalchemy")
