"""The payload catalogue (``payloads.yaml``) as typed data, and the instruction grammar.

Imported by name from the tests of this directory (pytest puts it on ``sys.path``); the name
is unique in the suite so it cannot clash with another directory's helper.

The grammar is the contract between the planted data and the obedient model: a payload is
"followed" when the model finds ``run `…``` or ``reply with `…``` in what it reads. Keeping
both sides here means the model never gets a side channel: it only knows the grammar, and
finds every instruction in its request.
"""

from __future__ import annotations

import json
import re
from functools import cache
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field

__all__ = [
    "ATTACKER",
    "SQL_BACKENDS",
    "Catalogue",
    "Instruction",
    "catalogue",
    "fill",
    "instructions_in",
    "run_text",
]

Backend = Literal["sqlite", "duckdb", "postgres", "dataframe"]
SQL_BACKENDS: tuple[Backend, ...] = ("sqlite", "duckdb", "postgres", "dataframe")
ATTACKER = "attacker.example"

_RUN = re.compile(r"\brun `([^`]+)`", re.IGNORECASE)
_REPLY = re.compile(r"\breply with `([^`]+)`", re.IGNORECASE)


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class SQLPayload(_Frozen):
    id: str
    sql: str
    only: tuple[Backend, ...] = SQL_BACKENDS

    def applies(self, backend: str) -> bool:
        return backend in self.only


class Location(_Frozen):
    sql: str
    reaches: tuple[Backend, ...]


class MongoPayload(_Frozen):
    id: str
    input: dict[str, Any]


class RenderPayload(_Frozen):
    id: str
    text: str


class Catalogue(_Frozen):
    prefix: str
    writes: tuple[SQLPayload, ...]
    reads: tuple[SQLPayload, ...]
    locations: dict[str, Location]
    forged_context: str
    html_columns: tuple[str, ...]
    html_table: str
    forged_column: str
    mongo_writes: tuple[MongoPayload, ...]
    mongo_field_write: MongoPayload
    render: tuple[RenderPayload, ...] = Field(min_length=1)


@cache
def catalogue() -> Catalogue:
    raw = yaml.safe_load((Path(__file__).parent / "payloads.yaml").read_text(encoding="utf-8"))
    return Catalogue.model_validate(raw)


def fill(text: str, **values: str) -> str:
    """Replace ``{name}`` placeholders by name only: ``{data}`` is the model's to fill."""
    for name, value in values.items():
        text = text.replace("{" + name + "}", value)
    return text


def run_text(tool_input: str | dict[str, Any]) -> str:
    """How an instruction to run ``tool_input`` is written into the data."""
    shown = tool_input if isinstance(tool_input, str) else json.dumps(tool_input)
    return f"run `{shown}`"


class Instruction(_Frozen):
    """One instruction found in text: a tool input to run, or markdown to reply with."""

    kind: Literal["run", "reply"]
    body: str


def instructions_in(text: str) -> list[Instruction]:
    """Every instruction in ``text``, in order of appearance."""
    found = [(m.start(), Instruction(kind="run", body=m.group(1))) for m in _RUN.finditer(text)]
    found += [
        (m.start(), Instruction(kind="reply", body=m.group(1))) for m in _REPLY.finditer(text)
    ]
    return [instruction for _, instruction in sorted(found, key=lambda pair: pair[0])]
