"""The heat map's bins: each cell the NaN-aware max of its ranks and launches, as a per-cell nanmax gives it."""

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from dispatchprof.analysis.waits import binned_grid

CELLS = st.one_of(st.floats(min_value=-1e6, max_value=1e6), st.just(np.nan), st.just(np.inf), st.just(-np.inf))


def per_cell_max(values: np.ndarray, max_rows: int, max_columns: int) -> list[list[float | None]]:
    """The definition, one cell at a time."""

    def edges(n: int, limit: int) -> np.ndarray:
        return np.linspace(0, n, min(n, limit) + 1).round().astype(int)

    r, c = edges(values.shape[0], max_rows), edges(values.shape[1], max_columns)
    out = []
    for r0, r1 in zip(r[:-1], r[1:]):
        row = []
        for c0, c1 in zip(c[:-1], c[1:]):
            cell = values[r0:r1, c0:c1]
            best = np.nanmax(cell) if np.isfinite(cell).any() else np.nan
            row.append(None if not np.isfinite(best) else round(float(best), 3))
        out.append(row)
    return out


@settings(max_examples=300, deadline=None)
@given(
    arrays(np.float64, st.tuples(st.integers(0, 40), st.integers(0, 60)), elements=CELLS),
    st.integers(1, 12),
    st.integers(1, 25),
)
def test_every_cell_is_the_max_of_its_bin_ignoring_nan(values, max_rows, max_columns):
    grid = binned_grid(values, np.arange(values.shape[0]), np.arange(values.shape[1]), max_rows, max_columns)
    assert grid["values"] == per_cell_max(values, max_rows, max_columns)
    assert len(grid["rows"]) == min(values.shape[0], max_rows) and len(grid["columns"]) == min(
        values.shape[1], max_columns
    )


def test_labels_name_the_ranks_of_each_bin_and_say_when_cells_are_aggregated():
    values = np.arange(12.0).reshape(4, 3)
    values[0, 0] = np.nan
    grid = binned_grid(values, np.array([10, 11, 12, 13]), np.array([0, 1, 2]), max_rows=2, max_columns=3)
    assert grid["rows"] == ["10-11", "12-13"] and grid["columns"] == ["0", "1", "2"]
    assert grid["values"] == [[3.0, 4.0, 5.0], [9.0, 10.0, 11.0]]
    assert grid["aggregation"] == "max over the ranks and columns of each bin"
