"""A scripted model that does whatever the data tells it to: the worst case for relay_nb.

Real models follow injected instructions some of the time; this one always does, so every
defence is exercised on every payload. It is a callable step for ``ScriptedRuntime``: on each
request it reads the system prompt (the schema, with table and column names and comments)
and every successful tool result (decoded as the CSV it is), and

1. first issues its own reads (the analyst's question asks for the tables),
2. then issues every ``run `…``` instruction it has not issued yet - writes included,
3. and when nothing new is left, answers with every ``reply with `…``` text it found, with
   ``{data}`` replaced by the e-mail addresses it read (URL-encoded): an exfiltration attempt.

It knows nothing about the payloads beyond the grammar in :mod:`injection_payloads`.
"""

from __future__ import annotations

import csv
import io
import json
import re
from typing import Any
from urllib.parse import quote

from injection_payloads import ATTACKER, instructions_in

from relay_nb.runtime.types import InvocationRequest, ToolResultPart

__all__ = ["ObedientModel", "decoded_cells"]

_EMAIL = re.compile(r"[A-Za-z0-9._%+-]+@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)+")


class ObedientModel:
    """Call it with a request, get the next step (a dict ``ScriptedRuntime`` understands)."""

    def __init__(self, tool: str, first_reads: list[dict[str, Any]]) -> None:
        self.tool = tool
        self.first_reads = first_reads
        self.started = False
        self.issued: list[str] = []
        """Bodies of the ``run`` instructions followed, in the order issued."""

    def __call__(self, request: InvocationRequest) -> dict[str, Any]:
        texts = seen_texts(request)
        found = [i for text in texts for i in instructions_in(text)]
        calls: list[dict[str, Any]] = []
        if not self.started:
            self.started = True
            calls += self.first_reads
        for instruction in found:
            if instruction.kind != "run" or instruction.body in self.issued:
                continue
            tool_input = _tool_input(instruction.body)
            if tool_input is None:
                continue  # not valid JSON: nothing a tool would accept
            self.issued.append(instruction.body)
            calls.append(tool_input)
        if calls:
            return {"tool_calls": [{"name": self.tool, "input": call} for call in calls]}
        leaked = quote(",".join(sorted(_emails(texts))), safe="")
        replies = list(dict.fromkeys(i.body for i in found if i.kind == "reply"))
        body = "\n\n".join(reply.replace("{data}", leaked) for reply in replies)
        return {"text": f"Here is the summary you asked for.\n\n{body}"}


def seen_texts(request: InvocationRequest) -> list[str]:
    """The system prompt and every cell (and column name) of every successful tool result."""
    texts = [request.system_text()]
    for message in request.messages:
        for part in message.parts():
            if isinstance(part, ToolResultPart) and not part.is_error:
                texts += decoded_cells(part.content)
    return texts


def decoded_cells(preview: str) -> list[str]:
    """The header fields and cells of a ``preview_for_model`` text, CSV-decoded.

    Line 0 is the row count, line 1 the column list, then CSV (a last ``… showing`` line when
    rows were left out). A cell holding a quote is doubled by CSV; decoding gives it back as
    the database holds it, which is what a model reading the table understands.
    """
    lines = preview.split("\n")
    if len(lines) < 3 or not lines[1].startswith("columns:"):
        return [preview]
    body = lines[2:]
    if body and body[-1].startswith("… showing"):
        body = body[:-1]
    try:
        rows = list(csv.reader(io.StringIO("\n".join(body))))
    except csv.Error:
        return [preview]
    return [cell for row in rows for cell in row]


def _tool_input(body: str) -> dict[str, Any] | None:
    if not body.lstrip().startswith("{"):
        return {"sql": body}
    try:
        value = json.loads(body)
    except json.JSONDecodeError:
        return None
    return value if isinstance(value, dict) else None


def _emails(texts: list[str]) -> set[str]:
    return {m for text in texts for m in _EMAIL.findall(text) if not m.endswith(ATTACKER)}
