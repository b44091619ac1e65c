"""Expressions whose cost no time bound can stop: refused before they reach the server.

``maxTimeMS`` is checked between documents and between pipeline steps, not inside one
expression, so a single evaluation that runs for minutes or fills memory is only stopped
when it ends (a red team froze a MongoDB-wire server for the time it took; issue 38):

- **a regular expression with a repeated group that itself repeats** (``^(a+)+$``,
  ``(\\w+\\s?)*``): backtracking tries exponentially many ways to match, doubling the time
  with each character of a value that almost matches. Found wherever a pattern can stand: a
  ``$regex``, a BSON regular expression, the ``regex`` of ``$regexMatch``/``$regexFind``/
  ``$regexFindAll``, a ``$jsonSchema`` ``pattern``;
- **a ``$reduce`` whose ``in`` uses ``$$value`` more than once**: the accumulator doubles
  each step (``{"$concat": ["$$value", "$$value"]}``: 28 steps make a 268 MB string);
- **a ``$range`` of more than** :data:`MAX_RANGE` **numbers** written as constants: every
  element is built before anything reads it.

What is left to ``maxTimeMS`` is work that grows with the data, which it does stop.
"""

from __future__ import annotations

import importlib
from typing import Any

from relay_nb.errors import UnsafeQueryError

__all__ = ["MAX_PATTERN", "MAX_RANGE", "check_expression", "check_pattern"]

MAX_RANGE = 100_000
"""Numbers one constant ``$range`` may make."""
MAX_PATTERN = 4_096
"""Characters of one regular expression; a longer one is refused."""
_PATTERN_KEYS = frozenset({"$regex", "regex", "pattern"})


def check_expression(key: str, value: Any, where: str) -> None:
    """Refuse ``value`` under the ``$``-key (or pattern key) ``key`` if its cost is unbounded."""
    if key in _PATTERN_KEYS and isinstance(value, str):
        check_pattern(value, where)
    elif key == "$reduce" and isinstance(value, dict):
        uses = _count(value.get("in"), "$$value")
        if uses > 1:
            raise UnsafeQueryError(
                "unbounded_cost",
                f"{where}: its 'in' uses $$value {uses} times, so the accumulator doubles "
                "at every step (no time limit stops one expression); use $$value once",
            )
    elif key == "$range" and isinstance(value, list) and len(value) in (2, 3):
        numbers = [item for item in value if _number(item)]
        if len(numbers) == len(value):
            start, end = float(value[0]), float(value[1])
            step = float(value[2]) if len(value) == 3 else 1.0
            count = (end - start) / step if step else 0.0
            if count > MAX_RANGE:
                raise UnsafeQueryError(
                    "unbounded_cost",
                    f"{where}: makes {count:,.0f} numbers at once (at most {MAX_RANGE:,}); "
                    "use a smaller range",
                )


def check_pattern(pattern: str, where: str) -> None:
    """Refuse a regular expression that backtracks exponentially (a repeated group that
    itself repeats), or one longer than :data:`MAX_PATTERN`."""
    if len(pattern) > MAX_PATTERN:
        raise UnsafeQueryError(
            "unbounded_cost", f"{where}: a regular expression of {len(pattern):,} characters"
        )
    if _nested_repeat(pattern):
        raise UnsafeQueryError(
            "unbounded_cost",
            f"{where}: the regular expression repeats a group that itself repeats (like "
            "(a+)+), which can take exponential time on one value; repeat once, e.g. a+",
        )


def _nested_repeat(pattern: str) -> bool:
    """Whether a repeat (``+``, ``*``, ``{m,}``, ``{m,n}`` with n > 1) contains another.
    Read with Python's own regular-expression parser (no match is run); a pattern it cannot
    read (PCRE syntax Python lacks) is left to the server."""
    sre_parse: Any = importlib.import_module("re._parser")  # Python's own, untyped
    try:
        parsed = sre_parse.parse(pattern)
    except Exception:  # any parse failure: not ours to judge
        return False
    repeats = {sre_parse.MAX_REPEAT, sre_parse.MIN_REPEAT}
    possessive = getattr(sre_parse, "POSSESSIVE_REPEAT", None)
    stack: list[tuple[Any, int]] = [(parsed, 0)]
    while stack:
        items, inside = stack.pop()
        for op, av in items:
            if op in repeats or op is possessive:
                low, high, body = av  # a fixed count ({3}) cannot backtrack
                many = (high is sre_parse.MAXREPEAT or high > 1) and low != high
                if many and inside:
                    return True
                stack.append((body, inside + (1 if many else 0)))
            elif op is sre_parse.SUBPATTERN:
                stack.append((av[-1], inside))
            elif op is sre_parse.BRANCH:
                stack.extend((branch, inside) for branch in av[1])
            elif op in (sre_parse.ASSERT, sre_parse.ASSERT_NOT):
                stack.append((av[1], inside))
            elif op is getattr(sre_parse, "ATOMIC_GROUP", None):
                stack.append((av, inside))
    return False


def _number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _count(value: Any, text: str) -> int:
    """How many string values in ``value`` equal ``text`` (an iterative walk)."""
    found, stack = 0, [value]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            found += item == text
        elif isinstance(item, dict):
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
    return found
