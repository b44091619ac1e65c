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
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from relay_nb.errors import ConfigurationError, InvocationError
from relay_nb.runtime.base import single_forced_tool
from relay_nb.runtime.harness_limits import rate_limit_error
from relay_nb.runtime.process import ProcessOutput, ProcessRuntime, exit_description
from relay_nb.runtime.types import (
    Capabilities,
    InvocationRequest,
    InvocationResult,
    Message,
    TextPart,
    ToolCall,
    ToolCallPart,
    ToolResultPart,
    ToolSpec,
    Usage,
)

__all__ = ["ClaudeCodeProfile", "ClaudeCodeRuntime"]

PROVIDER = "claude-code"
_LABEL = "Claude Code"

_CAPABILITIES = Capabilities(
    structured_tools=True,
    structured_tools_fidelity="native",
    streaming=False,
    abort=True,
    usage=True,
    output_token_limit_fidelity="unavailable",
    physical_batch=False,
    single_forced_tool_only=True,
)

_MODEL_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._:@/\[\]-]{0,127}$")
"""A model alias or id; never starting with '-', so it cannot be read as a CLI flag."""

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
        if not _MODEL_NAME.match(model):
            raise ConfigurationError(
                f"model {model!r} is not a Claude model alias or id (e.g. 'sonnet')"
            )
        _check_extra_args(extra_args)
        self.model = model
        super().__init__(
            runtime_id=f"{PROVIDER}:{model}",
            provider=PROVIDER,
            executable=executable,
            profile=ClaudeCodeProfile(model),
            capabilities=_CAPABILITIES,
            extra_args=extra_args,
            env=env,
            cwd=cwd,
            max_output_bytes=max_output_bytes,
            timeout=timeout,
        )


def _check_extra_args(extra_args: Sequence[str]) -> None:
    for arg in extra_args:
        flag = arg.split("=", 1)[0]
        if flag in _RESERVED_FLAGS:
            raise ConfigurationError(
                f"extra_args may not contain {flag}: ClaudeCodeRuntime sets it itself or it "
                "would let the model run tools"
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


def render_prompt(request: InvocationRequest, tool: ToolSpec | None) -> str:
    """The stdin text: the conversation (system messages go to --system-prompt) plus, for a
    forced tool, its instructions, since the CLI passes the schema on but not as prose."""
    turns = [m for m in request.messages if m.role != "system"]
    if len(turns) == 1 and all(isinstance(p, TextPart) for p in turns[0].parts()):
        body = turns[0].text()  # a single question reads best without transcript framing
    else:
        rendered = "\n\n".join(block for m in turns for block in _render_message(m))
        body = (
            "The conversation so far is below. Reply as the assistant to its last turn.\n\n"
            + rendered
        )
    if tool is None:
        return body
    return body + "\n\n" + _tool_instructions(tool)


def _render_message(message: Message) -> Iterator[str]:
    """Blocks of a readable transcript; the CLI has no message list, only one prompt."""
    for part in message.parts():
        if isinstance(part, TextPart):
            if part.text:
                yield f"{message.role.capitalize()}:\n{part.text}"
        elif isinstance(part, ToolCallPart):
            arguments = json.dumps(part.input, ensure_ascii=False, sort_keys=True)
            yield f"Assistant called tool {part.name} (call {part.id}) with input:\n{arguments}"
        elif isinstance(part, ToolResultPart):
            kind = "Error from" if part.is_error else "Result of"
            yield f"{kind} tool call {part.tool_call_id}:\n{part.content}"


def _tool_instructions(tool: ToolSpec) -> str:
    lines = [
        f'Answer by producing the input of the tool "{tool.name}" as a JSON object that '
        "matches the given JSON schema."
    ]
    if tool.description.strip():
        lines.append(f"Tool description: {tool.description.strip()}")
    fields = schema_descriptions(tool.input_schema)
    if fields:
        lines.append("Field descriptions:")
        lines += [f"- {path or '(the whole input)'}: {text}" for path, text in fields]
    return "\n".join(lines)


_MAX_SCHEMA_DEPTH = 32


def schema_descriptions(schema: Any) -> list[tuple[str, str]]:
    """Every ``description`` in a JSON schema with a readable path, in document order.

    Walks the root, ``properties``, a single-schema ``items``, ``anyOf``/``oneOf``/``allOf``
    branches and ``$defs``/``definitions``; other keywords are left to the CLI, which
    receives the full schema anyway. Duplicates are dropped so a branch repeating its
    parent's text does not say it twice.
    """
    found: list[tuple[str, str]] = []
    _collect(schema, "", 0, found)
    return list(dict.fromkeys(found))


def _collect(schema: Any, path: str, depth: int, found: list[tuple[str, str]]) -> None:
    if not isinstance(schema, dict) or depth > _MAX_SCHEMA_DEPTH:
        return
    description = schema.get("description")
    if isinstance(description, str) and description.strip():
        found.append((path, description.strip()))
    properties = schema.get("properties")
    if isinstance(properties, dict):
        for name, sub in properties.items():
            _collect(sub, f"{path}.{name}" if path else str(name), depth + 1, found)
    items = schema.get("items")
    if isinstance(items, dict):
        _collect(items, f"{path}[]" if path else "[]", depth + 1, found)
    for keyword in ("anyOf", "oneOf", "allOf"):
        branches = schema.get(keyword)
        if isinstance(branches, list):
            for branch in branches:
                _collect(branch, path, depth + 1, found)
    for keyword in ("$defs", "definitions"):
        definitions = schema.get(keyword)
        if isinstance(definitions, dict):
            for name, sub in definitions.items():
                _collect(sub, f"{keyword}.{name}", depth + 1, found)


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
    text = report.get("result") if isinstance(report.get("result"), str) else ""
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
        warnings=_token_warnings(usage, request),
    )


def served_model(
    model_usage: Any, configured: str
) -> tuple[str, Literal["provider-reported", "configured"]]:
    """The served model when ``modelUsage`` names exactly one; otherwise the configured one,
    because picking one of several (e.g. a helper model) would be a guess."""
    if isinstance(model_usage, dict) and len(model_usage) == 1:
        (name,) = model_usage
        if isinstance(name, str) and _MODEL_NAME.match(name):
            return name, "provider-reported"
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
        input_tokens=_count(tokens.get("input_tokens")),
        output_tokens=_count(tokens.get("output_tokens")),
        cache_read_tokens=_count(tokens.get("cache_read_input_tokens")),
        cache_write_tokens=_count(tokens.get("cache_creation_input_tokens")),
        cost_usd=_cost(report.get("total_cost_usd")),
    )


def _count(value: Any) -> int | None:
    """A token count as reported, or None: a malformed number must not fail the result."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    if not math.isfinite(value) or value < 0 or value != int(value):
        return None
    return int(value)


def _cost(value: Any) -> float | None:
    """The CLI's own cost figure, or None; Relay never estimates a missing cost."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value) if math.isfinite(value) and value >= 0 else None


def _token_warnings(usage: Usage, request: InvocationRequest) -> list[str]:
    limit, observed = request.max_output_tokens, usage.output_tokens
    if limit is None or observed is None or observed <= limit:
        return []
    return [
        f"OUTPUT_TOKEN_LIMIT_NOT_ENFORCED: requested {limit}, observed {observed}; "
        f"{_LABEL} has no per-invocation output limit"
    ]


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
_AUTH_TEXT = re.compile(
    r"invalid (?:x-)?api[ -]?key|authentication[ _](?:error|failed)|\bunauthori[sz]ed\b"
    r"|not (?:logged|signed) in|please run /login|\blog ?in again\b|oauth token"
    r"|token (?:has )?expired|invalid (?:bearer )?(?:token|credentials?)"
    r"|credentials? (?:are |is )?(?:missing|invalid|expired)|permission_error"
    r"|api error:\s*40[13]\b",
    re.IGNORECASE,
)
_UNAVAILABLE_TEXT = re.compile(r"\b(?:overloaded|unavailable|temporarily)\b", re.IGNORECASE)


def classify_failure(
    report: Mapping[str, Any] | None, stderr: bytes, *, exit_code: int | None
) -> InvocationError:
    """Steps 1-6 of the Relay harness order for a failed run.

    ``report`` is the CLI's JSON result only when it says ``is_error`` (a successful answer
    is model prose and is never scanned). ``exit_code`` None means the run exited 0 but
    reported an error: only steps 1-4 apply then.
    """
    report_text = _report_text(report)
    stderr_text = stderr.decode("utf-8", errors="replace")
    status = _report_status(report, report_text)
    if status in (401, 403):
        return _auth_error(status)
    limited = rate_limit_error(report_text, label=_LABEL, status_429=status == 429)
    if limited is not None:
        return limited
    if _AUTH_TEXT.search(stderr_text) or _AUTH_TEXT.search(report_text):
        return _auth_error(None)
    limited = rate_limit_error(stderr_text, label=_LABEL, status_429=False)
    if limited is not None:
        return limited
    if exit_code is None:
        return InvocationError("RUNTIME_FAILURE", _failed_run_message(report), False)
    if (status is not None and status >= 500 and status != 501) or any(
        _UNAVAILABLE_TEXT.search(t) for t in (stderr_text, report_text)
    ):
        return InvocationError(
            "PROVIDER_UNAVAILABLE",
            f"{_LABEL} reports the model service is overloaded or unavailable; try again shortly",
            True,
        )
    return InvocationError("RUNTIME_FAILURE", f"{_LABEL} {exit_description(exit_code)}", False)


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


def _auth_error(status: int | None) -> InvocationError:
    suffix = f" (HTTP {status})" if status is not None else ""
    return InvocationError(
        "AUTHENTICATION_FAILED",
        f"{_LABEL} is not logged in or its credentials were refused{suffix}; run `claude` "
        "once to log in, or check the key it is configured with",
        False,
    )


def _failed_run_message(report: Mapping[str, Any] | None) -> str:
    subtype = report.get("subtype") if report is not None else None
    detail = f" ({subtype})" if subtype in _KNOWN_SUBTYPES else ""
    return f"{_LABEL} reported a failed run{detail}"
