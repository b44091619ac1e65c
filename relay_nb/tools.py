"""The ``Tool`` type: what a model may call, and how a call becomes a result it can read.

A tool is a name, a description, a pydantic input model (its JSON schema is what the model
sees) and an async handler. ``Tool.run`` is the one place where a model's raw input is
validated and where every failure — bad input, a guard refusal, a database error, a timeout —
becomes a ``ToolResult(is_error=True)`` the model can correct itself from, instead of an
exception that would end the turn.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel, ConfigDict, ValidationError

from relay_nb.errors import RelayError
from relay_nb.redaction import redact

__all__ = ["Tool", "ToolHandler", "ToolResult"]

_MAX_ERROR_CHARS = 600


class ToolResult(BaseModel):
    """What a tool call produced: ``content`` goes to the model, ``artifact`` stays local."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    content: str
    is_error: bool = False
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

    def spec(self) -> dict[str, Any]:
        """The provider-neutral declaration: name, description and input JSON schema."""
        schema = self.input_model.model_json_schema()
        schema.pop("title", None)
        return {"name": self.name, "description": self.description, "input_schema": schema}

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
            return ToolResult(content=_validation_message(self.name, exc), is_error=True)
        try:
            produced = await asyncio.wait_for(self.handler(arguments), self.timeout_s)
        except TimeoutError:
            return ToolResult(
                content=f"{self.name} did not finish within {self.timeout_s:g} s and was "
                "cancelled; simplify the request (fewer rows, a narrower filter) and try again",
                is_error=True,
            )
        except RelayError as exc:  # guard refusals, database errors: the model can fix these
            return ToolResult(content=_clip(redact(str(exc))), is_error=True)
        except Exception as exc:  # a bug in a tool must not end the turn, nor leak secrets
            return ToolResult(
                content=_clip(f"{self.name} failed: {type(exc).__name__}: {redact(str(exc))}"),
                is_error=True,
            )
        return produced if isinstance(produced, ToolResult) else ToolResult(content=str(produced))


def _validation_message(tool: str, exc: ValidationError) -> str:
    problems = []
    for error in exc.errors()[:5]:
        where = ".".join(str(p) for p in error["loc"]) or "input"
        problems.append(f"{where}: {error['msg']}")
    return f"invalid input for {tool}: " + "; ".join(problems)


def _clip(text: str) -> str:
    return text if len(text) <= _MAX_ERROR_CHARS else text[: _MAX_ERROR_CHARS - 1] + "…"
