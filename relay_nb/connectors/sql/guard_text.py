"""The SQL guard's text front end: from the model's string to one parsed statement.

Everything here looks at characters and tokens before any tree exists — a NUL or an
oversized text, MySQL executable comments, statement splitting on semicolon *tokens*, the
leading keyword — and then parses, failing closed. Split from :mod:`guard`, which checks the
tree; the pipeline order is documented there.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import NoReturn

from sqlglot import exp
from sqlglot.dialects.dialect import Dialect
from sqlglot.errors import ErrorLevel, ParseError, SqlglotError
from sqlglot.tokens import Token, TokenType

from relay_nb.connectors.sql import guard_rules as rules
from relay_nb.errors import UnsafeQueryError

__all__ = [
    "fold",
    "parse_statement",
    "refuse",
    "refuse_executable_comments",
    "refuse_leading_keyword",
    "refuse_unreadable_text",
    "short",
    "single_statement",
    "tokenize",
    "upper",
]


def refuse(rule: str, message: str) -> NoReturn:
    raise UnsafeQueryError(rule, message)


_ASCII_LOWER = str.maketrans("ABCDEFGHIJKLMNOPQRSTUVWXYZ", "abcdefghijklmnopqrstuvwxyz")
_ASCII_UPPER = str.maketrans("abcdefghijklmnopqrstuvwxyz", "ABCDEFGHIJKLMNOPQRSTUVWXYZ")


def fold(name: str) -> str:
    """ASCII-only lowercasing: Unicode case mapping would turn the Kelvin sign into ``k``.

    Databases fold identifiers in ASCII only, so ``str.lower`` could make a homoglyph name
    match an allowed one that the database would never resolve it to.
    """
    return name.translate(_ASCII_LOWER)


def upper(name: str) -> str:
    """ASCII-only uppercasing, for the same reason as :func:`fold`."""
    return name.translate(_ASCII_UPPER)


def short(text: str, size: int = 40) -> str:
    text = " ".join(text.split())
    return text if len(text) <= size else text[: size - 1] + "…"


# --------------------------------------------------------------------------------------------
# Tokens: comments, statements, leading keyword


def refuse_unreadable_text(sql: str) -> None:
    """Refuse what drivers would not read as the guard did: a NUL ends a C string (libpq)."""
    if "\x00" in sql:
        refuse("parse_error", "the query contains a NUL character; remove it")
    if len(sql) > rules.MAX_SQL_CHARS:
        refuse("parse_error", f"the query is longer than {rules.MAX_SQL_CHARS} characters")


def tokenize(sql: str, engine: Dialect) -> list[Token]:
    try:
        return engine.tokenize(sql)
    except SqlglotError:
        refuse("parse_error", "could not tokenise: unterminated string, identifier or comment?")


def refuse_executable_comments(sql: str, tokens: Sequence[Token]) -> None:
    """Refuse ``/*! … */`` and ``/*M! … */`` wherever they are comments, not string content.

    MySQL and MariaDB execute the body of these "comments"; sqlglot (rightly, for parsing)
    drops them, so the tree would not show what the server runs. The text *between* tokens is
    exactly the whitespace and comments, so only those gaps are searched: ``'/*!'`` inside a
    string literal or quoted identifier is data and passes.
    """
    position = 0
    for token in tokens:
        if rules.EXECUTABLE_COMMENT.search(sql, position, token.start):
            break
        position = token.end + 1
    else:
        if not rules.EXECUTABLE_COMMENT.search(sql, position):
            return
    refuse(
        "executable_comment",
        "MySQL executable comments (/*! … */, /*M! … */) run as code; write the SQL without them",
    )


def single_statement(tokens: Sequence[Token]) -> list[Token]:
    """Split on semicolon tokens (never inside strings or comments); exactly one may remain."""
    statements: list[list[Token]] = [[]]
    for token in tokens:
        if token.token_type == TokenType.SEMICOLON:
            statements.append([])
        else:
            statements[-1].append(token)
    non_empty = [s for s in statements if s]
    if not non_empty:
        refuse("parse_error", "the query is empty; send one SELECT statement")
    if len(non_empty) > 1:
        refuse("multiple_statements", f"found {len(non_empty)} statements; send exactly one")
    return non_empty[0]


def refuse_leading_keyword(first: Token, allowed: frozenset[str]) -> None:
    """A fast first verdict that names the rule; the parsed tree remains the authority.

    ``allowed``: the words a query may start with in this dialect family."""
    word = (first.text.upper().split() or [""])[0]  # sqlglot has multi-word tokens
    if word in allowed:
        return
    if word in rules.STATEMENT_KEYWORDS:
        refuse("forbidden_statement", f"{word} changes data or schema; only SELECT may run")
    if word in rules.COMMAND_KEYWORDS:
        refuse("forbidden_command", f"{word} is a command, not a query; only SELECT may run")
    refuse("not_a_query", "the statement must be a SELECT query (WITH … SELECT allowed)")


# --------------------------------------------------------------------------------------------
# Parsing


def parse_statement(sql: str, statement: list[Token], engine: Dialect) -> exp.Expr:
    """Parse the one statement; any failure is a rejection (fail closed)."""
    try:
        trees = engine.parser(error_level=ErrorLevel.IMMEDIATE).parse(statement, sql)
    except ParseError as error:
        retried = _parse_without_comments(sql, statement, engine)
        if retried is None:
            _refuse_parse_failure(error, statement)
        trees = retried
    except Exception as error:  # a sqlglot bug is still a rejection, never a pass
        refuse("parse_error", f"the query could not be parsed ({type(error).__name__})")
    trees = [t for t in trees if t is not None]
    if len(trees) != 1:
        refuse("multiple_statements", "send exactly one SELECT query")
    return trees[0]


def _parse_without_comments(
    sql: str, statement: Sequence[Token], engine: Dialect
) -> list[exp.Expr | None] | None:
    """The parse of the statement with every comment replaced by one space, or ``None``.

    sqlglot reads ``ORDER BY``, ``GROUP BY`` or ``PARTITION BY`` as one keyword only when
    whitespace separates the words, so ``ORDER /* newest first */ BY`` is a parse error
    although every database reads a comment as whitespace. The retry is used only when its
    tokens spell exactly the original tokens' text, word for word: replacing a comment must
    merge keywords and nothing else (in MySQL, ``1--/**/1`` would become ``1-- 1``, a
    comment). Executable comments were refused before, and hints are tokens, not comments.
    """
    pieces: list[str] = []
    commented = False
    for previous, token in zip([None, *statement], statement, strict=False):
        if previous is not None:
            gap = sql[previous.end + 1 : token.start]
            commented = commented or bool(gap.strip())
            pieces.append(" " if gap.strip() else gap)
        pieces.append(sql[token.start : token.end + 1])
    if not commented:
        return None
    text = "".join(pieces)
    try:
        tokens = engine.tokenize(text)
        if _words(text, tokens) != _words(sql, statement):
            return None
        return engine.parser(error_level=ErrorLevel.IMMEDIATE).parse(tokens, text)
    except Exception:  # the original parse error stands
        return None


def _words(sql: str, tokens: Sequence[Token]) -> list[str]:
    return [word for token in tokens for word in sql[token.start : token.end + 1].split()]


def _refuse_parse_failure(error: ParseError, statement: Sequence[Token]) -> NoReturn:
    words = [t.text.upper() for t in statement]
    if "INTO" in words:  # MySQL's trailing INTO OUTFILE/DUMPFILE/@var is a parse error here
        refuse(*rules.STRUCTURAL_REFUSALS["into"][1:])
    detail = error.errors[0] if error.errors else {}
    description = str(detail.get("description") or "invalid syntax")
    near = short(str(detail.get("highlight") or ""), 30)
    where = f" near {near!r}" if near else ""
    line, col = detail.get("line"), detail.get("col")
    position = f" (line {line}, col {col})" if line else ""
    refuse("parse_error", f"{short(description, 120)}{where}{position}; fix the syntax")
