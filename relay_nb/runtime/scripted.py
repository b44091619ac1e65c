"""A deterministic runtime for tests, demos and notebooks: it plays back a script.

A script is a list of steps; each invocation consumes the next one. A step is an
``InvocationResult``, a dict (``{"text": ...}``, ``{"tool_calls": [{"name", "input"}]}``,
``{"error": {"code": ...}}``), or a callable ``request -> result | dict`` (sync or async) for
answers that depend on what the model was shown. Every request is kept in ``requests`` so a
test can assert on the exact prompt.

``by_question`` gives each question its own steps: a request is answered by the question it
belongs to (its last user message) and how many model replies that question already has, so
concurrent turns (``ask_many``, an evaluation run) and repeated questions each get their own
script in order, whatever order they run in. A question it does not name takes the next
shared step. In a script file: ``{"by_question": {"How many orders?": [steps]}, "steps": []}``.
"""

from __future__ import annotations

import inspect
import itertools
import json
from collections import deque
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from relay_nb.errors import ConfigurationError, InvocationError, InvocationErrorCode
from relay_nb.runtime.abort import AbortSignal
from relay_nb.runtime.base import BaseRuntime, TextCallback, run_guarded
from relay_nb.runtime.failures import classify_exception
from relay_nb.runtime.types import (
    BatchFailure,
    BatchOutcome,
    Capabilities,
    InvocationRequest,
    InvocationResult,
    ToolCall,
    Usage,
    estimate_output_tokens,
    estimate_request_tokens,
    estimate_tokens,
)
from relay_nb.untrusted import SCRIPT, load_json, read_text

__all__ = ["MAX_SCRIPTED_BATCH", "NO_STEP_LEFT", "ScriptStep", "ScriptedRuntime", "estimate_tokens"]

MAX_SCRIPTED_BATCH = 100
NO_STEP_LEFT = (
    "the scripted model has no answer left: it only plays back its script, it cannot read "
    "a new question; to ask a real model, set one with %relay --model PROFILE or "
    "relay.configure(model=PROFILE) (e.g. anthropic:claude-sonnet-4-6, with ANTHROPIC_API_KEY "
    "set)"
)

ScriptStep = InvocationResult | dict[str, Any] | Callable[[InvocationRequest], Any]


class _ScriptedToolCall(BaseModel):
    model_config = ConfigDict(extra="forbid")
    name: str
    input: dict[str, Any] = Field(default_factory=dict)
    id: str | None = None


class _ScriptedError(BaseModel):
    model_config = ConfigDict(extra="forbid")
    code: InvocationErrorCode
    message: str = "scripted failure"
    retryable: bool | None = None
    retry_after_s: float | None = None


class _ScriptedStep(BaseModel):
    """The dict form of a step, validated so a typo in a script file fails at load time."""

    model_config = ConfigDict(extra="forbid")
    text: str = ""
    tool_calls: list[_ScriptedToolCall] = Field(default_factory=list)
    usage: Usage | None = None
    stop_reason: str | None = None
    model: str | None = None
    warnings: list[str] = Field(default_factory=list)
    error: _ScriptedError | None = None


class ScriptedRuntime(BaseRuntime):
    """Plays back ``script``; an exhausted script is a ``RUNTIME_FAILURE``."""

    provider = "scripted"
    simulated = "scripted"
    """Every answer is labelled so (``InvocationResult.simulated``), a failed call's turn too."""

    def __init__(
        self,
        script: Iterable[ScriptStep] = (),
        *,
        model: str = "scripted",
        id: str = "scripted",
        stream_chunk_chars: int = 16,
        by_question: Mapping[str, Sequence[ScriptStep]] | None = None,
    ) -> None:
        self.id = id
        self.model = model
        self.stream_chunk_chars = stream_chunk_chars
        self._steps: deque[ScriptStep] = deque(_check_step(s, i) for i, s in enumerate(script))
        self.by_question: dict[str, list[ScriptStep]] = {
            question.strip(): [_check_step(s, i) for i, s in enumerate(steps)]
            for question, steps in (by_question or {}).items()
        }
        self.requests: list[InvocationRequest] = []
        self._call_ids = itertools.count(1)

    @classmethod
    def from_file(cls, path: str | Path, **options: Any) -> ScriptedRuntime:
        """Load a JSON script: the same list of step dicts, e.g. ``[{"text": "hi"}]``, or an
        object ``{"by_question": {question: [steps]}, "steps": [shared steps], "model":
        name}`` (the model name its answers report, e.g. to price them)."""
        path = Path(path).expanduser()
        try:
            steps = load_json(read_text(path, SCRIPT), where=path.name, bounds=SCRIPT)
        except FileNotFoundError:
            raise ConfigurationError(f"script file {str(path)!r} does not exist") from None
        except json.JSONDecodeError as exc:
            raise ConfigurationError(
                f"script file {str(path)!r} is not valid JSON (line {exc.lineno}); "
                'it must hold a list of steps such as [{"text": "..."}]'
            ) from None
        if isinstance(steps, dict) and set(steps) <= {"by_question", "steps", "model"}:
            if isinstance(steps.get("model"), str):
                options.setdefault("model", steps["model"])
            by_question, steps = steps.get("by_question") or {}, steps.get("steps") or []
            if not isinstance(by_question, dict) or not all(
                isinstance(v, list) for v in by_question.values()
            ):
                raise ConfigurationError(
                    f"script file {str(path)!r}: by_question must map each question to a list "
                    "of steps"
                )
            options.setdefault("by_question", by_question)
        if not isinstance(steps, list):
            raise ConfigurationError(
                f"script file {str(path)!r} must hold a JSON list of steps or an object with "
                '"by_question" and "steps"'
            )
        options.setdefault("id", f"scripted:{path}")
        return cls(steps, **options)

    def add(self, *steps: ScriptStep) -> ScriptedRuntime:
        """Append steps (returns self, so scripts can be built fluently)."""
        start = len(self._steps)
        self._steps.extend(_check_step(s, start + i) for i, s in enumerate(steps))
        return self

    @property
    def remaining(self) -> int:
        return len(self._steps)

    def capabilities(self) -> Capabilities:
        return Capabilities(
            structured_tools=True,
            streaming=True,
            abort=True,
            usage=True,
            structured_tools_fidelity="native",
            output_token_limit_fidelity="unavailable",
            physical_batch=True,
            max_batch_size=MAX_SCRIPTED_BATCH,
        )

    async def _invoke(
        self, request: InvocationRequest, *, on_text: TextCallback | None
    ) -> InvocationResult:
        self.requests.append(request)
        step = self._step_for(request)
        result = (await self._materialise(step, request)).model_copy(
            update={"simulated": self.simulated}
        )
        if on_text is not None and result.output_text:
            text, size = result.output_text, max(1, self.stream_chunk_chars)
            for start in range(0, len(text), size):
                on_text(text[start : start + size])
        return result

    def _step_for(self, request: InvocationRequest) -> ScriptStep:
        """The question's own next step when ``by_question`` names it, else the next shared
        step; none left is a ``RUNTIME_FAILURE`` that says so."""
        if self.by_question:
            question, replies = _question_and_replies(request)
            steps = self.by_question.get(question)
            if steps is None and not self._steps:
                raise InvocationError(
                    "RUNTIME_FAILURE",
                    f"the scripted model has no script for {question[:80]!r}: it answers only "
                    "the questions its by_question names",
                    False,
                )
            if steps is not None:
                if replies < len(steps):
                    return steps[replies]
                raise InvocationError(
                    "RUNTIME_FAILURE",
                    f"the scripted model's script for {question[:80]!r} has {len(steps)} "
                    "step(s) and all were used",
                    False,
                )
        if not self._steps:
            raise InvocationError("RUNTIME_FAILURE", NO_STEP_LEFT, False)
        return self._steps.popleft()

    async def invoke_batch(
        self,
        requests: Sequence[InvocationRequest],
        *,
        timeout: float | None = None,
        abort: AbortSignal | None = None,
    ) -> list[BatchOutcome]:
        """One call, one positional outcome per request; a failed item spares its siblings."""
        if not requests:
            raise InvocationError("INVALID_REQUEST", "a batch needs at least one request", False)
        if len(requests) > MAX_SCRIPTED_BATCH:
            raise InvocationError(
                "INVALID_REQUEST",
                f"a batch holds at most {MAX_SCRIPTED_BATCH} requests, got {len(requests)}",
                False,
            )
        return await run_guarded(
            lambda: self._run_batch(requests), provider=self.provider, timeout=timeout, abort=abort
        )

    async def _run_batch(self, requests: Sequence[InvocationRequest]) -> list[BatchOutcome]:
        outcomes: list[BatchOutcome] = []
        for request in requests:
            try:
                value = await self._invoke(request, on_text=None)
            except Exception as exc:
                err = exc if isinstance(exc, InvocationError) else classify_exception(exc)
                reason = BatchFailure(code=err.code, message=err.message, retryable=err.retryable)
                outcomes.append(BatchOutcome(status="rejected", reason=reason))
            else:
                outcomes.append(BatchOutcome(status="fulfilled", value=value))
        return outcomes

    async def _materialise(self, step: ScriptStep, request: InvocationRequest) -> InvocationResult:
        if callable(step) and not isinstance(step, BaseModel):
            produced = step(request)
            if inspect.isawaitable(produced):
                produced = await produced
            step = _check_step(produced, None)
        if isinstance(step, InvocationResult):
            return step
        return self._result_from_dict(_ScriptedStep.model_validate(step), request)

    def _result_from_dict(
        self, step: _ScriptedStep, request: InvocationRequest
    ) -> InvocationResult:
        if step.error is not None:
            err = step.error
            raise InvocationError(
                err.code, err.message, err.retryable, retry_after_s=err.retry_after_s
            )
        calls = [
            ToolCall(id=c.id or f"call_{next(self._call_ids)}", name=c.name, input=c.input)
            for c in step.tool_calls
        ]
        return InvocationResult(
            provider=self.provider,
            model=step.model or self.model,
            model_source="configured",
            output_text=step.text,
            tool_calls=calls,
            usage=step.usage or _estimated_usage(request, step.text, calls),
            stop_reason=step.stop_reason or ("tool_use" if calls else "end_turn"),
            warnings=step.warnings,
        )


def _question_and_replies(request: InvocationRequest) -> tuple[str, int]:
    """The request's question (its last user message given as text) and how many assistant
    messages follow it: the index of the step that answers this request."""
    for index in range(len(request.messages) - 1, -1, -1):
        message = request.messages[index]
        if message.role == "user" and isinstance(message.content, str):
            later = request.messages[index + 1 :]
            return message.content.strip(), sum(m.role == "assistant" for m in later)
    return "", 0


def _estimated_usage(request: InvocationRequest, text: str, calls: list[ToolCall]) -> Usage:
    """A scripted model has no provider count; estimate so cost views have numbers to show."""
    return Usage(
        input_tokens=estimate_request_tokens(request),
        output_tokens=estimate_output_tokens(text, calls),
        estimated=True,
    )


def _check_step(step: Any, index: int | None) -> ScriptStep:
    """Validate a step eagerly, so a bad script fails where it is written, not mid-turn."""
    where = "scripted step" if index is None else f"scripted step {index}"
    if isinstance(step, InvocationResult) or (callable(step) and not isinstance(step, dict)):
        return step
    if not isinstance(step, dict):
        raise ConfigurationError(
            f"{where} is a {type(step).__name__}; use a dict such as {{'text': '...'}}, "
            "an InvocationResult, or a callable"
        )
    try:
        _ScriptedStep.model_validate(step)
    except ValidationError as exc:
        first = exc.errors()[0]
        loc = ".".join(str(p) for p in first["loc"]) or "step"
        raise ConfigurationError(
            f"{where}: {loc}: {first['msg']} (allowed keys: text, tool_calls, usage, "
            "stop_reason, model, warnings, error)"
        ) from None
    return step
