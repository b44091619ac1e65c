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
