"""Calls the guard writes back as the model wrote them, where sqlglot's reading would not.

sqlglot reads some spellings of a call into the same node as another spelling that means
something else on the engine, so the tree cannot tell them apart and writes both the same
way. Redshift's ``ADD_MONTHS(d, 1)`` becomes ``DATEADD(MONTH, 1, d)`` (they differ at month
ends: ``ADD_MONTHS`` keeps a month's last day the last day); Databricks' two-argument
``datediff(end, start)`` (days between the two *dates*) becomes ``DATEDIFF(DAY, start, end)``
(whole days elapsed between *timestamps*). Only the tokens still say which was written.

An :class:`AsWritten` names the node, the spellings that produce it, which of them must be
kept, and how to write one back (a plain call of the written name). When every call the
text spells into that node is a kept one, each node is replaced by the call as written; when
none is, nothing changes; a query that mixes them is refused, since which node came from
which call is not known (the message says how to write it). The replacement reads back into
the same node on the guard's second pass and is replaced the same way: a fixed point.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from sqlglot import exp
from sqlglot.tokenizer_core import Token, TokenType

from relay_nb.sql.guard import text as guard_text

__all__ = ["AsWritten", "keep_as_written"]


@dataclass(frozen=True)
class AsWritten:
    node: type[exp.Func]
    spellings: frozenset[str]
    """Every function name (upper case) the dialect reads into ``node``."""
    kept: Callable[[str, int], bool]
    """``(name, number of arguments)`` -> whether such a call is written back as written."""
    write: Callable[[exp.Func], exp.Expr]
    """The call as written, from the node sqlglot made of it."""
    mixed: str
    """What to tell the model when a query mixes kept and other spellings."""


def keep_as_written(tree: exp.Expr, tokens: Sequence[Token], rules: Sequence[AsWritten]) -> None:
    """Apply each rule to ``tree`` (parsed from ``tokens``); see the module docstring."""
    for rule in rules:
        calls = _calls(tokens, rule.spellings)
        kept = [rule.kept(name, arity) for name, arity in calls]
        if not any(kept):
            continue
        nodes = [node for node in tree.find_all(rule.node)]
        if not all(kept) or len(nodes) != len(calls):
            guard_text.refuse("unfaithful_rewrite", rule.mixed)
        for node in nodes:
            node.replace(rule.write(node))


def _calls(tokens: Sequence[Token], names: frozenset[str]) -> list[tuple[str, int]]:
    """``(NAME, arguments)`` of each call to one of ``names`` in the token stream."""
    found = []
    for index, token in enumerate(tokens[:-1]):
        name = token.text.upper()
        if name in names and tokens[index + 1].token_type == TokenType.L_PAREN:
            found.append((name, _arity(tokens, index + 1)))
    return found


def _arity(tokens: Sequence[Token], opening: int) -> int:
    """How many arguments the call whose ``(`` is at ``opening`` has (commas at its depth)."""
    depth = 0
    commas = 0
    empty = True
    for token in tokens[opening:]:
        kind = token.token_type
        if kind in (TokenType.L_PAREN, TokenType.L_BRACKET, TokenType.L_BRACE):
            depth += 1
            if depth == 1:
                continue
        elif kind in (TokenType.R_PAREN, TokenType.R_BRACKET, TokenType.R_BRACE):
            depth -= 1
            if depth == 0:
                break
        elif kind == TokenType.COMMA and depth == 1:
            commas += 1
        empty = False
    return 0 if empty else commas + 1


def plain_call(name: str, *arguments: str) -> Callable[[exp.Func], exp.Expr]:
    """Write the node back as ``name(<its arguments>)``, the arguments read from its args."""

    def write(node: exp.Func) -> exp.Expr:
        return exp.Anonymous(this=name, expressions=[node.args[key] for key in arguments])

    return write
