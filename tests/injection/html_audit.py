"""Is rendered output inert? Parsed, never substring-matched, so escaping cannot fool it.

HTML goes through the standard library's ``html.parser`` (character references decoded, as a
browser would) and every element and attribute is judged:

- only the elements relay_nb, pandas, Pygments and markdown-it produce for text are allowed
  (``img``, ``a``, ``script``, ``iframe``, ``svg``, ``form``, ``meta``, ``base``… are not);
- no event-handler attribute (``on*``), no URL-carrying attribute at all (``href``, ``src``…);
- no attribute value or CSS with a ``javascript:``/``data:``/``vbscript:`` URL, ``url(``,
  ``@import``, ``expression(`` or the attacker's host;
- no comments, declarations or processing instructions (nothing relay_nb writes has them).

Decision: an attacker's URL may appear as *visible text* (the analyst should see what the
data said); it must never be somewhere a browser fetches or navigates to. The exception is
the chart tool's own ``<img src="data:image/png…">`` which is not data-derived; turns audited
here draw no chart, so any ``img`` is a finding.

Plain text (the notebook's ``text/plain``, the CLI transcript) is judged for terminal control:
no C0/C1 control characters besides newline and tab (ANSI/OSC escapes such as OSC 8
hyperlinks, screen clears, carriage-return overwrites) and no bidirectional overrides.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass, field
from html.parser import HTMLParser

from injection_payloads import ATTACKER

__all__ = ["HtmlAudit", "audit_html", "audit_text"]

ALLOWED_TAGS = frozenset(
    {
        "style", "div", "span", "b", "i", "strong", "em", "code", "pre", "p", "br", "hr",
        "details", "summary", "table", "thead", "tbody", "tr", "th", "td", "ul", "ol", "li",
        "blockquote", "h1", "h2", "h3", "h4", "h5", "h6",
    }
)  # fmt: skip
ALLOWED_ATTRIBUTES = frozenset({"class", "style", "open", "border"})
_BAD_VALUE = re.compile(
    r"javascript:|vbscript:|data:|url\(|@import|expression\(|" + re.escape(ATTACKER), re.I
)
_INVISIBLE = re.compile(r"[\x00-\x20\x7f-\x9f\u200b-\u200f\u2028-\u202e\u2060-\u2069\ufeff]")


@dataclass
class HtmlAudit:
    problems: list[str] = field(default_factory=list)
    tags: list[str] = field(default_factory=list)
    text: str = ""


class _Auditor(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.result = HtmlAudit()
        self._chunks: list[str] = []
        self._in_style = 0

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.result.tags.append(tag)
        if tag not in ALLOWED_TAGS:
            self.result.problems.append(f"element <{tag}>")
        if tag == "style":
            self._in_style += 1
        for name, value in attrs:
            if name.startswith("on"):
                self.result.problems.append(f"event handler {name}= on <{tag}>")
            elif name not in ALLOWED_ATTRIBUTES:
                self.result.problems.append(f"attribute {name}= on <{tag}>")
            if value and _BAD_VALUE.search(_INVISIBLE.sub("", value)):
                self.result.problems.append(f"active value {name}={value!r} on <{tag}>")

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.handle_starttag(tag, attrs)
        if tag == "style":
            self._in_style -= 1

    def handle_endtag(self, tag: str) -> None:
        if tag == "style" and self._in_style:
            self._in_style -= 1

    def handle_data(self, data: str) -> None:
        if self._in_style and _BAD_VALUE.search(_INVISIBLE.sub("", data)):
            self.result.problems.append(f"active CSS {data[:80]!r}")
        self._chunks.append(data)

    def handle_comment(self, data: str) -> None:
        self.result.problems.append(f"comment <!--{data[:40]}-->")

    def handle_decl(self, decl: str) -> None:
        self.result.problems.append(f"declaration <!{decl[:40]}>")

    def handle_pi(self, data: str) -> None:
        self.result.problems.append(f"processing instruction <?{data[:40]}>")

    def unknown_decl(self, data: str) -> None:
        self.result.problems.append(f"declaration <![{data[:40]}]>")

    def finish(self) -> HtmlAudit:
        self.close()
        self.result.text = "".join(self._chunks)
        return self.result


def audit_html(page: str) -> HtmlAudit:
    """Parse ``page`` and list everything in it that could act on a browser."""
    auditor = _Auditor()
    auditor.feed(page)
    return auditor.finish()


_BIDI = {"LRE", "RLE", "LRO", "RLO", "PDF", "LRI", "RLI", "FSI", "PDI"}


def audit_text(text: str) -> list[str]:
    """Terminal-active characters in plain ``text`` (see the module docstring)."""
    problems = []
    for index, char in enumerate(text):
        if char in "\n\t":
            continue
        category = unicodedata.category(char)
        if category == "Cc" or unicodedata.bidirectional(char) in _BIDI:
            problems.append(f"{unicodedata.name(char, hex(ord(char)))} at {index}")
    return problems
