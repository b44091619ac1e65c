"""``ClaudeCodeRuntime``: one invocation = one ``claude -p --output-format json`` run.

Authentication stays with the installed CLI (its login or its own API key); this module
never reads, copies or stores credentials. The CLI's built-in tools are switched off with
``--tools ""`` and MCP servers with ``--strict-mcp-config``, so nothing the model writes is
ever executed on this machine; a structured tool becomes a ``--json-schema`` output
constraint, which is why a request with tools must force exactly one of them.

Failures are classified in the Relay order (structured report status, report limit wording,
auth wording, limit wording, unavailability wording, exit code); the limit wording itself is
read by :mod:`relay_nb.runtime.harness_limits`. Messages are assembled from fixed phrases;
the only CLI-derived pieces are numbers, month names from a fixed table and the exit code,
so no prompt, key or provider text can leak into an error.
"""

from __future__ import annotations

import json
import math
import re
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any, Literal

from relay_nb.errors import InvocationError
from relay_nb.runtime.base import single_forced_tool
from relay_nb.runtime.harness_common import (
    MODEL_NAME,
    check_extra_args,
    checked_model,
    harness_capabilities,
    render_prompt,
    token_warnings,
)
from relay_nb.runtime.harness_limits import harness_failure
from relay_nb.runtime.process import ProcessOutput, ProcessRuntime
from relay_nb.runtime.types import (
    InvocationRequest,
    InvocationResult,
    ToolCall,
    ToolSpec,
    Usage,
    reported_count,
)

__all__ = ["ClaudeCodeProfile", "ClaudeCodeRuntime"]

PROVIDER = "claude-code"
_LABEL = "Claude Code"

# Flags this runtime sets itself, or that would give the model tools to run: extra_args
# may not override them, because "model-written code is never executed" must hold.
_RESERVED_FLAGS = frozenset(
    {
        "-p",
        "--print",
        "--output-format",
        "--input-format",
        "--model",
        "--tools",
        "--allowedTools",
        "--allowed-tools",
        "--strict-mcp-config",
        "--mcp-config",
        "--system-prompt",
        "--system-prompt-file",
        "--json-schema",
        "--permission-mode",
        "--dangerously-skip-permissions",
        "--allow-dangerously-skip-permissions",
    }
)


class ClaudeCodeRuntime(ProcessRuntime):
    """Runs requests through the locally installed, locally authenticated ``claude`` CLI.

    ``env`` adds variables on top of this process's environment for the CLI only; it is
    never echoed into results or errors. ``timeout`` is the default per-invocation limit;
    on timeout or abort the CLI and everything it spawned are killed.
    """

    provider = PROVIDER
    default_env = MappingProxyType({"CLAUDE_CODE_MAX_RETRIES": "0"})
    """The CLI retries a failing service on its own (a refused key came back after 191 s,
    and under a shorter timeout 401 and 429 read as an outage); relay_nb's agent loop owns
    the retry policy, so the CLI's is off unless ``env`` turns it on (issue 36, item 3)."""

    def __init__(
        self,
        model: str = "sonnet",
        *,
        executable: str = "claude",
        extra_args: Sequence[str] = (),
        env: Mapping[str, str] | None = None,
        cwd: str | None = None,
        max_output_bytes: int = 8_000_000,
        timeout: float | None = 300.0,
    ) -> None:
        checked_model(model, MODEL_NAME, "is not a Claude model alias or id (e.g. 'sonnet')")
        check_extra_args(extra_args, _RESERVED_FLAGS, runtime="ClaudeCodeRuntime")
        super().__init__(
            model,
            executable=executable,
            profile=ClaudeCodeProfile(model),
            capabilities=harness_capabilities("native"),
            extra_args=extra_args,
            env=env,
            cwd=cwd,
            max_output_bytes=max_output_bytes,
            timeout=timeout,
        )


@dataclass(frozen=True, slots=True)
class ClaudeCodeProfile:
    """The ``claude`` codec: request -> argv/stdin, JSON result -> InvocationResult."""

    model: str

    def prepare(self, request: InvocationRequest) -> tuple[list[str], bytes]:
        """Argv and stdin. The conversation goes on stdin (no argv size limit, not in
        ``ps``); only the system prompt and schema ride on argv, as the CLI takes them."""
        tool = forced_tool(request)
        args = ["-p", "--output-format", "json", "--model", self.model]
        args += ["--tools", "", "--strict-mcp-config"]
        system = request.system_text()
        if system:
            args += ["--system-prompt", system]
        if tool is not None:
            args += ["--json-schema", json.dumps(tool.input_schema, separators=(",", ":"))]
        return args, render_prompt(request, tool).encode("utf-8")

    def parse(self, output: ProcessOutput, request: InvocationRequest) -> InvocationResult:
        report = load_report(output.stdout)
        if report is None:
            raise InvocationError(
                "RUNTIME_FAILURE",
                f"{_LABEL} printed no JSON result; check that executable= is a Claude Code "
                "CLI that supports --output-format json",
                False,
            )
        if reports_failure(report):
            raise classify_failure(report, output.stderr, exit_code=None)
        return build_result(report, request, self.model)

    def classify_failure(
        self, output: ProcessOutput, request: InvocationRequest
    ) -> InvocationError | None:
        report = load_report(output.stdout)
        failed_report = report if report is not None and reports_failure(report) else None
        return classify_failure(failed_report, output.stderr, exit_code=output.exit_code)


# --------------------------------------------------------------------------- request side


def forced_tool(request: InvocationRequest) -> ToolSpec | None:
    """The one tool the CLI must fill (it takes a schema as an output constraint, not a menu
    of tools), or None for a text request; see :func:`single_forced_tool`."""
    return single_forced_tool(request, label=_LABEL)


# -------------------------------------------------------------------------- result side


def load_report(stdout: bytes) -> dict[str, Any] | None:
    """The CLI's final ``{"type": "result", ...}`` object, or None if there is none.

    Accepts the single object ``--output-format json`` prints, and the event array or
    line-per-event form ``--verbose`` produces (the last result event wins).
    """
    text = stdout.decode("utf-8", errors="replace").strip()
    if not text:
        return None
    try:
        return _pick_report(json.loads(text))
    except (ValueError, RecursionError):
        pass
    for line in reversed(text.splitlines()):
        try:
            report = _pick_report(json.loads(line))
        except (ValueError, RecursionError):
            continue
        if report is not None:
            return report
    return None


def _pick_report(value: Any) -> dict[str, Any] | None:
    if isinstance(value, list):
        results = [v for v in value if isinstance(v, dict) and v.get("type") == "result"]
        return results[-1] if results else None
    if isinstance(value, dict) and value.get("type", "result") == "result":
        return value
    return None


def reports_failure(report: Mapping[str, Any]) -> bool:
    """Whether the result object describes a failed run (its text is then diagnostics)."""
    subtype = report.get("subtype")
    return report.get("is_error") is True or (
        isinstance(subtype, str) and subtype.startswith("error")
    )


def build_result(
    report: Mapping[str, Any], request: InvocationRequest, configured_model: str
) -> InvocationResult:
    """Map a successful result object. For a forced tool the answer *is* the tool call, so
    ``output_text`` stays empty, as with a forced tool on the Messages API."""
    tool = forced_tool(request)
    text = report.get("result")
    if not isinstance(text, str):
        text = ""
    usage = _usage(report)
    model, source = served_model(report.get("modelUsage"), configured_model)
    stop = report.get("stop_reason")
    return InvocationResult(
        provider=PROVIDER,
        model=model,
        model_source=source,
        output_text="" if tool is not None else text,
        tool_calls=[_tool_call(tool, report)] if tool is not None else [],
        usage=usage,
        stop_reason=stop if isinstance(stop, str) and len(stop) <= 64 else None,
        warnings=token_warnings(usage, request, label=_LABEL),
    )


def served_model(
    model_usage: Any, configured: str
) -> tuple[str, Literal["provider-reported", "configured"]]:
    """The model id the CLI resolved the configured name to, when ``modelUsage`` names
    exactly one (else the configured name: picking one of several, e.g. a helper model,
    would be a guess) — always ``"configured"``: ``modelUsage`` is the CLI's resolution of
    the alias, not what the service says it served (a stub serving another model showed
    the CLI reporting its own resolution; issue 36)."""
    if isinstance(model_usage, dict) and len(model_usage) == 1:
        (name,) = model_usage
        if isinstance(name, str) and MODEL_NAME.match(name):
            return name, "configured"
    return configured, "configured"


def _tool_call(tool: ToolSpec, report: Mapping[str, Any]) -> ToolCall:
    """The tool input is the CLI's schema-checked ``structured_output``, and nothing else.

    Fidelity is declared "native": JSON found in the prose ``result`` was never checked
    against the schema, so it is not accepted as a stand-in.
    """
    structured = report.get("structured_output")
    if not isinstance(structured, dict):
        raise InvocationError(
            "RUNTIME_FAILURE",
            f"{_LABEL} returned no structured output for tool {tool.name!r}",
            False,
        )
    return ToolCall(id=f"toolu_cc_{uuid.uuid4().hex[:24]}", name=tool.name, input=structured)


def _usage(report: Mapping[str, Any]) -> Usage:
    raw = report.get("usage")
    tokens: Mapping[str, Any] = raw if isinstance(raw, dict) else {}
    return Usage(
        input_tokens=reported_count(tokens.get("input_tokens")),
        output_tokens=reported_count(tokens.get("output_tokens")),
        cache_read_tokens=reported_count(tokens.get("cache_read_input_tokens")),
        cache_write_tokens=reported_count(tokens.get("cache_creation_input_tokens")),
        cost_usd=_cost(report.get("total_cost_usd")),
    )


def _cost(value: Any) -> float | None:
    """The CLI's own cost figure, or None; Relay never estimates a missing cost."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value) if math.isfinite(value) and value >= 0 else None


# ---------------------------------------------------------------------- failure side

_KNOWN_SUBTYPES = frozenset(
    {
        "error_max_turns",
        "error_during_execution",
        "error_max_budget_usd",
        "error_max_structured_output_retries",
    }
)
_API_ERROR_STATUS = re.compile(r"^\s*API Error:\s*(\d{3})\b")
_LOGIN_HINT = "run `claude` once to log in, or check the key it is configured with"


def classify_failure(
    report: Mapping[str, Any] | None, stderr: bytes, *, exit_code: int | None
) -> InvocationError:
    """Steps 1-6 of the Relay harness order for a failed run (see
    :func:`relay_nb.runtime.harness_limits.harness_failure`).

    ``report`` is the CLI's JSON result only when it says ``is_error`` (a successful answer
    is model prose and is never scanned). ``exit_code`` None means the run exited 0 but
    reported an error: only steps 1-4 apply then.
    """
    report_text = _report_text(report)
    subtype = report.get("subtype") if report is not None else None
    detail = f" ({subtype})" if subtype in _KNOWN_SUBTYPES else ""
    return harness_failure(
        label=_LABEL,
        login_hint=_LOGIN_HINT,
        report_text=report_text,
        stderr_text=stderr.decode("utf-8", errors="replace"),
        status=_report_status(report, report_text),
        exit_code=exit_code,
        failed_run=f"reported a failed run{detail}",
    )


def _report_text(report: Mapping[str, Any] | None) -> str:
    if report is None:
        return ""
    errors = report.get("errors")
    parts = [report.get("result"), *(errors if isinstance(errors, list) else [])]
    return "\n".join(p for p in parts if isinstance(p, str))


def _report_status(report: Mapping[str, Any] | None, text: str) -> int | None:
    if report is None:
        return None
    status = report.get("api_error_status")
    if isinstance(status, int) and not isinstance(status, bool) and 100 <= status <= 599:
        return status
    match = _API_ERROR_STATUS.match(text)
    return int(match.group(1)) if match else None
