"""A dbt project's ``manifest.json`` as :class:`Knowledge`: what the team already wrote down.

dbt projects describe their models and columns in YAML, test them (``accepted_values`` lists
a column's values; ``relationships`` says how two models join) and, with the semantic layer,
define semantic models (entities, dimensions, measures) and metrics. ``dbt parse`` (or any
``dbt`` command) writes all of it, resolved, to ``target/manifest.json``; this module reads
that file — no dbt installation needed — into the knowledge file's shape:

==========================================  =============================================
manifest                                    knowledge
==========================================  =============================================
model / seed / snapshot / source            ``tables[<alias or identifier>]``: description,
                                            columns' descriptions
``accepted_values`` test                    the column's ``values``
``relationships`` test, shared entities     ``joins``
semantic model dimensions                   ``dimensions`` (``orders.status``)
simple and ratio metrics (over measures)    ``metrics`` (``SUM(orders.total)``, filters)
==========================================  =============================================

Tables are keyed by the relation name the database knows (a model's ``alias``, a source's
``identifier``), which is what the connector's catalog and the model's SQL use.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from relay_nb.errors import ConfigurationError
from relay_nb.knowledge.model import JoinPath, Knowledge, Metric, TableKnowledge
from relay_nb.untrusted import MANIFEST, load_json, read_text

__all__ = ["is_dbt_manifest", "knowledge_from_dbt"]

ORIGIN = "dbt manifest"
"""What the prompt says the descriptions were imported from."""

_TABLE_TYPES = frozenset({"model", "seed", "snapshot"})
_AGGREGATES = {
    "sum": "SUM({})",
    "count": "COUNT({})",
    "count_distinct": "COUNT(DISTINCT {})",
    "average": "AVG({})",
    "avg": "AVG({})",
    "min": "MIN({})",
    "max": "MAX({})",
    "sum_boolean": "SUM(CASE WHEN {} THEN 1 ELSE 0 END)",
}
"""dbt aggregations every dialect relay_nb guards can write (``median`` and ``percentile``
are not, so metrics over them are not imported)."""
_REF = re.compile(r"""ref\(\s*['"]([^'"]+)['"]\s*(?:,\s*['"]([^'"]+)['"]\s*)?\)""")
_JINJA_DIMENSION = re.compile(
    r"""\{\{\s*(?:Dimension|TimeDimension|Entity)\(\s*['"]([^'"]+)['"][^)]*\)\s*\}\}"""
)
_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def is_dbt_manifest(data: Any) -> bool:
    """Whether parsed JSON is a dbt manifest (its metadata names the manifest schema)."""
    metadata = data.get("metadata") if isinstance(data, Mapping) else None
    version = metadata.get("dbt_schema_version", "") if isinstance(metadata, Mapping) else ""
    return "manifest" in str(version) and isinstance(data.get("nodes"), Mapping)


def knowledge_from_dbt(manifest: str | Path | Mapping[str, Any]) -> Knowledge:
    """Knowledge from a ``manifest.json`` path (or its parsed content)."""
    if isinstance(manifest, Mapping):
        data: Any = manifest
        where = "the dbt manifest"
    else:
        path = Path(manifest).expanduser()
        where = str(path)
        try:
            data = load_json(read_text(path, MANIFEST), where=path.name, bounds=MANIFEST)
        except FileNotFoundError:
            raise ConfigurationError(
                f"dbt manifest {where!r} does not exist; run `dbt parse` in the project to "
                "write target/manifest.json"
            ) from None
        except (OSError, ValueError) as exc:
            raise ConfigurationError(f"cannot read dbt manifest {where!r}: {exc}") from None
    if not is_dbt_manifest(data):
        raise ConfigurationError(
            f"{where} is not a dbt manifest (no metadata.dbt_schema_version); point at the "
            "project's target/manifest.json"
        )
    return _Reader(data).knowledge()


class _Reader:
    def __init__(self, data: Mapping[str, Any]) -> None:
        self.nodes: Mapping[str, Any] = data.get("nodes") or {}
        self.sources: Mapping[str, Any] = data.get("sources") or {}
        self.semantic_models: Mapping[str, Any] = data.get("semantic_models") or {}
        self.metrics: Mapping[str, Any] = data.get("metrics") or {}
        self.relation = {  # unique_id and model name -> the relation name in the database
            unique_id: _relation_name(node)
            for unique_id, node in {**self.nodes, **self.sources}.items()
            if node.get("resource_type") in (*_TABLE_TYPES, "source")
        }
        self.by_name = {
            node.get("name"): self.relation[uid]
            for uid, node in self.nodes.items()
            if uid in self.relation
        }

    def knowledge(self) -> Knowledge:
        tables = self._tables()
        joins: list[JoinPath] = []
        for node in self.nodes.values():
            if node.get("resource_type") == "test":
                self._apply_test(node, tables, joins)
        dimensions, measures, entity_joins = self._semantic_models()
        return Knowledge(
            tables={
                name: TableKnowledge(**fields, origin=ORIGIN) for name, fields in tables.items()
            },
            dimensions={name: e for name, e in dimensions.items() if "__" not in name},
            metrics=tuple(self._metrics(measures, dimensions)),
            joins=tuple(_unique_joins([*joins, *entity_joins])),
        )

    def _tables(self) -> dict[str, dict[str, Any]]:
        tables: dict[str, dict[str, Any]] = {}
        for unique_id, node in {**self.nodes, **self.sources}.items():
            if unique_id not in self.relation:
                continue
            columns = {
                name: {"description": _text(column.get("description"))}
                for name, column in (node.get("columns") or {}).items()
            }
            tables[self.relation[unique_id]] = {
                "description": _text(node.get("description")),
                "columns": columns,
            }
        return tables

    def _apply_test(
        self, node: Mapping[str, Any], tables: dict[str, dict[str, Any]], joins: list[JoinPath]
    ) -> None:
        meta = node.get("test_metadata") or {}
        kwargs = meta.get("kwargs") or {}
        column = node.get("column_name") or kwargs.get("column_name")
        table = self.relation.get(node.get("attached_node") or "")
        if table is None:
            depends = (node.get("depends_on") or {}).get("nodes") or []
            table = next((self.relation[d] for d in depends if d in self.relation), None)
        if table is None or not column or table not in tables:
            return
        if meta.get("name") == "accepted_values" and isinstance(kwargs.get("values"), list):
            entry = tables[table]["columns"].setdefault(column, {"description": ""})
            entry["values"] = tuple(str(v) for v in kwargs["values"])
        elif meta.get("name") == "relationships":
            match = _REF.search(str(kwargs.get("to", "")))
            target = self.by_name.get(match.group(2) or match.group(1)) if match else None
            field = kwargs.get("field")
            if target and field:
                joins.append(
                    JoinPath(left=table, right=target, on=f"{table}.{column} = {target}.{field}")
                )

    def _semantic_models(
        self,
    ) -> tuple[dict[str, str], dict[str, tuple[str, str, str]], list[JoinPath]]:
        """Dimensions (name -> expression; also ``entity__name``, as filters refer to them),
        measures (name -> (aggregation, expression, description)) and the joins shared
        entities imply."""
        dimensions: dict[str, str] = {}
        measures: dict[str, tuple[str, str, str]] = {}
        primary: dict[str, tuple[str, str]] = {}
        foreign: list[tuple[str, str, str]] = []
        for model in self.semantic_models.values():
            table = self._semantic_table(model)
            if table is None:
                continue
            for entity in model.get("entities") or []:
                expr = _qualified(table, entity.get("expr") or entity.get("name", ""))
                if entity.get("type") in ("primary", "unique", "natural"):
                    primary[entity.get("name", "")] = (table, expr)
                elif entity.get("type") == "foreign":
                    foreign.append((entity.get("name", ""), table, expr))
            owners = [
                e.get("name", "")
                for e in model.get("entities") or []
                if e.get("type") in ("primary", "unique", "natural")
            ]
            for dimension in model.get("dimensions") or []:
                expr = _qualified(table, dimension.get("expr") or dimension.get("name", ""))
                dimensions.setdefault(dimension["name"], expr)
                for owner in owners:
                    dimensions[f"{owner}__{dimension['name']}"] = expr
            for measure in model.get("measures") or []:
                expr = _qualified(table, measure.get("expr") or measure.get("name", ""))
                measures[measure["name"]] = (
                    str(measure.get("agg", "sum")).lower(),
                    expr,
                    _text(measure.get("description")),
                )
        joins = [
            JoinPath(left=table, right=primary[name][0], on=f"{expr} = {primary[name][1]}")
            for name, table, expr in foreign
            if name in primary and primary[name][0] != table
        ]
        return dimensions, measures, joins

    def _semantic_table(self, model: Mapping[str, Any]) -> str | None:
        relation = model.get("node_relation") or {}
        if relation.get("alias"):
            return str(relation["alias"])
        match = _REF.search(str(model.get("model", "")))
        return self.by_name.get(match.group(2) or match.group(1)) if match else None

    def _metrics(
        self, measures: Mapping[str, tuple[str, str, str]], dimensions: Mapping[str, str]
    ) -> Iterable[Metric]:
        filters = {
            m.get("name"): (
                *_where(m.get("filter"), dimensions),
                *_where(
                    ((m.get("type_params") or {}).get("measure") or {}).get("filter"), dimensions
                ),
            )
            for m in self.metrics.values()
        }
        parts: dict[str, tuple[str, str]] = {}  # simple metric -> (aggregate template, expr)
        for metric in self.metrics.values():
            params = metric.get("type_params") or {}
            if metric.get("type", "simple") in ("simple", "cumulative"):
                measure = (params.get("measure") or {}).get("name")
                # None (no measure named) is in no manifest's measures either
                if (
                    measure is not None
                    and measure in measures
                    and measures[measure][0] in _AGGREGATES
                ):
                    aggregation, expr, _ = measures[measure]
                    parts[metric["name"]] = (_AGGREGATES[aggregation], expr)

        def aggregate(name: str, where: tuple[str, ...]) -> str:
            """The simple metric ``name`` with ``where`` inside its aggregate."""
            template, expr = parts[name]
            condition = " AND ".join(where)
            return template.format(f"CASE WHEN {condition} THEN {expr} END" if where else expr)

        sql = {name: template.format(expr) for name, (template, expr) in parts.items()}
        for metric in self.metrics.values():
            params = metric.get("type_params") or {}
            if metric.get("type") == "ratio":
                sides = [params.get("numerator") or {}, params.get("denominator") or {}]
                if all(side.get("name") in parts for side in sides):
                    num, den = (
                        aggregate(
                            side["name"],
                            (
                                *filters[side["name"]],
                                *_where(side.get("filter"), dimensions),
                                *filters[metric["name"]],
                            ),
                        )
                        for side in sides
                    )
                    sql[metric["name"]] = f"1.0 * {num} / NULLIF({den}, 0)"  # not integer division
                    filters[metric["name"]] = ()  # inside each side now
            elif metric.get("type") == "derived" and params.get("expr"):
                sql.setdefault(metric["name"], str(params["expr"]))
        for metric in self.metrics.values():
            name = metric.get("name")
            if name not in sql:
                continue
            label = _text(metric.get("label"))
            plain = label.lower().replace(" ", "_") in ("", name.lower())
            yield Metric(
                name=name,
                sql=sql[name],
                filters=filters[name],
                description=_text(metric.get("description")) or label,
                origin=ORIGIN,
                synonyms=() if plain else (label,),
            )


def _where(block: Any, dimensions: Mapping[str, str]) -> tuple[str, ...]:
    """A ``filter``'s where-clauses, Jinja references (``{{ Dimension('order__status') }}``)
    made plain SQL."""
    found = []
    wheres = block.get("where_filters") if isinstance(block, Mapping) else None
    for where in wheres or []:
        template = where.get("where_sql_template") if isinstance(where, Mapping) else None
        if template:
            plain = _JINJA_DIMENSION.sub(lambda m: _dimension(m.group(1), dimensions), template)
            found.append(" ".join(plain.split()))
    return tuple(found)


def _dimension(reference: str, dimensions: Mapping[str, str]) -> str:
    """``order__status`` (entity__dimension) -> the dimension's expression: the entity's own
    first, else any dimension of that name."""
    if reference in dimensions:
        return dimensions[reference]
    name = reference.split("__")[-1]
    return dimensions.get(name, name)


def _relation_name(node: Mapping[str, Any]) -> str:
    return str(node.get("alias") or node.get("identifier") or node.get("name"))


def _qualified(table: str, expr: str) -> str:
    return f"{table}.{expr}" if _IDENTIFIER.fullmatch(expr) else expr


def _text(value: Any) -> str:
    return " ".join(str(value).split()) if value else ""


def _unique_joins(joins: Iterable[JoinPath]) -> Iterable[JoinPath]:
    seen: set[tuple[str, str]] = set()
    for join in joins:
        key = tuple(sorted((join.left, join.right)))
        if key not in seen:
            seen.add(key)  # type: ignore[arg-type]
            yield join
