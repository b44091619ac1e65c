"""``relay.connect``: registering a data source, typed by what it is built from.

A mixin of :class:`~relay_nb.facade.relay.Relay` (its own module, like
:mod:`~relay_nb.facade.evaluation`, so the conversation object's file stays about
conversation). What each target builds is :mod:`relay_nb.facade.targets`'; here is the method
analysts call, with

- overloads that give a type checker the options of each target it can tell apart — a
  DataFrame (or a mapping of them, or a function returning one), a SQLAlchemy engine, a
  Spark session, a web-search provider's name, a built connector (no options) — each from
  its kind's ``…Keywords`` TypedDict; any other string (a URL, a plugin's type name) or
  descriptor (``relay_nb.MCP(...)``) takes any keyword, checked when the connector is built;
- a docstring ending with every built-in kind's options, rendered from the models that
  declare them (:mod:`relay_nb.connectors.options`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, Protocol, TypeVar, Unpack, overload

from relay_nb.connectors.base import Connector
from relay_nb.connectors.kinds import BUILTIN_TYPES
from relay_nb.connectors.options import docstring_reference
from relay_nb.connectors.registry import check_reachable
from relay_nb.facade.targets import connector_for

if TYPE_CHECKING:
    from pyspark.sql import SparkSession
    from pyspark.sql.connect.session import SparkSession as ConnectSparkSession
    from sqlalchemy import Engine

    from relay_nb.agent.session import Session
    from relay_nb.connectors.dataframe import DataFrameConnector
    from relay_nb.connectors.dataframe.frames import FrameSource
    from relay_nb.connectors.dataframe.kind import DataFrameKeywords
    from relay_nb.connectors.spark.connector import SparkConnector
    from relay_nb.connectors.spark.kind import SparkKeywords
    from relay_nb.connectors.sql.connector import SQLConnector
    from relay_nb.connectors.sql.kind import SQLKeywords
    from relay_nb.connectors.websearch import WebSearchConnector
    from relay_nb.connectors.websearch.kind import WebSearchKeywords
    from relay_nb.connectors.websearch.providers import ProviderName

__all__ = ["CHECK_TIMEOUT_S", "BuildsConnector", "Connects"]

CHECK_TIMEOUT_S = 10.0
"""How long ``connect`` waits for a new connector to read what it holds."""

_Connector = TypeVar("_Connector", bound=Connector)
_Method = TypeVar("_Method", bound=Callable[..., Any])


class BuildsConnector(Protocol):
    """A descriptor ``relay.connect`` hands the options to (``relay_nb.MCP(...)``): its
    ``build_connector(connector_id, **options)`` builds the connector."""

    @property
    def build_connector(self) -> Callable[..., Connector]: ...


def _with_options_reference(method: _Method) -> _Method:
    """The docstring, followed by every built-in kind's options rendered from their models
    (:func:`~relay_nb.connectors.options.docstring_reference`): no list kept by hand."""
    method.__doc__ = (method.__doc__ or "").rstrip() + "\n" + docstring_reference(BUILTIN_TYPES)
    return method


class Connects:
    """``connect`` for :class:`~relay_nb.facade.relay.Relay`."""

    _engine: Session

    @overload
    def connect(
        self,
        connector_id: str,
        target: FrameSource | Mapping[str, FrameSource],
        *,
        check: bool = True,
        check_timeout_s: float = CHECK_TIMEOUT_S,
        **options: Unpack[DataFrameKeywords],
    ) -> DataFrameConnector: ...
    @overload
    def connect(
        self,
        connector_id: str,
        target: Engine,
        *,
        check: bool = True,
        check_timeout_s: float = CHECK_TIMEOUT_S,
        **options: Unpack[SQLKeywords],
    ) -> SQLConnector: ...
    @overload
    def connect(
        self,
        connector_id: str,
        target: SparkSession | ConnectSparkSession,
        *,
        check: bool = True,
        check_timeout_s: float = CHECK_TIMEOUT_S,
        **options: Unpack[SparkKeywords],
    ) -> SparkConnector: ...
    @overload
    def connect(
        self,
        connector_id: str,
        target: ProviderName,
        *,
        check: bool = True,
        check_timeout_s: float = CHECK_TIMEOUT_S,
        **options: Unpack[WebSearchKeywords],
    ) -> WebSearchConnector: ...
    @overload
    def connect(
        self,
        connector_id: str,
        target: _Connector,
        *,
        check: bool = True,
        check_timeout_s: float = CHECK_TIMEOUT_S,
    ) -> _Connector: ...
    @overload
    def connect(
        self,
        connector_id: str,
        target: str | BuildsConnector,
        *,
        check: bool = True,
        check_timeout_s: float = CHECK_TIMEOUT_S,
        **options: Any,
    ) -> Connector: ...
    @_with_options_reference
    def connect(
        self,
        connector_id: str,
        target: Any,
        *,
        check: bool = True,
        check_timeout_s: float = CHECK_TIMEOUT_S,
        **options: Any,
    ) -> Connector:
        """Register a data source under ``connector_id`` (reconnecting replaces it).

        ``target`` picks the kind (see :mod:`relay_nb.facade.targets`), whose options the
        keywords are (listed below, with their defaults):

        - a DataFrame, ``{"table": df, …}``, or a function returning a DataFrame: SQL over
          in-notebook frames through DuckDB (``dataframe``);
        - a SQLAlchemy URL or engine (``postgresql+psycopg://ro@127.0.0.1/shop``,
          ``sqlite:///shop.db``): a SQL database (``sql``);
        - ``mongodb://host/db``: MongoDB (``mongo``);
        - ``https://api.example.com/v1``: an HTTP API (``http``), e.g. with
          ``auth={"type": "bearer", "token_env": "VAR"}``;
        - ``"tavily"`` / ``"brave"`` / ``"serper"``: web search (``websearch``);
        - a ``SparkSession`` or ``"sc://host:15002"``: Spark SQL (``spark``);
        - a ``Connector`` object (no options: it is built already), or an object with a
          ``build_connector(connector_id, **options)`` method (``relay_nb.MCP(...)``, whose
          fields the options override: ``mcp``);
        - a connector plugin's URL (``"csvdir:///data"``) or type name (``"csvdir"``), for
          types installed as plugins or registered with ``relay_nb.register_connector_type``
          (``relay_nb.connector_types()`` lists them and their options).

        Every kind also takes ``name`` and ``description``. Nothing is registered when the
        connector cannot be built: a bad URL or option leaves the session as it was. With
        ``check`` (the default) the connector reads what it holds first, within
        ``check_timeout_s``: a wrong password, an unreachable server or a missing SQLite file
        raises ``ConnectorError`` with the cause, and nothing is registered.
        """
        connector = connector_for(connector_id, target, options)
        try:
            if check:
                check_reachable(connector, check_timeout_s)
            return self._engine.add_connector(connector, replace=True)
        except BaseException:
            built_here = connector is not target
            if built_here and connector is not self._engine.connectors.get(connector_id):
                connector.close()
            raise
