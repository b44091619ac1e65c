"""Turn an API response into the analyst's DataFrame and the model's compact preview.

APIs wrap their records in different ways: a bare list (``[{…}, …]``), an envelope with one
list of objects next to paging fields (``{"data": […], "has_more": true}``), a single object,
or not JSON at all. Records become a DataFrame (nested objects flattened one level, truncated
at the row limit); the envelope's other fields — cursors, totals — are shown to the model,
which needs them to ask for the next page. CSV is parsed, other text previewed, binary only
described. Every known secret is redacted before anything is kept, because APIs echo.

The work after the fetch is bounded as the fetch is. Its cost is linear in the body (which
``max_response_bytes`` caps) and what is *kept* is bounded separately: the JSON scanner
(:mod:`.jsonscan`) keeps only the first ``row_limit`` records of a list, however long;
records spread into at most ``DEFAULT_MAX_COLUMNS`` columns and pass a
:class:`~relay_nb.connectors.bounds.ResultBudget` (``max_value_bytes`` per value,
``max_result_bytes`` per result); a CSV is parsed to ``row_limit`` rows and that many
columns; a text body is one value, clipped like any other; the envelope's other fields are
serialised only as far as the preview shows them; redaction walks what is kept, not the whole
tree. The call's deadline is checked before each step and while scanning, so an answer that
arrived in time cannot keep the kernel busy long after ``timeout_s``. What the bounds did
reaches the model and the analyst as the result's ``notes``.

Errors (4xx/5xx, redirects not followed) become ``QueryExecutionError`` with the status and a
clipped, redacted body: an API's own message ("unknown field 'colour'") is what lets the model
fix its call.
"""

from __future__ import annotations

import csv
import io
import json
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import pandas as pd

from relay_nb.connectors.bounds import (
    CLIP_MARK,
    DEFAULT_MAX_COLUMNS,
    DEFAULT_MAX_RESULT_BYTES,
    DEFAULT_MAX_VALUE_BYTES,
    ResultBudget,
    clip_value,
    describe_bytes,
    json_head,
    value_size,
)
from relay_nb.connectors.http.fetch import Deadline, Fetched
from relay_nb.connectors.http.jsonscan import ListHead, scan_json, whole
from relay_nb.connectors.results import QueryResult, frame_from_records, preview_for_model
from relay_nb.errors import QueryExecutionError
from relay_nb.redaction import redact

__all__ = ["decode_response"]

_ENVELOPE_KEYS = ("data", "results", "items", "records", "rows", "entries", "objects", "hits")
_BINARY_PREFIXES = ("image/", "audio/", "video/", "font/")
_BINARY_TYPES = {"application/octet-stream", "application/pdf", "application/zip"}
_ERROR_BODY_CHARS = 300
_META_CHARS = 400
_REDACT_MARGIN = 2000
"""Characters serialised past what is shown, so a secret cut by the clip is still whole when
redacted (and so replaced, not half shown)."""
_BLANK = re.compile(rb"\s*")
_HINTS = {
    400: "fix the request (parameter names and values) as the API's message says",
    401: "the connector's credentials were refused; the analyst must fix them (do not retry)",
    403: "the connector's credentials may not do this; try another endpoint",
    404: "no such path or record; check the path against the API summary",
    405: "this method is not supported on that path",
    422: "fix the request (parameter names and values) as the API's message says",
    429: "the API is rate limiting; wait before trying again, and make fewer calls",
}

Check = Callable[[], None]


@dataclass
class _Decoded:
    """One body as a frame: the preview lines above the table, or a text preview instead of
    it, and how many records the response held (``None`` when unknown) and whether more than
    ``row_limit`` existed."""

    frame: pd.DataFrame
    lines: list[str] = field(default_factory=list)
    text_preview: str = ""
    total: int | None = None
    more: bool = False


def decode_response(
    fetched: Fetched,
    *,
    request_line: str,
    submitted: str,
    relative_path: str,
    connector_id: str,
    row_limit: int,
    max_value_bytes: int = DEFAULT_MAX_VALUE_BYTES,
    max_result_bytes: int = DEFAULT_MAX_RESULT_BYTES,
    deadline: Deadline | None = None,
    preview_chars: int = 4000,
) -> tuple[QueryResult, str]:
    """``(result, preview)``; raises ``QueryExecutionError`` for error and redirect statuses,
    and when ``deadline`` passes before the body is decoded."""
    status = fetched.status
    if status >= 300:
        raise _status_error(fetched, request_line)
    check = _deadline_check(deadline, request_line)
    check()
    media_type, charset = _content_type(fetched.headers.get("content-type", ""))
    head = f"{request_line} → HTTP {status}" + (f" ({media_type})" if media_type else "")
    content = fetched.content
    budget = ResultBudget(
        max_value_bytes,
        max_result_bytes,
        unit="records",
        narrow="ask for fewer records or fields (a filter or a smaller page in query)",
        shorten="ask for fewer fields, or an endpoint that returns less of each record",
    )
    blank = _BLANK.fullmatch(content) is not None
    data, json_text = (_NOT_JSON, "") if blank else _json(content, media_type, row_limit, check)
    if blank:
        decoded = _Decoded(pd.DataFrame(), text_preview="(empty response body)")
    elif data is not _NOT_JSON:
        decoded = _records_frame(data, json_text, fetched.headers, row_limit, budget, check)
    elif _is_binary(media_type, content):
        shown = f"(binary content, {len(content):,} bytes, not shown)"
        decoded = _Decoded(pd.DataFrame(), text_preview=shown)
    else:
        text = redact(content.decode(charset, errors="replace"))
        check()
        decoded = _csv_frame(text, row_limit, budget) if media_type == "text/csv" else None
        if decoded is None:
            room = max(200, preview_chars - len(head) - 40)
            shown = f"{len(text):,} characters of text:\n" + _clip(text, room)
            decoded = _Decoded(
                pd.DataFrame({"text": [_clip_text(text, budget)]}), text_preview=shown
            )
    frame = decoded.frame
    by_bytes = budget.full
    result = QueryResult(
        df=frame,
        executed_sql=redact(request_line),
        row_count=len(frame),
        truncated=by_bytes or decoded.more,
        elapsed_ms=fetched.elapsed_ms,
        connector_id=connector_id,
        submitted_sql=redact(submitted),
        tables=(relative_path,),
        language="http",
        limit="bytes" if by_bytes else "rows",
        notes=budget.notes(),
    )
    lines = [head, *decoded.lines]
    if decoded.text_preview:
        lines += [f"note: {note}" for note in result.notes]
        lines.append(decoded.text_preview)
    else:
        room = max(400, preview_chars - sum(len(line) + 1 for line in lines) - 160)
        # the row limit gets its own closing line below; the byte limit is said by the preview
        shown_result = result.model_copy(update={"truncated": by_bytes})
        lines.append(preview_for_model(shown_result, max_chars=room))
    held = f"{decoded.total:,}" if decoded.total is not None else f"more than {row_limit:,}"
    if by_bytes:
        if decoded.more or (decoded.total or 0) > len(frame):
            lines.append(f"(the response held {held} records)")
    elif decoded.more:
        lines.append(
            f"(the response held {held} records; the first {row_limit} were kept — the "
            "connector's row limit. Narrow the request with query parameters instead of paging "
            "through everything)"
        )
    return result, "\n".join(lines)


def _records_frame(
    data: Any,
    text: str,
    headers: dict[str, str],
    row_limit: int,
    budget: ResultBudget,
    check: Check,
) -> _Decoded:
    """Scanned JSON as records: the frame, where they were and the envelope's other fields."""
    records, total, where, meta = _records(data, text)
    check()
    # only what is kept is redacted (cells again in build_frame): not 200,000 dropped ones
    decoded = _Decoded(frame_from_records(redact(records), budget=budget), total=total)
    decoded.more = total > row_limit
    if where:
        decoded.lines.append(f"records from field {redact(where)!r}")
    if meta:
        decoded.lines.append("other fields: " + _compact_head(meta, _META_CHARS))
    for header in ("link", "x-total-count"):
        if header in headers:
            decoded.lines.append(f"{header}: {_clip(redact(headers[header]), 300)}")
    return decoded


_NOT_JSON = object()


def _json(content: bytes, media_type: str, keep: int, check: Check) -> tuple[Any, str]:
    """``(the body scanned as JSON (see :mod:`.jsonscan`), its text)``, or ``_NOT_JSON``."""
    declared = media_type == "application/json" or media_type.endswith("+json")
    start = _BLANK.match(content)
    looks = start is not None and content[start.end() : start.end() + 1] in (b"[", b"{")
    if not (declared or (looks and media_type in ("", "text/plain"))):
        return _NOT_JSON, ""
    try:
        # what json.loads does with bytes: UTF-8, -16 or -32, a UTF-8 BOM skipped
        text = content.decode(json.detect_encoding(content), "surrogatepass")
        return scan_json(text, keep=keep, check=check), text
    except (ValueError, RecursionError):  # RecursionError: nested deeper than Python parses
        return _NOT_JSON, ""


def _records(data: Any, text: str) -> tuple[list[dict[str, Any]], int, str, dict[str, Any]]:
    """``(the records kept by the scan, how many there are, envelope field or "", the
    envelope's other fields)``."""
    if isinstance(data, ListHead):
        if data.all_dicts:
            return data.items, data.total, "", {}
        return [{"value": item} for item in data.items], data.total, "", {}
    if not isinstance(data, dict):
        return [{"value": data}], 1, "", {}
    lists = [
        key
        for key, value in data.items()
        if isinstance(value, ListHead)
        and value.all_dicts
        and (value.total or key in _ENVELOPE_KEYS)
    ]
    if len(lists) > 1:
        lists = [key for key in _ENVELOPE_KEYS if key in lists][:1]
    if len(lists) != 1:  # one record: its arrays, kept in part by the scan, become cells whole
        return (
            [{k: whole(text, v) if isinstance(v, ListHead) else v for k, v in data.items()}],
            1,
            "",
            {},
        )
    key = lists[0]
    records: ListHead = data[key]
    return records.items, records.total, key, {k: v for k, v in data.items() if k != key}


def _compact_head(meta: dict[str, Any], limit: int) -> str:
    """The envelope's other fields as compact JSON, serialised only as far as is shown (a huge
    field costs the preview's length, not its size), redacted, clipped to ``limit``."""
    shown: dict[str, Any] = {}
    for key, value in meta.items():
        if isinstance(value, ListHead):  # kept in part: say how much is missing
            more = value.total - len(value.items)
            value = value.items + ([f"… {more:,} more"] if more else [])
        shown[key] = value
    return _clip(redact(json_head(shown, limit + _REDACT_MARGIN)), limit)


def _csv_frame(text: str, row_limit: int, budget: ResultBudget) -> _Decoded | None:
    """The first ``row_limit`` rows (and ``DEFAULT_MAX_COLUMNS`` columns) of a CSV body,
    through ``budget``; ``None`` when it does not parse. Only ``row_limit + 1`` rows are
    parsed, so how many the body holds stays unknown."""
    width = _csv_width(text)
    usecols = None
    if width is not None and width > DEFAULT_MAX_COLUMNS:
        usecols = range(DEFAULT_MAX_COLUMNS)
    try:
        frame = pd.read_csv(io.StringIO(text), nrows=row_limit + 1, usecols=usecols)
    except (ValueError, pd.errors.ParserError):
        return None
    if usecols is not None:
        budget.extra_notes.append(
            f"the CSV has {width:,} columns; the first {DEFAULT_MAX_COLUMNS:,} were kept (a "
            "limit of columns per result); ask for fewer fields"
        )
    more = len(frame) > row_limit
    frame = frame.head(row_limit)
    kept = budget.admit_all(frame.itertuples(index=False, name=None))
    if budget.clipped:
        frame = pd.DataFrame.from_records(kept, columns=list(frame.columns))
    elif len(kept) < len(frame):
        frame = frame.head(len(kept))
    return _Decoded(frame, more=more)


def _csv_width(text: str) -> int | None:
    """Fields in the CSV's first record (read alone: a 50,000-column header is not a frame)."""
    try:
        return len(next(csv.reader(io.StringIO(text)), []))
    except csv.Error:  # e.g. a header over the csv module's field size limit
        return None


def _clip_text(text: str, budget: ResultBudget) -> str:
    """A text body as one value: cut to ``max_value_bytes`` like any value, with a note."""
    size = value_size(text, budget.max_value_bytes)
    if size <= budget.max_value_bytes:
        return text
    budget.extra_notes.append(
        f"the text is over {describe_bytes(budget.max_value_bytes)} (max_value_bytes); the "
        f"'text' value keeps its start and ends {CLIP_MARK!r}"
    )
    clipped: str = clip_value(text, budget.max_value_bytes)
    return clipped


def _deadline_check(deadline: Deadline | None, request_line: str) -> Check:
    def check() -> None:
        if deadline is not None and deadline.passed():
            raise QueryExecutionError(
                f"{redact(request_line)}: the answer arrived but could not be decoded within "
                f"{deadline.seconds:g} s (timeout_s covers the request and decoding its answer); "
                "ask for less: a filter, fewer fields or a smaller page size in query"
            )

    return check


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


def _clip(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"
