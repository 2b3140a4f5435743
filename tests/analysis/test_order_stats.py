"""The sorted-array median and percentile against numpy's, bit for bit, on what the parse job gives them: integer
nanoseconds, as they are (a call-chain kernel's durations) or divided by 1000 (a rank's launch durations and gaps,
which may be negative)."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dispatchprof.analysis.order_stats import sorted_median, sorted_percentile

nanoseconds = st.lists(st.integers(min_value=-(10**12), max_value=10**15), min_size=1, max_size=300)


def bits(value: float) -> bytes:
    return np.float64(value).tobytes()


@settings(max_examples=400, deadline=None)
@given(nanoseconds, st.booleans())
def test_the_median_is_numpys_to_the_last_bit(values, in_us):
    ascending = np.sort(np.array(values, dtype=np.int64))
    if in_us:
        ascending = ascending / 1000
    assert bits(sorted_median(ascending)) == bits(float(np.median(ascending)))


@settings(max_examples=400, deadline=None)
@given(nanoseconds, st.sampled_from([95, 99, 50, 5, 0, 100, 99.9, 12.5]))
def test_the_percentile_is_numpys_linear_one_to_the_last_bit(values, q):
    ascending = np.sort(np.array(values, dtype=np.int64)) / 1000
    assert bits(sorted_percentile(ascending, q)) == bits(float(np.percentile(ascending, q, method="linear")))


@pytest.mark.parametrize(
    ("values", "median", "p95"),
    [([7.0], 7.0, 7.0), ([1.0, 2.0], 1.5, 1.95), ([1.0, 2.0, 10.0], 2.0, 9.2), ([0.0, 0.0, 0.0, 1.0], 0.0, 0.85)],
)
def test_small_arrays_give_the_textbook_values(values, median, p95):
    ascending = np.array(values)
    assert sorted_median(ascending) == median and sorted_percentile(ascending, 95) == pytest.approx(p95, abs=1e-12)
