"""What every HTML relay_nb writes shares: money that stays money in a notebook.

JupyterLab, Notebook 7 and nbconvert's HTML run MathJax over an output's HTML, and MathJax
reads the text between two ``$`` of one run of text as TeX: "Revenue went from $449.46 in
2009 to $450.58" would show "449.46in2009to450.58" as one italic formula. Two defences, since
no single one holds in every front end:

- :data:`NO_MATH_CLASSES` on the outermost element: MathJax 3 skips an element with class
  ``mathjax_ignore`` (JupyterLab 4, Notebook 7), MathJax 2 one with ``tex2jax_ignore``
  (classic Notebook, older nbconvert templates);
- :func:`keep_dollars`: every ``$`` of the text in an element of its own, so no two share a
  run of text for a typesetter that knows neither class (MathJax looks for both delimiters
  in one string and breaks strings at elements). The text reads, copies and searches the
  same.
"""

from __future__ import annotations

import re

__all__ = ["NO_MATH_CLASSES", "keep_dollars"]

NO_MATH_CLASSES = "mathjax_ignore tex2jax_ignore"
"""The classes MathJax 3 and MathJax 2 skip an element (and what it holds) for."""

_DOLLAR = "<span>$</span>"
_TEXT_DOLLAR = re.compile(
    r"(<span>\$</span>|<(?:style|script)\b.*?</(?:style|script)>|<[^>]*>)|\$", re.S
)


def keep_dollars(fragment: str) -> str:
    """``fragment`` (HTML) with each ``$`` of its text as ``<span>$</span>``; tags, their
    attributes, style and script blocks and dollars already kept stay as they are, so a
    fragment may pass here twice."""
    if "$" not in fragment:
        return fragment
    return _TEXT_DOLLAR.sub(lambda m: m.group(1) or _DOLLAR, fragment)
