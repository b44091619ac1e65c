"""The SQL guard's text front end: from the model's string to one parsed statement.

Everything here looks at characters and tokens before any tree exists — a NUL or an
oversized text, MySQL executable comments, statement splitting on semicolon *tokens*, the
leading keyword — and then parses, failing closed. Split from :mod:`.query`, which checks the
tree; the pipeline order is documented there.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from typing import NoReturn

from sqlglot import exp
from sqlglot.dialects.dialect import Dialect
from sqlglot.errors import ErrorLevel, ParseError, SqlglotError
from sqlglot.tokenizer_core import Token, TokenType

from relay_nb.errors import UnsafeQueryError
from relay_nb.sql.guard import rules

__all__ = [
    "fold",
    "parse_statement",
    "read_statement",
    "refuse",
    "refuse_costly_subscripts",
    "refuse_deep_nesting",
    "refuse_executable_comments",
    "refuse_leading_keyword",
    "refuse_long_intervals",
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


def refuse_unreadable_text(sql: str, max_chars: int = rules.MAX_SQL_CHARS) -> None:
    """Refuse what drivers would not read as the guard did: a NUL ends a C string (libpq);
    and text longer than ``max_chars`` (the input's bound, or the re-serialised text's)."""
    if "\x00" in sql:
        refuse("parse_error", "the query contains a NUL character; remove it")
    if len(sql) > max_chars:
        refuse("parse_error", f"the query is longer than {max_chars} characters")


def tokenize(sql: str, engine: Dialect, max_tokens: int = rules.MAX_TOKENS) -> list[Token]:
    try:
        tokens = engine.tokenize(sql)
    except SqlglotError:
        refuse("parse_error", "could not tokenise: unterminated string, identifier or comment?")
    if len(tokens) > max_tokens:
        refuse("parse_error", f"the query has more than {max_tokens} tokens; shorten it")
    return tokens


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
        if any(_word(statement[0]) in _SCRIPT_WORDS for statement in non_empty):
            refuse("multiple_statements", _SCRIPT_ADVICE)
        refuse("multiple_statements", f"found {len(non_empty)} statements; send exactly one")
    return non_empty[0]


_SCRIPT_WORDS = frozenset({"DECLARE", "SET", "BEGIN", "LET", "IF", "WHILE", "LOOP", "EXECUTE"})
"""Words that open a script's statement (BigQuery and Snowflake scripting, T-SQL batches)."""
_SCRIPT_ADVICE = (
    "scripts (DECLARE, SET, BEGIN … END) are not run; send one SELECT with the values "
    "written into it (a WITH clause can name them)"
)


def _word(token: Token) -> str:
    return (token.text.upper().split() or [""])[0]  # sqlglot has multi-word tokens


_OPENERS = frozenset({TokenType.L_PAREN, TokenType.L_BRACKET, TokenType.L_BRACE, TokenType.CASE})
_CLOSERS = frozenset({TokenType.R_PAREN, TokenType.R_BRACKET, TokenType.R_BRACE, TokenType.END})
_PREFIX_OPERATORS = frozenset(
    {
        TokenType.NOT, TokenType.DASH, TokenType.PLUS, TokenType.TILDE, TokenType.RLIKE,
        TokenType.EXCLAMATION, TokenType.PIPE_SLASH, TokenType.DPIPE_SLASH, TokenType.EXISTS,
        TokenType.INTERVAL, TokenType.ANY, TokenType.ALL, TokenType.SOME, TokenType.PARAMETER,
    }
)  # fmt: skip
"""Tokens that may prefix an operand (``NOT NOT x``, ``- - 1``): each one the parser recurses
into until its operand ends."""


def refuse_deep_nesting(tokens: Sequence[Token]) -> None:
    """Refuse more than :data:`~.rules.MAX_NESTING` levels open at once, before parsing.

    A level is a bracket or ``CASE`` not yet closed, or a prefix operator whose operand has
    not ended (the next operand or closer at its level ends it). This over-approximates the
    recursion of sqlglot's parser and generator, so the refusal is a clean ``parse_error``
    whatever Python's recursion limit, never a ``RecursionError`` or a crashed kernel.
    """
    pending = [0]  # per open level: prefix operators still waiting for their operand
    depth = 0
    for token in tokens:
        kind = token.token_type
        if kind in _OPENERS:
            pending.append(0)
            depth += 1
        elif kind in _CLOSERS:
            if len(pending) > 1:
                depth -= 1 + pending.pop()
            depth -= pending[-1]  # the bracket was the operand of these
            pending[-1] = 0
        elif kind in _PREFIX_OPERATORS:
            pending[-1] += 1
            depth += 1
        else:
            depth -= pending[-1]
            pending[-1] = 0
        if depth > rules.MAX_NESTING:
            refuse(
                "parse_error",
                f"the query nests more than {rules.MAX_NESTING} levels deep (brackets, CASE, "
                "NOT …); flatten it, e.g. with CTEs",
            )


MAX_INTERVAL_CHARS = 200
"""Characters of an ``INTERVAL '…'`` string: ``'1 year 2 months 3 days …'`` fits many times."""


def refuse_long_intervals(tokens: Sequence[Token]) -> None:
    """Refuse an ``INTERVAL`` string longer than :data:`MAX_INTERVAL_CHARS`: sqlglot's
    parser splits it with a pattern that is quadratic in a run of digits (10,000 digits took
    2.3 s a parse, and the guard parses twice; the text bound allows 100,000)."""
    for before, token in itertools.pairwise(tokens):
        if (
            before.token_type is TokenType.INTERVAL
            and token.token_type is TokenType.STRING
            and len(token.text) > MAX_INTERVAL_CHARS
        ):
            refuse(
                "parse_error",
                f"an INTERVAL string of {len(token.text):,} characters (at most "
                f"{MAX_INTERVAL_CHARS}); write the interval as a number and a unit",
            )


def refuse_costly_subscripts(tokens: Sequence[Token], engine: Dialect) -> None:
    """Refuse array subscripts whose operands add up to more than
    :data:`~.rules.MAX_SUBSCRIPT_TOKENS` tokens, in dialects whose arrays start at 1.

    There sqlglot's parser infers the operand's type at every ``[…]`` to shift the index,
    walking the operand again: ``a[1][1]…`` or ``((x)[1] + y)[1]`` cost quadratic time
    (2,000 chained subscripts took 70 s). The operand of ``x[…]`` is ``x``; of ``…)[…]`` the
    bracketed expression (and the function named before it); of ``…][…]`` the previous
    subscript's operand, so a chain counts every link again, as the parser does.
    """
    if not engine.INDEX_OFFSET or not any(t.token_type is TokenType.L_BRACKET for t in tokens):
        return
    openers: list[int] = []
    matching: dict[int, int] = {}  # closer -> its opener
    operand: dict[int, int] = {}  # a subscript's "]" -> where its operand starts
    total = 0
    for i, token in enumerate(tokens):
        kind = token.token_type
        if kind in (TokenType.L_PAREN, TokenType.L_BRACKET, TokenType.L_BRACE):
            openers.append(i)
        elif kind in (TokenType.R_PAREN, TokenType.R_BRACKET, TokenType.R_BRACE) and openers:
            opener = matching[i] = openers.pop()
            if kind is TokenType.R_BRACKET and tokens[opener].token_type is TokenType.L_BRACKET:
                start = _subscript_operand(tokens, opener, matching, operand)
                if start is not None:
                    operand[i] = start
                    total += i - start
        if total > rules.MAX_SUBSCRIPT_TOKENS:
            refuse(
                "parse_error",
                "the query's array subscripts are too many or too deeply chained; select "
                "the elements in a CTE first",
            )


_OPERAND_TOKENS = frozenset(
    {TokenType.VAR, TokenType.IDENTIFIER, TokenType.STRING, TokenType.NUMBER}
)


def _subscript_operand(
    tokens: Sequence[Token], opener: int, matching: dict[int, int], operand: dict[int, int]
) -> int | None:
    """Where the operand of the subscript opened at ``opener`` starts; ``None`` for an array
    constructor (``ARRAY[…]``, DuckDB's ``[1, 2]``), which the parser does not type."""
    if opener == 0:
        return None
    before = opener - 1
    kind = tokens[before].token_type
    if kind is TokenType.R_BRACKET:
        return operand.get(before, matching.get(before, before))
    if kind is TokenType.R_PAREN:
        start = matching.get(before, before)
        named = start > 0 and tokens[start - 1].token_type in _OPERAND_TOKENS
        return start - 1 if named else start
    return before if kind in _OPERAND_TOKENS else None


def refuse_leading_keyword(first: Token, allowed: frozenset[str]) -> None:
    """A fast first verdict that names the rule; the parsed tree remains the authority.

    ``allowed``: the words a query may start with in this dialect family."""
    word = _word(first)
    if word in allowed:
        return
    if word in rules.STATEMENT_KEYWORDS:
        refuse("forbidden_statement", f"{word} changes data or schema; only SELECT may run")
    if word in rules.COMMAND_KEYWORDS:
        refuse("forbidden_command", f"{word} is a command, not a query; only SELECT may run")
    if word in _SCRIPT_WORDS:
        refuse("not_a_query", _SCRIPT_ADVICE)
    refuse("not_a_query", "the statement must be a SELECT query (WITH … SELECT allowed)")


# --------------------------------------------------------------------------------------------
# Parsing


def read_statement(
    sql: str, engine: Dialect, leading_keywords: frozenset[str], bounds: tuple[int, int]
) -> tuple[exp.Expr, list[Token]]:
    """The whole front end, from a string to its one parsed statement and its tokens:
    readable text within ``bounds`` (characters, tokens), no executable comment, one
    statement, an allowed leading keyword, bounded nesting and subscripts, a parse."""
    max_chars, max_tokens = bounds
    refuse_unreadable_text(sql, max_chars)
    tokens = tokenize(sql, engine, max_tokens)
    refuse_executable_comments(sql, tokens)
    statement = single_statement(tokens)
    refuse_leading_keyword(statement[0], leading_keywords)
    refuse_deep_nesting(statement)
    refuse_costly_subscripts(statement, engine)
    refuse_long_intervals(statement)
    return parse_statement(sql, statement, engine), statement


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
