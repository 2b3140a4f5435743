"""The heat map's bins: every rank and launch in exactly one bin, the bins even and in order; each cell the NaN-aware
max of its ranks and launches, as a per-cell nanmax gives it."""

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from dispatchprof.analysis.waits import binned_grid

CELLS = st.one_of(st.floats(min_value=-1e6, max_value=1e6), st.just(np.nan), st.just(np.inf), st.just(-np.inf))


def bins_of(labels: list[str], names: np.ndarray) -> list[range]:
    """The positions each bin holds, read from its label ("first-last" or one name): what the grid says it binned."""
    position = {int(name): i for i, name in enumerate(names)}
    out = []
    for label in labels:
        first, _, last = label.partition("-")
        out.append(range(position[int(first)], position[int(last or first)] + 1))
    return out


def check_bins(bins: list[range], n: int, limit: int) -> None:
    """Every position in exactly one bin, bins in order and covering 0..n-1, as many as the limit allows, even sizes."""
    sizes = [len(b) for b in bins]
    assert len(bins) == min(n, limit) and sum(sizes) == n and all(size >= 1 for size in sizes)
    assert [i for b in bins for i in b] == list(range(n))  # consecutive, no gap, no overlap: each in exactly one bin
    assert not sizes or max(sizes) - min(sizes) <= 1  # the ranks (launches) spread evenly over the bins


@settings(max_examples=300, deadline=None)
@given(
    arrays(np.float64, st.tuples(st.integers(0, 40), st.integers(0, 60)), elements=CELLS),
    st.integers(1, 12),
    st.integers(1, 25),
)
def test_every_cell_is_the_max_of_its_bin_ignoring_nan(values, max_rows, max_columns):
    # names unlike positions (ranks from 100, launches from 7), so that a label is read as a name, not an index
    row_names, column_names = 100 + np.arange(values.shape[0]), 7 + np.arange(values.shape[1])
    grid = binned_grid(values, row_names, column_names, max_rows, max_columns)
    row_bins, column_bins = bins_of(grid["rows"], row_names), bins_of(grid["columns"], column_names)
    check_bins(row_bins, values.shape[0], max_rows)
    check_bins(column_bins, values.shape[1], max_columns)
    assert len(grid["values"]) == len(row_bins) and all(len(row) == len(column_bins) for row in grid["values"])
    for r, rows in enumerate(row_bins):
        for c, columns in enumerate(column_bins):
            cell = values[rows.start : rows.stop, columns.start : columns.stop]
            best = np.nanmax(cell) if np.isfinite(cell).any() else np.nan
            assert grid["values"][r][c] == (None if not np.isfinite(best) else round(float(best), 3)), (r, c)
    aggregated = len(row_bins) < values.shape[0] or len(column_bins) < values.shape[1]
    assert grid["aggregation"] == ("max over the ranks and columns of each bin" if aggregated else "none")


def test_labels_name_the_ranks_of_each_bin_and_say_when_cells_are_aggregated():
    values = np.arange(12.0).reshape(4, 3)
    values[0, 0] = np.nan
    grid = binned_grid(values, np.array([10, 11, 12, 13]), np.array([0, 1, 2]), max_rows=2, max_columns=3)
    assert grid["rows"] == ["10-11", "12-13"] and grid["columns"] == ["0", "1", "2"]
    assert grid["values"] == [[3.0, 4.0, 5.0], [9.0, 10.0, 11.0]]
    assert grid["aggregation"] == "max over the ranks and columns of each bin"
