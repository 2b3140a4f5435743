"""analysis.waits on hand-built launch tables (independent of the simulator): clocks, coupling, the awaited."""

import math
from fractions import Fraction

import numpy as np
import pytest

from dispatchprof.analysis.waits import analyse, binomial_tail, coupling, grid, host_gaps, node_clocks

SETTINGS = {"alpha": 0.001, "late_min_us": 20.0, "own_work_min_us": 5.0, "in_kernel_min_fraction": 0.1}
RPN = 4


def table(world=8, launches=30, late=None, late_us=0.0, offset_us=(0.0, 0.0), drift_ppm=(0.0, 0.0), work=None, barrier=True, seed=1):
    """A coupled collective written by hand: every launch the ranks arrive after their previous end plus a host gap
    (+ late_us for ``late``), the barrier releases at the last arrival + 3 us, the kernel starts 1.5 us later and runs
    ``work[rank]`` us after an entry barrier; node clocks read offset + drift."""
    rng = np.random.default_rng(seed)
    work = work or {}
    prev_end = np.zeros(world)
    rows = []
    for i in range(launches):
        arrive = prev_end + 25.0 + rng.uniform(0, 4, world)
        if late is not None:
            arrive[late] += late_us
        release = arrive.max() + 3.0
        start = release + 1.5 + rng.uniform(0, 0.2, world)
        entry = start.max() + 2.0
        end = entry + np.array([work.get(r, 1000.0) for r in range(world)]) + rng.uniform(0, 3, world)
        for r in range(world):
            node = r // RPN

            def clock(t, node=node):
                return (t + offset_us[node] + drift_ppm[node] * 1e-6 * t) * 1000

            row = {"rank": r, "launch": i, "start_ns": clock(start[r]), "dur_ns": clock(end[r]) - clock(start[r])}
            row["barrier_start_ns"] = clock(arrive[r]) if barrier else np.nan
            row["barrier_dur_ns"] = clock(release) - clock(arrive[r]) if barrier else np.nan
            rows.append(row)
        prev_end = end + 8.0
    columns = {k: np.array([row[k] for row in rows], dtype=float) for k in ("start_ns", "dur_ns", "barrier_start_ns", "barrier_dur_ns")}
    return grid(np.array([row["rank"] for row in rows]), np.array([row["launch"] for row in rows]), columns, RPN)


def test_binomial_tail_matches_a_hand_computed_value():
    assert binomial_tail(2, 3, 0.5) == pytest.approx(0.5)
    assert binomial_tail(0, 10, 0.1) == 1.0 and binomial_tail(11, 10, 0.1) == 0.0 and binomial_tail(3, 10, 1.0) == 1.0
    assert binomial_tail(5, 24, 1 / 16) == pytest.approx(sum(math.comb(24, i) * (1 / 16) ** i * (15 / 16) ** (24 - i) for i in range(5, 25)))
    assert binomial_tail(1, 24, 1 / 16) == 1.0  # at or below the mean: nothing stands out
    exact = float(Fraction(sum(math.comb(4000, i) * 15 ** (4000 - i) for i in range(300, 4001)), 16**4000))  # exact integers
    assert binomial_tail(300, 4000, 1 / 16) == pytest.approx(exact, rel=1e-9)


def test_a_node_clock_offset_and_drift_are_estimated_from_the_barrier_ends():
    g = table(offset_us=(0.0, 5000.0), drift_ppm=(0.0, 200.0), launches=60)
    clocks, correction = node_clocks(g)
    assert clocks["1"]["offset_us"] == pytest.approx(5000.0, abs=1.0)
    assert clocks["1"]["drift_ppm"] == pytest.approx(200.0, abs=3 * clocks["1"]["drift_ppm_stderr"] + 20)
    assert np.all(correction[:, :RPN] == 0)


def test_coupling_is_seen_in_the_barrier_and_independent_ranks_are_not_coupled():
    assert coupling(table())["state"] == "coupled"
    independent = table()
    independent.barrier_start[:] = np.nan
    independent.barrier_end[:] = np.nan
    rng = np.random.default_rng(0)
    independent.start[:] = rng.uniform(0, 100, independent.start.shape) + np.arange(len(independent.start))[:, None] * 5000
    independent.end[:] = independent.start + rng.uniform(900, 1100, independent.start.shape)
    assert coupling(independent)["state"] == "not_coupled"


def test_the_late_rank_is_named_and_the_ranks_that_wait_for_it_are_not():
    result = analyse(table(late=6, late_us=80.0), SETTINGS, [])
    strag = result["straggler"]
    assert (strag["evidence"], strag["rank"], strag["node"]) == ("late_arrival", 6, None) and strag["fraction"] > 0.9
    assert result["entry_wait_us"]["per_rank"]["6"]["sync_barrier_median"] < 5.0 < result["entry_wait_us"]["per_rank"]["0"]["sync_barrier_median"]


def test_a_rank_that_returns_late_because_it_waited_is_not_late_itself():
    """Rank 3 ends every launch 200 us late by its own work: it then arrives last at the next barrier, but its host
    gap is normal: it is named for its own work, never as a late arrival."""
    strag = analyse(table(work={3: 1200.0}), SETTINGS, [])["straggler"]
    assert strag["evidence"] == "own_work" and strag["rank"] == 3
    assert not any(c["evidence"] == "late_arrival" for c in strag["causes"])
    assert np.nanmax(host_gaps(table(work={3: 1200.0}))[:, 3]) < 40.0


def test_nothing_stands_out_without_a_cause_and_missing_ranks_are_mentioned():
    result = analyse(table(offset_us=(0.0, 3000.0)), SETTINGS, [9])
    assert result["straggler"]["evidence"] == "none" and "Rank 9 without data" in result["straggler"]["coverage_note"]


def test_a_late_rank_and_an_in_kernel_wait_are_both_listed():
    """Rank 1 arrives late, and node 1's ranks end 300 us after node 0's (they wait inside the kernel)."""
    strag = analyse(table(late=1, late_us=80.0, work={r: 1300.0 for r in range(4, 8)}), SETTINGS, [])["straggler"]
    kinds = {c["evidence"]: c for c in strag["causes"]}
    assert set(kinds) == {"late_arrival", "in_kernel"} and kinds["late_arrival"]["rank"] == 1
    assert kinds["in_kernel"]["waiting_ranks"] == [4, 5, 6, 7] and strag["evidence"] == "late_arrival"
    assert "rank 1" in strag["explanation"] and "inside the kernel" in strag["explanation"]
