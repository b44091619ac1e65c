"""What a team knows about its data, as validated models: the knowledge file's schema.

The model writes SQL from what the context shows it. Names and types say what a column *is*;
only the team knows what it *means*: that revenue counts paid orders only, that "nations"
are rows of ``country``, that this query is the one finance signed off. A knowledge file
(``relay.knowledge.yaml``, in git beside the notebook) says it once, per connector::

    tables:
      orders:
        description: One row per order, placed or not.
        synonyms: [purchases, sales]
        columns:
          status: {description: paid, refunded or cancelled, values: [paid, refunded, cancelled]}
    metrics:
      - name: revenue
        sql: SUM(orders.total)
        filters: ["orders.status = 'paid'"]
        description: Revenue counts paid orders only.
    rules:
      - Revenue counts paid orders only.
    verified_queries:
      - question: What was our revenue by month last year?
        sql: SELECT ... FROM orders WHERE status = 'paid' GROUP BY month
        verified_by: ana@example.com
        verified_at: 2026-11-30

Everything is optional except what makes an entry usable (a metric's name and SQL, a
verified query's question and SQL). Unknown keys are errors, so a typo is caught where it is
written, not silently ignored.
"""

from __future__ import annotations

import datetime as dt

from pydantic import BaseModel, ConfigDict, Field, field_validator

__all__ = [
    "ColumnKnowledge",
    "JoinPath",
    "Knowledge",
    "Metric",
    "TableKnowledge",
    "VerifiedQuery",
]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, str_strip_whitespace=True)


class ColumnKnowledge(_Strict):
    description: str = ""
    synonyms: tuple[str, ...] = ()
    values: tuple[str, ...] = ()
    """The values the column holds, where they are few and meaningful (``paid``, ``refunded``)."""


class TableKnowledge(_Strict):
    description: str = ""
    synonyms: tuple[str, ...] = ()
    columns: dict[str, ColumnKnowledge] = Field(default_factory=dict)
    origin: str = ""
    """Where the table's and its columns' descriptions were imported from (``"dbt
    manifest"``, ``"Cortex semantic model 'sales'"``); empty for the team's own file. The
    prompt quotes them as data, marked with it."""

    def merged(self, other: TableKnowledge) -> TableKnowledge:
        """Both tables' knowledge; this one's description and values win."""
        columns = dict(other.columns)
        for name, column in self.columns.items():
            theirs = columns.get(name)
            columns[name] = (
                column
                if theirs is None
                else ColumnKnowledge(
                    description=column.description or theirs.description,
                    synonyms=_union(column.synonyms, theirs.synonyms),
                    values=column.values or theirs.values,
                )
            )
        return TableKnowledge(
            description=self.description or other.description,
            synonyms=_union(self.synonyms, other.synonyms),
            columns=columns,
            origin=merged_origin(self.origin, other.origin),
        )


def merged_origin(first: str, second: str) -> str:
    """Both origins, each once (``"dbt manifest and Cortex semantic model 'sales'"``)."""
    return " and ".join(dict.fromkeys(origin for origin in (first, second) if origin))


def _union(first: tuple[str, ...], second: tuple[str, ...]) -> tuple[str, ...]:
    """Both, in order, each once (case-insensitively)."""
    seen = {text.lower() for text in first}
    return (*first, *(text for text in second if text.lower() not in seen))


class Metric(_Strict):
    """A named measure, and how to compute it right."""

    name: str = Field(min_length=1)
    sql: str = Field(min_length=1)
    """The expression, e.g. ``SUM(orders.total)``."""
    filters: tuple[str, ...] = ()
    """Conditions it always carries, e.g. ``orders.status = 'paid'``."""
    description: str = ""
    synonyms: tuple[str, ...] = ()
    origin: str = ""
    """Where it was imported from; empty for the team's own file."""


class JoinPath(_Strict):
    """How two tables join, when the schema's keys do not say it (or say it ambiguously)."""

    left: str = Field(min_length=1)
    right: str = Field(min_length=1)
    on: str = Field(min_length=1)


class VerifiedQuery(_Strict):
    """A question and the SQL someone checked answers it."""

    question: str = Field(min_length=1)
    sql: str = Field(min_length=1)
    verified_by: str = ""
    verified_at: dt.date | None = None


class Knowledge(_Strict):
    """One connector's knowledge file (see the module docstring)."""

    description: str = ""
    """What the data is, in a sentence or two."""
    origin: str = ""
    """Where the description was imported from; empty for the team's own file."""
    tables: dict[str, TableKnowledge] = Field(default_factory=dict)
    metrics: tuple[Metric, ...] = ()
    dimensions: dict[str, str] = Field(default_factory=dict)
    """Named dimensions and the expression each stands for (``region: customers.country``)."""
    joins: tuple[JoinPath, ...] = ()
    rules: tuple[str, ...] = ()
    """Business rules in plain words ("revenue counts paid orders only")."""
    synonyms: dict[str, tuple[str, ...]] = Field(default_factory=dict)
    """Words of the business and what they mean in the data (``nation: [country]``)."""
    verified_queries: tuple[VerifiedQuery, ...] = ()

    @field_validator("metrics")
    @classmethod
    def _unique_metrics(cls, metrics: tuple[Metric, ...]) -> tuple[Metric, ...]:
        seen: set[str] = set()
        for metric in metrics:
            key = metric.name.lower()
            if key in seen:
                raise ValueError(f"metric {metric.name!r} is defined twice")
            seen.add(key)
        return metrics

    def merged(self, other: Knowledge) -> Knowledge:
        """This knowledge with ``other``'s added; where both say something (a description,
        a metric of the same name, a column's values), this one wins."""
        tables = dict(other.tables)
        for name, table in self.tables.items():
            tables[name] = table.merged(tables[name]) if name in tables else table
        names = {m.name.lower() for m in self.metrics}
        questions = {q.question.lower() for q in self.verified_queries}
        pairs = {frozenset((j.left, j.right)) for j in self.joins}
        synonyms = dict(other.synonyms)
        for word, meaning in self.synonyms.items():
            synonyms[word] = _union(meaning, synonyms.get(word, ()))
        return Knowledge(
            description=self.description or other.description,
            origin=self.origin if self.description else other.origin,
            tables=tables,
            metrics=(*self.metrics, *(m for m in other.metrics if m.name.lower() not in names)),
            dimensions={**other.dimensions, **self.dimensions},
            joins=(
                *self.joins,
                *(j for j in other.joins if frozenset((j.left, j.right)) not in pairs),
            ),
            rules=_union(self.rules, other.rules),
            synonyms=synonyms,
            verified_queries=(
                *self.verified_queries,
                *(q for q in other.verified_queries if q.question.lower() not in questions),
            ),
        )

    def with_verified(self, query: VerifiedQuery) -> Knowledge:
        """This knowledge plus ``query`` (replacing one with the same question)."""
        kept = tuple(
            q for q in self.verified_queries if q.question.lower() != query.question.lower()
        )
        return self.model_copy(update={"verified_queries": (*kept, query)})
