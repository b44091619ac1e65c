"""``redact_rows`` searches a text column as one string and redacts only the columns where
it finds something: it must answer exactly as redacting every cell does, whatever the rows
hold (secrets whole, inside text, at a value's edges, in containers and bytes, in a str
subclass, next to numbers and dates), and never join across values into a false match."""

from __future__ import annotations

import datetime as dt
import decimal
import random
import uuid

import pytest

from relay_nb import redaction
from relay_nb.connectors.results import redact_rows
from relay_nb.redaction import REDACTED, secret_patterns

SECRET = "s3cr3t-Tok3n-for-columns"


class Label(str):
    """A str subclass, as some drivers return (enum labels)."""


def reference(rows):
    patterns = secret_patterns()
    assert patterns is not None
    kinds = (str, bytes, bytearray, memoryview, dict, list, tuple)
    return [tuple(patterns.redact(v) if isinstance(v, kinds) else v for v in row) for row in rows]


def cell(rng: random.Random):
    choice = rng.randrange(14)
    return [
        None,
        rng.randrange(-(10**12), 10**12),
        rng.random(),
        f"plain text {rng.randrange(1000)}",
        SECRET,
        f"before {SECRET} after",
        SECRET[: rng.randrange(1, len(SECRET))],  # a part: no match
        SECRET[rng.randrange(1, len(SECRET)) :],
        {"key": SECRET, SECRET: [1, SECRET]},
        SECRET.encode(),
        Label(f"x{SECRET}"),
        dt.datetime(2024, 1, 2, 3, 4, 5),
        decimal.Decimal("12.50"),
        uuid.UUID(int=rng.randrange(1 << 64)),
    ][choice]


@pytest.fixture(autouse=True)
def known_secret(monkeypatch):
    monkeypatch.setenv("COLUMNS_TEST_API_TOKEN", SECRET)


@pytest.mark.parametrize("seed", range(40))
def test_column_search_redacts_exactly_as_every_cell(seed):
    rng = random.Random(seed)
    width = rng.randrange(1, 6)
    # each column mostly one kind, as a result's columns are
    kinds = [rng.randrange(14) for _ in range(width)]
    rows = []
    for _ in range(rng.randrange(0, 60)):
        row = []
        for kind in kinds:
            r = random.Random(rng.random())
            row.append(cell(r) if rng.random() < 0.2 else cell(random.Random(kind)))
        rows.append(tuple(row))
    names, redacted = redact_rows([f"c{i}" for i in range(width)], rows)
    assert list(redacted) == reference(rows)
    assert names == [f"c{i}" for i in range(width)]


def test_a_clean_result_is_the_same_list_and_a_split_secret_is_no_match():
    halves = [(SECRET[:10],), (SECRET[10:],)]  # joined, they would spell it with a NUL between
    _, same = redact_rows(["a"], halves)
    assert same is halves
    _, found = redact_rows(["a"], [("x",), (SECRET,)])
    assert list(found) == [("x",), (REDACTED,)]


def test_a_secret_spelled_across_two_values_is_not_redacted_in_either(monkeypatch):
    # (no environment variable can hold a NUL; a secret given to a constructor can)
    monkeypatch.setattr(redaction, "_extra_secrets", {"pass\x00word-123"})
    rows = [("pass",), ("word-123",), ("a pass\x00word-123",)]
    assert list(redact_rows(["c"], rows)[1]) == [("pass",), ("word-123",), (f"a {REDACTED}",)]
