"""Hypothesis strategies for the Mongo guard: read-only pipelines, and the same with one
forbidden thing planted somewhere in them.

* :func:`pipelines` — random pipelines of the allowed read stages (``$match``, ``$project``,
  ``$group``, ``$lookup`` and ``$unionWith`` on allowed collections, ``$facet`` with
  sub-pipelines, ``$setWindowFields`` …) whose expressions are random trees of allowed
  operators, over field names that include unicode, dots and spaces, with string *values*
  that look like attacks (``"$where"``, ``"function () {…}"``): values are data.
* :func:`poisoned` — such a pipeline with one injection at a random place: a refused stage
  (``$out``, ``$merge``, ``$currentOp`` …) in any (sub-)pipeline, a refused operator
  (``$where``, ``$function``, ``$accumulator``) as a key of any object however deep, a
  JavaScript value (``bson.Code``), a look-alike key (``$Where``, ``$wh\\u0435re``,
  ``$out`` + a zero-width space), or a ``$lookup``/``$unionWith``/``$graphLookup`` of a
  collection off the allowlist (``internal_notes``, ``system.js``, ``Orders``, a Cyrillic
  ``\u043e``). Each comes with the rule the guard must answer with.
* :func:`server_pipelines` — a typed subset every MongoDB-wire server runs without error,
  for executing accepted pipelines for real.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from bson.code import Code
from hypothesis import strategies as st

from relay_nb.connectors.mongo.operators import REFUSED

__all__ = [
    "ALLOWED",
    "Poisoned",
    "pipelines",
    "poisoned",
    "server_pipelines",
]

ALLOWED = ("customers", "orders", "products", "events", "paid_orders")
"""The allowlist (as in tests/connectors/mongo/mongo_support.py)."""
OFF_LIST = (
    "internal_notes", "system.js", "system.profile", "system.users", "admin.system.users",
    "Orders", "ORDERS", "orders ", " orders", "\u043erders", "orders\u200b", "shop.orders",
    "orders.system.x", "",
)  # fmt: skip
FIELDS = (
    "status", "total", "items", "items.qty", "items.sku", "customer_id", "name", "email",
    "plan", "tags", "address.city", "address.geo.lat", "payload.meta.source.name", "type",
    "price", "stock", "category", "_id", "note", "café", "名前", "a b", "x.y.z",
)  # fmt: skip
ATTACK_STRINGS = (
    "$where", "$out", "function () { return true }", "db.dropDatabase()", "this.a == 1",
    "'; sleep(1000); '", "{\"$where\": \"1\"}", "$$ROOT", "sleep(5000)",
)  # fmt: skip
_BINARY = (
    "$add",
    "$subtract",
    "$multiply",
    "$max",
    "$min",
    "$eq",
    "$ne",
    "$gt",
    "$lte",
    "$and",
    "$or",
    "$ifNull",
    "$cmp",
    "$concat",
    "$setUnion",
    "$in",
)
_UNARY = (
    "$toUpper",
    "$toLower",
    "$abs",
    "$size",
    "$not",
    "$isArray",
    "$toString",
    "$type",
    "$first",
    "$last",
    "$isNumber",
    "$literal",
    "$trunc",
    "$strLenCP",
)
_ACCUMULATORS = ("$sum", "$avg", "$min", "$max", "$push", "$addToSet", "$first", "$last")
_QUERY_OPS = ("$eq", "$ne", "$gt", "$gte", "$lt", "$lte")
_LOOKALIKES = (
    "$Where", "$WHERE", "$wh\u0435re", "$where\u200b", "$out ", "$0ut", "$Out", "$MERGE",
    "$function_", "$accumulator2", "$\uff57here", "$where\x00", "$currentop", "$eval",
    "$code", "$javascript",
)  # fmt: skip
_NAMES = st.sampled_from(("n", "total2", "c", "out", "where", "x y", "é", "merge", "function"))

Draw = Callable[[st.SearchStrategy[Any]], Any]

# --------------------------------------------------------------------------------------------
# Values, expressions, filters

_SCALARS = st.one_of(
    st.integers(-1000, 1000),
    st.floats(min_value=-1e6, max_value=1e6),
    st.sampled_from(ATTACK_STRINGS),
    st.text(max_size=8),
    st.booleans(),
    st.none(),
)
_FIELD = st.sampled_from(FIELDS)


def _expression(leaf_only: bool = False) -> st.SearchStrategy[Any]:
    leaves = st.one_of(_FIELD.map(lambda f: "$" + f), _SCALARS)
    if leaf_only:
        return leaves

    def extend(children: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
        return st.one_of(
            st.builds(lambda op, a, b: {op: [a, b]}, st.sampled_from(_BINARY), children, children),
            st.builds(lambda op, a: {op: a}, st.sampled_from(_UNARY), children),
            st.builds(
                lambda a, b, c: {"$cond": {"if": a, "then": b, "else": c}},
                children,
                children,
                children,
            ),
            st.builds(
                lambda a, b, c: {"$switch": {"branches": [{"case": a, "then": b}], "default": c}},
                children,
                children,
                children,
            ),
            st.builds(lambda a, b: {"$let": {"vars": {"v": a}, "in": b}}, children, children),
            st.builds(lambda a, b: {"$map": {"input": a, "as": "i", "in": b}}, children, children),
            st.lists(children, max_size=3),
        )

    return st.recursive(leaves, extend, max_leaves=8)


_EXPRESSIONS = _expression()


def _filter() -> st.SearchStrategy[dict[str, Any]]:
    simple = st.one_of(
        st.builds(lambda f, v: {f: v}, _FIELD, _SCALARS),
        st.builds(lambda f, op, v: {f: {op: v}}, _FIELD, st.sampled_from(_QUERY_OPS), _SCALARS),
        st.builds(lambda f, v: {f: {"$in": v}}, _FIELD, st.lists(_SCALARS, max_size=3)),
        st.builds(lambda f, v: {f: {"$exists": v}}, _FIELD, st.booleans()),
        st.builds(lambda f: {f: {"$regex": "^a.*", "$options": "i"}}, _FIELD),
        st.builds(lambda f, v: {f: {"$not": {"$gt": v}}}, _FIELD, _SCALARS),
        st.builds(lambda f, v: {f: {"$elemMatch": {"qty": {"$gte": v}}}}, _FIELD, _SCALARS),
        st.builds(lambda e: {"$expr": e}, _EXPRESSIONS),
        st.builds(lambda f: {f: {"$type": "string"}}, _FIELD),
    )

    def extend(children: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
        combined = st.lists(children, min_size=1, max_size=3)
        return st.builds(
            lambda op, xs: {op: xs}, st.sampled_from(("$and", "$or", "$nor")), combined
        )

    return st.recursive(simple, extend, max_leaves=4)


_FILTERS = _filter()

# --------------------------------------------------------------------------------------------
# Stages and pipelines


def _stage(sub: st.SearchStrategy[list[dict[str, Any]]]) -> st.SearchStrategy[dict[str, Any]]:
    """One allowed stage; ``sub`` draws the sub-pipelines of $lookup, $unionWith, $facet."""
    collection = st.sampled_from(ALLOWED)
    stages = [
        st.builds(lambda f: {"$match": f}, _FILTERS),
        st.builds(
            lambda d: {"$project": d},
            st.dictionaries(
                _FIELD, st.one_of(st.sampled_from((0, 1)), _EXPRESSIONS), min_size=1, max_size=3
            ),
        ),
        st.builds(lambda d: {"$addFields": d}, st.dictionaries(_NAMES, _EXPRESSIONS, max_size=2)),
        st.builds(lambda d: {"$set": d}, st.dictionaries(_NAMES, _EXPRESSIONS, max_size=2)),
        st.builds(lambda f: {"$unset": f}, st.one_of(_FIELD, st.lists(_FIELD, max_size=2))),
        st.builds(
            lambda key, name, acc, e: {"$group": {"_id": key, name: {acc: e}}},
            st.one_of(st.none(), _EXPRESSIONS),
            _NAMES,
            st.sampled_from(_ACCUMULATORS),
            _EXPRESSIONS,
        ),
        st.builds(
            lambda d: {"$sort": d},
            st.dictionaries(_FIELD, st.sampled_from((1, -1)), min_size=1, max_size=2),
        ),
        st.builds(lambda n: {"$limit": n}, st.integers(1, 500)),
        st.builds(lambda n: {"$skip": n}, st.integers(0, 50)),
        st.builds(lambda f: {"$unwind": "$" + f}, _FIELD),
        st.builds(
            lambda f, b: {"$unwind": {"path": "$" + f, "preserveNullAndEmptyArrays": b}},
            _FIELD,
            st.booleans(),
        ),
        st.builds(lambda name: {"$count": name}, _NAMES),
        st.builds(lambda e: {"$sortByCount": e}, _EXPRESSIONS),
        st.builds(lambda e: {"$replaceRoot": {"newRoot": e}}, _EXPRESSIONS),
        st.builds(lambda n: {"$sample": {"size": n}}, st.integers(1, 20)),
        st.builds(
            lambda c, a, b, name: {
                "$lookup": {"from": c, "localField": a, "foreignField": b, "as": name}
            },
            collection,
            _FIELD,
            _FIELD,
            _NAMES,
        ),
        st.builds(
            lambda c, e, p, name: {
                "$lookup": {"from": c, "let": {"v": e}, "pipeline": p, "as": name}
            },
            collection,
            _EXPRESSIONS,
            sub,
            _NAMES,
        ),
        st.builds(lambda c: {"$unionWith": c}, collection),
        st.builds(lambda c, p: {"$unionWith": {"coll": c, "pipeline": p}}, collection, sub),
        st.builds(lambda d: {"$facet": d}, st.dictionaries(_NAMES, sub, min_size=1, max_size=2)),
        st.builds(
            lambda c, e, a, b: {
                "$graphLookup": {
                    "from": c,
                    "startWith": e,
                    "connectFromField": a,
                    "connectToField": b,
                    "as": "g",
                }
            },
            collection,
            _EXPRESSIONS,
            _FIELD,
            _FIELD,
        ),
        st.builds(
            lambda p, f, acc, e: {
                "$setWindowFields": {
                    "partitionBy": p,
                    "sortBy": {f: 1},
                    "output": {"w": {acc: e, "window": {"documents": ["unbounded", "current"]}}},
                }
            },
            _EXPRESSIONS,
            _FIELD,
            st.sampled_from(("$sum", "$max", "$min")),
            _EXPRESSIONS,
        ),
        st.builds(
            lambda e: {"$bucket": {"groupBy": e, "boundaries": [0, 10, 100], "default": "x"}},
            _EXPRESSIONS,
        ),
    ]
    return st.one_of(stages)


# built once, innermost first (strategies are objects: rebuilding them per draw is slow)
_INNERMOST = st.lists(_stage(st.builds(list)), max_size=2)
_INNER = st.lists(_stage(_INNERMOST), max_size=3)
_PIPELINES = st.lists(_stage(_INNER), max_size=6)


def pipelines() -> st.SearchStrategy[list[dict[str, Any]]]:
    """A random pipeline of allowed stages over allowed collections (three levels deep)."""
    return st.deferred(lambda: _PIPELINES)  # deferred: a short repr in hypothesis's reports


# --------------------------------------------------------------------------------------------
# Injections


@dataclass(frozen=True)
class Poisoned:
    pipeline: list[dict[str, Any]]
    injection: str
    rule: str
    """The rule the guard must refuse it with."""

    def __repr__(self) -> str:
        return f"Poisoned({self.injection!r} -> {self.rule}: {self.pipeline!r})"


def _places(pipeline: list[Any], path: tuple[Any, ...]) -> list[tuple[str, tuple[Any, ...]]]:
    """Where an injection can go, by the guard's own structure: ("pipeline", path to a
    stage list) and objects — ("lookup", a $lookup spec), ("union", a $unionWith spec),
    ("facet", a $facet spec), ("object", any other object inside a stage)."""
    found: list[tuple[str, tuple[Any, ...]]] = [("pipeline", path)]
    for index, stage in enumerate(pipeline):
        ((operator, spec),) = stage.items()
        at = (*path, index, operator)
        if operator == "$lookup":
            found.append(("lookup", at))
            for key, value in spec.items():
                if key == "pipeline":
                    found += _places(value, (*at, key))
                else:
                    found += _objects(value, (*at, key))
        elif operator == "$unionWith" and isinstance(spec, dict):
            found.append(("union", at))
            if "pipeline" in spec:
                found += _places(spec["pipeline"], (*at, "pipeline"))
        elif operator == "$facet":
            found.append(("facet", at))
            for name, sub in spec.items():
                found += _places(sub, (*at, name))
        else:
            found += _objects(spec, at)
    return found


def _objects(value: Any, path: tuple[Any, ...]) -> list[tuple[str, tuple[Any, ...]]]:
    found: list[tuple[str, tuple[Any, ...]]] = []
    if isinstance(value, dict):
        found.append(("object", path))
        for key, item in value.items():
            found += _objects(item, (*path, key))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            found += _objects(item, (*path, index))
    return found


def _at(tree: Any, path: tuple[Any, ...]) -> Any:
    for step in path:
        tree = tree[step]
    return tree


def _collection_rule(name: str) -> str:
    if name.startswith("system.") or ".system." in name:
        return "system_collection"
    return "collection_not_allowed"


@st.composite
def poisoned(draw: Draw) -> Poisoned:
    """A valid pipeline with exactly one forbidden thing in it, and the rule for it."""
    tree = copy.deepcopy(draw(pipelines()))
    places = _places(tree, ())
    pipelines_at = [path for kind, path in places if kind == "pipeline"]
    targets = [(kind, path) for kind, path in places if kind != "pipeline"]
    kind = draw(st.sampled_from(("stage", "key", "key", "code", "collection")))
    if kind in ("key", "code") and not targets:
        kind = "stage"
    if kind == "stage":
        target = _at(tree, draw(st.sampled_from(pipelines_at)))
        name = draw(st.sampled_from((*REFUSED, *_LOOKALIKES)))
        spec = copy.deepcopy(draw(st.sampled_from(({}, "x", {"into": "orders"}, [], 1))))
        target.insert(draw(st.integers(0, len(target))), {name: spec})
        return Poisoned(tree, f"stage {name!r}", REFUSED.get(name, "stage_not_allowed"))
    if kind == "key":
        where, path = draw(st.sampled_from(targets))
        name = draw(
            st.sampled_from(
                (
                    "$where",
                    "$function",
                    "$accumulator",
                    "$out",
                    "$merge",
                    "$currentOp",
                    *_LOOKALIKES,
                )
            )
        )
        value = draw(st.sampled_from(("sleep(1000)", {"body": "function () {}", "args": []}, 1)))
        _at(tree, path)[name] = copy.deepcopy(value)
        # $unionWith takes coll and pipeline only; elsewhere the key itself is judged
        rule = "bad_stage" if where == "union" else REFUSED.get(name, "operator_not_allowed")
        return Poisoned(tree, f"key {name!r} in a {where}", rule)
    if kind == "code":
        # a facet maps names to pipelines and $unionWith takes no values: both checked apart
        objects = [path for where, path in targets if where in ("object", "lookup")]
        if objects:
            key = draw(st.sampled_from(("x", "startWith", "newRoot", "in")))
            _at(tree, draw(st.sampled_from(objects)))[key] = Code("function () { sleep(1) }")
            return Poisoned(tree, "JavaScript value", "javascript")
    # a collection off the allowlist
    name = draw(st.sampled_from(OFF_LIST))
    form = draw(st.sampled_from(("lookup", "union", "union_doc", "graph")))
    stage = {
        "lookup": {"$lookup": {"from": name, "localField": "a", "foreignField": "b", "as": "x"}},
        "union": {"$unionWith": name},
        "union_doc": {"$unionWith": {"coll": name, "pipeline": []}},
        "graph": {
            "$graphLookup": {
                "from": name,
                "startWith": "$a",
                "connectFromField": "a",
                "connectToField": "b",
                "as": "g",
            }
        },
    }[form]
    target = _at(tree, draw(st.sampled_from(pipelines_at)))
    target.insert(draw(st.integers(0, len(target))), stage)
    return Poisoned(tree, f"{form} of {name!r}", _collection_rule(name))


# --------------------------------------------------------------------------------------------
# Pipelines every server runs: typed, over the seeded shop's orders


_ORDER_NUMBERS = st.sampled_from(("$total", "$items.qty"))


def _server_stage() -> st.SearchStrategy[dict[str, Any]]:
    number = st.one_of(st.sampled_from(("$total",)), st.integers(-5, 200))
    arithmetic = st.builds(
        lambda op, a, b: {op: [a, b]},
        st.sampled_from(("$add", "$subtract", "$multiply", "$max", "$min")),
        number,
        number,
    )
    text = st.one_of(
        st.just("$status"),
        st.sampled_from(ATTACK_STRINGS).map(lambda s: {"$literal": s}),
        st.builds(lambda s: {"$toUpper": s}, st.just("$status")),
        st.builds(
            lambda s: {"$concat": ["$status", {"$literal": s}]}, st.sampled_from(ATTACK_STRINGS)
        ),
    )
    match = st.one_of(
        st.builds(lambda s: {"status": s}, st.sampled_from(("paid", "shipped", "$where", "x"))),
        st.builds(
            lambda op, v: {"total": {op: v}}, st.sampled_from(_QUERY_OPS), st.integers(0, 200)
        ),
        st.builds(lambda v: {"$expr": {"$gt": ["$total", v]}}, st.integers(0, 200)),
        st.builds(lambda v: {"items": {"$elemMatch": {"qty": {"$gte": v}}}}, st.integers(1, 3)),
        st.just({"note": {"$exists": True}}),
        st.builds(
            lambda p, v: {"status": {"$regex": p, "$options": "i", "$ne": v}},
            st.sampled_from(("^p", "d$", "a")),
            st.sampled_from(("paid", "pending")),
        ),
        st.just({"$or": [{"status": "paid"}, {"total": {"$lt": 20}}]}),
    )
    return st.one_of(
        st.builds(lambda m: {"$match": m}, match),
        st.builds(lambda a, t: {"$addFields": {"a": a, "t": t}}, arithmetic, text),
        st.builds(lambda t: {"$set": {"label": t}}, text),
        st.builds(lambda n: {"$limit": n}, st.integers(1, 300)),
        st.builds(lambda n: {"$skip": n}, st.integers(0, 30)),
        st.just({"$unwind": "$items"}),
        st.just({"$sort": {"total": -1, "_id": 1}}),
        st.builds(
            lambda acc: {"$group": {"_id": "$status", "v": {acc: "$total"}, "n": {"$sum": 1}}},
            st.sampled_from(("$sum", "$max", "$min", "$avg")),
        ),
        st.just({"$project": {"status": 1, "total": 1, "_id": 0}}),
        st.just({"$count": "n"}),
        st.just({"$sortByCount": "$status"}),
        st.just(
            {
                "$lookup": {
                    "from": "customers",
                    "localField": "customer_id",
                    "foreignField": "_id",
                    "as": "customer",
                }
            }
        ),
        st.just({"$unionWith": {"coll": "products", "pipeline": [{"$limit": 3}]}}),
        st.just(
            {"$facet": {"n": [{"$count": "n"}], "top": [{"$sort": {"_id": 1}}, {"$limit": 2}]}}
        ),
    )


_SERVER_PIPELINES = st.lists(_server_stage(), max_size=5).map(copy.deepcopy)


def server_pipelines() -> st.SearchStrategy[list[dict[str, Any]]]:
    """Pipelines on ``orders`` that every MongoDB-wire server runs without error."""
    return st.deferred(lambda: _SERVER_PIPELINES)
