"""An MCP tool result as relay_nb's ``ToolResult``: text for the model, tables for the analyst.

- text content → the text the model reads (clipped, secrets redacted); only as much of it
  is taken from the reply as the clip keeps, plus room for redaction to see a secret that
  straddles the cut, so a huge text is never copied, redacted or kept whole;
- structured content that is a list of records (or an object holding exactly one such list,
  as SDK servers wrap a returned list in ``{"result": [...]}``) → a ``QueryResult`` artifact
  with the DataFrame, and the same compact CSV preview other connectors give the model. The
  records go through a :class:`~relay_nb.connectors.bounds.ResultBudget` one at a time
  (``max_value_bytes`` per value, ``max_result_bytes`` in all): long values are cut, records
  past the limit are left out, and the result says so (``notes``, ``limit="bytes"``);
- images, audio and binary resources → a one-line placeholder (kind, MIME type, size): raw
  bytes never go to the model;
- ``isError`` → a tool error the model can correct itself from.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from relay_nb.connectors.bounds import (
    DEFAULT_MAX_RESULT_BYTES,
    DEFAULT_MAX_VALUE_BYTES,
    ResultBudget,
    json_head,
)
from relay_nb.connectors.mcp.text import redacted_clip
from relay_nb.connectors.results import QueryResult, frame_from_records, preview_for_model
from relay_nb.redaction import known_secrets, redact
from relay_nb.tools import ToolResult

__all__ = ["content_text", "records_in", "tool_result"]


def tool_result(
    result: Any,
    *,
    connector_id: str,
    tool: str,
    arguments: Mapping[str, Any],
    elapsed_ms: float,
    max_chars: int,
    max_value_bytes: int = DEFAULT_MAX_VALUE_BYTES,
    max_result_bytes: int = DEFAULT_MAX_RESULT_BYTES,
    secrets: Iterable[str] = (),
) -> ToolResult:
    """Map a ``CallToolResult`` (duck-typed: ``content``, ``structured_content``,
    ``is_error``) to a ``ToolResult``."""
    secrets = tuple(secrets)
    # not clipped yet: redaction must see a whole secret before anything is cut, and the clip
    # must see that there was more
    taken = max_chars + max((len(s) for s in known_secrets(secrets)), default=0) + 1
    text = content_text(getattr(result, "content", None) or [], limit=taken)
    structured = getattr(result, "structured_content", None)
    if getattr(result, "is_error", False):
        message = text or "the tool reported an error without a message"
        return ToolResult(
            content=redacted_clip(f"{tool} failed: {message}", max_chars, secrets=secrets),
            is_error=True,
        )
    records = records_in(structured)
    if records is not None:
        call = json.dumps({"tool": tool, "arguments": dict(arguments)}, default=str)
        budget = ResultBudget(
            max_value_bytes,
            max_result_bytes,
            unit="records",
            narrow="ask the tool for fewer records or fields",
            shorten="ask the tool for shorter values",
        )
        redacted = (redact(record, extra=secrets) for record in records)  # those taken only
        frame = frame_from_records(redacted, budget=budget)
        query = QueryResult(
            df=frame,
            executed_sql=call,
            submitted_sql=call,
            row_count=len(frame),
            truncated=budget.full,
            elapsed_ms=elapsed_ms,
            connector_id=connector_id,
            language="mcp",
            limit="bytes" if budget.full else "rows",
            notes=budget.notes(),
        )
        preview = preview_for_model(query, max_chars=max_chars)
        return ToolResult(content=redact(preview, extra=secrets), artifact=query)
    if not text and structured is not None:
        text = json_head(structured, taken, separators=None)
    return ToolResult(
        content=redacted_clip(text or "(the tool returned no content)", max_chars, secrets=secrets)
    )


def records_in(structured: Any) -> list[dict[str, Any]] | None:
    """The list of records in a structured result, if it is (or wraps) one."""
    if _is_records(structured):
        return list(structured)
    if isinstance(structured, Mapping):
        lists = [value for value in structured.values() if _is_records(value)]
        if len(lists) == 1 and len(structured) == 1:
            return list(lists[0])
    return None


def _is_records(value: Any) -> bool:
    return (
        isinstance(value, Sequence)
        and not isinstance(value, (str, bytes))
        and len(value) > 0
        and all(isinstance(item, Mapping) for item in value)
    )


def content_text(blocks: Sequence[Any], *, limit: int | None = None) -> str:
    """The model-facing text of MCP content blocks, placeholders for anything binary; with
    ``limit``, at most that many characters (the caller redacts, then clips)."""
    parts: list[str] = []
    size = 0
    for block in blocks:
        if limit is not None and size >= limit:
            break
        kind = getattr(block, "type", None)
        if kind == "text":
            parts.append(str(getattr(block, "text", "")))
        elif kind in ("image", "audio"):
            mime = getattr(block, "mime_type", None) or "unknown type"
            decoded = _decoded_size(getattr(block, "data", ""))
            parts.append(f"[{kind} ({mime}, {_size(decoded)}) returned; not shown to the model]")
        elif kind == "resource":
            parts.append(_embedded(getattr(block, "resource", None)))
        elif kind == "resource_link":
            name = getattr(block, "name", "") or "resource"
            parts.append(f"[resource link: {name} <{getattr(block, 'uri', '')}>]")
        else:
            parts.append(f"[{kind or 'unknown'} content omitted]")
        if limit is not None:
            parts[-1] = parts[-1][: max(0, limit - size)]  # a text's head, not a copy of it
            size += len(parts[-1]) + 1
    return "\n".join(parts)


def _embedded(resource: Any) -> str:
    uri = getattr(resource, "uri", "")
    text = getattr(resource, "text", None)
    if isinstance(text, str):
        return f"[resource {uri}]\n{text}"
    mime = getattr(resource, "mime_type", None) or "binary"
    size = _decoded_size(getattr(resource, "blob", ""))
    return f"[resource {uri} ({mime}, {_size(size)}) returned; binary, not shown to the model]"


def _decoded_size(data: Any) -> int | None:
    """The decoded size of base64 ``data``, from its length (decoding it only to measure
    would copy a possibly large payload)."""
    if not isinstance(data, str):
        return None
    data = data.strip()
    return max(len(data) * 3 // 4 - data[-2:].count("="), 0)


def _size(size: int | None) -> str:
    if size is None:
        return "size unknown"
    if size < 1024:
        return "1 byte" if size == 1 else f"{size} bytes"
    return f"{size / 1024:.0f} KB"
