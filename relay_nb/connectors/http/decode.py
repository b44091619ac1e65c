"""Turn an API response into the analyst's DataFrame and the model's compact preview.

APIs wrap their records in different ways: a bare list (``[{…}, …]``), an envelope with one
list of objects next to paging fields (``{"data": […], "has_more": true}``), a single object,
or not JSON at all. Records become a DataFrame (nested objects flattened one level, truncated
at the row limit); the envelope's other fields — cursors, totals — are shown to the model,
which needs them to ask for the next page. CSV is parsed, other text previewed, binary only
described. Every known secret is redacted before anything is kept, because APIs echo.

Errors (4xx/5xx, redirects not followed) become ``QueryExecutionError`` with the status and a
clipped, redacted body: an API's own message ("unknown field 'colour'") is what lets the model
fix its call.
"""

from __future__ import annotations

import io
import json
from typing import Any

import pandas as pd

from relay_nb.connectors.http.fetch import Fetched
from relay_nb.connectors.results import QueryResult, frame_from_records, preview_for_model
from relay_nb.errors import QueryExecutionError
from relay_nb.redaction import redact

__all__ = ["decode_response"]

_ENVELOPE_KEYS = ("data", "results", "items", "records", "rows", "entries", "objects", "hits")
_BINARY_PREFIXES = ("image/", "audio/", "video/", "font/")
_BINARY_TYPES = {"application/octet-stream", "application/pdf", "application/zip"}
_ERROR_BODY_CHARS = 300
_META_CHARS = 400
_HINTS = {
    400: "fix the request (parameter names and values) as the API's message says",
    401: "the connector's credentials were refused; the analyst must fix them (do not retry)",
    403: "the connector's credentials may not do this; try another endpoint",
    404: "no such path or record; check the path against the API summary",
    405: "this method is not supported on that path",
    422: "fix the request (parameter names and values) as the API's message says",
    429: "the API is rate limiting; wait before trying again, and make fewer calls",
}


def decode_response(
    fetched: Fetched,
    *,
    request_line: str,
    submitted: str,
    relative_path: str,
    connector_id: str,
    row_limit: int,
    preview_chars: int = 4000,
) -> tuple[QueryResult, str]:
    """``(result, preview)``; raises ``QueryExecutionError`` for error and redirect statuses."""
    status = fetched.status
    if status >= 300:
        raise _status_error(fetched, request_line)
    media_type, charset = _content_type(fetched.headers.get("content-type", ""))
    head = f"{request_line} → HTTP {status}" + (f" ({media_type})" if media_type else "")
    notes: list[str] = []
    frame: pd.DataFrame
    total: int | None = None
    data = _json(fetched.content, media_type)
    if not fetched.content.strip():
        frame, text_preview = pd.DataFrame(), "(empty response body)"
    elif data is not _NOT_JSON:
        records, where, meta = _records(redact(data))
        total = len(records)
        frame = frame_from_records(records[:row_limit])
        text_preview = ""
        if where:
            notes.append(f"records from field {where!r}")
        if meta:
            notes.append("other fields: " + _clip(_compact(meta), _META_CHARS))
        for header in ("link", "x-total-count"):
            if header in fetched.headers:
                notes.append(f"{header}: {_clip(redact(fetched.headers[header]), 300)}")
    elif _is_binary(media_type, fetched.content):
        frame = pd.DataFrame()
        text_preview = f"(binary content, {len(fetched.content):,} bytes, not shown)"
    else:
        text = redact(fetched.content.decode(charset, errors="replace"))
        frame, total = _csv_frame(text, row_limit) if media_type == "text/csv" else (None, None)
        if frame is None:
            frame = pd.DataFrame({"text": [text]})
            budget = max(200, preview_chars - len(head) - 40)
            text_preview = f"{len(text):,} characters of text:\n" + _clip(text, budget)
        else:
            text_preview = ""
    truncated = total is not None and total > row_limit
    result = QueryResult(
        df=frame,
        executed_sql=redact(request_line),
        row_count=len(frame),
        truncated=truncated,
        elapsed_ms=fetched.elapsed_ms,
        connector_id=connector_id,
        submitted_sql=redact(submitted),
        tables=(relative_path,),
        language="http",
    )
    lines = [head, *notes]
    if text_preview:
        lines.append(text_preview)
    else:
        budget = max(400, preview_chars - sum(len(line) + 1 for line in lines) - 160)
        shown = result.model_copy(update={"truncated": False})
        lines.append(preview_for_model(shown, max_chars=budget))
    if truncated:
        lines.append(
            f"(the response held {total:,} records; the first {row_limit} were kept — the "
            "connector's row limit. Narrow the request with query parameters instead of paging "
            "through everything)"
        )
    return result, "\n".join(lines)


_NOT_JSON = object()


def _json(content: bytes, media_type: str) -> Any:
    declared = media_type == "application/json" or media_type.endswith("+json")
    looks = content.lstrip()[:1] in (b"[", b"{")
    if not (declared or (looks and media_type in ("", "text/plain"))):
        return _NOT_JSON
    try:
        return json.loads(content)
    except ValueError:
        return _NOT_JSON


def _records(data: Any) -> tuple[list[dict[str, Any]], str, dict[str, Any]]:
    """``(records, envelope field or "", the envelope's other fields)``."""
    if isinstance(data, list):
        if all(isinstance(item, dict) for item in data):
            return data, "", {}
        return [{"value": item} for item in data], "", {}
    if not isinstance(data, dict):
        return [{"value": data}], "", {}
    lists = [
        key
        for key, value in data.items()
        if isinstance(value, list)
        and all(isinstance(item, dict) for item in value)
        and (value or key in _ENVELOPE_KEYS)
    ]
    if len(lists) > 1:
        lists = [key for key in _ENVELOPE_KEYS if key in lists][:1]
    if len(lists) != 1:
        return [data], "", {}
    key = lists[0]
    return data[key], key, {k: v for k, v in data.items() if k != key}


def _csv_frame(text: str, row_limit: int) -> tuple[pd.DataFrame | None, int | None]:
    try:
        frame = pd.read_csv(io.StringIO(text), nrows=row_limit + 1)
    except (ValueError, pd.errors.ParserError):
        return None, None
    total = len(frame)
    return frame.head(row_limit), total


def _status_error(fetched: Fetched, request_line: str) -> QueryExecutionError:
    status = fetched.status
    if status < 400:
        return QueryExecutionError(
            f"{request_line} answered HTTP {status}, a redirect that was not followed (only GET "
            "follows redirects, at most 5); call the final path directly"
        )
    body = redact(fetched.content[:2000].decode("utf-8", errors="replace"))
    body = " ".join(body.split())
    hint = _HINTS.get(status, "the API failed; try again later" if status >= 500 else "")
    message = f"{request_line} failed: HTTP {status} {fetched.reason}".rstrip()
    if body:
        message += f": {_clip(body, _ERROR_BODY_CHARS)}"
    return QueryExecutionError(message + (f" — {hint}" if hint else ""))


def _content_type(value: str) -> tuple[str, str]:
    media, _, params = value.partition(";")
    charset = "utf-8"
    for param in params.split(";"):
        name, _, raw = param.strip().partition("=")
        if name.lower() == "charset" and raw.strip():
            charset = raw.strip().strip('"')
    try:
        "".encode(charset)
    except LookupError:
        charset = "utf-8"
    return media.strip().lower(), charset


def _is_binary(media_type: str, content: bytes) -> bool:
    if media_type.startswith(_BINARY_PREFIXES) or media_type in _BINARY_TYPES:
        return True
    return b"\0" in content[:1024]


def _compact(value: Any) -> str:
    return json.dumps(value, default=str, ensure_ascii=False, separators=(",", ":"))


def _clip(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"
