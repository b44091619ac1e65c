"""Collection shapes inferred from sampled documents, and their compact prompt rendering.

MongoDB has no catalog of fields, so the connector samples ``sample_size`` documents per
collection (one ``$sample``, or ``find().limit(n)`` where ``$sample`` is refused) and infers
each field's types. The result is best effort and the prompt says so: a field absent from
the sample may still exist. Sampling is bounded in bytes as results are: documents are read
one at a time in batches sized to the bytes left (:mod:`~relay_nb.connectors.mongo.fetch`),
each is observed and dropped, and a collection's sample stops at its share of ``max_bytes``
(its first document is always observed, so a collection of large documents still shows its
shape). One line per
collection::

    orders (~250 docs) { _id: objectid, status: string, note?: string|null,
                         items: array<{ sku: string, qty: int }>, shipped_at: date|null }

``?`` marks a field missing from some sampled documents, ``|`` a union of types seen, and
objects nested deeper than ``max_depth`` levels below the top-level fields collapse to
``object`` — the same depth to which result frames flatten nested fields into columns.
"""

from __future__ import annotations

import datetime as dt
import json
import re
from collections import Counter
from collections.abc import Iterable, Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from pydantic import BaseModel, ConfigDict

from relay_nb.connectors.bounds import DEFAULT_MAX_RESULT_BYTES
from relay_nb.connectors.mongo.fetch import (
    Reading,
    first_batch,
    open_cursor,
    read_documents,
)
from relay_nb.runtime.types import estimate_tokens

__all__ = [
    "CollectionInfo",
    "MongoCatalog",
    "infer_shape",
    "rank_collections",
    "read_catalog",
    "render_collections",
]

_MAX_FIELDS = 40
"""Fields shown per object; more become ``…+N``, so one wide collection cannot eat the prompt."""
_MAX_ARRAY_ITEMS = 20
"""Array elements inspected per array: enough to see the element types."""
_MAX_WORKERS = 8
_MIN_SAMPLE_BYTES = 256 << 10
"""A collection's sample may always use this much, however many collections share the pass."""
_EXECUTION_TIMEOUT = 50
"""MaxTimeMSExpired: a sample that ran out of time is not retried as a find."""


class CollectionInfo(BaseModel):
    """One queryable collection (or view) as the prompt shows it."""

    model_config = ConfigDict(frozen=True)

    name: str
    kind: str = "collection"
    sampled: int = 0
    estimated_count: int | None = None
    shape: str = "{ }"
    fields: tuple[str, ...] = ()
    """Dotted paths of every field seen, for ranking by the question's words."""

    def line(self) -> str:
        size = "" if self.estimated_count is None else f" (~{self.estimated_count:,} docs)"
        view = "view " if self.kind == "view" else ""
        return f"  - {view}{self.name}{size} {self.shape}"


class MongoCatalog(BaseModel):
    """Every allowed collection of one database, sampled once and cached by the connector."""

    model_config = ConfigDict(frozen=True)

    database: str
    sample_size: int
    collections: tuple[CollectionInfo, ...]

    def names(self) -> list[str]:
        return [c.name for c in self.collections]


def read_catalog(
    database: Any,
    listed: Sequence[tuple[str, str]],
    *,
    sample_size: int,
    max_depth: int,
    max_time_ms: int,
    max_bytes: int = DEFAULT_MAX_RESULT_BYTES,
) -> MongoCatalog:
    """Sample every ``(name, kind)`` in ``listed`` concurrently (pymongo clients are
    thread-safe, and a sample is one round trip that mostly waits), each within an equal
    share of ``max_bytes`` of encoded documents."""
    share = max(_MIN_SAMPLE_BYTES, max_bytes // max(1, len(listed)))

    def one(entry: tuple[str, str]) -> CollectionInfo:
        name, kind = entry
        sampled = _Counted(_sample(database, name, sample_size, max_time_ms, share))
        shape, fields = infer_shape(sampled, max_depth=max_depth)
        return CollectionInfo(
            name=name,
            kind=kind,
            sampled=sampled.count,
            estimated_count=_estimated_count(database[name], kind, max_time_ms),
            shape=shape,
            fields=fields,
        )

    workers = max(1, min(_MAX_WORKERS, len(listed)))
    with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="relay-mongo-sample") as pool:
        infos = tuple(pool.map(one, listed))
    return MongoCatalog(database=database.name, sample_size=sample_size, collections=infos)


class _Counted:
    """An iterable that counts what was taken from it."""

    def __init__(self, items: Iterator[Any]) -> None:
        self._items = items
        self.count = 0

    def __iter__(self) -> Iterator[Any]:
        for item in self._items:
            self.count += 1
            yield item


def _sample(
    database: Any, name: str, size: int, max_time_ms: int, max_bytes: int
) -> Iterator[dict[str, Any]]:
    """Up to ``size`` documents of one collection, decoded one at a time, until the next
    would take the encoded bytes read past ``max_bytes`` (the first is always taken)."""
    from pymongo.errors import OperationFailure

    sample = {"aggregate": name, "pipeline": [{"$sample": {"size": size}}]}
    taken = 0
    try:
        for document in _bounded(database, {**sample, "maxTimeMS": max_time_ms}, size, max_bytes):
            taken += 1
            yield document
    except OperationFailure as exc:
        if taken or exc.code == _EXECUTION_TIMEOUT:
            raise
        # servers or views without $sample: the first documents will do
        first = {"find": name, "filter": {}, "limit": size, "maxTimeMS": max_time_ms}
        yield from _bounded(database, first, size, max_bytes)


def _bounded(
    database: Any, command: dict[str, Any], size: int, max_bytes: int
) -> Iterator[dict[str, Any]]:
    reading = Reading()
    with open_cursor(database, command, batch=first_batch(max_bytes, size)) as cursor:
        for document in read_documents(
            cursor, limit=size, room=lambda: max_bytes - reading.bytes, reading=reading
        ):
            if reading.bytes > max_bytes and reading.read > 1:
                return  # closing the cursor kills it: the rest is never sent
            yield document
            del document  # not held while the next batch arrives


def _estimated_count(collection: Any, kind: str, max_time_ms: int) -> int | None:
    """The collection's metadata count (no scan); views have none worth a query."""
    if kind != "collection":
        return None
    from pymongo.errors import PyMongoError

    try:
        return int(collection.estimated_document_count(maxTimeMS=max_time_ms))
    except PyMongoError:
        return None


# -- inference ----------------------------------------------------------------------------------


class _Node:
    """Types seen at one path; ``objects`` counts the documents the children were seen in."""

    __slots__ = ("children", "items", "objects", "present", "types")

    def __init__(self) -> None:
        self.types: Counter[str] = Counter()
        self.present = 0
        self.objects = 0
        self.children: dict[str, _Node] = {}
        self.items: _Node | None = None

    def observe(self, value: Any, depth: int, max_depth: int) -> None:
        kind = type_name(value)
        self.types[kind] += 1
        if kind == "object" and depth <= max_depth:
            self.objects += 1
            for key, item in value.items():
                child = self.children.setdefault(str(key), _Node())
                child.present += 1
                child.observe(item, depth + 1, max_depth)
        elif kind == "array":
            if self.items is None:
                self.items = _Node()
            for item in value[:_MAX_ARRAY_ITEMS]:  # elements sit at the array's own depth
                self.items.observe(item, depth, max_depth)


def type_name(value: Any) -> str:
    """The short BSON type name the prompt uses."""
    from bson import Binary, Code, Decimal128, MaxKey, MinKey, ObjectId, Regex, Timestamp

    checks: tuple[tuple[type | tuple[type, ...], str], ...] = (
        (bool, "bool"),
        (int, "int"),
        (float, "double"),
        (str, "string"),
        (dt.datetime, "date"),
        (ObjectId, "objectid"),
        (Mapping, "object"),
        ((list, tuple), "array"),
        (Decimal128, "decimal"),
        ((bytes, Binary), "binary"),
        (Timestamp, "timestamp"),
        (Regex, "regex"),
        (Code, "javascript"),
        ((MinKey, MaxKey), "minmaxkey"),
    )
    if value is None:
        return "null"
    for types, name in checks:
        if isinstance(value, types):
            return name
    return type(value).__name__.lower()


def infer_shape(
    documents: Iterable[Mapping[str, Any]], *, max_depth: int
) -> tuple[str, tuple[str, ...]]:
    """The rendered shape of ``documents`` and the dotted paths of every field seen
    (``documents`` is read once, one at a time: a cursor need not be held whole)."""
    root = _Node()
    seen = 0
    for document in documents:
        root.observe(document, 0, max_depth)
        seen += 1
        del document  # a sampled document may be large: not held while the next is read
    paths: list[str] = []
    _paths(root, "", paths)
    if not root.children:
        return "{ } (no documents sampled)" if not seen else "{ }", tuple(paths)
    return _render_object(root), tuple(paths)


def _paths(node: _Node, prefix: str, out: list[str]) -> None:
    for name, child in node.children.items():
        out.append(prefix + name)
        _paths(child, f"{prefix}{name}.", out)
        if child.items is not None:
            _paths(child.items, f"{prefix}{name}.", out)


def _render_object(node: _Node) -> str:
    parts = []
    for name, child in list(node.children.items())[:_MAX_FIELDS]:
        optional = "?" if child.present < node.objects else ""
        parts.append(f"{_field_name(name)}{optional}: {_render_types(child)}")
    hidden = len(node.children) - _MAX_FIELDS
    if hidden > 0:
        parts.append(f"…+{hidden} fields")
    return "{ " + ", ".join(parts) + " }"


def _render_types(node: _Node) -> str:
    # most frequent first, ties by name: the same sample in another order renders the same
    ordered = sorted(node.types.items(), key=lambda item: (-item[1], item[0]))
    names = [kind for kind, _ in ordered if kind != "null"]
    rendered = []
    for kind in names:
        if kind == "object" and node.children:
            rendered.append(_render_object(node))
        elif kind == "array" and node.items is not None and node.items.types:
            rendered.append(f"array<{_render_types(node.items)}>")
        else:
            rendered.append(kind)
    if "null" in node.types:
        rendered.append("null")
    return "|".join(rendered)


_PLAIN = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


def _field_name(name: str) -> str:
    return name if _PLAIN.match(name) else json.dumps(name, ensure_ascii=False)


# -- rendering for the prompt --------------------------------------------------------------------

_WORD = re.compile(r"[a-z0-9]+")
_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")
_STOP_TEXT = """a an the of for in on at by per to from with and or not is are was what which who
    how many much show me list give get find all each any my our their this that do does"""
_STOP = frozenset(_STOP_TEXT.split())


def _terms(text: str) -> set[str]:
    words = _WORD.findall(_CAMEL.sub(" ", text).lower())
    return {_fold(w) for w in words if w not in _STOP and len(w) > 1}


def _fold(word: str) -> str:
    if word.endswith("ies") and len(word) > 4:
        return word[:-3] + "y"
    if word.endswith("s") and not word.endswith("ss") and len(word) > 3:
        return word[:-1]
    return word


def rank_collections(catalog: MongoCatalog, question: str) -> list[CollectionInfo]:
    """Collections by how many question words name them (3 each) or their fields (1 each);
    ties keep catalog order."""
    wanted = _terms(question)
    scored = []
    for position, info in enumerate(catalog.collections):
        name_terms = _terms(info.name)
        field_terms = set().union(*(_terms(path) for path in info.fields)) if info.fields else set()
        score = 3 * len(wanted & name_terms) + len(wanted & field_terms)
        scored.append((-score, position, info))
    return [info for _, _, info in sorted(scored, key=lambda item: item[:2])]


def render_collections(
    catalog: MongoCatalog, *, max_tokens: int | None = None, question: str | None = None
) -> str:
    """One line per collection; under ``max_tokens`` the best-ranked that fit, then a line
    naming the rest so the model knows they exist."""
    infos = list(catalog.collections)
    if max_tokens is None:
        return "\n".join(info.line() for info in infos)
    ranked = rank_collections(catalog, question) if question else infos
    budget = max_tokens
    shown: set[str] = set()
    for info in ranked:
        cost = estimate_tokens(info.line()) + 1
        if cost <= budget - 20:  # keep room for the closing line
            shown.add(info.name)
            budget -= cost
    lines = [info.line() for info in infos if info.name in shown]
    rest = [info.name for info in ranked if info.name not in shown]
    if rest:
        closing = f"  … {len(rest)} more collection(s), schema not shown: " + ", ".join(rest)
        if estimate_tokens(closing) > budget:
            closing = f"  … {len(rest)} more collection(s) not shown"
        lines.append(closing)
    return "\n".join(lines)
