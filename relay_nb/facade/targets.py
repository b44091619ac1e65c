"""What ``relay.connect(id, target)`` builds from what the analyst hands it.

One verb for every kind of data, chosen by the target: a DataFrame (or a mapping of them, or
a function returning one) becomes a DuckDB-backed ``DataFrameConnector``; a ``mongodb://``
URL a ``MongoConnector``; an ``http(s)://`` URL an ``HTTPConnector``; a web-search provider
name (``"tavily"``, ``"brave"``, ``"serper"``) a ``WebSearchConnector``; any other URL or a
SQLAlchemy engine a ``SQLConnector``. Keyword options go to that connector; one it does not
take is reported with the ones it does.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping
from typing import Any

from relay_nb.connectors.base import Connector
from relay_nb.errors import ConfigurationError

__all__ = ["WEB_SEARCH_PROVIDERS", "connector_for", "is_engine", "is_frame"]

WEB_SEARCH_PROVIDERS = ("tavily", "brave", "serper")


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
            f"web-search provider name {WEB_SEARCH_PROVIDERS}, a SQLAlchemy engine or a "
            f"Connector — not {type(target).__name__}"
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


def _sql() -> Callable[..., Connector]:
    from relay_nb.connectors.sql.connector import SQLConnector

    return SQLConnector


def _web_search(cls: type[Connector], provider: str) -> Callable[..., Connector]:
    def build(connector_id: str, **options: Any) -> Connector:
        return cls(connector_id, provider=provider, **options)  # type: ignore[call-arg]

    build.__wrapped__ = cls  # type: ignore[attr-defined] - _check_options reads the real signature
    return build


def _check_options(factory: Callable[..., Connector], options: Mapping[str, Any]) -> None:
    target = getattr(factory, "__wrapped__", factory)
    parameters = inspect.signature(target).parameters
    accepted = [
        name
        for name, p in parameters.items()
        if p.kind is inspect.Parameter.KEYWORD_ONLY and name != "provider"
    ]
    unknown = sorted(set(options) - set(accepted))
    if unknown:
        kind = getattr(target, "__name__", "this connector")
        raise ConfigurationError(
            f"{kind} does not take {', '.join(unknown)}; it takes: {', '.join(accepted)}"
        )


def is_engine(value: object) -> bool:
    """A SQLAlchemy engine, without importing SQLAlchemy when the caller has not."""
    cls = type(value)
    return cls.__name__ == "Engine" and cls.__module__.startswith("sqlalchemy")
