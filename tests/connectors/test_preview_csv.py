"""The preview's CSV writer: the same text as ``DataFrame.to_csv`` (which it replaces for
plain columns, being ~10x faster on a small result), on any frame of those columns."""

from __future__ import annotations

import io

import numpy as np
import pandas as pd
from hypothesis import given, settings
from hypothesis import strategies as st

from relay_nb.connectors.results import build_frame, csv_text
from relay_nb.tools import short_float

TEXT = st.text(alphabet=st.characters(codec="utf-8"), max_size=12) | st.sampled_from(
    ["", " ", '"', 'a "b"', "x,y", "a\r", "\nb", "\r\n", "\u2028", "None", "nan"]
)
FLOATS = st.floats(allow_nan=True, allow_infinity=True) | st.sampled_from(
    [0.1 + 0.2, 116444.02999999998, -0.0, 1e-7, 1234567890123456.0, 1e300]
)
COLUMNS = {
    "text": st.lists(TEXT | st.none(), min_size=0, max_size=6),
    "ints": st.lists(st.integers(-(2**62), 2**62), min_size=0, max_size=6),
    "floats": st.lists(FLOATS, min_size=0, max_size=6),
    "bools": st.lists(st.booleans(), min_size=0, max_size=6),
    "mixed": st.lists(st.none() | st.integers() | TEXT | FLOATS, min_size=0, max_size=6),
}


def pandas_csv(frame: pd.DataFrame) -> str:
    buffer = io.StringIO()
    frame.to_csv(buffer, index=False, lineterminator="\r\n", float_format=short_float)
    return buffer.getvalue()


@st.composite
def frames(draw) -> pd.DataFrame:
    kinds = draw(st.lists(st.sampled_from(sorted(COLUMNS)), min_size=1, max_size=4))
    rows = draw(st.integers(0, 6))
    data = {}
    for index, kind in enumerate(kinds):
        values = draw(COLUMNS[kind])
        values = (values * (rows // max(1, len(values)) + 1))[:rows] if values else [None] * rows
        if kind in ("ints", "bools") and None in values:
            values = [0 if v is None else v for v in values]
        name = draw(st.sampled_from(["a", "b c", 'q"', "x,y", "ünï"])) + str(index)
        data[name] = values
    frame = pd.DataFrame(data)
    if draw(st.booleans()):  # the frame the connectors build, with their dtypes
        frame = build_frame(list(frame.columns), list(frame.itertuples(index=False, name=None)))
    return frame


@settings(max_examples=400, deadline=None)
@given(frames())
def test_csv_text_is_what_to_csv_writes(frame: pd.DataFrame) -> None:
    assert csv_text(frame) == pandas_csv(frame)


def test_dtypes_it_does_not_write_itself_go_to_pandas() -> None:
    frame = pd.DataFrame(
        {
            "day": pd.to_datetime(["2025-01-01", "2025-01-02"]),
            "n": pd.array([1, None], dtype="Int64"),
            "f32": np.array([0.1, 0.2], dtype="float32"),
            "cat": pd.Categorical(["a", "b"]),
        }
    )
    assert csv_text(frame) == pandas_csv(frame)
    assert csv_text(frame).startswith("day,n,f32,cat\r\n2025-01-01,1,")


def test_a_plain_result_is_written_without_pandas_writer() -> None:
    from relay_nb.connectors.results import _plain_cells

    rows = [("DE", 12, 1234.5, True), ("FR", None, float("nan"), False)]
    frame = build_frame(["country", "orders", "revenue", "paid"], rows)
    assert _plain_cells(frame) is not None
    assert csv_text(frame) == pandas_csv(frame)
