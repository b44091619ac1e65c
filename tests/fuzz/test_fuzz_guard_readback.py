"""The guard's one pass decides as its two passes did, on the fuzzers' queries.

``tests/connectors/test_guard_readback.py`` compares the two on every corpus; here the same
comparison runs on what the fuzzers draw (no database needed: only the decisions are
compared): random valid SELECTs full of quoting, comments and odd spellings, compact
expressions whose operators the generator must space correctly, writes and side-effect calls,
and writes disguised as strings, names and comments. Each must come out of
:func:`guard_query` exactly as out of the guard's pipeline run twice — the same SQL, LIMIT
and tables, or the same rule and message.
"""

from __future__ import annotations

from typing import Any

import pytest
from fuzz_support import fuzz_settings, load_sibling
from hypothesis import given, note
from hypothesis import strategies as st
from sql_attacks import disguised, writes
from sql_strategies import compact_expressions, select_queries, sql_dialect

from relay_nb.testing.seed import ALLOWED_TABLES

_corpora = load_sibling("connectors/test_guard_readback.py", "relay_guard_readback_for_fuzz")
SCHEMAS: dict[str, str | None] = _corpora.SCHEMAS


def _decide(dialect: str, sql: str) -> None:
    note(sql)
    schema = SCHEMAS[dialect]
    _corpora.same_outcome(sql, dialect, frozenset((schema, t) for t in ALLOWED_TABLES), schema)


@pytest.mark.parametrize("dialect", list(SCHEMAS))
def test_random_selects(dialect: str) -> None:
    @fuzz_settings(60)
    @given(query=select_queries(sql_dialect(dialect, SCHEMAS[dialect])))
    def decide(query: Any) -> None:
        _decide(dialect, query.sql)

    decide()


@pytest.mark.parametrize("dialect", list(SCHEMAS))
def test_compact_expressions(dialect: str) -> None:
    @fuzz_settings(60)
    @given(expression=compact_expressions(mysql=dialect == "mysql"))
    def decide(expression: str) -> None:
        _decide(dialect, f"SELECT {expression} AS v FROM orders")

    decide()


@pytest.mark.parametrize("dialect", list(SCHEMAS))
def test_writes_and_disguises(dialect: str) -> None:
    @fuzz_settings(80)
    @given(attack=st.one_of(writes(dialect), disguised(dialect)))
    def decide(attack: Any) -> None:
        _decide(dialect, attack.sql)

    decide()
