"""``OpenCodeCLIRuntime``: one invocation = one ``opencode run --format json`` run.

Authentication stays with the installed CLI (``opencode auth login`` or the provider's own
key variable); this module never reads, copies or stores credentials. Nothing the model
writes is executed, because the CLI is locked down before it starts:

- it runs in a fresh empty temporary directory (unless ``cwd=`` is given), with ``PWD``
  naming that directory (OpenCode takes its project folder from ``$PWD``) and
  ``OPENCODE_DISABLE_PROJECT_CONFIG`` set, so no project ``opencode.json``, ``.opencode``
  agents or plugins, or instruction files are loaded;
- ``OPENCODE_CONFIG*`` variables inherited from this process are dropped (``env=`` may not
  set them), and ``OPENCODE_CONFIG_CONTENT``/``OPENCODE_PERMISSION`` are set last: every
  permission denied, every tool off, and a dedicated primary agent with the same
  lockdown, which the runtime selects with ``--agent`` so no user default agent applies.

A result whose events show tool use anyway is discarded; that check is a backstop, not the
guarantee.

OpenCode has no structured-output option. Structured tools are therefore **prompted** and
**opt-in** (``prompted_tools=True``): the forced tool's JSON schema is written into the
prompt, the JSON object in the answer is parsed and checked here against that schema (a
subset of JSON Schema, see :func:`relay_nb.runtime.prompted.schema_problem`), and every
such result carries a ``STRUCTURED_OUTPUT_PROMPTED`` warning. Without the opt-in a tool
request is refused.

Failures follow the Relay harness order over the ``error`` events and stderr; no CLI text is
copied into an error. OpenCode reports no served model (``model_source="configured"``). Its
``cost`` is a figure OpenCode computes from its own price list, and is 0 both for free models
and for models it has no price for, so only a positive cost is kept.
"""

from __future__ import annotations

import dataclasses
import json
import math
import re
import uuid
from collections.abc import Mapping, Sequence
from typing import Any

from relay_nb.errors import ConfigurationError, InvocationError
from relay_nb.runtime.base import single_forced_tool
from relay_nb.runtime.harness_common import (
    checked_model,
    harness_capabilities,
    read_events,
    render_prompt,
    report_failure,
    require_events,
    token_warnings,
)
from relay_nb.runtime.process import ProcessOutput, ProcessRuntime
from relay_nb.runtime.prompted import json_object, prompted_instructions, schema_problem
from relay_nb.runtime.types import (
    InvocationRequest,
    InvocationResult,
    ToolCall,
    ToolSpec,
    Usage,
    reported_count,
)

__all__ = ["OpenCodeCLIProfile", "OpenCodeCLIRuntime", "PROMPTED_WARNING"]

PROVIDER = "opencode"
_LABEL = "OpenCode"
_LOGIN_HINT = "run `opencode auth login` once, or pass the provider's key variable in env="
PROMPTED_WARNING = "STRUCTURED_OUTPUT_PROMPTED"
_MODEL_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._:@\[\]+-]{0,63}/[A-Za-z0-9._:@/\[\]+-]{1,127}$")
"""``provider/model``; never starting with '-', so it cannot be read as a CLI flag."""

_TOOL_NAMES = (
    "bash",
    "edit",
    "write",
    "read",
    "grep",
    "glob",
    "list",
    "patch",
    "multiedit",
    "webfetch",
    "websearch",
    "codesearch",
    "task",
    "todowrite",
    "todoread",
    "skill",
    "lsp",
    "question",
    "external_directory",
    "doom_loop",
)
_PERMISSION = {"*": "deny", **dict.fromkeys(_TOOL_NAMES, "deny")}
_TOOLS = {"*": False, **dict.fromkeys(_TOOL_NAMES, False)}
AGENT = "relay_nb_locked"
"""The agent the runtime defines in its forced config and selects with ``--agent``: a
primary agent (a subagent would be refused and the default used) with nothing allowed."""
_CONFIG = {
    "$schema": "https://opencode.ai/config.json",
    "permission": _PERMISSION,
    "tools": _TOOLS,
    "agent": {
        AGENT: {
            "mode": "primary",
            "description": "Relay: answers in text only; every tool and permission is off.",
            "permission": _PERMISSION,
            "tools": _TOOLS,
        }
    },
    "share": "disabled",
    "autoupdate": False,
    "snapshot": False,
}
_FORCED_ENV = {
    "OPENCODE_CONFIG_CONTENT": json.dumps(_CONFIG, separators=(",", ":")),
    "OPENCODE_PERMISSION": json.dumps(_PERMISSION, separators=(",", ":")),
    "OPENCODE_DISABLE_PROJECT_CONFIG": "true",
    "OPENCODE_DISABLE_CLAUDE_CODE": "true",
    "OPENCODE_DISABLE_AUTOUPDATE": "true",
}
_DROPPED_ENV = ("OPENCODE_CONFIG",)
"""``OPENCODE_CONFIG`` (another config file), ``OPENCODE_CONFIG_DIR`` (another config
folder, with its agents and plugins) and ``OPENCODE_CONFIG_CONTENT``."""
_VALUE_FLAGS = frozenset({"--variant", "--title"})
_BOOLEAN_FLAGS = frozenset({"--thinking", "--no-thinking"})
"""The only ``extra_args`` allowed (``opencode run`` options that neither pick the session,
agent, files or directory nor touch permissions): an allow-list, since yargs accepts other
spellings of a flag too (camelCase names, ``--c`` for ``-c``)."""


class OpenCodeCLIRuntime(ProcessRuntime):
    """Runs requests through the locally installed, locally authenticated ``opencode`` CLI.

    ``model`` is ``provider/model`` (e.g. ``anthropic/claude-sonnet-4-5``). With
    ``prompted_tools=True`` a request may force one structured tool, answered by prompting
    (see the module docstring); without it, tool requests are refused. ``env`` adds
    variables for the CLI only and never appears in results or errors.
    """

    provider = PROVIDER
    workdir_prefix = "relay-opencode-"
    forced_env = _FORCED_ENV
    dropped_env_prefixes = _DROPPED_ENV

    def __init__(
        self,
        model: str,
        *,
        prompted_tools: bool = False,
        executable: str = "opencode",
        extra_args: Sequence[str] = (),
        env: Mapping[str, str] | None = None,
        cwd: str | None = None,
        max_output_bytes: int = 8_000_000,
        timeout: float | None = 300.0,
    ) -> None:
        checked_model(
            model,
            _MODEL_NAME,
            "is not an OpenCode model; use provider/model, e.g. anthropic/claude-sonnet-4-5",
        )
        if not isinstance(prompted_tools, bool):
            raise ConfigurationError("prompted_tools must be True or False")
        _check_extra_args(extra_args)
        for name in env or {}:
            if name in _FORCED_ENV or name.startswith(_DROPPED_ENV) or name == "PWD":
                raise ConfigurationError(
                    f"env may not set {name}: OpenCodeCLIRuntime sets OpenCode's config "
                    "itself so that its tools stay off"
                )
        self.prompted_tools = prompted_tools
        super().__init__(
            model,
            executable=executable,
            profile=OpenCodeCLIProfile(model, prompted_tools),
            capabilities=harness_capabilities("prompted" if prompted_tools else "unavailable"),
            extra_args=extra_args,
            env=env,
            cwd=cwd,
            max_output_bytes=max_output_bytes,
            timeout=timeout,
        )


def _check_extra_args(extra_args: Sequence[str]) -> None:
    """Allow only ``--variant V``, ``--title T`` (also ``--flag=V``) and ``--thinking``/
    ``--no-thinking``; everything else, positionals included, is refused."""
    args = list(extra_args)
    index = 0
    while index < len(args):
        arg = str(args[index])
        flag = arg.split("=", 1)[0]
        if flag in _BOOLEAN_FLAGS and flag == arg:
            index += 1
            continue
        if flag in _VALUE_FLAGS:
            value = arg[len(flag) + 1 :] if "=" in arg else None
            if value is None and index + 1 < len(args):
                index += 1
                value = str(args[index])
            if value and not value.startswith("-"):
                index += 1
                continue
        raise ConfigurationError(
            f"extra_args may not contain {arg!r}: OpenCodeCLIRuntime allows only --variant, "
            "--title and --thinking, so no option can pick files, sessions, agents or "
            "permissions"
        )


@dataclasses.dataclass(frozen=True, slots=True)
class OpenCodeCLIProfile:
    """The ``opencode run`` codec: request -> argv/stdin, JSON events -> InvocationResult."""

    model: str
    prompted_tools: bool = False

    def prepare(self, request: InvocationRequest) -> tuple[list[str], bytes]:
        tool = self._forced_tool(request)
        prompt = render_prompt(request, None, inline_system=True)
        if tool is not None:
            prompt += "\n\n" + prompted_instructions(tool)
        args = ["run", "--format", "json", "--model", self.model, "--agent", AGENT]
        return args, prompt.encode("utf-8")

    def _forced_tool(self, request: InvocationRequest) -> ToolSpec | None:
        if request.tools and not self.prompted_tools:
            raise InvocationError(
                "INVALID_REQUEST",
                f"{_LABEL} has no structured tools; opt in to prompted structured output "
                "with OpenCodeCLIRuntime(..., prompted_tools=True) (profile: "
                "opencode:MODEL?prompted_tools=true), knowing the schema is then only "
                "requested in the prompt, not enforced",
                False,
            )
        return single_forced_tool(request, label=_LABEL, reason=" runs without native tools")

    def parse(self, output: ProcessOutput, request: InvocationRequest) -> InvocationResult:
        events = require_events(
            output.stdout,
            label=_LABEL,
            cli="an OpenCode CLI that supports `opencode run --format json`",
        )
        report, status = _failure_report(events)
        if report is not None:
            raise report_failure(
                report, status, output.stderr, exit_code=None, label=_LABEL, login_hint=_LOGIN_HINT
            )
        if any(e["type"] == "tool_use" for e in events):  # backstop: the lockdown failed
            raise InvocationError(
                "RUNTIME_FAILURE",
                f"{_LABEL} used a tool although its tools were switched off; the result was "
                "discarded. Update OpenCode, or check its managed config",
                False,
            )
        return self._result(events, request)

    def classify_failure(
        self, output: ProcessOutput, request: InvocationRequest
    ) -> InvocationError | None:
        report, status = _failure_report(read_events(output.stdout))
        return report_failure(
            report,
            status,
            output.stderr,
            exit_code=output.exit_code,
            label=_LABEL,
            login_hint=_LOGIN_HINT,
        )

    def _result(self, events: list[dict[str, Any]], request: InvocationRequest) -> InvocationResult:
        tool = self._forced_tool(request)
        text = _answer_text(events)
        if not text.strip():
            raise InvocationError("RUNTIME_FAILURE", f"{_LABEL} finished without an answer", False)
        usage, reason = _usage(events)
        calls: list[ToolCall] = []
        warnings: list[str] = []
        if tool is not None:
            calls = [ToolCall(id=f"call_oc_{uuid.uuid4().hex[:24]}", name=tool.name,
                              input=_prompted_input(text, tool))]  # fmt: skip
            warnings.append(
                f"{PROMPTED_WARNING}: the input of tool {tool.name!r} was requested in the "
                f"prompt and parsed from {_LABEL}'s text answer; the CLI did not enforce its "
                "schema (it was checked against the schema afterwards)"
            )
        warnings += token_warnings(usage, request, label=_LABEL)
        return InvocationResult(
            provider=PROVIDER,
            model=self.model,
            model_source="configured",
            output_text="" if tool is not None else text,
            tool_calls=calls,
            usage=usage,
            stop_reason="tool_use" if tool is not None else _stop_reason(reason),
            warnings=warnings,
        )


# -------------------------------------------------------------------------- events


def _failure_report(events: list[dict[str, Any]]) -> tuple[str | None, int | None]:
    """Text of the ``error`` events (error name and message; None if none) and a status."""
    texts: list[str] = []
    status: int | None = None
    for event in events:
        if event["type"] != "error":
            continue
        error = event.get("error")
        error = error if isinstance(error, dict) else {}
        data = error.get("data")
        if not isinstance(data, dict):
            data = {}
        parts = [error.get("name"), data.get("message"), error.get("message")]
        texts.append("\n".join(p for p in parts if isinstance(p, str)))
        code = data.get("statusCode")
        if isinstance(code, int) and not isinstance(code, bool) and 100 <= code <= 599:
            status = status or code
    return ("\n".join(texts), status) if texts else (None, None)


def _answer_text(events: list[dict[str, Any]]) -> str:
    """The text parts of the last assistant message (earlier steps are not the answer)."""
    parts: list[tuple[Any, str]] = []
    for event in events:
        part = event.get("part") if event["type"] == "text" else None
        if isinstance(part, dict) and isinstance(part.get("text"), str):
            parts.append((part.get("messageID"), part["text"]))
    if not parts:
        return ""
    last = parts[-1][0]
    return "".join(text for message, text in parts if message == last)


def _usage(events: list[dict[str, Any]]) -> tuple[Usage, str | None]:
    """Summed ``step_finish`` tokens (one step per model call) and the last finish reason.
    OpenCode's ``input`` excludes cache reads and writes, as Relay's ``input_tokens`` does;
    its ``output`` excludes ``reasoning``, which Relay counts as output."""
    totals: dict[str, int | None] = dict.fromkeys(("input", "output", "read", "write"))
    # ``output`` excludes reasoning tokens (reported apart), which are billed as output.
    cost = 0.0
    reason: str | None = None
    for event in events:
        part = event.get("part") if event["type"] == "step_finish" else None
        if not isinstance(part, dict):
            continue
        said = part.get("reason")
        if isinstance(said, str):
            reason = said
        tokens = part.get("tokens")
        if not isinstance(tokens, dict):
            tokens = {}
        cache = tokens.get("cache")
        if not isinstance(cache, dict):
            cache = {}
        found = {
            "input": tokens.get("input"),
            "output": tokens.get("output"),
            "reasoning": tokens.get("reasoning"),
            "read": cache.get("read"),
            "write": cache.get("write"),
        }
        for key, raw in found.items():
            count = reported_count(raw)
            if count is not None:
                bucket = "output" if key == "reasoning" else key
                totals[bucket] = (totals[bucket] or 0) + count
        value = part.get("cost")
        if isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value):
            cost += max(float(value), 0.0)
    usage = Usage(
        input_tokens=totals["input"],
        output_tokens=totals["output"],
        cache_read_tokens=totals["read"],
        cache_write_tokens=totals["write"],
        cost_usd=cost if cost > 0 else None,
    )
    return usage, reason


def _stop_reason(reason: str | None) -> str | None:
    mapping = {"stop": "end_turn", "length": "max_tokens", "tool-calls": "tool_use"}
    return mapping.get(reason or "")


# ------------------------------------------------------------- prompted structure


def _prompted_input(text: str, tool: ToolSpec) -> dict[str, Any]:
    value = json_object(text)
    if value is None:
        raise InvocationError(
            "RUNTIME_FAILURE",
            f"{_LABEL}'s answer held no JSON object for tool {tool.name!r} (prompted "
            "structured output is not enforced by the CLI); try again or use a model that "
            "follows formats more closely",
            False,
        )
    problem = schema_problem(value, tool.input_schema)
    if problem is not None:
        raise InvocationError(
            "RUNTIME_FAILURE",
            f"{_LABEL}'s JSON for tool {tool.name!r} does not match its input schema "
            f"({problem}); prompted structured output is not enforced by the CLI",
            False,
        )
    return value
