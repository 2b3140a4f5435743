"""The counters on the merged trace (issue 63): each drawn launch's group kernel time beside the links' bound."""

import json

from hypothesis import given, settings
from hypothesis import strategies as st
from test_trace_causes import details, finite, span, table

from dispatchprof.analysis.timeline import merged_trace
from dispatchprof.analysis.trace_counters import COUNTERS_PID


def counters(events, name):
    return {round(e["ts"], 6): e["args"]["us"] for e in events if e["ph"] == "C" and e["name"] == name}


def test_each_launch_s_kernel_time_runs_from_its_first_start_to_its_last_end_beside_the_bound():
    # 3 ranks, 2 launches: launch 0 from 100 (rank 0's start) to 190 (rank 2's end); launch 1 from 300 to 370
    used = table([[100.0, 110.0, 120.0], [300.0, 300.0, 310.0]], [[50.0, 60.0, 70.0], [50.0, 70.0, 40.0]])
    trace = merged_trace(used, details(3), 0, 0, {0: 0.0, 1: 0.0}, toolchain="sim", links_bound_us=42.0)
    events = json.loads(trace.json_text())["traceEvents"]
    kernel = counters(events, "group kernel time (us)")
    assert sorted(kernel.values()) == [70.0, 90.0]
    assert list(counters(events, "links' bound (us)").values()) == [42.0, 42.0]
    assert set(kernel) == set(counters(events, "links' bound (us)"))
    assert trace.metadata["counters"]["links_bound_us"] == 42.0
    # its own process, named and drawn above the ranks (Chrome trace metadata events), every counter in it
    meta = [e for e in events if e["ph"] == "M" and e["pid"] == COUNTERS_PID]
    assert meta == [
        {"name": "process_name", "ph": "M", "pid": COUNTERS_PID, "tid": 0, "args": {"name": "counters per launch"}},
        {"name": "process_sort_index", "ph": "M", "pid": COUNTERS_PID, "tid": 0, "args": {"sort_index": -2}},
    ]
    assert {e["pid"] for e in events if e["ph"] == "C"} == {COUNTERS_PID}


def test_without_a_bound_only_the_kernel_time_is_counted():
    used = table([[0.0, 5.0]], [[10.0, 10.0]])
    events = merged_trace(used, details(2), 0, 0, None, toolchain="sim").as_dict()["traceEvents"]
    assert counters(events, "group kernel time (us)") and not counters(events, "links' bound (us)")


@settings(max_examples=80, deadline=None)
@given(st.integers(1, 5), st.integers(1, 5), st.data())
def test_any_tables_give_one_nonnegative_kernel_time_per_drawn_launch(n_rank, n_launch, data):
    grid = st.lists(st.lists(finite, min_size=n_rank, max_size=n_rank), min_size=n_launch, max_size=n_launch)
    spans = st.lists(st.lists(span, min_size=n_rank, max_size=n_rank), min_size=n_launch, max_size=n_launch)
    used = table(data.draw(grid), data.draw(spans))
    trace = merged_trace(used, details(n_rank), 0, data.draw(st.integers(0, 3)), None, toolchain="sim")
    out = json.loads(trace.json_text())
    kernel = [e for e in out["traceEvents"] if e["ph"] == "C"]
    drawn = {k for t in trace.tracks for k in t.launch}
    assert len(kernel) == len(drawn) and all(e["args"]["us"] >= 0 and e["pid"] == COUNTERS_PID for e in kernel)
