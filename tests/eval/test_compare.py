# ruff: noqa: E501 - the cases are data, one per line
"""Result-set comparison: each rule and each reason on a table of cases (real queries on
every dialect: tests/connectors/test_eval_compare_live.py)."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal

import pandas as pd
import pytest

from relay_nb.eval import Table, compare_results

GOLD = (("name", "n"), [("Ada", 2), ("Bo", 1)])

CASES = [
    # (predicted, gold, options, match, reason)
    (GOLD, GOLD, {}, True, None),
    ((("name", "n"), [("Bo", 1), ("Ada", 2)]), GOLD, {}, True, None),  # a multiset
    ((("name", "n"), [("Bo", 1), ("Ada", 2)]), GOLD, {"order_matters": True}, False, "wrong order"),
    ((("n", "name"), [(2, "Ada"), (1, "Bo")]), GOLD, {}, True, None),  # columns permuted
    ((("n", "name"), [(2, "Ada"), (1, "Bo")]), GOLD, {"columns": "exact"}, False, "column mismatch"),
    ((("id", "name", "n"), [(7, "Ada", 2), (9, "Bo", 1)]), GOLD, {}, True, None),  # extra id
    ((("id", "name", "n"), [(7, "Ada", 2), (9, "Bo", 1)]), GOLD, {"columns": "permute"}, False, "column mismatch"),
    ((("name",), [("Ada",), ("Bo",)]), GOLD, {}, False, "column mismatch"),
    ((("name", "n"), [("Ada", 2)]), GOLD, {}, False, "missing rows"),
    ((("name", "n"), [("Ada", 2), ("Bo", 1), ("Cy", 1)]), GOLD, {}, False, "extra rows"),
    ((("name", "n"), [("Ada", 2), ("Bo", 1), ("Bo", 1)]), GOLD, {}, False, "extra rows"),  # duplicates count
    ((("name", "n"), [("Ada", 1), ("Bo", 2)]), GOLD, {}, False, "wrong values"),
    ((("name", "n"), [("Ada", 2.0000000001), ("Bo", Decimal("1.00"))]), GOLD, {}, True, None),
    ((("name", "n"), [("Ada", 2.01), ("Bo", 1)]), GOLD, {}, False, "wrong values"),
    ((("name", "n"), [("Ada", 2.01), ("Bo", 1)]), GOLD, {"rel_tol": 0.01}, True, None),
    ((("v",), [(None,), (float("nan"),)]), (("v",), [(None,), (None,)]), {}, True, None),  # NULLs
    ((("d",), [(dt.datetime(2025, 1, 2),)]), (("d",), [(dt.date(2025, 1, 2),)]), {}, True, None),
    ((("d",), [("2025-01-02 00:00:00",)]), (("d",), [(dt.date(2025, 1, 2),)]), {}, True, None),
    ((("d",), [(pd.Timestamp("2025-01-02 10:30"),)]), (("d",), [("2025-01-02T10:30:00",)]), {}, True, None),
    ((("d",), [(dt.date(2025, 1, 3),)]), (("d",), [(dt.date(2025, 1, 2),)]), {}, False, "wrong values"),
    ((("ok",), [(True,), (False,)]), (("ok",), [(1,), (0,)]), {}, True, None),
    ((("a", "b"), [(1, 1), (2, 2)]), (("x", "y"), [(1, 1), (2, 2)]), {}, True, None),  # look-alikes
    ((("a",), []), (("x",), []), {}, True, None),  # both empty
]  # fmt: skip


@pytest.mark.parametrize(("predicted", "gold", "options", "match", "reason"), CASES)
def test_each_rule_and_reason(predicted, gold, options, match, reason) -> None:
    outcome = compare_results(predicted, gold, **options)
    assert (outcome.match, outcome.reason) == (match, reason), outcome.detail


def test_a_match_says_which_column_answers_which() -> None:
    outcome = compare_results((("n", "id", "name"), [(2, 7, "Ada"), (1, 9, "Bo")]), GOLD)
    assert outcome.match and outcome.columns == (2, 0)


def test_frames_and_tables_are_read_alike() -> None:
    frame = pd.DataFrame({"name": ["Ada", "Bo"], "n": [2, 1]})
    assert Table.of(frame) == Table.of(GOLD)
    assert compare_results(frame, GOLD).match


def test_wide_look_alike_predictions_are_judged_in_bounded_time() -> None:
    """Seven gold columns against fourteen predicted ones holding the same values: the
    search for a column assignment is bounded, not factorial."""
    import time

    gold = ([f"g{i}" for i in range(7)], [(1,) * 7, (2,) * 7])
    predicted = ([f"p{i}" for i in range(14)], [(1,) * 14, (2,) * 14])
    started = time.perf_counter()
    assert compare_results(predicted, gold).match
    wrong = ([f"p{i}" for i in range(14)], [(1,) * 14, (3,) * 14])
    assert not compare_results(wrong, gold).match
    assert time.perf_counter() - started < 5


def test_odd_values_never_crash_the_comparison() -> None:
    """Text that looks like a date but is not one; aware timestamps in other zones."""
    assert not compare_results((["d"], [("0000-00-00",)]), (["d"], [("2024-01-01",)])).match
    utc = dt.datetime(2025, 1, 2, 10, 0, tzinfo=dt.UTC)
    plus5 = dt.datetime(2025, 1, 2, 15, 0, tzinfo=dt.timezone(dt.timedelta(hours=5)))
    assert compare_results((["t"], [(plus5,)]), (["t"], [(utc,)])).match
    later = dt.datetime(2025, 1, 2, 10, 0, tzinfo=dt.timezone(dt.timedelta(hours=5)))
    assert not compare_results((["t"], [(later,)]), (["t"], [(utc,)])).match


def test_a_one_row_miss_shows_what_was_expected_and_what_came() -> None:
    result = compare_results((["n"], [(3200,)]), (["n"], [(2924,)]))
    assert result.reason == "wrong values"
    assert result.detail == "no column holds the values of n (expected 2924, got 3200)"
    assert compare_results((["a"], [(1,)]), (["a", "b"], [(1, 2)])).detail == (
        "1 column where the gold result has 2"
    )
