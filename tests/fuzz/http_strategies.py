"""Hypothesis strategies and an independent oracle for the HTTP path guard.

* :func:`valid_paths` — relative paths a real API has: letters, digits, unreserved and
  sub-delimiter characters, percent-encoded text, unicode, ``:`` and ``@`` after the first
  segment, with or without a leading ``/``.
* :func:`hostile_paths` — valid pieces mixed with everything that moves a request elsewhere:
  ``..`` and ``.`` (also ``%2e``, double-encoded, overlong UTF-8, full-width, one-dot
  leaders, ``..;``), encoded and look-alike separators, backslashes, schemes, ``//host``,
  userinfo, NUL, CR/LF (raw and encoded), ``#`` and ``?``, bidi and zero-width characters.
* :func:`query_params` — parameter names and values with ``&``, ``=``, ``#``, ``%``, CR/LF,
  ``../`` and unicode, and names such as ``Authorization`` or ``api_key``.
* :func:`server_views` — the oracle: every path a server or proxy in front of it might act
  on for a sent raw path (decoded up to four times, backslashes read as slashes, NFKC folded,
  ``;params`` dropped, dot segments removed). It shares no code with the guard.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Callable
from typing import Any
from urllib.parse import unquote

from hypothesis import strategies as st

__all__ = ["hostile_paths", "query_params", "server_views", "valid_paths"]

Draw = Callable[[st.SearchStrategy[Any]], Any]

_SAFE = st.sampled_from(
    (*"abcXYZ0189-_~!$&'()*+,;=", "é", "名", "ß", "ﬁ", "%20", "%41", "%7E", "%C3%A9", "%2541")
)
_LATER_ONLY = st.sampled_from((":", "@", "a:b", "x@y"))
_HOSTILE = (
    "..", ".", "%2e%2e", "%2E%2e", "%2e", "%252e%252e", "%25252e%25252e", ".%2e", "%2e.",
    "\uff0e\uff0e", "\u2024\u2024", "%c0%ae%c0%ae", "%e2%80%a4%e2%80%a4", "..;", ".;x",
    "%2e%2e;jsessionid=1", "%2f", "%2F", "%252f", "%25252f", "%5c", "%5C", "\\", "\uff0f",
    "\u2215", "%ef%bc%8f", "//", "http://evil.test", "https:", "HTTP://evil.test", "file:",
    "javascript:", "//evil.test", "@evil.test", "user:pw@evil.test", "%00", "\x00", "\r\n",
    "%0d%0a", "%0a", "%09", "#frag", "?x=1", " ", "\t", "%", "%zz", "%2", "\u202e", "\u200b",
    "\ufeff", "\u0085", "..%2f", "%2e%2e%2f", "..\\", "..%5c", "/..", "/.", "./", "../",
    "..\uff0f", "\uff0e\uff0e\uff0f", "%2e%2e%ef%bc%8f", "..\u2215", "..%252f", "..\uff3c",
)  # fmt: skip


@st.composite
def _segment(draw: Draw, *, first: bool) -> str:
    pieces = draw(st.lists(_SAFE, min_size=1, max_size=4))
    if not first and draw(st.booleans()):
        pieces.insert(draw(st.integers(0, len(pieces))), draw(_LATER_ONLY))
    text = "".join(pieces)
    if draw(st.integers(0, 4)) == 0:
        text += "." + draw(st.sampled_from(("json", "csv", "x")))  # a dot, not a dot segment
    return text


@st.composite
def valid_paths(draw: Draw) -> str:
    segments = [draw(_segment(first=True))]
    segments += [draw(_segment(first=False)) for _ in range(draw(st.integers(0, 4)))]
    path = "/".join(segments)
    if draw(st.booleans()):
        path = "/" + path
    return path


@st.composite
def hostile_paths(draw: Draw) -> str:
    """Valid segments with hostile pieces spliced in: as whole segments or inside one."""
    segments = [draw(_segment(first=i == 0)) for i in range(draw(st.integers(0, 3)))]
    for _ in range(draw(st.integers(1, 3))):
        piece = draw(st.sampled_from(_HOSTILE))
        if segments and draw(st.booleans()):
            i = draw(st.integers(0, len(segments) - 1))
            cut = draw(st.integers(0, len(segments[i])))
            segments[i] = segments[i][:cut] + piece + segments[i][cut:]
        else:
            segments.insert(draw(st.integers(0, len(segments))), piece)
    path = "/".join(segments)
    return ("/" + path) if draw(st.booleans()) else path


_PARAM_TEXT = st.lists(
    st.sampled_from(
        (*"ab09 &=#%?/+;:", "..", "../", "\r\n", "\n", "é", "名", "%0d%0a", "%26", "\x00",
         "Host: evil.test", "\u2028")
    ),
    max_size=5,
).map("".join)  # fmt: skip
_PARAM_NAMES = st.one_of(
    st.sampled_from(("status", "limit", "Authorization", "api_key", "Host", "page[size]")),
    _PARAM_TEXT.filter(bool),
)
_PARAM_VALUES = st.one_of(
    _PARAM_TEXT, st.integers(-5, 10**12), st.booleans(), st.none(),
    st.floats(min_value=-1e9, max_value=1e9),
)  # fmt: skip


def query_params() -> st.SearchStrategy[dict[str, Any]]:
    return st.dictionaries(
        _PARAM_NAMES, st.one_of(_PARAM_VALUES, st.lists(_PARAM_VALUES, max_size=3)), max_size=4
    )


# --------------------------------------------------------------------------------------------
# The oracle


def _remove_dot_segments(path: str) -> str:
    """RFC 3986 section 5.2.4, written out."""
    output: list[str] = []
    for segment in path.split("/"):
        if segment == "..":
            if len(output) > 1:
                output.pop()
        elif segment != ".":
            output.append(segment)
    result = "/".join(output)
    if path.endswith(("/.", "/..")):
        result += "/"
    return result if result.startswith("/") else "/" + result


def server_views(raw_path: str) -> set[str]:
    """Every path a server (or a proxy in front of it) might route ``raw_path`` to."""
    views: set[str] = set()
    text = raw_path
    for _ in range(5):
        for candidate in {text, text.replace("\\", "/"), unicodedata.normalize("NFKC", text)}:
            without_params = "/".join(s.split(";", 1)[0] for s in candidate.split("/"))
            for variant in (candidate, without_params):
                views.add(_remove_dot_segments(variant))
        decoded = unquote(text, errors="replace")
        if decoded == text:
            break
        text = decoded
    return views
