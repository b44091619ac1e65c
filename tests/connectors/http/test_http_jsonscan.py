"""The JSON scanner against ``json.loads``: the same document (its kept arrays read whole),
the same refusals, and only ``keep`` elements of a long array held."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from relay_nb.connectors.http.jsonscan import CHECK_EVERY, ListHead, scan_json, whole

SCALARS = st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text()
VALUES = st.recursive(
    SCALARS,
    lambda inner: st.lists(inner, max_size=6) | st.dictionaries(st.text(max_size=5), inner),
    max_leaves=30,
)
NOT_JSON = r"(?i)expect|extra data|unterminated|invalid"
"""What json's own errors and the scanner's say."""
LAYOUTS = st.sampled_from(
    [{}, {"separators": (",", ":")}, {"indent": 2}, {"indent": "\t", "separators": (" ,", " : ")}]
)


def _nothing() -> None:
    return None


def _expanded(text: str, value: Any) -> Any:
    if isinstance(value, ListHead):
        return whole(text, value)
    if isinstance(value, dict):
        return {k: whole(text, v) if isinstance(v, ListHead) else v for k, v in value.items()}
    return value


@settings(max_examples=300, deadline=None)
@given(VALUES, LAYOUTS, st.integers(0, 4), st.sampled_from(["", " ", "\n\t "]))
def test_the_scan_reads_what_json_loads_reads(
    value: Any, layout: dict[str, Any], keep: int, pad: str
) -> None:
    text = pad + json.dumps(value, **layout) + pad
    scanned = scan_json(text, keep=keep, check=_nothing)
    assert _expanded(text, scanned) == json.loads(text)
    heads = [scanned] if isinstance(scanned, ListHead) else []
    if isinstance(scanned, dict):
        heads = [v for v in scanned.values() if isinstance(v, ListHead)]
    for head in heads:
        full = whole(text, head)
        assert head.items == full[:keep] and head.total == len(full)
        assert head.all_dicts == all(isinstance(item, dict) for item in full)


@settings(max_examples=300, deadline=None)
@given(VALUES, st.data())
def test_the_scan_refuses_what_json_loads_refuses(value: Any, data: st.DataObject) -> None:
    text = json.dumps(value, indent=data.draw(st.sampled_from([None, 1])))
    cut = data.draw(st.integers(0, len(text)))
    broken = text[:cut] + data.draw(st.sampled_from(["", ",", "]", "}", "x", ",]", ":"]))
    try:
        expected: Any = json.loads(broken)
    except ValueError:
        with pytest.raises(ValueError, match=NOT_JSON):
            scan_json(broken, keep=2, check=_nothing)
    else:
        assert _expanded(broken, scan_json(broken, keep=2, check=_nothing)) == expected


@pytest.mark.parametrize(
    "text", ['[{"a": 1},]', '{"a": [1, 2,]}', '{"a" 1}', "[1 2]", "{,}", "[", ""]
)
def test_malformed_json_is_refused(text: str) -> None:
    with pytest.raises(ValueError, match=NOT_JSON):
        scan_json(text, keep=5, check=_nothing)


def test_deep_nesting_is_a_recursion_error_not_a_crash() -> None:
    with pytest.raises(RecursionError):
        scan_json("[" * 100_000 + "]" * 100_000, keep=1, check=_nothing)


def test_a_long_envelope_keeps_its_head_and_checks_the_deadline() -> None:
    records = [{"n": i} for i in range(10 * CHECK_EVERY + 3)]
    text = json.dumps({"data": records, "more": True})
    checks: list[int] = []
    scanned = scan_json(text, keep=3, check=lambda: checks.append(1))
    head = scanned["data"]
    assert head.items == records[:3] and head.total == len(records) and head.all_dicts
    assert not head.complete and scanned["more"] is True
    assert len(checks) == 10  # once per CHECK_EVERY elements


def test_an_object_checks_the_deadline_per_field_even_when_names_repeat() -> None:
    text = "{" + ",".join(['"a": 1'] * (3 * CHECK_EVERY)) + "}"
    checks: list[int] = []
    assert scan_json(text, keep=1, check=lambda: checks.append(1)) == {"a": 1}
    assert len(checks) == 3
