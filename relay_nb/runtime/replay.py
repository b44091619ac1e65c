"""Record any runtime's invocations as JSON Lines, and replay them without a model.

A record is ``{"schema_version": 1, "request_digest", "request", "result"}``. The digest is
``"sha256:" + SHA-256(canonical JSON)``: keys sorted, no spaces, so two requests that differ
only in key order match. Recordings are what make notebooks run offline in CI, so they are
scrubbed of every known secret before they touch disk (see ``relay_nb.redaction``).
"""

from __future__ import annotations

import hashlib
import json
import threading
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from relay_nb.errors import ConfigurationError, InvocationError
from relay_nb.redaction import redact
from relay_nb.runtime.abort import AbortSignal
from relay_nb.runtime.base import BaseRuntime, ModelRuntime, TextCallback
from relay_nb.runtime.types import Capabilities, InvocationRequest, InvocationResult
from relay_nb.untrusted import SCRIPT, read_text

__all__ = [
    "REPLAY_SCHEMA_VERSION",
    "RecordingRuntime",
    "ReplayRecord",
    "ReplayRuntime",
    "canonical_json",
    "invocation_digest",
    "load_records",
]

REPLAY_SCHEMA_VERSION = 1


def canonical_json(value: Any) -> str:
    """Sorted keys, no whitespace, UTF-8 kept as is: the form the digest is taken over."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def invocation_digest(request: InvocationRequest | dict[str, Any]) -> str:
    data = request.model_dump(mode="json") if isinstance(request, BaseModel) else request
    return "sha256:" + hashlib.sha256(canonical_json(data).encode("utf-8")).hexdigest()


class ReplayRecord(BaseModel):
    model_config = ConfigDict(extra="forbid")
    schema_version: int = Field(default=REPLAY_SCHEMA_VERSION)
    request_digest: str
    request: dict[str, Any]
    result: InvocationResult


def load_records(path: str | Path) -> list[ReplayRecord]:
    """Read a JSON Lines recording; a bad line is an error naming its line number."""
    path = Path(path).expanduser()
    if not path.exists():
        raise ConfigurationError(f"recording {str(path)!r} does not exist")
    records: list[ReplayRecord] = []
    for lineno, line in enumerate(read_text(path, SCRIPT).splitlines(), start=1):
        if not line.strip():
            continue
        try:
            record = ReplayRecord.model_validate_json(line)
        except ValidationError:
            raise ConfigurationError(
                f"recording {str(path)!r} line {lineno} is not a replay record"
            ) from None
        if record.schema_version != REPLAY_SCHEMA_VERSION:
            raise ConfigurationError(
                f"recording {str(path)!r} line {lineno} has schema_version "
                f"{record.schema_version}; this relay_nb reads {REPLAY_SCHEMA_VERSION}"
            )
        records.append(record)
    return records


class RecordingRuntime:
    """Wraps ``inner``; appends a record for each successful invocation (in memory, and to
    ``path`` when given). Failures are not recorded: replaying one would hide the bug."""

    def __init__(self, inner: ModelRuntime, path: str | Path | None = None) -> None:
        self.inner = inner
        self.id = f"recording:{inner.id}"
        self.path = Path(path).expanduser() if path is not None else None
        self.records: list[ReplayRecord] = []
        self._lock = threading.Lock()

    def capabilities(self) -> Capabilities:
        # recording wraps invoke() only: a physical batch would bypass the recorder
        return self.inner.capabilities().model_copy(
            update={"physical_batch": False, "max_batch_size": None}
        )

    async def invoke(
        self,
        request: InvocationRequest,
        *,
        timeout: float | None = None,
        abort: AbortSignal | None = None,
        on_text: TextCallback | None = None,
    ) -> InvocationResult:
        result = await self.inner.invoke(request, timeout=timeout, abort=abort, on_text=on_text)
        self._append(request, result)
        return result

    def _append(self, request: InvocationRequest, result: InvocationResult) -> None:
        request_data = request.model_dump(mode="json")
        record = ReplayRecord(
            request_digest=invocation_digest(request_data),
            request=redact(request_data),
            # the label is the replayer's to add; a recording keeps the format older readers take
            result=InvocationResult.model_validate(
                redact(result.model_dump(mode="json", exclude={"simulated"}))
            ),
        )
        with self._lock:
            self.records.append(record)
            if self.path is not None:
                self.path.parent.mkdir(parents=True, exist_ok=True)
                with self.path.open("a", encoding="utf-8") as handle:
                    handle.write(record.model_dump_json() + "\n")

    def __repr__(self) -> str:
        return f"<RecordingRuntime {self.inner.id}>"


class ReplayRuntime(BaseRuntime):
    """Answers each request with the recorded result of the same digest, in recorded order
    when the same request was recorded several times (the last one repeats)."""

    provider = "replay"
    simulated = "replayed"
    """Every answer is labelled so (``InvocationResult.simulated``), a missed request's too."""

    def __init__(
        self, records: Iterable[ReplayRecord | dict[str, Any]], *, id: str = "replay"
    ) -> None:
        self.id = id
        self._by_digest: dict[str, list[InvocationResult]] = {}
        self._served: dict[str, int] = {}
        for raw in records:
            record = raw if isinstance(raw, ReplayRecord) else ReplayRecord.model_validate(raw)
            self._by_digest.setdefault(record.request_digest, []).append(record.result)

    @classmethod
    def from_file(cls, path: str | Path) -> ReplayRuntime:
        return cls(load_records(path), id=f"replay:{path}")

    def capabilities(self) -> Capabilities:
        return Capabilities(
            structured_tools=True,
            streaming=False,
            abort=True,
            usage=True,
            structured_tools_fidelity="native",
            output_token_limit_fidelity="unavailable",
        )

    async def _invoke(
        self, request: InvocationRequest, *, on_text: TextCallback | None
    ) -> InvocationResult:
        digest = invocation_digest(request)
        results = self._by_digest.get(digest)
        if not results:
            raise InvocationError(
                "INVALID_REQUEST",
                f"no recorded result for request {digest}: the prompt differs from the "
                "recorded ones (a question, schema or setting changed); record again "
                "(RecordingRuntime, or relay-nb eval --record FILE)",
                False,
            )
        index = self._served.get(digest, 0)
        self._served[digest] = index + 1
        recorded = results[min(index, len(results) - 1)]
        return recorded.model_copy(deep=True, update={"simulated": self.simulated})
