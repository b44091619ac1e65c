"""Keeping IPython's help syntax away from questions.

IPython reads a line ending in ``?`` as a request for help on the last word — so
``%relay which customers churned?`` would look up ``churned`` and never ask anything. This
cleanup transformer, registered by ``%load_ext relay_nb``, rewrites a ``%relay`` line (also
``x = %relay …``) into the explicit magic call before IPython's help rule sees it. Cell magics
(``%%relay``) need nothing: IPython hands their body over verbatim.
"""

from __future__ import annotations

import re

__all__ = ["protect_question_marks"]

_LINE = re.compile(r"^(?P<indent>\s*)(?:(?P<target>[A-Za-z_][\w.]*)\s*=\s*)?%relay(?P<rest>\s.*)?$")


def protect_question_marks(lines: list[str]) -> list[str]:
    """An IPython cleanup transform: explicit ``run_line_magic`` for ``%relay …?`` lines."""
    result = []
    for line in lines:
        match = _LINE.match(line.rstrip("\n"))
        if match is None or not line.rstrip().endswith("?"):
            result.append(line)
            continue
        indent, target = match.group("indent"), match.group("target")
        args = (match.group("rest") or "").strip()
        call = f"get_ipython().run_line_magic('relay', {args!r})"
        assign = f"{target} = " if target else ""
        newline = "\n" if line.endswith("\n") else ""
        result.append(f"{indent}{assign}{call}{newline}")
    return result
