"""``CodexCLIRuntime``: one invocation = one ``codex exec --json`` run.

Authentication stays with the installed CLI (its ChatGPT login or ``CODEX_API_KEY``); this
module never reads, copies or stores credentials. Nothing the model writes is executed, by
lockdown before the run: ``--sandbox read-only`` with approvals off, in a fresh empty
temporary directory, with ``-c`` overrides switching off the shell, exec, patch, image,
web-search and MCP tools and every feature that runs code or reaches out (sub-agents, code
mode, JavaScript REPL, apps, plugins, hooks, memories, image generation ...). Only model
settings may be added through
``extra_args`` (see :func:`check_codex_extra_args`). A result whose event stream shows tool
activity anyway is discarded; that check is a backstop, not the guarantee.
``--ignore-user-config`` keeps the user's ``config.toml`` out of the run altogether (newer
CLIs merge ``-c`` tables into it, so ``mcp_servers={}`` alone would not remove MCP servers
configured there); the login stays. A CLI too old to know the flag fails with a message
saying to update it.

A structured tool becomes ``--output-schema FILE``. Codex enforces it with OpenAI's strict
structured outputs, which need every object closed and every property required, so the
tool's schema is made strict on the way out (optional properties become nullable, a
free-form object travels as a JSON string) and the answer is mapped back on the way in.

Failures follow the Relay harness order (:func:`relay_nb.runtime.harness_limits.
harness_failure`) over the ``turn.failed``/``error`` events and stderr; no CLI text is
copied into an error. Codex reports no served model and no cost: results say
``model_source="configured"`` and ``cost_usd=None``.
"""

from __future__ import annotations

import dataclasses
import json
import os
import re
import uuid
from collections.abc import Mapping, Sequence
from typing import Any

from relay_nb.errors import ConfigurationError, InvocationError
from relay_nb.runtime.base import single_forced_tool
from relay_nb.runtime.harness_common import (
    MODEL_NAME,
    checked_model,
    harness_capabilities,
    read_events,
    render_prompt,
    report_failure,
    require_events,
    token_warnings,
)
from relay_nb.runtime.process import HarnessProfile, ProcessOutput, ProcessRuntime
from relay_nb.runtime.types import (
    InvocationRequest,
    InvocationResult,
    ToolCall,
    ToolSpec,
    Usage,
    reported_count,
)

__all__ = ["CodexCLIProfile", "CodexCLIRuntime", "from_strict", "strict_schema"]

PROVIDER = "codex"
_LABEL = "Codex"
_LOGIN_HINT = "run `codex login` once, or set CODEX_API_KEY in env="
TESTED = "@openai/codex 0.169.0"
"""The CLI release the real-client tests run (tests/clients; installed by scripts/setup)."""

_OFF_FEATURES = (
    # tools that run commands, edit files or evaluate code
    "shell_tool",
    "unified_exec",
    "apply_patch_freeform",
    "js_repl",
    "js_repl_tools_only",
    "code_mode",
    "code_mode_only",
    "artifact",
    # sub-agents and permission requests
    "multi_agent",
    "multi_agent_v2",
    "enable_fanout",
    "request_permissions_tool",
    "exec_permission_approvals",
    "guardian_approval",
    # reaching out: apps, plugins, browsers, hooks, MCP installs, search, images, memory
    "apps",
    "enable_mcp_apps",
    "tool_suggest",
    "plugins",
    "browser_use",
    "browser_use_external",
    "computer_use",
    "in_app_browser",
    "hooks",
    "skill_mcp_dependency_install",
    "standalone_web_search",
    "image_generation",
    "view_image",
    "memories",
)
"""``[features]`` keys switched off: those (on by default or switchable on in a user's
config) that give the model a way to run code or reach out. Names follow
``codex-rs/features/src/lib.rs``. Keys a current CLI reports as deprecated or ignored are
left out (they printed a warning on every call): the user's config, where one could have
been switched on, is not read (``--ignore-user-config``), and their defaults are off."""
_LOCKDOWN = (
    'approval_policy="never"',
    'sandbox_mode="read-only"',
    'web_search="disabled"',
    "tools.web_search=false",
    "mcp_servers={}",
    *(f"features.{name}=false" for name in _OFF_FEATURES),
    "project_doc_max_bytes=0",
    'shell_environment_policy.inherit="none"',
)
"""Config overrides (TOML values, as ``-c`` takes them). No profile: the user's
``config.toml``, its profiles included, is not read (``--ignore-user-config``), and current
CLIs refuse a ``profile`` override outright."""
_CONFIG_FLAGS = ("-c", "--config")
_ALLOWED_CONFIG_KEY = re.compile(r"^(?:model_[a-z_]+|model_providers\.[A-Za-z0-9_.-]+)$")
"""``-c`` keys extra_args may set: model tuning and provider definitions, nothing else."""
_TOOL_ITEMS = frozenset(
    {
        "command_execution",
        "file_change",
        "mcp_tool_call",
        "web_search",
        "collab_tool_call",
    }
)
"""Items that mean the CLI ran something (its plan and reasoning items are harmless)."""
_STATUS = re.compile(
    r"\b(?:status(?: code)?|http)\s*(?::\s*)?([1-5]\d\d)\b"
    r"|\b([45]\d\d) (?:unauthorized|forbidden|too many requests|internal server error"
    r"|bad gateway|service unavailable|gateway timeout)\b",
    re.IGNORECASE,
)


_READ = 4096
"""Characters of an error event's text read for its status."""


class CodexCLIRuntime(ProcessRuntime):
    """Runs requests through the locally installed, locally authenticated ``codex`` CLI.

    ``env`` adds variables for the CLI only (e.g. ``CODEX_HOME``, ``CODEX_API_KEY``); it is
    never echoed into results or errors. ``extra_args`` go after the runtime's own flags
    and may only be ``-c model_*=...`` overrides (e.g. ``-c model_reasoning_effort=low``);
    any other flag or positional is refused. ``timeout`` is the default per-invocation limit; on
    timeout or abort the CLI and everything it spawned are killed.
    """

    provider = PROVIDER
    workdir_prefix = "relay-codex-"
    trailing_args = ("-",)  # the prompt comes from stdin

    def __init__(
        self,
        model: str = "gpt-5",
        *,
        executable: str = "codex",
        extra_args: Sequence[str] = (),
        env: Mapping[str, str] | None = None,
        cwd: str | None = None,
        max_output_bytes: int = 8_000_000,
        timeout: float | None = 300.0,
    ) -> None:
        checked_model(model, MODEL_NAME, "is not a Codex model id (e.g. 'gpt-5')")
        check_codex_extra_args(extra_args)
        super().__init__(
            model,
            executable=executable,
            profile=CodexCLIProfile(model),
            capabilities=harness_capabilities("native"),
            extra_args=extra_args,
            env=env,
            cwd=cwd,
            max_output_bytes=max_output_bytes,
            timeout=timeout,
        )

    def _profile_for(self, workdir: str) -> HarnessProfile:
        return dataclasses.replace(self.profile, workdir=workdir)  # type: ignore[type-var]


def check_codex_extra_args(extra_args: Sequence[str]) -> None:
    """Allow only ``-c``/``--config`` overrides of model settings (``model_*`` keys and
    ``model_providers.*``), in any spelling clap accepts (``-c K=V``, ``-cK=V``,
    ``--config=K=V``); every other flag and every positional (``resume``, ``review``, a
    prompt) is refused. An allow-list: a new CLI flag is refused until reviewed."""
    args = [str(arg) for arg in extra_args]
    index = 0
    while index < len(args):
        arg = args[index]
        flag = arg.split("=", 1)[0] if arg.startswith("--") else arg[:2]
        if flag not in _CONFIG_FLAGS:
            raise ConfigurationError(
                f"extra_args may not contain {arg!r}: CodexCLIRuntime allows only -c "
                "model_*=... overrides (e.g. -c model_reasoning_effort=low)"
            )
        attached = arg.partition("=")[2] if flag == "--config" else arg[2:]
        if not attached:
            index += 1
            attached = args[index] if index < len(args) else ""
        key = attached.split("=", 1)[0].strip()
        if "=" not in attached or not _ALLOWED_CONFIG_KEY.match(key):
            raise ConfigurationError(
                "extra_args may set only model_* config keys with -c (e.g. -c "
                "model_reasoning_effort=low); tools, sandbox and approvals stay locked"
            )
        index += 1


@dataclasses.dataclass(frozen=True, slots=True)
class CodexCLIProfile:
    """The ``codex exec`` codec: request -> argv/stdin, JSONL events -> InvocationResult.

    ``workdir`` is the invocation's private directory (the schema file goes there)."""

    model: str
    workdir: str | None = None

    def prepare(self, request: InvocationRequest) -> tuple[list[str], bytes]:
        tool = single_forced_tool(request, label=_LABEL)
        args = ["exec", "--json", "--model", self.model, "--sandbox", "read-only"]
        args += ["--skip-git-repo-check", "--ephemeral", "--ignore-user-config"]
        args += ["--color", "never"]
        for override in _LOCKDOWN:
            args += ["-c", override]
        if tool is not None:
            if self.workdir is None:
                raise InvocationError(
                    "RUNTIME_FAILURE", "Codex needs a working directory for its schema", False
                )
            try:
                schema = strict_schema(tool.input_schema)
            except ValueError as exc:
                raise InvocationError(
                    "INVALID_REQUEST",
                    f"{_LABEL} cannot enforce the input schema of tool {tool.name!r}: {exc}",
                    False,
                ) from None
            path = os.path.join(self.workdir, "output-schema.json")
            with open(path, "w", encoding="utf-8") as fh:
                json.dump(schema, fh)
            args += ["--output-schema", path]
        prompt = render_prompt(request, tool, inline_system=True)
        return args, prompt.encode("utf-8")

    def parse(self, output: ProcessOutput, request: InvocationRequest) -> InvocationResult:
        events = require_events(
            output.stdout, label=_LABEL, cli="a Codex CLI that supports `codex exec --json`"
        )
        report, status = _failure_report(events)
        completed = any(e["type"] == "turn.completed" for e in events)
        failed = any(e["type"] == "turn.failed" for e in events)
        if report is not None and (failed or not completed):  # an error event it recovered
            raise report_failure(
                report, status, output.stderr, exit_code=None, label=_LABEL, login_hint=_LOGIN_HINT
            )
        _refuse_tool_activity(events)
        return build_result(events, request, self.model)

    def classify_failure(
        self, output: ProcessOutput, request: InvocationRequest
    ) -> InvocationError | None:
        if output.exit_code == 2 and b"unexpected argument" in output.stderr:
            return InvocationError(  # clap's usage error: a CLI older than a flag we pass
                "RUNTIME_FAILURE",
                f"{_LABEL} did not accept a flag relay_nb needs to lock it down "
                "(--ignore-user-config, --ephemeral or --output-schema); update the Codex CLI "
                "(npm install -g @openai/codex) and try again",
                False,
            )
        events = read_events(output.stdout)
        report, status = _failure_report(events)
        return report_failure(
            report,
            status,
            output.stderr,
            exit_code=output.exit_code,
            label=_LABEL,
            login_hint=_LOGIN_HINT,
            tested=TESTED,
            events_seen=bool(events),
        )


# -------------------------------------------------------------------------- events


def _failure_report(events: list[dict[str, Any]]) -> tuple[str | None, int | None]:
    """The text of ``turn.failed``/``error`` events (None if there are none) and an HTTP
    status found in it; read for classification only, never copied."""
    texts: list[str] = []
    for event in events:
        if event["type"] == "turn.failed":
            error = event.get("error")
            message = error.get("message") if isinstance(error, dict) else None
            texts.append(message if isinstance(message, str) else "")
        elif event["type"] == "error":
            message = event.get("message")
            texts.append(message if isinstance(message, str) else "")
    if not texts:
        return None, None
    report = "\n".join(texts)
    match = _STATUS.search(report[:_READ])  # an error's status is near its start
    status = int(match.group(1) or match.group(2)) if match else None
    return report, status


def _refuse_tool_activity(events: list[dict[str, Any]]) -> None:
    for event in events:
        item = event.get("item")
        kind = item.get("type") if isinstance(item, dict) else None
        if event["type"].startswith("item.") and kind in _TOOL_ITEMS:
            raise InvocationError(
                "RUNTIME_FAILURE",
                f"{_LABEL} used a tool ({kind}) although its tools were switched off; the "
                "result was discarded. Update the Codex CLI, or check its managed config",
                False,
            )


def build_result(
    events: list[dict[str, Any]], request: InvocationRequest, model: str
) -> InvocationResult:
    """The last ``agent_message`` is the answer (or, for a forced tool, its JSON input)."""
    tool = single_forced_tool(request, label=_LABEL)
    text: str | None = None
    for event in events:
        item = event.get("item") if event["type"] == "item.completed" else None
        if isinstance(item, dict) and item.get("type") == "agent_message":
            text = item["text"] if isinstance(item.get("text"), str) else text
    if text is None:
        raise InvocationError("RUNTIME_FAILURE", f"{_LABEL} finished without an answer", False)
    usage = _usage(events)
    calls = [_tool_call(tool, text)] if tool is not None else []
    return InvocationResult(
        provider=PROVIDER,
        model=model,
        model_source="configured",
        output_text="" if tool is not None else text,
        tool_calls=calls,
        usage=usage,
        stop_reason="tool_use" if tool is not None else "end_turn",
        warnings=token_warnings(usage, request, label=_LABEL),
    )


def _tool_call(tool: ToolSpec, text: str) -> ToolCall:
    try:
        value = json.loads(text)
    except (ValueError, RecursionError):
        value = None
    if not isinstance(value, dict):
        raise InvocationError(
            "RUNTIME_FAILURE",
            f"{_LABEL} returned no structured output for tool {tool.name!r}",
            False,
        )
    arguments = from_strict(value, tool.input_schema)
    return ToolCall(id=f"call_codex_{uuid.uuid4().hex[:24]}", name=tool.name, input=arguments)


def _usage(events: list[dict[str, Any]]) -> Usage:
    """Summed ``turn.completed`` usage. Codex's ``input_tokens`` include the cached ones;
    Relay counts cache reads apart from input, as the Messages API does."""
    inputs: list[int] = []
    cached: list[int] = []
    outputs: list[int] = []
    for event in events:
        raw = event.get("usage") if event["type"] == "turn.completed" else None
        if not isinstance(raw, dict):
            continue
        for bucket, key in ((inputs, "input_tokens"), (outputs, "output_tokens")):
            count = reported_count(raw.get(key))
            if count is not None:
                bucket.append(count)
        count = reported_count(raw.get("cached_input_tokens"))
        if count is not None:
            cached.append(count)
    total_in = sum(inputs) if inputs else None
    total_cached = sum(cached) if cached else None
    if total_in is not None and total_cached is not None and total_cached > total_in:
        total_cached = None  # inconsistent counts: keep the input total, drop the split
    return Usage(
        input_tokens=total_in - (total_cached or 0) if total_in is not None else None,
        output_tokens=sum(outputs) if outputs else None,
        cache_read_tokens=total_cached,
    )


# ------------------------------------------------------------------- strict schemas

_MAX_DEPTH = 32


def strict_schema(schema: dict[str, Any]) -> dict[str, Any]:
    """``schema`` in the form OpenAI's strict structured outputs accept.

    Every object with properties is closed and lists all of them as required (an optional
    one becomes nullable); a free-form object (no properties) becomes a string holding
    JSON; ``oneOf`` becomes ``anyOf``; ``default`` is dropped. :func:`from_strict` undoes it.

    ValueError (saying why) for what strict mode cannot express: a top-level object open to
    any keys (it would become an object accepting none) and ``allOf`` (which it rejects).
    """
    if _is_free_object(schema) and _open_to_keys(schema):
        raise ValueError(
            "a top-level object with free-form keys cannot be made strict; declare its properties"
        )
    if _has_all_of(schema, 0):
        raise ValueError("strict structured output does not support allOf; inline its branches")
    result = _strict(schema, 0)
    if result.get("type") != "object":  # a tool without parameters: an empty closed object
        return {"type": "object", "properties": {}, "required": [], "additionalProperties": False}
    return result


def _open_to_keys(node: Mapping[str, Any]) -> bool:
    """Explicitly open: ``additionalProperties`` true or a schema, or ``patternProperties``.
    A bare ``{"type": "object"}`` is how a tool without parameters is declared, so it stays
    an empty closed object."""
    extra = node.get("additionalProperties")
    return extra is True or isinstance(extra, dict) or bool(node.get("patternProperties"))


_DATA_KEYWORDS = frozenset({"enum", "const", "default", "examples"})
_MAP_KEYWORDS = frozenset({"properties", "$defs", "definitions", "patternProperties"})


def _has_all_of(node: Any, depth: int) -> bool:
    """Whether ``allOf`` is used anywhere in the schema (property names do not count)."""
    if depth > _MAX_DEPTH:
        return False
    if isinstance(node, list):
        return any(_has_all_of(item, depth + 1) for item in node)
    if not isinstance(node, dict):
        return False
    if "allOf" in node:
        return True
    for key, value in node.items():
        if key in _DATA_KEYWORDS:
            continue
        if key in _MAP_KEYWORDS and isinstance(value, dict):
            if any(_has_all_of(sub, depth + 1) for sub in value.values()):
                return True
        elif _has_all_of(value, depth + 1):
            return True
    return False


def _is_free_object(node: Mapping[str, Any]) -> bool:
    return node.get("type") == "object" and not node.get("properties") and "$ref" not in node


def _strict(node: Any, depth: int) -> Any:
    if not isinstance(node, dict) or depth > _MAX_DEPTH:
        return node
    if "$ref" in node:
        return {"$ref": node["$ref"]}
    if _is_free_object(node):
        note = "a JSON object, encoded as a string"
        description = node.get("description")
        text = f"{description} ({note})" if isinstance(description, str) else note
        return {"type": "string", "description": text}
    out = {k: v for k, v in node.items() if k not in ("default", "oneOf")}
    for keyword in ("anyOf", "oneOf"):
        if isinstance(node.get(keyword), list):
            out["anyOf"] = [_strict(b, depth + 1) for b in node[keyword]]
    for keyword in ("$defs", "definitions"):
        if isinstance(node.get(keyword), dict):
            out[keyword] = {k: _strict(v, depth + 1) for k, v in node[keyword].items()}
    if isinstance(node.get("items"), dict):
        out["items"] = _strict(node["items"], depth + 1)
    properties = node.get("properties")
    if isinstance(properties, dict) and properties:
        required = set(node.get("required") or [])
        strict_props: dict[str, Any] = {}
        for name, sub in properties.items():
            converted = _strict(sub, depth + 1)
            strict_props[name] = (
                converted if name in required else {"anyOf": [converted, {"type": "null"}]}
            )
        out["properties"] = strict_props
        out["required"] = list(properties)
        out["additionalProperties"] = False
    return out


def from_strict(value: dict[str, Any], schema: dict[str, Any]) -> dict[str, Any]:
    """Map an answer to ``strict_schema(schema)`` back to ``schema``'s shape: nulls of
    optional properties are dropped, JSON strings standing for free-form objects decoded."""
    result = _relax(value, schema, schema, 0, top=True)
    return result if isinstance(result, dict) else value


def _resolve(node: Any, root: Mapping[str, Any]) -> Any:
    ref = node.get("$ref") if isinstance(node, dict) else None
    if isinstance(ref, str):
        for prefix in ("#/$defs/", "#/definitions/"):
            if ref.startswith(prefix):
                defs = root.get(prefix[2:-1])
                if isinstance(defs, dict):
                    return defs.get(ref[len(prefix) :], node)
    return node


def _relax(value: Any, node: Any, root: Mapping[str, Any], depth: int, top: bool = False) -> Any:
    node = _resolve(node, root)
    if not isinstance(node, dict) or depth > _MAX_DEPTH:
        return value
    if _is_free_object(node) and not top:
        if isinstance(value, str):
            try:
                decoded = json.loads(value)
            except (ValueError, RecursionError):
                return value  # left for the tool's own input validation to report
            return decoded if isinstance(decoded, dict) else value
        return value
    branches = node.get("anyOf") or node.get("oneOf")
    if isinstance(branches, list) and value is not None:
        for branch in branches:
            resolved = _resolve(branch, root)
            if isinstance(resolved, dict) and _fits(value, resolved):
                return _relax(value, resolved, root, depth + 1)
        return value
    properties = node.get("properties")
    if isinstance(value, dict) and isinstance(properties, dict):
        required = set(node.get("required") or [])
        relaxed: dict[str, Any] = {}
        for key, item in value.items():
            if item is None and key not in required:
                continue  # strict mode's stand-in for "not given"
            sub = properties.get(key)
            relaxed[key] = _relax(item, sub, root, depth + 1) if sub is not None else item
        return relaxed
    if isinstance(value, list) and isinstance(node.get("items"), dict):
        return [_relax(item, node["items"], root, depth + 1) for item in value]
    return value


def _fits(value: Any, node: Mapping[str, Any]) -> bool:
    """Whether ``value`` could be an instance of branch ``node`` (by JSON type only)."""
    kind = node.get("type")
    if kind is None:
        return True
    if _is_free_object(node):
        return isinstance(value, dict | str)
    kinds = kind if isinstance(kind, list) else [kind]
    checks = {
        "object": isinstance(value, dict),
        "array": isinstance(value, list),
        "string": isinstance(value, str),
        "boolean": isinstance(value, bool),
        "integer": isinstance(value, int) and not isinstance(value, bool),
        "number": isinstance(value, int | float) and not isinstance(value, bool),
        "null": value is None,
    }
    return any(checks.get(k, False) for k in kinds)
