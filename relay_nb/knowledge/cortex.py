"""A Snowflake Cortex Analyst semantic model (YAML) as :class:`Knowledge`.

Teams that describe their data for Cortex Analyst have written exactly what relay_nb's
knowledge file holds, in another shape: logical tables over base tables, with dimensions,
time dimensions, facts (measures), metrics, named filters, synonyms and sample values;
relationships; verified queries; custom instructions. This module maps one onto the other:

==============================================  =========================================
semantic model                                  knowledge
==============================================  =========================================
``tables[].base_table.table``                   ``tables[<base table>]`` (the logical name
                                                becomes a synonym when it differs)
dimension / time dimension / fact on a column   the column's description, synonyms and
                                                ``values`` (``sample_values``)
… over an expression                            ``dimensions[<name>]``
``metrics``                                     ``metrics`` (logical names made physical)
``filters``, ``custom_instructions``            ``rules``
``relationships``                               ``joins``
``verified_queries``                            ``verified_queries`` (``__orders`` → the
                                                base table; Unix times → dates)
==============================================  =========================================

The file is validated loosely (the format grows; unknown keys are kept out, not refused),
and an entry that cannot be used says where it is.
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from relay_nb.errors import ConfigurationError
from relay_nb.knowledge.model import (
    ColumnKnowledge,
    JoinPath,
    Knowledge,
    Metric,
    TableKnowledge,
    VerifiedQuery,
)

__all__ = ["is_cortex_model", "knowledge_from_cortex"]

_IDENTIFIER = re.compile(r'"?([A-Za-z_][A-Za-z0-9_$]*)"?')


class _Loose(BaseModel):
    model_config = ConfigDict(extra="ignore")


class _Field(_Loose):
    name: str
    expr: str = ""
    description: str = ""
    synonyms: list[str] = Field(default_factory=list)
    sample_values: list[Any] = Field(default_factory=list)


class _BaseTable(_Loose):
    database: str = ""
    schema_: str = Field(default="", alias="schema")
    table: str


class _Table(_Loose):
    name: str
    description: str = ""
    synonyms: list[str] = Field(default_factory=list)
    base_table: _BaseTable | None = None
    dimensions: list[_Field] = Field(default_factory=list)
    time_dimensions: list[_Field] = Field(default_factory=list)
    facts: list[_Field] = Field(default_factory=list)
    measures: list[_Field] = Field(default_factory=list)
    metrics: list[_Field] = Field(default_factory=list)
    filters: list[_Field] = Field(default_factory=list)


class _Pair(_Loose):
    left_column: str
    right_column: str


class _Relationship(_Loose):
    left_table: str
    right_table: str
    relationship_columns: list[_Pair] = Field(min_length=1)


class _Verified(_Loose):
    question: str
    sql: str
    verified_by: str = ""
    verified_at: int | str | dt.date | None = None


class _Model(_Loose):
    name: str = ""
    description: str = ""
    tables: list[_Table] = Field(min_length=1)
    relationships: list[_Relationship] = Field(default_factory=list)
    verified_queries: list[_Verified] = Field(default_factory=list)
    custom_instructions: str = ""
    module_custom_instructions: dict[str, str] = Field(default_factory=dict)


def is_cortex_model(data: Any) -> bool:
    """Whether parsed YAML looks like a Cortex semantic model (a *list* of tables, each
    naming its base table), not a knowledge file (a mapping of tables)."""
    tables = data.get("tables") if isinstance(data, Mapping) else None
    return isinstance(tables, list) and any(
        isinstance(t, Mapping) and "base_table" in t for t in tables
    )


def knowledge_from_cortex(
    data: Mapping[str, Any], *, where: str = "the semantic model"
) -> Knowledge:
    """Knowledge from a parsed Cortex semantic model (see :func:`load_knowledge` for files)."""
    try:
        model = _Model.model_validate(data)
    except ValidationError as exc:
        first = exc.errors()[0]
        place = ".".join(str(part) for part in first["loc"])
        raise ConfigurationError(f"{where}: {place}: {first['msg']}") from None
    physical = {t.name: (t.base_table.table if t.base_table else t.name) for t in model.tables}
    origin = f"Cortex semantic model {' '.join(model.name.split())[:80]!r}"
    tables = {physical[t.name]: _table(t, physical, origin) for t in model.tables}
    dimensions: dict[str, str] = {}
    metrics: list[Metric] = []
    rules: list[str] = []
    for table in model.tables:
        base = physical[table.name]
        for item in (*table.dimensions, *table.time_dimensions, *table.facts, *table.measures):
            if _column(item) is None and item.expr:
                dimensions[item.name] = _physical(item.expr, physical)
        for metric in table.metrics:
            if metric.expr:
                metrics.append(
                    Metric(
                        name=metric.name,
                        sql=_physical(metric.expr, physical),
                        description=metric.description,
                        synonyms=tuple(metric.synonyms),
                        origin=origin,
                    )
                )
        for named in table.filters:
            also = f" (also: {', '.join(named.synonyms)})" if named.synonyms else ""
            meaning = f" — {named.description}" if named.description else ""
            rules.append(
                f"'{named.name}'{also} on {base} means {_physical(named.expr, physical)}{meaning}"
            )
    rules += [text for text in (model.custom_instructions,) if text.strip()]
    rules += [
        f"{part.replace('_', ' ')}: {text}"
        for part, text in model.module_custom_instructions.items()
        if text.strip()
    ]
    unique: dict[str, Metric] = {}
    for metric in metrics:  # a name in two logical tables: the first one
        unique.setdefault(metric.name.lower(), metric)
    metrics = list(unique.values())
    try:
        return _knowledge(model, tables, dimensions, metrics, rules, physical, origin)
    except (ValidationError, ValueError) as exc:
        first = exc.errors()[0]["msg"] if isinstance(exc, ValidationError) else str(exc)
        raise ConfigurationError(f"{where}: {first}") from None


def _knowledge(
    model: _Model,
    tables: dict[str, TableKnowledge],
    dimensions: dict[str, str],
    metrics: list[Metric],
    rules: list[str],
    physical: Mapping[str, str],
    origin: str,
) -> Knowledge:
    return Knowledge(
        description=model.description or model.name,
        origin=origin,
        tables=tables,
        dimensions=dimensions,
        metrics=tuple(metrics),
        rules=tuple(" ".join(rule.split()) for rule in rules),
        joins=tuple(_join(r, physical) for r in model.relationships),
        verified_queries=tuple(_verified(q, physical) for q in model.verified_queries),
    )


def _table(table: _Table, physical: Mapping[str, str], origin: str) -> TableKnowledge:
    synonyms = list(table.synonyms)
    if physical[table.name].lower() != table.name.lower():
        synonyms.append(table.name)
    columns: dict[str, ColumnKnowledge] = {}
    for item in (*table.dimensions, *table.time_dimensions, *table.facts, *table.measures):
        column = _column(item)
        if column is None:
            continue
        names = [*item.synonyms, *([item.name] if item.name.lower() != column.lower() else [])]
        columns[column] = ColumnKnowledge(
            description=item.description,
            synonyms=tuple(names),
            values=tuple(str(v) for v in item.sample_values if v is not None),
        )
    return TableKnowledge(
        description=table.description, synonyms=tuple(synonyms), columns=columns, origin=origin
    )


def _column(item: _Field) -> str | None:
    """The column an item is, when its expression is a bare (maybe qualified) column."""
    expr = (item.expr or item.name).strip()
    last = expr.rsplit(".", 1)[-1]
    match = _IDENTIFIER.fullmatch(last)
    return match.group(1) if match else None


def _physical(sql: str, physical: Mapping[str, str]) -> str:
    """Logical table names (``orders.``, Cortex's ``__orders``) replaced by base tables."""
    for logical, base in physical.items():
        sql = re.sub(rf"(?<![\w$.])__{re.escape(logical)}\b", base, sql, flags=re.IGNORECASE)
        if logical.lower() != base.lower():
            sql = re.sub(rf"(?<![\w$.]){re.escape(logical)}\.", f"{base}.", sql)
    return sql


def _join(relationship: _Relationship, physical: Mapping[str, str]) -> JoinPath:
    left = physical.get(relationship.left_table, relationship.left_table)
    right = physical.get(relationship.right_table, relationship.right_table)
    on = " AND ".join(
        f"{left}.{pair.left_column} = {right}.{pair.right_column}"
        for pair in relationship.relationship_columns
    )
    return JoinPath(left=left, right=right, on=on)


def _verified(query: _Verified, physical: Mapping[str, str]) -> VerifiedQuery:
    when = query.verified_at
    if isinstance(when, int):  # Cortex writes Unix seconds
        when = dt.datetime.fromtimestamp(when, tz=dt.UTC).date()
    elif isinstance(when, str):
        try:
            when = dt.date.fromisoformat(when[:10])
        except ValueError:
            raise ValueError(
                f"verified query {query.question!r}: verified_at {when!r} is neither Unix "
                "seconds nor a YYYY-MM-DD date"
            ) from None
    return VerifiedQuery(
        question=query.question,
        sql=_physical(query.sql, physical),
        verified_by=query.verified_by,
        verified_at=when,
    )
