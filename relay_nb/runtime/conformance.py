"""Report whether a runtime keeps the Relay contract, without ever raising.

Hosts run these on a runtime they did not write (a plugin, a new CLI profile) before
trusting its declarations. Reports hold check names, pass/fail and content-free details
(codes, counts, types): never request, response or provider text.
"""

from __future__ import annotations

import inspect
from collections.abc import Sequence

from pydantic import BaseModel, Field

from relay_nb.errors import InvocationError
from relay_nb.runtime.base import ModelRuntime
from relay_nb.runtime.types import (
    BatchOutcome,
    Capabilities,
    InvocationRequest,
    InvocationResult,
    Message,
)

__all__ = [
    "BatchConformanceReport",
    "ConformanceCheck",
    "ConformanceReport",
    "check_batch_conformance",
    "check_runtime_conformance",
    "probe_request",
]


class ConformanceCheck(BaseModel):
    name: str
    passed: bool
    detail: str = ""


class ConformanceReport(BaseModel):
    runtime_id: str
    checks: list[ConformanceCheck] = Field(default_factory=list)

    @property
    def passed(self) -> bool:
        return bool(self.checks) and all(c.passed for c in self.checks)

    @property
    def failures(self) -> list[ConformanceCheck]:
        return [c for c in self.checks if not c.passed]

    def _add(self, name: str, passed: bool, detail: str = "") -> bool:
        """Record a check; the detail explains a failure, so a pass keeps none."""
        self.checks.append(
            ConformanceCheck(name=name, passed=passed, detail="" if passed else detail)
        )
        return passed


class BatchConformanceReport(ConformanceReport):
    requested: int = 0
    returned: int = 0
    fulfilled: int = 0
    rejected: int = 0


def probe_request() -> InvocationRequest:
    return InvocationRequest(
        messages=[Message.user("Reply with the single word: ok")], max_output_tokens=16
    )


def _error_detail(exc: BaseException) -> str:
    if isinstance(exc, InvocationError):
        return f"InvocationError {exc.code} (retryable={exc.retryable})"
    return f"raised {type(exc).__name__}, not InvocationError"


def _check_declaration(runtime: object, report: ConformanceReport) -> Capabilities | None:
    runtime_id = getattr(runtime, "id", None)
    report._add(
        "id", isinstance(runtime_id, str) and bool(runtime_id), "id must be a non-empty str"
    )
    try:
        caps = runtime.capabilities()  # type: ignore[attr-defined]
    except Exception as exc:
        report._add("capabilities", False, f"capabilities() raised {type(exc).__name__}")
        return None
    if not report._add("capabilities", isinstance(caps, Capabilities), type(caps).__name__):
        return None
    fidelity_ok = (caps.structured_tools_fidelity == "unavailable") == (not caps.structured_tools)
    report._add(
        "structured_tools_fidelity",
        fidelity_ok,
        f"structured_tools={caps.structured_tools}, fidelity={caps.structured_tools_fidelity}",
    )
    has_batch = callable(getattr(runtime, "invoke_batch", None))
    report._add(
        "physical_batch",
        has_batch == caps.physical_batch
        and (not caps.physical_batch or (caps.max_batch_size or 0) >= 1),
        f"declared={caps.physical_batch}, invoke_batch present={has_batch}, "
        f"max_batch_size={caps.max_batch_size}",
    )
    has_count = inspect.iscoroutinefunction(getattr(runtime, "count_tokens", None))
    report._add(
        "token_counting",
        has_count or not caps.token_counting,
        "token_counting is declared but there is no async count_tokens(request)",
    )
    report._add(
        "invoke",
        inspect.iscoroutinefunction(getattr(runtime, "invoke", None)),
        "invoke must be an async method",
    )
    return caps


def _check_result(result: object, report: ConformanceReport) -> None:
    if not report._add("result_type", isinstance(result, InvocationResult), type(result).__name__):
        return
    assert isinstance(result, InvocationResult)
    report._add("result_identity", bool(result.provider) and bool(result.model))
    report._add("model_source", result.model_source in ("provider-reported", "configured"))
    report._add("latency", result.latency_ms >= 0, "latency_ms must be >= 0")
    report._add(
        "result_shape",
        bool(result.output_text) or bool(result.tool_calls),
        "a result carries output text or tool calls",
    )


async def check_runtime_conformance(
    runtime: ModelRuntime, request: InvocationRequest | None = None, *, timeout: float = 60.0
) -> ConformanceReport:
    """Validate the declaration, make one invocation, check the result's identity and shape."""
    report = ConformanceReport(runtime_id=str(getattr(runtime, "id", "?")))
    if _check_declaration(runtime, report) is None:
        return report
    try:
        result = await runtime.invoke(request or probe_request(), timeout=timeout)
    except Exception as exc:
        report._add("invocation", False, _error_detail(exc))
        return report
    report._add("invocation", True)
    _check_result(result, report)
    return report


async def check_batch_conformance(
    runtime: ModelRuntime,
    requests: Sequence[InvocationRequest],
    *,
    require_mixed_outcomes: bool = False,
    timeout: float = 120.0,
) -> BatchConformanceReport:
    """Issue one probe batch; check count, positional correspondence and typed outcomes."""
    report = BatchConformanceReport(runtime_id=str(getattr(runtime, "id", "?")))
    report.requested = len(requests)
    caps = _check_declaration(runtime, report)
    if caps is None or not report._add("declares_batch", caps.physical_batch):
        return report
    if caps.max_batch_size is not None and len(requests) > caps.max_batch_size:
        report._add("batch_size", False, f"{len(requests)} > max_batch_size {caps.max_batch_size}")
        return report
    try:
        outcomes = await runtime.invoke_batch(list(requests), timeout=timeout)  # type: ignore[attr-defined]
    except Exception as exc:
        report._add("batch_invocation", False, _error_detail(exc))
        return report
    report._add("batch_invocation", True)
    report.returned = len(outcomes) if isinstance(outcomes, list) else 0
    report._add(
        "positional_count", report.returned == len(requests), f"{report.returned}/{len(requests)}"
    )
    typed = isinstance(outcomes, list) and all(isinstance(o, BatchOutcome) for o in outcomes)
    if not report._add("typed_outcomes", typed):
        return report
    report.fulfilled = sum(o.status == "fulfilled" for o in outcomes)
    report.rejected = sum(o.status == "rejected" for o in outcomes)
    for index, outcome in enumerate(outcomes):
        if outcome.value is not None:
            sub = ConformanceReport(runtime_id=report.runtime_id)
            _check_result(outcome.value, sub)
            if not sub.passed:
                names = ", ".join(c.name for c in sub.failures)
                report._add("fulfilled_shape", False, f"item {index}: {names}")
                return report
    report._add("fulfilled_shape", True)
    if require_mixed_outcomes:
        report._add(
            "mixed_outcomes",
            report.fulfilled >= 1 and report.rejected >= 1,
            f"fulfilled={report.fulfilled}, rejected={report.rejected}",
        )
    return report
