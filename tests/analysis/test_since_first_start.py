"""Launch times are made small while they are integers: at epoch-sized ns a float64 keeps only 256 ns steps."""

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given
from hypothesis import strategies as st

from dispatchprof.analysis import waits
from dispatchprof.analysis.timeline import int64_column, since_first_start, used_launches

EPOCH_NS = 1_780_000_000_123_456_789  # a wall-clock ns time of 2026, as msprof writes it


def two_ranks(barrier: bool, used: list[bool] | None = None) -> pa.Table:
    """Rank 1 starts each launch 100 ns after rank 0 (3 launches, 1 ms apart); the barrier kernel 5 us before."""
    start = [EPOCH_NS + i * 1_000_000 + (100 if rank else 0) for rank in (0, 1) for i in range(3)]
    bstart = [s - 5_000 for s in start] if barrier else [None] * 6
    return pa.table(
        {
            "rank": pa.array([0, 0, 0, 1, 1, 1], pa.int64()),
            "launch": pa.array([0, 1, 2] * 2, pa.int64()),
            "start_ns": pa.array(start, pa.int64()),
            "dur_ns": pa.array([900_000] * 6, pa.int64()),
            "used": pa.array(used or [True] * 6),
            "barrier_start_ns": pa.array(bstart, pa.int64()),
            "barrier_dur_ns": pa.array([4_000 if barrier else None] * 6, pa.int64()),
        }
    )


def start_grid(columns: dict[str, np.ndarray]) -> waits.LaunchGrid:
    floats = {
        c: np.asarray(columns[c], dtype=float) for c in ("start_ns", "dur_ns", "barrier_start_ns", "barrier_dur_ns")
    }
    return waits.grid(columns["rank"], columns["launch"], floats, ranks_per_node=8)


def unshifted(table: pa.Table) -> dict[str, np.ndarray]:
    """What reading the table without the integer shift would give: every column as floats (NaN for null)."""
    return {c: np.array(table.column(c).to_pylist(), dtype=float) for c in table.column_names if c != "used"}


def test_a_100_ns_difference_survives_only_once_the_times_are_small():
    raw, shifted = start_grid(unshifted(two_ranks(True))), start_grid(used_launches([two_ranks(True)]))
    assert not np.allclose(raw.start[:, 1] - raw.start[:, 0], 0.1)  # epoch-sized floats: 0 or 0.256 us, never 0.1
    assert np.allclose(shifted.start[:, 1] - shifted.start[:, 0], 0.1, rtol=0, atol=1e-9)
    assert np.allclose(shifted.barrier_start[:, 1] - shifted.barrier_start[:, 0], 0.1, rtol=0, atol=1e-9)
    assert shifted.barrier_start[0, 0] == 0.0  # the earliest start of any kernel is the origin
    assert np.array_equal(shifted.duration, raw.duration)


def test_without_a_barrier_kernel_the_target_starts_set_the_origin_and_nulls_stay_missing():
    columns = used_launches([two_ranks(False)])
    assert columns["start_ns"].tolist()[:3] == [0, 1_000_000, 2_000_000] and columns["start_ns"].dtype == np.int64
    assert np.isnan(columns["barrier_start_ns"]).all() and np.isnan(columns["barrier_dur_ns"]).all()
    assert list(columns) == [c for c in two_ranks(False).column_names if c != "used"] + ["previous_end_ns"]


def test_only_used_launches_are_kept_and_they_set_the_origin():
    columns = used_launches([two_ranks(True, used=[False, True, True, False, True, True])])
    assert columns["launch"].tolist() == [1, 2, 1, 2] and columns["rank"].tolist() == [0, 0, 1, 1]
    assert columns["barrier_start_ns"][0] == 0  # launch 1's barrier of rank 0: the earliest start among the used
    assert columns["start_ns"].tolist() == [5_000, 1_005_000, 5_100, 1_005_100]


def test_node_groups_are_concatenated_in_order_and_one_origin_serves_them_all():
    first = two_ranks(True)
    later = two_ranks(True).set_column(0, "rank", pa.array([8, 8, 8, 9, 9, 9], pa.int64()))
    later = later.set_column(2, "start_ns", pa.array([s - 7 for s in later.column("start_ns").to_pylist()], pa.int64()))
    columns = used_launches([first, later])
    assert columns["rank"].tolist() == [0, 0, 0, 1, 1, 1, 8, 8, 8, 9, 9, 9]
    assert columns["barrier_start_ns"].min() == 0 and columns["start_ns"][6] == 5_000 - 7


def test_no_launches_give_empty_columns_and_no_tables_none():
    columns = used_launches([two_ranks(True).slice(0, 0)])
    assert all(len(v) == 0 for v in columns.values()) and "start_ns" in columns
    assert used_launches([]) == {}


def test_a_shift_that_does_not_fit_in_int64_is_refused():
    values, valid = np.array([-(2**62) * 2, 2**62 + 5], dtype=np.int64), np.array([True, True])
    with pytest.raises(OverflowError):
        since_first_start({"start_ns": (values, valid)})


def test_int64_columns_are_read_exactly_from_sliced_and_chunked_arrays():
    values = [EPOCH_NS + 1, None, EPOCH_NS + 3, -5, None, 2**63 - 1, 7, None, 9]
    array = pa.array(values, pa.int64())
    chunked = pa.chunked_array([array.slice(1, 4), array.slice(5), pa.array([], pa.int64())])
    got, valid = int64_column(chunked)
    expected = values[1:]
    assert valid.tolist() == [v is not None for v in expected]
    assert [int(g) if ok else None for g, ok in zip(got, valid)] == expected
    with pytest.raises(TypeError):
        int64_column(pa.chunked_array([pa.array([1.5])]))


@given(
    st.lists(st.one_of(st.none(), st.integers(-(2**63), 2**63 - 1)), max_size=80),
    st.integers(0, 80),
    st.integers(0, 80),
)
def test_int64_column_reads_any_slice_of_any_nullable_column_as_to_pylist_does(values, offset, length):
    array = pa.array(values, pa.int64()).slice(offset, length)
    got, valid = int64_column(pa.chunked_array([array], pa.int64()))
    assert [int(g) if ok else None for g, ok in zip(got, valid)] == array.to_pylist()


def test_a_used_launch_after_a_left_out_one_has_that_launch_end_as_its_previous_end():
    """The previous end is the same rank's launch before, used or not, on the shifted clock; unknown for launch 0."""
    columns = used_launches([two_ranks(True, used=[False, True, True, False, True, True])])
    ends = {(r, launch): s + 900_000 for r, launch, s in zip(columns["rank"], columns["launch"], columns["start_ns"])}
    previous = dict(zip(zip(columns["rank"], columns["launch"]), columns["previous_end_ns"]))
    assert previous[(0, 2)] == ends[(0, 1)] and previous[(1, 2)] == ends[(1, 1)]
    # launch 0 was left out: its end (1 ms before launch 1's start, less the 100 us gap) still starts launch 1's gap
    assert previous[(0, 1)] == columns["start_ns"][0] - 1_000_000 + 900_000
    everything = used_launches([two_ranks(True)])
    assert np.isnan(everything["previous_end_ns"][[0, 3]]).all()  # launch 0 of each rank: nothing before it


def test_a_host_call_is_shifted_with_the_launches_without_moving_their_origin():
    """The host call starts before its launch (and before the barrier): it takes the same shift, to ns, and the
    origin stays the earliest device start, so the device columns read as they did without it."""
    table = two_ranks(barrier=True)
    api = [s - 12_345 if i != 4 else None for i, s in enumerate(table.column("start_ns").to_pylist())]
    with_host = table.append_column("api_start_ns", pa.array(api, pa.int64())).append_column(
        "api_dur_ns", pa.array([3_000 if a is not None else None for a in api], pa.int64())
    )
    before, after = used_launches([table]), used_launches([with_host])
    assert all(np.array_equal(before[c], after[c], equal_nan=True) for c in before)
    host, start = after["api_start_ns"], after["start_ns"]
    assert np.isnan(host[4]) and (start - host)[[0, 1, 2, 3, 5]].tolist() == [12_345.0] * 5
