"""Fuzzing the SQL guard with statements that mix in writes, commands and side effects.

* Everything from ``sql_attacks.writes`` — writes alone or stacked with a SELECT, writable
  CTEs, ``SELECT … INTO``, locking clauses, side-effect and file functions anywhere, in random
  case, quoting and spacing — is refused with ``UnsafeQueryError`` and a rule from ``RULES``.
  Never another exception: a guard that crashes is a guard whose caller may carry on.
* Everything from ``sql_attacks.disguised`` (a write inside what may be a string, a quoted
  name or a comment, depending on the dialect) is refused the same way, or accepted only as
  something harmless: the guarded SQL is run over a writable owner connection and the
  database (tables, catalog, watched directories) is the same afterwards.

Each dialect runs on its own private database (``fuzz_databases``); the whole database is
fingerprinted once more at the end of the module.
"""

from __future__ import annotations

import collections
from collections.abc import Callable

import pytest
from fuzz_databases import FuzzDatabase
from fuzz_support import fuzz_settings
from hypothesis import event, example, given, note
from sql_attacks import Attack, disguised, writes

from relay_nb.errors import UnsafeQueryError
from relay_nb.sql.guard.query import RULES, GuardedQuery, guard_query

DIALECTS = ("sqlite", "duckdb", "postgres", "mysql")
ROW_LIMIT = 20


def _guard(db: FuzzDatabase, sql: str) -> GuardedQuery | UnsafeQueryError:
    """The guard's verdict; any exception other than a refusal fails the test."""
    try:
        return guard_query(
            sql,
            dialect=db.dialect,
            allowed_tables=db.allowed_tables,
            default_schema=db.schema,
            row_limit=ROW_LIMIT,
        )
    except UnsafeQueryError as error:
        refusal = error
    assert refusal.rule in RULES, refusal.rule
    assert refusal.message and len(refusal.message) < 300
    return refusal


@pytest.mark.parametrize("dialect", DIALECTS)
def test_writes_commands_and_side_effects_are_refused(
    dialect: str, unchanged: Callable[[str], FuzzDatabase]
) -> None:
    db = unchanged(dialect)
    rules: collections.Counter[str] = collections.Counter()

    @fuzz_settings(150)
    @given(attack=writes(dialect))
    @example(attack=Attack("SELECT 1;DELETE FROM orders", "stacked_after"))
    @example(attack=Attack("SELECT 1 -- x\n;\nDELETE FROM orders", "stacked_after"))
    @example(attack=Attack("sElEcT 1 /* ; */ ; dRoP\tTaBlE orders", "stacked_after"))
    def run(attack: Attack) -> None:
        verdict = _guard(db, attack.sql)
        assert isinstance(verdict, UnsafeQueryError), f"accepted: {verdict.sql!r}"
        rules[verdict.rule] += 1
        event(f"{attack.family}: {verdict.rule}")

    run()
    # the refusals come from the rules meant for them, not from a catch-all parse error
    assert rules["multiple_statements"] and rules["forbidden_statement"], rules
    assert rules["forbidden_function"] + rules["file_access"] > 0, rules
    assert rules["parse_error"] < sum(rules.values()) / 4, rules


@pytest.mark.parametrize("dialect", DIALECTS)
def test_disguised_writes_are_refused_or_harmless(
    dialect: str, unchanged: Callable[[str], FuzzDatabase]
) -> None:
    db = unchanged(dialect)
    outcomes: collections.Counter[str] = collections.Counter()
    before = db.quick_state()  # nothing may change it, so one reading serves every example

    @fuzz_settings(80)
    @given(attack=disguised(dialect))
    def run(attack: Attack) -> None:
        verdict = _guard(db, attack.sql)
        if isinstance(verdict, UnsafeQueryError):
            outcomes["refused"] += 1
            return
        outcomes["accepted"] += 1
        note(f"guarded: {verdict.sql!r}")
        try:
            db.run(verdict.sql)
        except Exception as error:  # the database may refuse it (an unknown column): fine
            note(f"the database refused it: {type(error).__name__}")
        assert db.quick_state() == before, "accepted SQL changed the database"

    run()
    # both outcomes occur: the disguises really are ambiguous, and the check ran
    assert outcomes["refused"] and outcomes["accepted"], outcomes


@pytest.mark.parametrize("dialect", DIALECTS)
def test_the_state_checks_see_a_write(
    dialect: str, scratch_db: Callable[[str], FuzzDatabase]
) -> None:
    """Control: an UPDATE that changes no row count changes both digests, and a new table
    changes the catalog part (on a scratch database, never the one the properties use)."""
    db = scratch_db(dialect)
    quick, full = db.quick_state(), db.state()
    db.run("UPDATE orders SET status = 'pwned' WHERE id = 1")
    assert db.quick_state() != quick
    after = db.state()
    changed_data = [k for k in after if after[k] != full.get(k) and k.startswith("db:data:")]
    assert len(changed_data) == 1 and changed_data[0].endswith("orders"), changed_data
    db.run("CREATE TABLE pwned (a INTEGER)")
    assert db.quick_state() != quick
