"""One function call being sized, and what its handler may ask of the analysis.

Apart from :mod:`kinds` so the handlers in :mod:`patterns`, :mod:`series` and :mod:`text`
can take a :class:`Call` without importing the table that lists them.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import NoReturn, Protocol

from sqlglot import exp

from relay_nb.sql.guard.sizes import counts
from relay_nb.sql.guard.sizes.model import (
    FIXED,
    FIXED_BYTES,
    Lambda,
    Quadratic,
    Size,
    SizeLimits,
    TooLarge,
    Val,
    human,
)

__all__ = ["Call", "Context"]


class Context(Protocol):
    """What a handler may ask of the analysis (:class:`sizer._Sizer`)."""

    limits: SizeLimits
    text_factor: int
    """Bytes a value of unknown type prints as, per byte (the family's ``size_text_factor``)."""

    @property
    def sql_length(self) -> int:
        """The query's length as written out, in characters."""
        ...

    def value(self, node: exp.Expr) -> Val: ...

    def fits(self, size: Size) -> bool: ...

    def key(self, node: exp.Expr) -> str: ...

    def apply(
        self, body: exp.Lambda, params: Sequence[Lambda], *, probe: bool = False
    ) -> tuple[Val, dict[str, Lambda]]:
        """Size a lambda's body with its parameters bound; returns the body's bound (with a
        symbol per parameter) and the symbols."""
        ...


@dataclass
class Call:
    """One function call being sized."""

    ctx: Context
    node: exp.Expr
    name: str
    args: list[exp.Expr]
    params: tuple[str | int, ...]
    vals: list[Val]

    def val(self, index: int, default: Val | None = None) -> Val:
        if index < len(self.vals):
            return self.vals[index]
        return default if default is not None else Val(Size(FIXED_BYTES), FIXED)

    def param(self, index: int, default: int = 0) -> int:
        value = self.params[index] if index < len(self.params) else default
        return int(value)

    def bound(self, node: exp.Expr) -> Size | None:
        return counts.count_bound(node, self.ctx.value)

    def product(self, one: Size, items: Size) -> Size:
        """``items`` copies of ``one``: refused when both grow with the data."""
        try:
            return one.times(items)
        except Quadratic:
            self.refuse(
                "would repeat a value from the data as many times as another value from the "
                "data says, which has no size bound; compute one side in a subquery, or "
                "unnest first"
            )

    def refuse(self, why: str) -> NoReturn:
        raise TooLarge(f"{self.name}() {why}")

    def too_large(self, size: Size, fix: str) -> NoReturn:
        limits = self.ctx.limits
        limit = (
            f"{limits.value_multiple}x a stored value"
            if size.multiple > limits.value_multiple
            else human(limits.value_bytes)
        )
        self.refuse(f"would build a value of up to {size.describe()} (the limit is {limit}); {fix}")
