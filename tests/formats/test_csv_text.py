"""csv_text writes a table exactly as pandas' to_csv(index=False) did (the per-rank launch table of timeline_rank)."""

import numpy as np
import pandas as pd
from hypothesis import given, settings
from hypothesis import strategies as st

from dispatchprof.formats.text import csv_text

FLOATS = st.floats(allow_nan=True, allow_infinity=True, width=64)
INTS = st.integers(min_value=-(2**63), max_value=2**63 - 1)


@settings(max_examples=200, deadline=None)
@given(st.data(), st.integers(min_value=0, max_value=30))
def test_any_int_float_and_bool_columns_are_written_as_pandas_wrote_them(data, rows):
    columns = {
        "launch": np.array(data.draw(st.lists(INTS, min_size=rows, max_size=rows)), dtype=np.int64),
        "used": np.array(data.draw(st.lists(st.booleans(), min_size=rows, max_size=rows)), dtype=bool),
        "gap_us": np.array(data.draw(st.lists(FLOATS, min_size=rows, max_size=rows)), dtype=np.float64),
    }
    assert csv_text(columns) == pd.DataFrame(columns).to_csv(index=False)


def test_a_launch_table_with_missing_gaps_is_the_same_text():
    dur_ns = np.array([355962, 348697, 346544], dtype=np.int64)
    gap_ns = np.array([np.nan, 1367972.0, 66086.0])
    columns = {
        "launch": np.arange(3),
        "used": np.array([False, True, True]),
        "dur_ns": dur_ns,
        "dur_us": dur_ns / 1000,
        "gap_us": gap_ns / 1000,
    }
    text = csv_text(columns)
    assert text == pd.DataFrame(columns).to_csv(index=False)
    assert text.splitlines()[1] == "0,False,355962,355.962,"  # NaN is an empty field, never 0
