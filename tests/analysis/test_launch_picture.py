"""The picture of the launch (analysis.waits.picture): which launch is typical, which is the costliest, who arrived and
ended last, on hand-built grids; on generated grids of any shape it ends in a picture or a reason, and its drawing in
an SVG or nothing, never an exception."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from launch_grids import COLUMNS, Shape, simulate

from dispatchprof.analysis import waits
from dispatchprof.analysis.waits.picture import CORRECTED, DURATIONS, launch_picture
from dispatchprof.report.launch_svg import launch_svg

SETTINGS = {
    "alpha": 0.001,
    "late_min_us": 20.0,
    "own_work_min_us": 5.0,
    "in_kernel_min_fraction": 0.1,
    "min_cost_us": 1.0,
}


def hand_grid(
    arrive: np.ndarray, end: np.ndarray, ranks_per_node: int, barrier: bool = True, offset_us: float = 0.0
) -> waits.LaunchGrid:
    """``[launch, rank]`` arrivals and ends (µs, one true clock); the barrier releases every rank 3 us after the last
    arrival, the kernel starts 1 us after that (or at the arrival without the barrier). Node 1's clock reads
    ``offset_us`` more."""
    n, world = arrive.shape
    release = arrive.max(axis=1, keepdims=True) + 3.0 + np.zeros_like(arrive)
    start = release + 1.0 if barrier else arrive.copy()
    clock = np.where(np.arange(world) // ranks_per_node == 1, offset_us, 0.0)[None, :]
    base = 1_000.0 * np.arange(n)[:, None]  # launches 1 ms apart
    columns = {
        "start_ns": (start + base + clock) * 1000.0,
        "dur_ns": (end - start) * 1000.0,
        "barrier_start_ns": (arrive + base + clock) * 1000.0 if barrier else np.full(arrive.shape, np.nan),
        "barrier_dur_ns": (release - arrive) * 1000.0 if barrier else np.full(arrive.shape, np.nan),
    }
    rank = np.tile(np.arange(world), n)
    launch = np.repeat(np.arange(n), world)
    return waits.grid(rank, launch, {k: v.reshape(-1) for k, v in columns.items()}, ranks_per_node)


def picture(g: waits.LaunchGrid, causes: list[dict]) -> dict:
    clocks, correction = waits.node_clocks(g)
    out = launch_picture(g, correction, clocks, causes)
    json.dumps(out, allow_nan=False)  # what stats.json holds
    return out


def by_rank(launch: dict) -> dict[int, dict]:
    return {r["rank"]: r for r in launch["ranks"]}


def late_rank_grid(lateness: list[float], offset_us: float = 0.0) -> waits.LaunchGrid:
    """2 nodes x 2 ranks; rank 3's host late by ``lateness[i]``
    in launch i; every rank ends 100 us after the release."""
    n = len(lateness)
    arrive = np.tile([0.0, 1.0, 2.0, 0.5], (n, 1))
    arrive[:, 3] += lateness
    end = arrive.max(axis=1, keepdims=True) + 104.0 + np.array([0.0, 0.2, 0.4, 0.6])[None, :]
    return hand_grid(arrive, end, 2, offset_us=offset_us)


LATE_3 = {"evidence": "late_arrival", "rank": 3, "node": None, "ranks": [3], "cost_us_per_launch": 20.0}


def test_the_late_rank_arrives_last_and_the_costliest_launch_is_where_it_is_latest():
    p = picture(late_rank_grid([10.0, 50.0, 20.0, 15.0, 30.0]), [LATE_3])
    assert p["clocks"] == CORRECTED
    assert p["cause"]["ranks"] == [3]
    assert p["costliest"]["launch"] == 1
    assert p["costliest"]["cost_us"] == pytest.approx(50.5 - 2.0, abs=0.01)  # its lead over the next arrival (rank 2)
    assert p["typical"]["launch"] == 2  # group time nearest the median: 20 us late
    for launch in (p["typical"], p["costliest"]):
        assert launch["last_arrival_rank"] == 3
        ranks = by_rank(launch)
        assert min(r["arrival_us"] for r in ranks.values()) == 0.0  # times after the launch's first arrival
        assert max(ranks, key=lambda r: ranks[r]["arrival_us"]) == 3
        # the others wait at the barrier for rank 3: their waits are longer by its lateness
        assert ranks[3]["barrier_wait_us"] == min(r["barrier_wait_us"] for r in ranks.values())
        for r in ranks.values():
            assert r["arrival_us"] <= r["barrier_release_us"] <= r["kernel_start_us"] <= r["end_us"]


def test_typical_is_the_launch_nearest_the_median_group_time():
    p = picture(late_rank_grid([10.0, 50.0, 30.0, 12.0, 90.0]), [LATE_3])
    assert p["typical"]["launch"] == 2  # 30 us late: the median of 10, 12, 30, 50, 90
    assert p["costliest"]["launch"] == 4


def test_a_clock_offset_between_nodes_is_taken_out():
    p = picture(late_rank_grid([10.0, 50.0, 20.0, 15.0, 30.0], offset_us=2.5e6), [LATE_3])
    ranks = by_rank(p["costliest"])
    assert ranks[3]["arrival_us"] == pytest.approx(50.5, abs=0.05)  # not 2.5 s
    assert (
        max(r["barrier_release_us"] for r in ranks.values()) - min(r["barrier_release_us"] for r in ranks.values())
        < 0.05
    )


def test_a_rank_that_ends_late_makes_the_costliest_launch_where_it_leads_most():
    n = 4
    arrive = np.tile([0.0, 1.0, 2.0, 0.5], (n, 1))
    end = np.tile([110.0, 110.3, 110.1, 110.2], (n, 1))
    end[:, 1] += [5.0, 40.0, 9.0, 7.0]
    g = hand_grid(arrive, end, 2)
    p = picture(g, [{"evidence": "own_work", "rank": 1, "node": None, "ranks": [1], "cost_us_per_launch": 9.0}])
    assert p["costliest"]["launch"] == 1
    assert p["costliest"]["last_end_rank"] == 1
    assert p["costliest"]["cost_us"] == pytest.approx(150.3 - 110.2, abs=0.05)  # its lead over the next end


def test_the_whole_group_inside_the_kernel_makes_the_longest_kernel_the_costliest():
    n = 5
    arrive = np.tile([0.0, 1.0, 2.0, 0.5], (n, 1))
    end = np.tile([110.0, 110.3, 110.1, 110.2], (n, 1)) + np.array([0.0, 0.0, 70.0, 0.0, 2.0])[:, None]
    p = picture(
        hand_grid(arrive, end, 2),
        [{"evidence": "in_kernel", "rank": None, "node": None, "ranks": [], "cost_us_per_launch": 14.0}],
    )
    assert p["costliest"]["launch"] == 2
    assert p["cause"]["ranks"] == []


def test_with_no_cause_named_the_costliest_launch_has_the_largest_excess():
    p = picture(late_rank_grid([0.0, 3.0, 1.0]), [])
    assert p["cause"] is None
    assert p["costliest"]["launch"] == 1
    assert "no cause is named" in p["costliest_by"]


def test_several_nodes_without_the_barrier_kernel_give_durations_only():
    n = 4
    arrive = np.tile([0.0, 1.0, 2.0, 0.5], (n, 1))
    arrive[:, 3] += [10.0, 40.0, 20.0, 15.0]
    start = arrive.max(axis=1, keepdims=True) + np.zeros_like(arrive)
    end = start + 100.0
    g = hand_grid(arrive, end, 2, barrier=False)
    p = picture(g, [LATE_3])
    assert p["clocks"] == DURATIONS
    assert "barrier" in p["why"]
    for launch in (p["typical"], p["costliest"]):
        assert all(r["arrival_us"] is None and r["end_us"] is None for r in launch["ranks"])
        assert all(r["kernel_us"] > 0 for r in launch["ranks"])
        assert launch["last_end_rank"] is None
    # the late rank waits least at the kernel's entry: its kernel is the shortest, by the most where it is latest
    assert p["costliest"]["launch"] == 1


def test_one_node_without_the_barrier_kernel_is_one_clock():
    n = 3
    arrive = np.tile([0.0, 1.0, 5.0], (n, 1))
    g = hand_grid(arrive, arrive.max(axis=1, keepdims=True) + 100.0 + np.zeros_like(arrive), 3, barrier=False)
    p = picture(g, [])
    assert p["clocks"] == CORRECTED
    assert by_rank(p["typical"])[2]["arrival_us"] == pytest.approx(5.0)
    assert by_rank(p["typical"])[2]["barrier_release_us"] is None


def test_a_node_clock_without_a_fit_gives_durations_only():
    g = late_rank_grid([10.0, 20.0, 30.0])
    _, correction = waits.node_clocks(g)
    p = launch_picture(g, correction, {"0": {"offset_us": 0.0}, "1": {"offset_us": None}}, [LATE_3])
    assert p["clocks"] == DURATIONS
    assert "node 1" in p["why"]


def test_no_launch_every_rank_has_gives_no_launch_and_says_why():
    g = late_rank_grid([10.0, 20.0])
    g.start[0, 0] = np.nan
    g.end[1, 1] = np.nan
    p = picture(g, [LATE_3])
    assert p["typical"] is None and p["costliest"] is None
    assert "every rank" in p["note"]


@st.composite
def shapes(draw: st.DrawFn) -> Shape:
    nodes = draw(st.integers(1, 4))
    per_node = draw(st.integers(1, 6))
    world = nodes * per_node
    rank = st.integers(0, world - 1)
    late = st.sampled_from([0.0, 5.0, 60.0])
    return Shape(
        nodes=nodes,
        ranks_per_node=per_node,
        launches=draw(st.integers(1, 25)),
        coupled=draw(st.booleans()),
        barrier=draw(st.booleans()),
        end_jitter_us=draw(st.sampled_from([0.0, 0.5])),  # 0: ends tied to the nanosecond
        common_sd_us=draw(st.sampled_from([0.0, 6.0])),
        own_extra=draw(st.dictionaries(rank, late, max_size=2)),
        host_late=draw(st.dictionaries(rank, late, max_size=2)),
        clock_offset_us=tuple(draw(st.lists(st.sampled_from([0.0, 3e6]), min_size=nodes, max_size=nodes))),
        missing_launches=tuple(draw(st.lists(st.integers(0, 24), max_size=3))),
        nan_cells=draw(st.integers(0, 3)),
        seed=draw(st.integers(0, 5)),
    )


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(shapes())
def test_any_grid_gives_a_picture_or_a_reason(shape: Shape):
    columns, _ = simulate(shape)
    if not len(columns["rank"]):
        return
    g = waits.grid(
        columns["rank"], columns["launch"], {c: columns[c].astype(float) for c in COLUMNS}, shape.ranks_per_node
    )
    p = waits.analyse(g, SETTINGS, [], {"resamples": 20, "seed": 0})["launch_picture"]
    json.dumps(p, allow_nan=False)
    svg = launch_svg(p, max_ranks=8)  # the report draws whatever the analysis gives
    assert (svg == "") == (p["typical"] is None) and (not svg or ET.fromstring(svg) is not None)
    several_nodes = len(np.unique(g.nodes)) > 1
    assert (p["clocks"] == DURATIONS) == (several_nodes and not g.has_barrier)
    if p["typical"] is None:
        assert p["costliest"] is None and p["note"]
        return
    assert p["costliest"]["cost_us"] >= p["typical"]["cost_us"]  # the costliest is chosen by that cost
    for launch in (p["typical"], p["costliest"]):
        assert [r["rank"] for r in launch["ranks"]] == g.ranks.tolist()
        if p["clocks"] == CORRECTED:
            assert min(r["arrival_us"] for r in launch["ranks"]) == 0.0
            assert launch["last_end_rank"] in g.ranks.tolist()
        else:
            assert all(r["end_us"] is None for r in launch["ranks"])
    if p["cause"]:
        assert set(p["cause"]["ranks"]) <= set(g.ranks.tolist())
