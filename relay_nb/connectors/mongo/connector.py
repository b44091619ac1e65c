"""``MongoConnector``: one MongoDB database as a guarded, read-only ``query_<id>`` tool.

Pipeline for every query, whoever writes it: strict JSON / Extended JSON decoding (never
evaluated) → guard (collection allowlist, stage and operator allowlists, refused operators
anywhere, every value on an allowlist, a bounded result) → ``find``/``aggregate`` of exactly
the checked tree with ``maxTimeMS``, read one document at a time within a byte budget
(:mod:`~relay_nb.connectors.mongo.fetch`) → a flat DataFrame for the notebook and a compact
preview for the model.
Collection shapes are sampled once and cached until :meth:`MongoConnector.refresh`.

pymongo is synchronous, so the tool runs queries in a worker thread. Cancelling a turn
abandons that thread rather than the operation, but every command carries ``maxTimeMS``: the
server stops it at ``timeout_s`` whatever happens to the caller, and nothing runs unbounded.
pymongo itself is imported only when a connector is created.
"""

from __future__ import annotations

import asyncio
import difflib
import re
import threading
import time
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Literal
from urllib.parse import unquote, urlsplit

from pydantic import BaseModel, ConfigDict, Field

from relay_nb.connectors.base import Connector, check_connector_id
from relay_nb.connectors.bounds import (
    DEFAULT_MAX_RESULT_BYTES,
    DEFAULT_MAX_VALUE_BYTES,
    ResultBudget,
    check_byte_limits,
    describe_bytes,
)
from relay_nb.connectors.mongo.fetch import Reading, first_batch, open_cursor, read_documents
from relay_nb.connectors.mongo.guard import (
    GuardedAggregate,
    GuardedFind,
    guard_aggregate,
    guard_find,
)
from relay_nb.connectors.mongo.operators import STAGES
from relay_nb.connectors.mongo.schema import MongoCatalog, read_catalog, render_collections
from relay_nb.connectors.mongo.values import canonical_json, documents_frame, parse_json_input
from relay_nb.connectors.results import QueryResult, preview_for_model
from relay_nb.errors import ConfigurationError, QueryExecutionError, UnsafeQueryError
from relay_nb.redaction import redact, redact_url, register_secret, url_secrets
from relay_nb.runtime.types import estimate_tokens
from relay_nb.tools import Tool, ToolResult

if TYPE_CHECKING:
    import pymongo

__all__ = ["MongoConnector"]

_MAX_DRIVER_MESSAGE = 400
_DATABASE_NAME = re.compile(r'^[^/\\. "$*<>:|?]{1,63}$')
_STAGE_LIST = " ".join(sorted(STAGES))


class _QueryInput(BaseModel):
    model_config = ConfigDict(extra="forbid")

    collection: str = Field(description="The collection to read (one listed in the schema).")
    operation: Literal["find", "aggregate"] = Field(
        default="find",
        description="'find' uses filter/projection/sort/limit; 'aggregate' uses pipeline.",
    )
    filter: dict[str, Any] | str | None = Field(
        default=None, description='find: a query object, e.g. {"status": "paid"}.'
    )
    projection: dict[str, Any] | str | None = Field(
        default=None, description='find: fields to return, e.g. {"name": 1, "_id": 0}.'
    )
    sort: dict[str, Any] | list[Any] | str | None = Field(
        default=None, description='find: e.g. {"total": -1}.'
    )
    limit: int | None = Field(default=None, ge=1, description="find: at most this many documents.")
    pipeline: list[Any] | str | None = Field(
        default=None,
        description='aggregate: an array of stages, e.g. [{"$match": {…}}, {"$group": {…}}].',
    )


class MongoConnector(Connector):
    """A MongoDB database the model may read with ``find`` and a guarded ``aggregate``.

    Every result is bounded while it is read (:mod:`~relay_nb.connectors.mongo.fetch`):

    * ``row_limit`` (200) — documents kept; one more is read to tell "exactly" from "more";
    * ``max_value_bytes`` (1 MiB) — one value kept (a cell); longer ones are cut, with a note;
    * ``max_result_bytes`` (16 MiB) — everything kept; reading stops at the document that
      would pass it (the result says so, ``limit="bytes"``) and the server cursor is killed.
      The catalog pass samples each collection within a share of it.
    """

    kind = "mongo"

    def __init__(
        self,
        id: str,
        url: str,
        *,
        database: str | None = None,
        collections: Sequence[str] | None = None,
        sample_size: int = 100,
        max_depth: int = 3,
        row_limit: int = 200,
        timeout_s: float = 30.0,
        max_value_bytes: int = DEFAULT_MAX_VALUE_BYTES,
        max_result_bytes: int = DEFAULT_MAX_RESULT_BYTES,
        name: str | None = None,
        description: str | None = None,
        client: pymongo.MongoClient | None = None,
    ) -> None:
        self.id = check_connector_id(id)
        _check_int("row_limit", row_limit, 1, 100_000)
        _check_int("sample_size", sample_size, 1, 10_000)
        _check_int("max_depth", max_depth, 1, 10)
        if isinstance(timeout_s, bool) or not isinstance(timeout_s, (int, float)) or timeout_s <= 0:
            raise ConfigurationError(
                f"timeout_s must be a positive number of seconds, got {timeout_s!r}"
            )
        self.max_value_bytes, self.max_result_bytes = check_byte_limits(
            max_value_bytes, max_result_bytes
        )
        self.name = name or id
        self.description = description
        self.row_limit = row_limit
        self.sample_size = sample_size
        self.max_depth = max_depth
        self.timeout_s = float(timeout_s)
        self.max_time_ms = max(1, round(self.timeout_s * 1000))
        self._collections = _check_allowlist(collections)
        self.database_name = _database_name(url, database)
        for secret in url_secrets(url):
            register_secret(secret)
        self.target = redact_url(url)
        self._owns_client = client is None
        self.client = client if client is not None else self._make_client(url)
        self._catalog: MongoCatalog | None = None
        self._catalog_lock = threading.Lock()

    def _make_client(self, url: str) -> pymongo.MongoClient:
        import pymongo
        from pymongo.errors import PyMongoError

        try:
            return pymongo.MongoClient(
                url,
                connect=False,
                appname="relay_nb",
                serverSelectionTimeoutMS=min(self.max_time_ms, 10_000),
                connectTimeoutMS=min(self.max_time_ms, 10_000),
                socketTimeoutMS=self.max_time_ms + 5_000,  # the server stops first, at maxTimeMS
            )
        except (PyMongoError, ValueError, TypeError) as exc:
            raise ConfigurationError(
                f"cannot use the MongoDB URL {self.target}: {_driver_message(exc)}"
            ) from None

    # ------------------------------------------------------------------ schema
    @property
    def catalog(self) -> MongoCatalog:
        """The allowed collections with their sampled shapes, read once and cached."""
        if self._catalog is None:
            with self._catalog_lock:
                if self._catalog is None:
                    self._catalog = self._read_catalog()
        return self._catalog

    def _read_catalog(self) -> MongoCatalog:
        from pymongo.errors import ConnectionFailure, PyMongoError

        database = self.client[self.database_name]
        try:
            listed = [
                (entry["name"], entry.get("type", "collection"))
                for entry in database.list_collections(nameOnly=True, authorizedCollections=True)
            ]
            visible = {name: kind for name, kind in listed if not name.startswith("system.")}
            chosen = self._choose(visible)
            return read_catalog(
                database,
                chosen,
                sample_size=self.sample_size,
                max_depth=self.max_depth,
                max_time_ms=self.max_time_ms,
                max_bytes=self.max_result_bytes,
            )
        except ConnectionFailure as exc:
            raise QueryExecutionError(
                f"could not read the collections of {self.id!r}: MongoDB at {self.target} is "
                f"unreachable ({_driver_message(exc)}); check the host, port and that it runs"
            ) from None
        except PyMongoError as exc:
            raise QueryExecutionError(
                f"could not read the collections of {self.id!r} ({self.target}): "
                f"{_driver_message(exc)}"
            ) from None

    def _choose(self, visible: dict[str, str]) -> list[tuple[str, str]]:
        if self._collections is None:
            return sorted(visible.items())
        missing = [name for name in self._collections if name not in visible]
        if missing:
            hints = []
            for name in missing:
                close = difflib.get_close_matches(name, list(visible), n=1)
                hints.append(f"{name!r}" + (f" (did you mean {close[0]!r}?)" if close else ""))
            raise ConfigurationError(
                f"collections=: {', '.join(hints)} not found in database "
                f"{self.database_name!r}; it has: {', '.join(sorted(visible)) or '(nothing)'}"
            )
        return [(name, visible[name]) for name in self._collections]

    def object_names(self) -> list[str]:
        return self.catalog.names()

    def refresh(self) -> None:
        """Forget the sampled shapes (and the collection list); the next use samples again."""
        with self._catalog_lock:
            self._catalog = None

    # ------------------------------------------------------------------ queries
    def find(
        self,
        collection: str,
        filter: Any = None,
        projection: Any = None,
        sort: Any = None,
        limit: int | None = None,
    ) -> QueryResult:
        """Run one guarded ``find``; JSON text or Python values (bson types included)."""
        submitted: dict[str, Any] = {"find": collection}
        parsed: dict[str, Any] = {}
        for key, value in (("filter", filter), ("projection", projection), ("sort", sort)):
            if value is not None:
                parsed[key] = parse_json_input(value, key)
                submitted[key] = parsed[key]
        if limit is not None:
            submitted["limit"] = limit
        guarded = guard_find(
            collection,
            parsed.get("filter"),
            parsed.get("projection"),
            parsed.get("sort"),
            limit,
            allowed=self.catalog.names(),
            row_limit=self.row_limit,
        )
        return self._run_find(guarded, canonical_json(submitted))

    def aggregate(self, collection: str, pipeline: Any) -> QueryResult:
        """Run one guarded ``aggregate``; a final ``$limit`` bounds what comes back."""
        stages = parse_json_input(pipeline, "pipeline")
        submitted = canonical_json({"aggregate": collection, "pipeline": stages})
        guarded = guard_aggregate(
            collection, stages, allowed=self.catalog.names(), row_limit=self.row_limit
        )
        return self._run_aggregate(guarded, submitted)

    def _run_find(self, guarded: GuardedFind, submitted: str) -> QueryResult:
        command: dict[str, Any] = {"find": guarded.collection, "filter": guarded.filter}
        if guarded.projection is not None:
            command["projection"] = guarded.projection
        if guarded.sort:
            command["sort"] = dict(guarded.sort)
        command["limit"] = guarded.limit
        command["maxTimeMS"] = self.max_time_ms
        return self._run(command, submitted, (guarded.collection,), wanted=guarded.limit)

    def _run_aggregate(self, guarded: GuardedAggregate, submitted: str) -> QueryResult:
        command = {
            "aggregate": guarded.collection,
            "pipeline": guarded.pipeline,
            "maxTimeMS": self.max_time_ms,
        }
        return self._run(command, submitted, guarded.collections, wanted=self.row_limit + 1)

    def _run(
        self, command: dict[str, Any], submitted: str, tables: tuple[str, ...], *, wanted: int
    ) -> QueryResult:
        """Run the checked command and read its documents through the byte budget: the
        frame takes them one at a time and admits each (clipping long values) until the
        budget is spent; closing the cursor then stops the server sending the rest."""
        from pymongo.errors import PyMongoError

        budget = ResultBudget(
            self.max_value_bytes,
            self.max_result_bytes,
            unit="documents",
            narrow="project fewer fields, filter, or aggregate ($group, $count)",
            shorten="project a part ($substrCP) or the length ($strLenCP) instead",
        )
        reading = Reading()
        database = self.client[self.database_name]
        started = time.perf_counter()
        try:
            batch = first_batch(self.max_result_bytes, wanted)
            with open_cursor(database, command, batch=batch) as cursor:
                documents = read_documents(
                    cursor,
                    limit=self.row_limit,
                    room=lambda: budget.max_result_bytes - budget.used,
                    reading=reading,
                )
                frame = documents_frame(documents, max_depth=self.max_depth, budget=budget)
        except PyMongoError as exc:
            raise self._execution_error(exc) from None
        elapsed_ms = (time.perf_counter() - started) * 1000
        if budget.full and budget.kept == 0:
            raise QueryExecutionError(
                "the first document is larger than "
                f"{describe_bytes(self.max_result_bytes)} (the connector's max_result_bytes), so "
                'nothing was kept; leave out long fields (projection {"big_field": 0}) or '
                "return a part of them ($substrCP) or their length ($strLenCP, $bsonSize)"
            )
        return QueryResult(
            df=frame,
            executed_sql=canonical_json(command),
            row_count=len(frame),
            truncated=reading.more or budget.full,
            elapsed_ms=elapsed_ms,
            connector_id=self.id,
            submitted_sql=submitted,
            tables=tables,
            language="mongo",
            limit="bytes" if budget.full else "rows",
            notes=budget.notes(),
        )

    def _execution_error(self, exc: Exception) -> QueryExecutionError:
        from pymongo.errors import (
            ConnectionFailure,
            ExecutionTimeout,
            InvalidOperation,
            NetworkTimeout,
            OperationFailure,
        )

        if isinstance(exc, (ExecutionTimeout, NetworkTimeout)):
            return QueryExecutionError(
                f"the query ran longer than {self.timeout_s:g} s and was stopped; make it "
                "cheaper ($match early on indexed fields, fewer $lookup, aggregate with $group)"
            )
        if isinstance(exc, InvalidOperation) and "after close" in str(exc):
            return QueryExecutionError(f"connector {self.id!r} was closed; register it again")
        if isinstance(exc, ConnectionFailure):
            return QueryExecutionError(
                f"could not reach MongoDB at {self.target} ({_driver_message(exc)}); check the "
                "host, port and that it runs"
            )
        if isinstance(exc, OperationFailure):
            detail = (exc.details or {}).get("errmsg") or str(exc)
            return QueryExecutionError(f"MongoDB refused the query: {_driver_message(detail)}")
        return QueryExecutionError(f"the query failed: {_driver_message(exc)}")

    # ------------------------------------------------------------------ model-facing
    def tools(self) -> list[Tool]:
        return [
            Tool(
                name=f"query_{self.id}",
                description=(
                    f"Read documents from MongoDB database {self.database_name} ({self.name}): "
                    "operation 'find' (filter, projection, sort, limit) or 'aggregate' "
                    "(pipeline). Strict JSON only; Extended JSON for types "
                    '({"$oid": "…"}, {"$date": "2025-01-31T00:00:00Z"}). Returns at most '
                    f"{self.row_limit} documents as a table: aggregate ($group, $count) rather "
                    "than fetching raw documents."
                ),
                input_model=_QueryInput,
                handler=self._query_tool,
                timeout_s=self.timeout_s + 10,
                metadata={"connector": self.id, "kind": "mongo"},
            )
        ]

    async def _query_tool(self, arguments: _QueryInput) -> ToolResult:
        if arguments.operation == "aggregate":
            extra = [k for k in ("filter", "projection", "sort", "limit") if getattr(arguments, k)]
            if extra:
                raise UnsafeQueryError(
                    "bad_request",
                    f"{', '.join(extra)} belong to operation 'find'; in an aggregate put them in "
                    "the pipeline as $match / $project / $sort / $limit stages",
                )
            if arguments.pipeline is None:
                raise UnsafeQueryError("bad_request", "operation 'aggregate' needs a pipeline")
            result = await asyncio.to_thread(
                self.aggregate, arguments.collection, arguments.pipeline
            )
        else:
            if arguments.pipeline is not None:
                raise UnsafeQueryError(
                    "bad_request",
                    "pipeline is only for operation 'aggregate'; set operation to 'aggregate'",
                )
            result = await asyncio.to_thread(
                self.find,
                arguments.collection,
                arguments.filter,
                arguments.projection,
                arguments.sort,
                arguments.limit,
            )
        return ToolResult(content=preview_for_model(result), artifact=result)

    def prompt_context(self, *, max_tokens: int | None = None, question: str | None = None) -> str:
        catalog = self.catalog
        head = (
            f"### Mongo connector: {self.id}"
            + (f" ({self.name})" if self.name != self.id else "")
            + f" — database {self.database_name}, read-only\n"
            + (f"{self.description}\n" if self.description else "")
            + f'Query with query_{self.id}: operation "find" (filter, projection, sort, limit) '
            'or "aggregate" (pipeline). Strict JSON only; Extended JSON for types: '
            '{"$oid": "…"}, {"$date": "2025-01-31T00:00:00Z"}. Nested fields come back as '
            "dotted columns (address.city).\n"
            f"Collections (schema inferred from up to {catalog.sample_size} sampled documents "
            "each; fields outside the sample may exist; ? = missing in some documents):\n"
        )
        rules = (
            f"\nHard rules: read-only; at most {self.row_limit} documents per query (a $limit "
            f"is appended) and {describe_bytes(self.max_result_bytes)}, values over "
            f"{describe_bytes(self.max_value_bytes)} cut; allowed stages: {_STAGE_LIST}; "
            "$lookup/$graphLookup/$unionWith only "
            "on the collections above; $where, $function, $accumulator, $out, $merge and any "
            f"JavaScript are refused; each query stops after {self.timeout_s:g} s."
        )
        budget = None
        if max_tokens is not None:
            budget = max(0, max_tokens - estimate_tokens(head) - estimate_tokens(rules) - 1)
        listing = render_collections(catalog, max_tokens=budget, question=question)
        return head + (listing or "  (no collections)") + rules

    def close(self) -> None:
        """Close the client this connector created (a client passed in stays its owner's)."""
        if self._owns_client:
            self.client.close()


# -- configuration helpers ----------------------------------------------------------------------


def _check_int(option: str, value: Any, low: int, high: int) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise ConfigurationError(
            f"{option} must be a whole number from {low} to {high:,}, got {value!r}"
        )


def _check_allowlist(collections: Sequence[str] | None) -> list[str] | None:
    if collections is None:
        return None
    if isinstance(collections, str):
        raise ConfigurationError(
            f"collections must be a list of names, not the string {collections!r}"
        )
    names = list(collections)
    for name in names:
        if not isinstance(name, str) or not name:
            raise ConfigurationError(f"collections must hold collection names, got {name!r}")
        if name.startswith("system."):
            raise ConfigurationError(
                f"collections=: {name!r} is a system collection and is never queryable"
            )
    return list(dict.fromkeys(names))


def _database_name(url: str, database: str | None) -> str:
    if not isinstance(url, str) or not url.startswith(("mongodb://", "mongodb+srv://")):
        shown = redact_url(url) if isinstance(url, str) else repr(url)
        raise ConfigurationError(
            f"a MongoDB URL starts with mongodb:// or mongodb+srv://, got {shown!r}"
        )
    if database is not None and not isinstance(database, str):
        raise ConfigurationError(f"database must be a name (a string), got {database!r}")
    chosen = database or unquote(urlsplit(url).path.lstrip("/"))
    if not chosen:
        raise ConfigurationError(
            "no database to query: put it in the URL (mongodb://host:27017/shop) or pass "
            "database='shop'"
        )
    if not _DATABASE_NAME.match(chosen):
        raise ConfigurationError(f"{chosen!r} is not a valid MongoDB database name")
    return chosen


def _driver_message(exc: BaseException | str) -> str:
    """The driver's own first line, scrubbed of known secrets and clipped."""
    text = str(exc).strip()
    text = text.splitlines()[0] if text else type(exc).__name__
    for noise in (
        ", full error:",
        " (configured timeouts:",
        ", Timeout:",
        ", Topology Description:",
    ):
        text = text.split(noise, 1)[0]  # pymongo appends diagnostics a model cannot act on
    text = redact(text)
    return text if len(text) <= _MAX_DRIVER_MESSAGE else text[: _MAX_DRIVER_MESSAGE - 1] + "…"
