"""The merged trace as a function of tables (issue 63): the barrier kernel and arrivals per rank, the causes track and
its flows, on hand-built launch tables, and for any tables (hypothesis)."""

import json
import math

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from dispatchprof.analysis.timeline import merged_trace
from dispatchprof.analysis.trace_causes import CAUSES_PID, TraceCause


def table(starts_us, durs_us, barrier_starts_us=None, barrier_durs_us=None):
    """Launch columns of ``[launch][rank]`` µs (one clock: no correction needed)."""
    n_launch, n_rank = len(starts_us), len(starts_us[0])
    rank = np.repeat(np.arange(n_rank)[None, :], n_launch, axis=0).ravel()
    launch = np.repeat(np.arange(n_launch)[:, None], n_rank, axis=1).ravel()
    used = {
        "rank": rank,
        "launch": launch,
        "start_ns": (np.asarray(starts_us, float).ravel() * 1000).astype(np.int64),
        "dur_ns": (np.asarray(durs_us, float).ravel() * 1000).astype(np.int64),
        "gap_ns": np.full(len(rank), np.nan),
    }
    if barrier_starts_us is not None:
        used["barrier_start_ns"] = np.asarray(barrier_starts_us, float).ravel() * 1000
        used["barrier_dur_ns"] = np.asarray(barrier_durs_us, float).ravel() * 1000
    return used


def details(n_rank, per_node=2):
    return {r: {"node": r // per_node, "device": r % per_node, "pid": 100 + r, "symbol": "k"} for r in range(n_rank)}


def late(rank, launches, evidence="late_arrival"):
    return TraceCause(
        label=f"{evidence}, rank {rank}",
        evidence=evidence,
        ranks=[rank] if isinstance(rank, int) else list(rank),
        cost_us_per_launch=10.0,
        launches=list(launches),
        period_us=[10.0] * len(launches),
        timed_us=[0.0] * len(launches),
    )


def trace_of(used, n_rank, causes=(), marked=None):
    trace = merged_trace(
        used,
        details(n_rank),
        0,
        0,
        {0: 0.0, 1: 0.0},
        toolchain="sim",
        barrier_kernel="cached_notify_combine",
        causes=causes,
        marked=marked,
    )
    assert trace.json_text() == json.dumps(trace.as_dict())  # the template writes what json.dumps would
    return trace.as_dict()


def flows(events):
    starts = {e["id"]: e for e in events if e["ph"] == "s"}
    ends = {e["id"]: e for e in events if e["ph"] == "f"}
    return starts, ends


def enclosed(events, point):
    """The flow end lies inside a complete event of its process and thread (a viewer binds it there)."""
    return any(
        e["ph"] == "X"
        and e["pid"] == point["pid"]
        and e["tid"] == point["tid"]
        and e["ts"] <= point["ts"] <= e["ts"] + e["dur"]
        for e in events
    )


# 4 ranks (2 nodes), 2 launches: rank 3 arrives last at the barrier in both (its wait is shortest); all end together
STARTS = [[100.0, 100.0, 100.0, 100.0], [300.0, 300.0, 300.0, 300.0]]
DURS = [[50.0] * 4, [50.0] * 4]
B_STARTS = [[10.0, 20.0, 30.0, 90.0], [210.0, 220.0, 230.0, 290.0]]
B_DURS = [[89.0, 79.0, 69.0, 9.0], [89.0, 79.0, 69.0, 9.0]]


def test_a_late_arrival_gets_a_slice_per_launch_it_struck_and_arrows_to_every_rank_that_waited_longer():
    used = table(STARTS, DURS, B_STARTS, B_DURS)
    out = trace_of(used, 4, [late(3, [1])], marked={"costliest": 1, "typical": None})
    events = out["traceEvents"]
    names = {e["pid"]: e["args"]["name"] for e in events if e["name"] == "process_name"}
    assert names[0] == "node 0 / rank 0 (host pid 100, device 0)" and names[3].startswith("node 1 / rank 3")
    assert names[CAUSES_PID] == "causes (cost account)"
    barrier = [e for e in events if e["ph"] == "X" and e["tid"] == 1 and e["pid"] != CAUSES_PID]
    assert len(barrier) == 8 and sum(e["ph"] == "i" and e["name"] == "arrival" for e in events) == 8
    slices = [e for e in events if e["pid"] == CAUSES_PID and e["ph"] == "X"]
    assert [s["args"]["launch"] for s in slices] == [1] and slices[0]["args"]["cost_us"] == 10.0
    assert slices[0]["ts"] == 210.0 - 150.0  # the launch's first event (barrier start), zero = first launch's end
    starts, ends = flows(events)
    assert {e["pid"] for e in starts.values()} == {3} and sorted(e["pid"] for e in ends.values()) == [0, 1, 2]
    assert all(enclosed(events, p) for p in (*starts.values(), *ends.values()))
    assert [e["name"] for e in events if e["pid"] == CAUSES_PID and e["ph"] == "i"] == [
        "costliest launch (the report's picture)"
    ]
    assert out["metadata"]["causes_track"]["causes"][0]["flows"] == 3


def test_ties_one_rank_and_every_rank_late_draw_slices_but_no_arrow_to_nobody():
    tied = table(STARTS, DURS, B_STARTS, [[9.0] * 4, [9.0] * 4])  # every rank waits as long: nobody waited for rank 3
    events = trace_of(tied, 4, [late(3, [0, 1])])["traceEvents"]
    assert flows(events) == ({}, {}) and sum(e["pid"] == CAUSES_PID and e["ph"] == "X" for e in events) == 2
    one = table([[100.0]], [[50.0]], [[10.0]], [[89.0]])
    events = trace_of(one, 1, [late(0, [0])])["traceEvents"]
    assert flows(events) == ({}, {}) and sum(e["pid"] == CAUSES_PID and e["ph"] == "X" for e in events) == 1
    everyone = trace_of(table(STARTS, DURS, B_STARTS, B_DURS), 4, [late([0, 1, 2, 3], [0, 1])])["traceEvents"]
    assert flows(everyone) == ({}, {})
    # a launch not drawn (or not in the table) gets no slice, and the metadata says how many were drawn
    out = trace_of(table(STARTS, DURS, B_STARTS, B_DURS), 4, [late(3, [1, 7])])
    assert out["metadata"]["causes_track"]["causes"][0] == {
        "label": "late_arrival, rank 3",
        "ranks": [3],
        "cost_us_per_launch": 10.0,
        "launches_struck": 2,
        "launches_drawn": 1,
        "flows": 3,
        "flows_left_out": 0,
    }


def test_a_late_end_points_from_the_cause_s_end_to_the_ranks_that_ended_after_it_and_no_barrier_is_needed():
    ends_late = table([[100.0, 100.0, 100.0, 100.0]], [[60.0, 61.0, 62.0, 55.0]])  # rank 2 ends last; 0 and 1 wait
    cause = late(1, [0], evidence="own_work")
    events = trace_of(ends_late, 4, [cause])["traceEvents"]
    starts, ends = flows(events)
    assert [e["pid"] for e in starts.values()] == [1]  # rank 0 ended before rank 1: it did not wait for it
    assert {e["pid"] for e in ends.values()} == {2} and all(e["tid"] == 0 for e in (*starts.values(), *ends.values()))
    assert all(enclosed(events, p) for p in (*starts.values(), *ends.values()))
    assert not any(e["ph"] == "X" and e["tid"] == 1 and e["pid"] != CAUSES_PID for e in events)  # no barrier drawn


def test_no_cause_and_no_mark_leave_the_trace_as_before():
    used = table(STARTS, DURS)
    out = trace_of(used, 4)
    assert all(e["pid"] != CAUSES_PID for e in out["traceEvents"]) and "causes_track" not in out["metadata"]


finite = st.floats(min_value=-1e6, max_value=1e6, allow_nan=False, allow_infinity=False)
span = st.floats(min_value=0.0, max_value=1e4, allow_nan=False, allow_infinity=False)


@st.composite
def tables_and_causes(draw):
    n_rank, n_launch = draw(st.integers(1, 6)), draw(st.integers(1, 5))
    grid = st.lists(st.lists(finite, min_size=n_rank, max_size=n_rank), min_size=n_launch, max_size=n_launch)
    grid_span = st.lists(st.lists(span, min_size=n_rank, max_size=n_rank), min_size=n_launch, max_size=n_launch)
    starts, durs = draw(grid), draw(grid_span)
    barrier = draw(st.booleans())
    b_starts = draw(grid) if barrier else None
    b_durs = draw(grid_span) if barrier else None
    if barrier and draw(st.booleans()):  # some launches without a barrier
        b_starts[0][0] = math.nan
    causes = []
    for _ in range(draw(st.integers(0, 3))):
        ranks = draw(st.lists(st.integers(0, n_rank - 1), min_size=0, max_size=n_rank, unique=True))
        launches = draw(st.lists(st.integers(0, n_launch + 1), max_size=n_launch + 2, unique=True))
        evidence = draw(st.sampled_from(["late_arrival", "own_work", "in_kernel", "late_ending_node"]))
        causes.append(late(ranks, launches, evidence))
    return table(starts, durs, b_starts, b_durs), n_rank, causes, draw(st.integers(0, 3))


@settings(max_examples=150, deadline=None)
@given(tables_and_causes())
def test_any_tables_give_valid_json_and_every_flow_has_both_ends_inside_slices(case):
    used, n_rank, causes, max_launches = case
    trace = merged_trace(
        used,
        details(n_rank),
        0,
        max_launches,
        {n: 0.0 for n in range(4)},
        toolchain="sim",
        barrier_kernel="b",
        causes=causes,
        marked={"typical": 0, "costliest": None},
    )
    text = trace.json_text()
    out = json.loads(text)
    assert text == json.dumps(trace.as_dict())
    events = out["traceEvents"]
    starts, ends = flows(events)
    assert set(starts) == set(ends) and len(starts) == sum(e["ph"] == "s" for e in events)
    for s in starts.values():
        f = ends[s["id"]]
        assert s["pid"] != f["pid"] and s["pid"] < CAUSES_PID > f["pid"]
        assert enclosed(events, s) and enclosed(events, f)


def test_a_byte_budget_draws_fewer_launches_per_rank_says_so_and_the_text_stays_within_it():
    rng = np.random.default_rng(3)
    starts = np.cumsum(rng.uniform(900, 1100, size=(60, 48)), axis=0)
    used = table(starts, rng.uniform(80, 120, size=(60, 48)), starts - 40, rng.uniform(5, 35, size=(60, 48)))
    whole = merged_trace(used, details(48), 0, 0, {n: 0.0 for n in range(24)}, toolchain="sim", barrier_kernel="b")
    budget = len(whole.json_text()) / 3 + 100_000 + 48 * 400  # the metadata's allowance is the estimate's own
    small = merged_trace(
        used, details(48), 0, 0, {n: 0.0 for n in range(24)}, toolchain="sim", barrier_kernel="b", max_bytes=budget
    )
    drawn = {len(t.launch) for t in small.tracks}
    assert len(drawn) == 1 and 1 <= drawn.pop() < 60
    assert len(small.json_text()) <= budget and "timeline.trace_max_mb" in small.metadata["launches_drawn"]
    roomy = merged_trace(
        used, details(48), 0, 0, {n: 0.0 for n in range(24)}, toolchain="sim", barrier_kernel="b", max_bytes=1e9
    )
    assert roomy.json_text() == whole.json_text()  # a budget that holds everything changes nothing


@settings(max_examples=60, deadline=None)
@given(st.integers(1, 40), st.integers(1, 30), st.floats(1.0, 2e6))
def test_any_budget_gives_at_least_one_launch_per_rank_and_never_more_than_asked(n_rank, n_launch, budget):
    starts = [[1000.0 * k + r for r in range(n_rank)] for k in range(n_launch)]
    used = table(starts, [[50.0] * n_rank] * n_launch)
    trace = merged_trace(used, details(n_rank), 0, 10, None, toolchain="sim", max_bytes=budget)
    assert all(1 <= len(t.launch) <= min(10, n_launch) for t in trace.tracks)
    json.loads(trace.json_text())


def test_a_cause_that_strikes_after_the_first_drawn_launches_is_drawn_where_it_struck():
    # 30 launches of 4 ranks; rank 3 arrives late in launches 20 and 25 only; the trace draws 6 launches per rank
    starts = [[1000.0 * k] * 4 for k in range(30)]
    b_starts = [[1000.0 * k - 90 + 10 * r for r in range(4)] for k in range(30)]
    b_durs = [[89.0, 79.0, 69.0, 59.0] for _ in range(30)]
    for k in (20, 25):
        b_starts[k][3], b_durs[k][3] = 1000.0 * k - 1, 0.0
    used = table(starts, [[50.0] * 4] * 30, b_starts, b_durs)
    cause = late(3, [20, 25])
    cause.period_us = [30.0, 50.0]
    trace = merged_trace(
        used,
        details(4),
        0,
        6,
        {0: 0.0, 1: 0.0},
        toolchain="sim",
        barrier_kernel="b",
        causes=[cause],
        marked={"typical": 2, "costliest": 25},
    )
    drawn = {tuple(t.launch) for t in trace.tracks}
    assert drawn == {(0, 1, 2, 3, 20, 25)}  # the first four, and the two it struck after them (half kept for those)
    out = trace.as_dict()
    sliced = {e["args"]["launch"] for e in out["traceEvents"] if e["ph"] == "X" and e["pid"] == CAUSES_PID}
    assert sliced == {20, 25}
    assert "2 later launches a named cause struck" in out["metadata"]["launches_drawn"]
