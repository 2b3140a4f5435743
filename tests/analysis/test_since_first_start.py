"""Launch times are made small while they are integers: at epoch-sized ns a float64 keeps only 256 ns steps."""

import numpy as np
import pyarrow as pa

from dispatchprof.analysis import waits
from dispatchprof.analysis.timeline import since_first_start

EPOCH_NS = 1_780_000_000_123_456_789  # a wall-clock ns time of 2026, as msprof writes it


def two_ranks(barrier: bool) -> pa.Table:
    """Rank 1 starts each launch 100 ns after rank 0 (3 launches, 1 ms apart); the barrier kernel 5 us before."""
    start = [EPOCH_NS + i * 1_000_000 + (100 if rank else 0) for rank in (0, 1) for i in range(3)]
    bstart = [s - 5_000 for s in start] if barrier else [None] * 6
    return pa.table(
        {
            "rank": pa.array([0, 0, 0, 1, 1, 1]),
            "launch": pa.array([0, 1, 2] * 2),
            "start_ns": pa.array(start, pa.int64()),
            "dur_ns": pa.array([900_000] * 6, pa.int64()),
            "barrier_start_ns": pa.array(bstart, pa.int64()),
            "barrier_dur_ns": pa.array([4_000 if barrier else None] * 6, pa.int64()),
        }
    )


def start_grid(table: pa.Table) -> np.ndarray:
    frame = table.to_pandas()
    columns = {c: frame[c].to_numpy(dtype=float, na_value=np.nan) for c in ("start_ns", "dur_ns", "barrier_start_ns", "barrier_dur_ns")}
    return waits.grid(frame["rank"].to_numpy(), frame["launch"].to_numpy(), columns, ranks_per_node=8)


def test_a_100_ns_difference_survives_only_once_the_times_are_small():
    raw, shifted = start_grid(two_ranks(True)), start_grid(since_first_start(two_ranks(True)))
    assert not np.allclose(raw.start[:, 1] - raw.start[:, 0], 0.1)  # epoch-sized floats: 0 or 0.256 us, never 0.1
    assert np.allclose(shifted.start[:, 1] - shifted.start[:, 0], 0.1, rtol=0, atol=1e-9)
    assert np.allclose(shifted.barrier_start[:, 1] - shifted.barrier_start[:, 0], 0.1, rtol=0, atol=1e-9)
    assert shifted.barrier_start[0, 0] == 0.0  # the earliest start of any kernel is the origin
    assert np.array_equal(shifted.duration, raw.duration)


def test_without_a_barrier_kernel_the_target_starts_set_the_origin_and_nulls_stay_null():
    table = since_first_start(two_ranks(False))
    assert table["start_ns"].to_pylist()[:3] == [0, 1_000_000, 2_000_000]
    assert table["barrier_start_ns"].null_count == 6
    assert table.column_names == two_ranks(False).column_names


def test_no_launches_are_returned_as_they_are():
    empty = two_ranks(True).slice(0, 0)
    assert since_first_start(empty).equals(empty)
