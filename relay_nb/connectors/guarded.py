"""The guarded-SQL tool layer every SQL-speaking connector shares: ``query_<id>`` and
``describe_<id>``, the guard in the connector's dialect, and the schema as prompt context.

A connector that answers SQL over a catalog — a SQLAlchemy database
(:class:`~relay_nb.connectors.sql.connector.SQLConnector`), in-notebook DataFrames through
DuckDB, a Spark session — subclasses :class:`GuardedSQLConnector` and supplies what differs:
how its catalog is read (:attr:`catalog`), how a checked query runs (:meth:`aquery`,
:meth:`estimate`), and the words the model reads about its engine (:meth:`_query_description`,
:meth:`_context_head`). The tools, the guard call, the preflight around a query and the
shape of its result are written once, here.
"""

from __future__ import annotations

import asyncio
from abc import abstractmethod
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, ClassVar

from pydantic import BaseModel, Field, create_model

from relay_nb.connectors.base import Connector
from relay_nb.connectors.bounds import ResultBudget, check_byte_limits
from relay_nb.connectors.preflight import Estimate, Preflight
from relay_nb.connectors.results import QueryResult, answer_query, build_frame
from relay_nb.errors import ConfigurationError
from relay_nb.sql import (
    Catalog,
    GuardedQuery,
    SchemaRanker,
    describe_request,
    guard_query,
    render_catalog,
)
from relay_nb.tools import Tool, ToolResult

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["DescribeInput", "GuardedSQLConnector", "QueryInput", "tool_inputs"]


def tool_inputs(dialect: str, qualified: str) -> tuple[type[BaseModel], type[BaseModel]]:
    """The arguments of ``query_<id>`` and ``describe_<id>``, worded for an engine:
    ``dialect`` names its SQL ("Spark SQL"), ``qualified`` how a table is qualified
    ("database.table")."""
    query = create_model(
        "QueryInput",
        sql=(
            str,
            Field(
                description=f"Exactly one read-only SELECT (WITH … SELECT allowed) in {dialect}. "
                "LIMIT is applied automatically."
            ),
        ),
    )
    describe = create_model(
        "DescribeInput",
        tables=(
            list[str],
            Field(
                default_factory=list,
                description=f"Table names (or {qualified}) to describe in full.",
            ),
        ),
        search=(
            str | None,
            Field(
                default=None,
                description="Words to find relevant tables when you do not know names.",
            ),
        ),
    )
    return query, describe


QueryInput, DescribeInput = tool_inputs("this database's SQL dialect", "schema.table")


class GuardedSQLConnector(Connector):
    """A connector whose model-facing tools are guarded, read-only SQL over a catalog.

    Subclasses set ``id``, ``name``, ``description``, ``dialect`` (a sqlglot dialect name),
    ``row_limit``, ``statement_timeout_s``, ``preview_chars``, ``ranker`` and ``preflight``
    in their constructor.
    """

    dialect: str
    row_limit: int
    statement_timeout_s: float
    max_value_bytes: int
    max_result_bytes: int
    preview_chars: int
    ranker: SchemaRanker | None = None
    preflight: Preflight

    query_input: ClassVar[type[BaseModel]] = QueryInput
    """The ``query_<id>`` tool's arguments (a subclass may reword the ``sql`` field)."""
    describe_input: ClassVar[type[BaseModel]] = DescribeInput
    query_timeout_margin_s: ClassVar[float] = 5.0
    """How long the query tool waits past the statement timeout (for the rollback or the
    cancelled jobs to finish)."""

    # -- what a subclass supplies -----------------------------------------------------------

    @property
    @abstractmethod
    def catalog(self) -> Catalog:
        """The tables the model may read, read once and cached."""

    @abstractmethod
    def estimate(self, sql: str) -> Estimate | None:
        """What the engine expects ``sql`` to scan, without running it (None: it cannot say)."""

    @abstractmethod
    async def aquery(self, sql: str) -> QueryResult:
        """Guard and run ``sql``; cancelling the task cancels the statement."""

    @abstractmethod
    def _query_description(self) -> str:
        """The ``query_<id>`` tool's description: the engine, the row limit, what to do."""

    @abstractmethod
    def _context_head(self) -> str:
        """The prompt's lines above the schema: the connector, its engine, its tools."""

    def _describe_description(self) -> str:
        return (
            f"Full details (all columns, keys, comments) of tables in {self.name}, by "
            "name or by search words. Use it for tables the schema summary left out."
        )

    def _set_limits(
        self,
        *,
        row_limit: int,
        statement_timeout_s: float,
        max_value_bytes: int,
        max_result_bytes: int,
    ) -> None:
        """Check and keep what bounds every query: rows, seconds, and the bytes one value
        and one result may bring into the kernel (a longer value is cut; reading stops, the
        statement cancelled, before a result passes its limit)."""
        self.max_value_bytes, self.max_result_bytes = check_byte_limits(
            max_value_bytes, max_result_bytes
        )
        if not isinstance(row_limit, int) or row_limit < 1:
            raise ConfigurationError(f"row_limit must be a positive integer, got {row_limit!r}")
        if not statement_timeout_s or statement_timeout_s <= 0:
            raise ConfigurationError("statement_timeout_s must be a positive number of seconds")
        self.row_limit = row_limit
        self.statement_timeout_s = float(statement_timeout_s)

    # -- the guard --------------------------------------------------------------------------

    def guard(self, sql: str, *, row_limit: int | None = None) -> GuardedQuery:
        """Check and rewrite ``sql`` without running it (raises UnsafeQueryError); its
        outermost LIMIT at most ``row_limit`` (by default the connector's limit plus one)."""
        catalog = self.catalog
        # one row past the limit tells "exactly row_limit rows" from "truncated"
        return guard_query(
            sql,
            dialect=self.dialect,
            allowed_tables=catalog.allowlist(),
            default_schema=catalog.default_schema,
            row_limit=self.row_limit + 1 if row_limit is None else row_limit,
            catalog=catalog.database,
            complete_schemas=catalog.complete_schemas,
        )

    def object_names(self) -> list[str]:
        return [table.qualified_name for table in self.catalog.tables]

    def _result(
        self,
        sql: str,
        guarded: GuardedQuery,
        columns: Sequence[str],
        rows: Sequence[tuple[Any, ...]],
        budget: ResultBudget,
        elapsed_ms: float,
        temporal_columns: Mapping[str, str] | None = None,
        frame: pd.DataFrame | None = None,
    ) -> QueryResult:
        """The result of a checked query from the rows read (at most ``row_limit + 1``), or
        from ``frame``, the same rows the engine already made a DataFrame of."""
        if frame is None:
            truncated = budget.full or len(rows) > self.row_limit
            df = build_frame(columns, rows[: self.row_limit], temporal_columns=temporal_columns)
        else:
            truncated = budget.full or len(frame) > self.row_limit
            df = frame if len(frame) <= self.row_limit else frame.iloc[: self.row_limit]
        return QueryResult(
            df=df,
            executed_sql=guarded.sql,
            row_count=len(df),
            truncated=truncated,
            elapsed_ms=elapsed_ms,
            connector_id=self.id,
            submitted_sql=sql,
            tables=guarded.tables,
            limit="bytes" if budget.full else "rows",
            notes=budget.notes(),
            dialect=self.dialect,
            # the fetch size, where the guard set it (a LIMIT the query wrote stays as written)
            row_limit=self.row_limit if guarded.limit_injected or guarded.limit_clamped else None,
        )

    # -- the model-facing side --------------------------------------------------------------

    def tools(self) -> list[Tool]:
        metadata = {"connector": self.id, "kind": self.kind}
        return [
            Tool(
                name=f"query_{self.id}",
                description=self._query_description(),
                input_model=self.query_input,
                handler=self._query_tool,
                timeout_s=self.statement_timeout_s + self.query_timeout_margin_s,
                metadata=metadata,
            ),
            Tool(
                name=f"describe_{self.id}",
                description=self._describe_description(),
                input_model=self.describe_input,
                handler=self._describe_tool,
                timeout_s=30.0,
                metadata=dict(metadata),
            ),
        ]

    async def _query_tool(self, arguments: Any) -> ToolResult:
        return await answer_query(
            arguments.sql,
            connector_id=self.id,
            preflight=self.preflight,
            estimate=self.estimate,
            run=self.aquery,
            preview_chars=self.preview_chars,
        )

    async def _describe_tool(self, arguments: Any) -> ToolResult:
        catalog = await asyncio.to_thread(lambda: self.catalog)
        answer = describe_request(
            catalog, arguments.tables, arguments.search, connector_id=self.id, ranker=self.ranker
        )
        return ToolResult(content=answer)

    def prompt_context(self, *, max_tokens: int | None = None, question: str | None = None) -> str:
        head = self._context_head()
        budget = None if max_tokens is None else max(0, max_tokens - len(head) // 4 - 1)
        return head + self._render_schema(head, budget, question)

    def _render_schema(self, head: str, budget: int | None, question: str | None) -> str:
        """The catalog within ``budget`` tokens, ranked by ``question`` (``head`` is what
        precedes it, for a subclass that caches renders by the whole prompt)."""
        return render_catalog(
            self.catalog,
            max_tokens=budget,
            question=question,
            describe_tool=f"describe_{self.id}",
            ranker=self.ranker,
        ).text

    def _heading(self, kind: str, engine: str) -> str:
        """``### SQL connector: shop (Shop) — sqlite, read-only`` and the description."""
        return (
            f"### {kind} connector: {self.id}"
            + (f" ({self.name})" if self.name != self.id else "")
            + f" — {engine}, read-only\n"
            + (f"{self.description}\n" if self.description else "")
        )
