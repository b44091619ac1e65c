"""What the harness CLI profiles (Claude Code, Codex, OpenCode) share, so none imports another.

Every harness CLI takes one prompt instead of a message list, so the conversation is rendered
as a readable transcript (:func:`render_prompt`); each must refuse model names that could be
read as flags and ``extra_args`` that would override its own flags or give the model tools
(:func:`checked_model`; :func:`check_extra_args` is a deny-list, while Codex and OpenCode,
whose parsers accept many spellings of a flag, keep allow-lists of their own); each
declares the same capabilities apart from its structured-tool fidelity
(:func:`harness_capabilities`); and each reports token counts that may be malformed
(:func:`~relay_nb.runtime.types.reported_count`) and has no per-invocation output limit
(:func:`token_warnings`).
Codex and OpenCode print JSON-lines events (:func:`read_events`).
"""

from __future__ import annotations

import json
import re
from collections.abc import Collection, Iterator, Sequence
from typing import Any, Literal

from relay_nb.errors import ConfigurationError, InvocationError
from relay_nb.runtime.harness_limits import harness_failure
from relay_nb.runtime.types import (
    Capabilities,
    InvocationRequest,
    Message,
    TextPart,
    ToolCallPart,
    ToolResultPart,
    ToolSpec,
    Usage,
)

__all__ = [
    "MODEL_NAME",
    "check_extra_args",
    "check_flag",
    "checked_model",
    "harness_capabilities",
    "read_events",
    "render_prompt",
    "report_failure",
    "require_events",
    "schema_descriptions",
    "token_warnings",
]

MODEL_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._:@/\[\]-]{0,127}$")
"""A model alias or id; never starting with '-', so it cannot be read as a CLI flag."""


# ------------------------------------------------------------------------ configuration


def checked_model(model: Any, pattern: re.Pattern[str], problem: str) -> str:
    """``model`` if it is a string ``pattern`` matches; else ConfigurationError saying
    ``model '...' {problem}`` (the pattern keeps a leading '-' out, so no flag gets in)."""
    if not isinstance(model, str) or not pattern.match(model):
        raise ConfigurationError(f"model {model!r} {problem}")
    return model


def check_flag(arg: str, reserved: Collection[str], *, runtime: str) -> str | None:
    """The option ``arg`` names (``--flag`` of ``--flag=value``, ``-x`` of ``-xVALUE``; None
    for a value or ``-``), refused with ConfigurationError when it is in ``reserved``."""
    if not arg.startswith("-") or arg == "-":
        return None
    flag = arg.split("=", 1)[0] if arg.startswith("--") else arg[:2]
    if flag in reserved:
        raise ConfigurationError(
            f"extra_args may not contain {flag}: {runtime} sets it itself or it would let "
            "the model run tools"
        )
    return flag


def check_extra_args(extra_args: Sequence[str], reserved: Collection[str], *, runtime: str) -> None:
    """Refuse every flag of ``extra_args`` the runtime owns or that would enable tools."""
    for arg in extra_args:
        check_flag(arg, reserved, runtime=runtime)


def harness_capabilities(
    structured: Literal["native", "prompted", "unavailable"],
) -> Capabilities:
    """A harness CLI's capabilities: no streaming, abortable, usage reported, no output
    limit, no batches; a structured tool (if any) must be the single forced one."""
    return Capabilities(
        structured_tools=structured != "unavailable",
        structured_tools_fidelity=structured,
        streaming=False,
        abort=True,
        usage=True,
        output_token_limit_fidelity="unavailable",
        physical_batch=False,
        single_forced_tool_only=structured != "unavailable",
    )


# ------------------------------------------------------------------------------ prompt


def render_prompt(
    request: InvocationRequest, tool: ToolSpec | None, *, inline_system: bool = False
) -> str:
    """The stdin text: the conversation (system messages go to --system-prompt) plus, for a
    forced tool, its instructions, since the CLI passes the schema on but not as prose.

    ``inline_system`` puts the system text at the top instead, for a CLI with no system
    prompt option (Codex, OpenCode)."""
    body = _conversation(request)
    system = request.system_text() if inline_system else ""
    if system:
        body = f"<instructions>\n{system}\n</instructions>\n\n{body}"
    if tool is None:
        return body
    return body + "\n\n" + _tool_instructions(tool)


def _conversation(request: InvocationRequest) -> str:
    turns = [m for m in request.messages if m.role != "system"]
    if len(turns) == 1 and all(isinstance(p, TextPart) for p in turns[0].parts()):
        body = turns[0].text()  # a single question reads best without transcript framing
    else:
        rendered = "\n\n".join(block for m in turns for block in _render_message(m))
        body = (
            "The conversation so far is below. Reply as the assistant to its last turn.\n\n"
            + rendered
        )
    return body


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


# ------------------------------------------------------------------------------ output


def read_events(stdout: bytes) -> list[dict[str, Any]]:
    """The JSONL events (objects with a string ``type``); other lines are skipped."""
    events: list[dict[str, Any]] = []
    for line in stdout.decode("utf-8", errors="replace").splitlines():
        line = line.strip()
        if not line.startswith("{"):
            continue
        try:
            event = json.loads(line)
        except (ValueError, RecursionError):
            continue
        if isinstance(event, dict) and isinstance(event.get("type"), str):
            events.append(event)
    return events


def require_events(stdout: bytes, *, label: str, cli: str) -> list[dict[str, Any]]:
    """:func:`read_events`, refusing output with none (``cli`` says what executable= must
    be, e.g. "a Codex CLI that supports `codex exec --json`")."""
    events = read_events(stdout)
    if not events:
        raise InvocationError(
            "RUNTIME_FAILURE",
            f"{label} printed no JSON events; check that executable= is {cli}",
            False,
        )
    return events


def report_failure(
    report: str | None,
    status: int | None,
    stderr: bytes,
    *,
    exit_code: int | None,
    label: str,
    login_hint: str,
    tested: str = "",
    events_seen: bool | None = None,
) -> InvocationError:
    """:func:`harness_failure` for an event-stream CLI: ``report``/``status`` are what the
    profile read from its error events (None: there were none), ``exit_code`` None means the
    run exited 0 but reported an error."""
    return harness_failure(
        label=label,
        login_hint=login_hint,
        report_text=report or "",
        stderr_text=stderr.decode("utf-8", errors="replace"),
        status=status,
        exit_code=exit_code,
        tested=tested,
        events_seen=events_seen,
    )


def token_warnings(usage: Usage, request: InvocationRequest, *, label: str) -> list[str]:
    """The CLI cannot cap output tokens: an overrun is reported as a warning, not hidden."""
    limit, observed = request.max_output_tokens, usage.output_tokens
    if limit is None or observed is None or observed <= limit:
        return []
    return [
        f"OUTPUT_TOKEN_LIMIT_NOT_ENFORCED: requested {limit}, observed {observed}; "
        f"{label} has no per-invocation output limit"
    ]
