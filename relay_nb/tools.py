"""The ``Tool`` type: what a model may call, and how a call becomes a result it can read.

A tool is a name, a description, a pydantic input model (its JSON schema is what the model
sees) and an async handler. ``Tool.run`` is the one place where a model's raw input is
validated and where every failure — bad input, a guard refusal, a database error, a timeout —
becomes a ``ToolResult(is_error=True)`` the model can correct itself from, instead of an
exception that would end the turn.
"""

from __future__ import annotations

import asyncio
import contextvars
import functools
import inspect
import json
import math
import re
import sys
import time
import typing
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, create_model
from pydantic.fields import FieldInfo

from relay_nb.errors import ConfigurationError, QueryTimeoutError, RelayError, UnsafeQueryError
from relay_nb.redaction import redact

__all__ = [
    "TOOL_NAME",
    "ApprovalAsk",
    "CallHooks",
    "Failure",
    "ModelSpend",
    "Tool",
    "ToolHandler",
    "ToolResult",
    "ask_approval",
    "bind_call",
    "model_spend",
    "report_status",
    "short_float",
    "tool_from_function",
]

_MAX_ERROR_CHARS = 600
_MAX_STATUS_CHARS = 300
_MAX_RESULT_CHARS = 4000
_PREVIEW_ROWS = 20
_PREVIEW_CHARS = 2000

TOOL_NAME = re.compile(r"^[A-Za-z0-9_-]{1,64}$")
"""What every provider accepts as a tool name; checked when a tool is declared, not when a
model first sees it and rejects the whole request."""


ApprovalAsk = Callable[[str], Awaitable[tuple[bool, str]]]
"""``ask(reason) -> (approved, why_not)``: put the running call to the person, with a reason."""


@dataclass(frozen=True)
class ModelSpend:
    """What the model has cost the running turn so far, the call that asked for this tool
    included: what a tool that shows a cost (a query's preflight) puts beside its own."""

    cost_usd: float | None
    """Dollars; None when a call's price is unknown (a model missing from the price table)."""
    estimated: bool = False
    """Some token counts were estimated (chars/4), not reported by the provider."""
    simulated: bool = False
    """A scripted or replayed model: priced for show, nothing was spent."""


@dataclass(frozen=True)
class CallHooks:
    """How a running tool reaches whoever runs the turn; the agent loop binds one per call
    (:func:`bind_call`), read through :func:`ask_approval`, :func:`report_status` and
    :func:`model_spend`."""

    ask: ApprovalAsk
    """Put this call to the person (emits ``tool_awaiting_approval``)."""
    status: Callable[[str], None]
    """Show one line under this call in the trace (emits ``tool_status``)."""
    spend: Callable[[], ModelSpend | None]
    """The turn's model spend so far (None before any model call was priced)."""


_CALL: contextvars.ContextVar[CallHooks | None] = contextvars.ContextVar(
    "relay_nb_tool_call_hooks", default=None
)
_TIME_BOUND: contextvars.ContextVar[asyncio.Timeout | None] = contextvars.ContextVar(
    "relay_nb_tool_time_bound", default=None
)


async def ask_approval(reason: str) -> tuple[bool, str]:
    """From inside a tool's handler: ask whoever runs the turn to approve this call now.

    For a tool that learns only while running that it needs a yes (a query whose cost
    estimate is over its connector's threshold); a tool that always needs one says
    ``requires_approval``. The agent loop binds the asker for each call it runs (the same
    approver, one question at a time); called anywhere else there is nobody to ask, and the
    answer is no.
    """
    hooks = _CALL.get()
    if hooks is None:
        return False, "nobody was there to approve it (no turn is running)"
    bound = _TIME_BOUND.get()  # the tool's time bound stops while a person decides
    deadline = bound.when() if bound is not None else None
    loop = asyncio.get_running_loop()
    paused_at = loop.time()
    if bound is not None:
        bound.reschedule(None)
    try:
        return await hooks.ask(reason)
    finally:
        if bound is not None and deadline is not None:
            bound.reschedule(deadline + (loop.time() - paused_at))


def report_status(line: str) -> None:
    """From inside a tool's handler: show ``line`` under this call in the trace now, while
    it still runs (a query's cost, before the query starts). The same per-call hooks as
    :func:`ask_approval` carry it: the loop emits a ``tool_status`` event, which the live
    view shows at once and the saved trace keeps. A later line replaces an earlier one.
    Outside a turn it goes nowhere. Redacted like everything else a tool shows, and one
    line of at most 300 characters."""
    hooks = _CALL.get()
    if hooks is not None and line:
        flat = " ".join(redact(line).split())
        hooks.status(
            flat if len(flat) <= _MAX_STATUS_CHARS else flat[: _MAX_STATUS_CHARS - 1] + "…"
        )


def model_spend() -> ModelSpend | None:
    """From inside a tool's handler: what the model has cost this turn so far (the call
    that asked for this tool included); None outside a turn or before any priced call."""
    hooks = _CALL.get()
    return None if hooks is None else hooks.spend()


def bind_call(hooks: CallHooks | None) -> None:
    """Set the current task's call hooks (the agent loop, once per tool call it runs)."""
    _CALL.set(hooks)


Failure = Literal["refused", "timeout", "error", "denied", "cancelled"]
"""Why a tool call failed: the guard refused it; it ran past its time bound; it failed
(bad input, a database error, a bug); its approval was denied; the turn was cancelled."""


class ToolResult(BaseModel):
    """What a tool call produced: ``content`` goes to the model, ``artifact`` stays local."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    content: str
    is_error: bool = False
    failure: Failure | None = None
    """Set with ``is_error`` by :meth:`Tool.run` (None on an error result a handler returned
    itself: read as ``"error"``)."""
    rule: str | None = None
    """A guard's refusal: its rule (``table_not_allowed``), for tests, evaluations and the
    views, which show the analyst ``content`` without it (the model reads it whole)."""
    artifact: Any = None
    """Kept for the notebook (e.g. a QueryResult with the full DataFrame); never sent."""
    elapsed_ms: float = 0.0


ToolHandler = Callable[[Any], Awaitable["ToolResult | str"]]


@dataclass(frozen=True)
class Tool:
    name: str
    description: str
    input_model: type[BaseModel]
    handler: ToolHandler
    requires_approval: bool = False
    timeout_s: float | None = 60.0
    metadata: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def from_function(
        cls,
        func: Callable[..., Any],
        *,
        name: str | None = None,
        description: str | None = None,
        requires_approval: bool = False,
        timeout_s: float | None = 60.0,
    ) -> Tool:
        """Turn a typed Python function into a :class:`Tool`, so an analyst can add one in a cell.

        The signature becomes the input model: every parameter needs a type hint (the hint *is*
        the schema the model sees, so guessing ``str`` would hide mistakes until a model misuses
        the tool), parameters without a default are required, and ``*args``/``**kwargs`` are
        refused because a JSON object has no place for them. Field descriptions come from the
        docstring's ``Args:`` (Google) or ``:param x:`` (Sphinx) entries; the tool description is
        the docstring's first paragraph unless ``description`` is given — one of the two must
        exist, because the description is how the model decides when to call the tool.

        Sync functions run in a worker thread so a slow one never blocks the event loop (on
        timeout the call is abandoned, but Python cannot stop the thread itself); async functions
        are awaited. Returns: ``str`` and :class:`ToolResult` as is, a pandas DataFrame as a CSV
        preview with the full frame as the local ``artifact``, anything else as clipped JSON.
        """
        target = func.func if isinstance(func, functools.partial) else func
        tool_name = name if name is not None else getattr(target, "__name__", None)
        if not isinstance(tool_name, str) or not TOOL_NAME.match(tool_name):
            raise ConfigurationError(
                f"tool name {tool_name!r} must be 1-64 letters, digits, '_' or '-' (providers "
                "reject anything else); pass name='my_tool' to Tool.from_function"
            )
        docstring = inspect.getdoc(target) or ""
        summary, param_docs = _parse_docstring(docstring)
        tool_description = (description or "").strip() or summary
        if not tool_description:
            raise ConfigurationError(
                f"tool {tool_name!r} has no description: the model reads it to decide when to call "
                "the tool; give the function a docstring or pass description='...'"
            )
        input_model, field_to_param = _input_model(func, target, tool_name, param_docs)
        is_async = _is_async_callable(func)

        async def handler(arguments: BaseModel) -> ToolResult | str:
            kwargs = {param: getattr(arguments, fname) for fname, param in field_to_param.items()}
            if is_async:
                produced = await func(**kwargs)
            else:
                produced = await asyncio.to_thread(func, **kwargs)
                if inspect.isawaitable(produced):  # a sync wrapper around a coroutine function
                    produced = await produced
            return _to_result(produced)

        return Tool(
            name=tool_name,
            description=tool_description,
            input_model=input_model,
            handler=handler,
            requires_approval=requires_approval,
            timeout_s=timeout_s,
            metadata={"function": getattr(target, "__qualname__", repr(target))},
        )

    def spec(self) -> dict[str, Any]:
        """The provider-neutral declaration: name, description and input JSON schema."""
        return {"name": self.name, "description": self.description, "input_schema": self._schema}

    @functools.cached_property
    def declaration_chars(self) -> int:
        """The length of :meth:`spec` as JSON: what declaring this tool adds to a request."""
        return len(json.dumps(self.spec()))

    @functools.cached_property
    def _schema(self) -> dict[str, Any]:
        """Built once per tool: generating a JSON schema costs ~0.4 ms, every turn needs it."""
        schema = self.input_model.model_json_schema()
        schema.pop("title", None)
        return schema

    async def run(self, raw_input: dict[str, Any]) -> ToolResult:
        """Validate, call, and turn every expected failure into an error result."""
        started = time.perf_counter()
        result = await self._run(raw_input)
        result.elapsed_ms = (time.perf_counter() - started) * 1000
        return result

    async def _run(self, raw_input: dict[str, Any]) -> ToolResult:
        try:
            arguments = self.input_model.model_validate(raw_input)
        except ValidationError as exc:
            return ToolResult(
                content=_validation_message(self.name, exc), is_error=True, failure="error"
            )
        try:
            async with asyncio.timeout(self.timeout_s) as bound:
                token = _TIME_BOUND.set(bound)  # ask_approval pauses it while a person decides
                try:
                    produced = await _no_exit(self.name, self.handler(arguments))
                finally:
                    _TIME_BOUND.reset(token)
        except TimeoutError:
            return ToolResult(
                content=f"{self.name} did not finish within {self.timeout_s:g} s and was "
                "cancelled; simplify the request (fewer rows, a narrower filter) and try again",
                is_error=True,
                failure="timeout",
            )
        except _ToolExited as exc:
            return ToolResult(
                content=_clip(f"{self.name} failed: {redact(str(exc))}"),
                is_error=True,
                failure="error",
            )
        except RelayError as exc:  # guard refusals, database errors: the model can fix these
            failure: Failure = (
                "refused"
                if isinstance(exc, UnsafeQueryError)
                else "timeout"
                if isinstance(exc, QueryTimeoutError)
                else "error"
            )
            rule = exc.rule if isinstance(exc, UnsafeQueryError) else None
            return ToolResult(
                content=_clip(redact(str(exc))), is_error=True, failure=failure, rule=rule
            )
        except Exception as exc:  # a bug in a tool must not end the turn, nor leak secrets
            return ToolResult(
                content=_clip(f"{self.name} failed: {type(exc).__name__}: {redact(str(exc))}"),
                is_error=True,
                failure="error",
            )
        if not isinstance(produced, ToolResult):
            produced = ToolResult(content=str(produced))
        # whatever a tool read (a row, a page, a server's text) may hold a credential: the
        # model, the events and the trace see the content only through this one redaction
        produced.content = redact(produced.content)
        return produced


class _ToolExited(Exception):
    """A handler called ``sys.exit()``: reported like any other tool failure."""


async def _no_exit(name: str, handler_call: Awaitable[Any]) -> Any:
    """Await the handler, turning ``SystemExit`` into an ordinary exception *inside* its task.

    asyncio re-raises ``SystemExit`` out of the event loop itself, which would end relay_nb's
    loop thread with the turn still waiting on it; caught here, it never reaches the loop.
    """
    try:
        return await handler_call
    except SystemExit as exc:
        raise _ToolExited(
            f"it called sys.exit({exc.code!r}); a tool should return a value or raise an error"
        ) from None


def _validation_message(tool: str, exc: ValidationError) -> str:
    problems = []
    for error in exc.errors()[:5]:
        where = ".".join(str(p) for p in error["loc"]) or "input"
        problems.append(f"{where}: {error['msg']}")
    return f"invalid input for {tool}: " + "; ".join(problems)


def _clip(text: str) -> str:
    return text if len(text) <= _MAX_ERROR_CHARS else text[: _MAX_ERROR_CHARS - 1] + "…"


# --------------------------------------------------------------------------- from a function


tool_from_function = Tool.from_function
"""``Tool.from_function`` under the name the ``relay_nb.tools`` namespace gives it."""


def _is_async_callable(func: Callable[..., Any]) -> bool:
    if inspect.iscoroutinefunction(func):  # also sees through functools.partial
        return True
    call = getattr(func, "__call__", None)  # noqa: B004 - objects with an async __call__
    return call is not None and inspect.iscoroutinefunction(call)


def _input_model(
    func: Callable[..., Any],
    target: Callable[..., Any],
    tool_name: str,
    param_docs: dict[str, str],
) -> tuple[type[BaseModel], dict[str, str]]:
    """Build the pydantic model and map its field names back to the function's parameters.

    Parameters whose names pydantic cannot use as fields (``schema``, ``json``, ``_x``,
    ``model_*``) get an internal field name with the parameter name as alias, so the model
    still sees — and sends — the real name.
    """
    try:
        signature = inspect.signature(func)
    except (TypeError, ValueError) as exc:
        raise ConfigurationError(
            f"cannot read the signature of {func!r} for tool {tool_name!r}: {exc}"
        ) from exc
    try:
        hints = typing.get_type_hints(target, include_extras=True)
    except Exception as exc:  # NameError for a hint defined inside another function
        raise ConfigurationError(
            f"cannot resolve the type hints of tool {tool_name!r} ({type(exc).__name__}: "
            f"{exc}); define the types the hints name at module level"
        ) from exc

    fields: dict[str, Any] = {}
    field_to_param: dict[str, str] = {}
    for index, param in enumerate(signature.parameters.values()):
        if param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD):
            star = "*" if param.kind is param.VAR_POSITIONAL else "**"
            raise ConfigurationError(
                f"tool {tool_name!r}: {star}{param.name} cannot be described to a model; "
                "list each input as a named, typed parameter"
            )
        if param.kind is param.POSITIONAL_ONLY:
            raise ConfigurationError(
                f"tool {tool_name!r}: parameter {param.name!r} is positional-only, but tool "
                "inputs are passed by name; remove the '/' from the signature"
            )
        if param.name not in hints:
            raise ConfigurationError(
                f"tool {tool_name!r}: parameter {param.name!r} has no type hint; the hint is "
                f"the schema the model sees (e.g. '{param.name}: str')"
            )
        hint = hints[param.name]
        info: dict[str, Any] = {}
        doc = param_docs.get(param.name)
        if doc and not _has_own_description(hint):
            info["description"] = doc
        default = ... if param.default is param.empty else param.default
        field_name = param.name
        if _unsafe_field_name(param.name):
            field_name = f"relay_arg_{index}"
            info["alias"] = param.name
        fields[field_name] = (hint, Field(default, **info))
        field_to_param[field_name] = param.name

    model_name = "".join(part.capitalize() for part in re.split(r"[_-]+", tool_name)) or "Tool"
    try:
        model = create_model(  # type: ignore[call-overload]
            f"{model_name}Input",
            __config__=ConfigDict(extra="forbid", arbitrary_types_allowed=False),
            **fields,
        )
        model.model_json_schema()  # fail now, not on the first model request
    except Exception as exc:  # pydantic cannot build a JSON schema for some hint
        raise ConfigurationError(
            f"tool {tool_name!r}: its parameters cannot become a JSON schema ({exc}); use "
            "JSON-friendly hints such as str, int, float, bool, list[str], Literal[...]"
        ) from exc
    return model, field_to_param


def _unsafe_field_name(name: str) -> bool:
    return name.startswith(("_", "model_")) or hasattr(BaseModel, name)


def _has_own_description(hint: Any) -> bool:
    """``Annotated[int, Field(description=...)]`` wins over the docstring."""
    if typing.get_origin(hint) is not typing.Annotated:
        return False
    return any(
        isinstance(meta, FieldInfo) and meta.description for meta in typing.get_args(hint)[1:]
    )


_SECTION = re.compile(r"^\s*(Args|Arguments|Parameters|Params|Keyword Args)\s*:\s*$")
_OTHER_SECTION = re.compile(
    r"^\s*(Returns?|Yields?|Raises|Examples?|Notes?|See Also|Attributes|Warnings?)\s*:\s*$"
)
_GOOGLE_ENTRY = re.compile(r"^\*{0,2}(\w+)\s*(?:\([^)]*\))?\s*:\s*(.*)$")
_SPHINX_PARAM = re.compile(r"^:param\s+(?:[^:]*\s)?(\w+)\s*:\s*(.*)$")


def _parse_docstring(docstring: str) -> tuple[str, dict[str, str]]:
    """Return the first paragraph (one line) and each documented parameter's description."""
    lines = docstring.splitlines()
    summary_lines: list[str] = []
    for line in lines:
        stripped = line.strip()
        if not stripped or _SECTION.match(line) or _OTHER_SECTION.match(line):
            break
        if stripped.startswith(":"):  # a Sphinx field list starts the body
            break
        summary_lines.append(stripped)
    summary = " ".join(summary_lines)

    params: dict[str, str] = {}
    _google_params(lines, params)
    _sphinx_params(lines, params)
    return summary, params


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip())


def _google_params(lines: list[str], params: dict[str, str]) -> None:
    current: str | None = None
    in_section = False
    header_indent = entry_indent = 0
    for line in lines:
        if _SECTION.match(line):
            in_section, current = True, None
            header_indent, entry_indent = _indent(line), -1
            continue
        if not in_section:
            continue
        if not line.strip():
            continue
        indent = _indent(line)
        if indent <= header_indent:  # the next section (or prose) ends this one
            in_section, current = False, None
            continue
        if entry_indent < 0:
            entry_indent = indent
        entry = _GOOGLE_ENTRY.match(line.strip()) if indent == entry_indent else None
        if entry:
            current = name = entry.group(1)
            params[name] = entry.group(2).strip()
        elif current is not None:
            params[current] = f"{params[current]} {line.strip()}".strip()


def _sphinx_params(lines: list[str], params: dict[str, str]) -> None:
    current: str | None = None
    for line in lines:
        stripped = line.strip()
        match = _SPHINX_PARAM.match(stripped)
        if match:
            current = name = match.group(1)
            params[name] = match.group(2).strip()
        elif not stripped or stripped.startswith(":"):
            current = None
        elif current is not None:
            params[current] = f"{params[current]} {stripped}".strip()


def _to_result(produced: Any) -> ToolResult | str:
    """str and ToolResult as is; a DataFrame as a preview + artifact; anything else as JSON."""
    if isinstance(produced, ToolResult | str):
        return produced
    pandas = sys.modules.get("pandas")  # a DataFrame implies pandas is already imported
    if pandas is not None and isinstance(produced, pandas.DataFrame):
        return ToolResult(content=_frame_preview(produced), artifact=produced)
    try:
        text = json.dumps(produced, default=str, ensure_ascii=False)
    except (TypeError, ValueError):  # circular structures, non-string dict keys
        text = str(produced)
    if len(text) > _MAX_RESULT_CHARS:
        text = text[: _MAX_RESULT_CHARS - 1] + "…"
    return text


def short_float(value: Any) -> str:
    """A float as the model and the analyst read it: a sum such as ``116444.02999999998``
    (binary rounding noise) reads ``116444.03``, while every value whose digits mean
    something is kept exactly (``1234567890123456.0``, an id that became a float, stays).

    The 15-significant-digit form is used only when it is within two units in the last place
    of the value, i.e. when the digits it drops are the noise of binary arithmetic, and never
    for a whole number (exact up to 2**53). A float32 (not a Python float) is written by its
    own shortest form.
    """
    if not isinstance(value, float):
        return str(value)
    value = float(value)  # a numpy float64 is a float, but its repr is "np.float64(…)"
    if value.is_integer():
        return repr(value)
    try:
        rounded = float(f"{value:.15g}")
    except (ValueError, OverflowError):
        return repr(value)
    if math.isfinite(value) and abs(rounded - value) <= 2 * math.ulp(value):
        return repr(rounded)
    return repr(value)


def _frame_preview(frame: Any) -> str:
    """A compact CSV head the model can read; the full frame stays local as the artifact.

    Whole rows only (a cut row reads as bad data), at most ``_PREVIEW_ROWS`` of them, and the
    whole text, count line included, within ``_PREVIEW_CHARS``.
    """
    rows, columns = frame.shape
    csv_lines = (
        frame.head(_PREVIEW_ROWS)
        .to_csv(index=not _is_default_index(frame), float_format=short_float)
        .splitlines()
    )
    budget = _PREVIEW_CHARS - 80  # room for the count line
    header = csv_lines[0] if csv_lines else ""
    if len(header) > budget:  # absurdly wide frames: cut the header rather than overflow
        header = header[: budget - 1] + "…"
    budget -= len(header) + 1
    shown: list[str] = []
    for line in csv_lines[1:]:
        if len(line) + 1 > budget:
            break
        shown.append(line)
        budget -= len(line) + 1
    note = f"{rows} row{'' if rows == 1 else 's'}, {columns} column{'' if columns == 1 else 's'}"
    if len(shown) < rows:
        note += f"; showing the first {len(shown)}"
    return "\n".join([note, header, *shown])


def _is_default_index(frame: Any) -> bool:
    index = frame.index
    return (
        type(index).__name__ == "RangeIndex"
        and index.start == 0
        and index.step == 1
        and index.name is None
    )
