"""Issue 63: the merged cluster trace shows the waits and the cause, checked against the simulator's event truth."""

import json

from conftest import base_overlay


def test_the_merged_trace_marks_every_launch_a_late_rank_struck_and_its_arrows_start_at_it(workflow_copy):
    result = workflow_copy.snakemake("--until", "timeline", overlay=base_overlay(sim={"late_rank": 5}))
    assert result.returncode == 0, result.stderr[-3000:]
    root = workflow_copy.root / "results/baseline/timeline"
    trace = json.loads((root / "merged_trace.json").read_text())  # parses as (Chrome trace) JSON
    truth = json.loads((root / "run/latency/sim_truth.json").read_text())
    stats = json.loads((root / "stats.json").read_text())
    events, meta = trace["traceEvents"], trace["metadata"]
    assert meta["toolchain"] == "sim" and set(meta["node_clock"]) == {"0", "1"}
    names = {e["pid"]: e["args"]["name"] for e in events if e["ph"] == "M" and e["name"] == "process_name"}
    assert names[5].startswith("node 0 / rank 5 (") and names[13].startswith("node 1 / rank 13 (")
    # the barrier kernel the timeline read, drawn with an arrival marker, on every rank
    barrier = [e for e in events if e["ph"] == "X" and e["tid"] == 1 and e["pid"] < 16]
    assert {e["pid"] for e in barrier} == set(range(16))
    assert sum(e["ph"] == "i" and e["name"] == "arrival" for e in events) == len(barrier)
    # the host call that launched each drawn launch (msprof's CANN_API), on tid 2 of every rank, starting before its
    # launch does on the device (one clock per node, the same correction)
    host = {(e["pid"], e["args"]["launch"]): e for e in events if e["ph"] == "X" and e["tid"] == 2 and e["pid"] < 16}
    device = {(e["pid"], e["args"]["launch"]): e for e in events if e["ph"] == "X" and e["tid"] == 0 and e["pid"] < 16}
    assert set(host) == set(device) and {pid for pid, _ in host} == set(range(16))
    assert all(host[k]["ts"] < device[k]["ts"] for k in host), [k for k in host if host[k]["ts"] >= device[k]["ts"]]
    threads = {e["pid"]: e["args"]["name"] for e in events if e["name"] == "thread_name" and e["tid"] == 2}
    assert threads == {r: "host: launch (launch call)" for r in range(16)}
    assert meta["host_spans"]["drawn"] and meta["host_spans"]["table"] == "CANN_API"

    top = stats["causes"][0]
    assert (top["evidence"], top["ranks"]) == ("late_arrival", [5]), top
    drawn = {e["args"]["launch"] for e in events if e["ph"] == "X" and e["pid"] == 0 and e["tid"] == 0}
    # the event truth: the launches the late rank's removal saves time in (by the model's counterfactual)
    truth_struck = {
        launch["call"] for launch in truth["launches"] if "late_rank" in launch["costs"] and launch["call"] in drawn
    }
    assert truth_struck, "the truth marks no drawn launch: the test checks nothing"
    cause_pid = next(pid for pid, name in names.items() if name.startswith("causes"))
    thread = next(
        e["tid"]
        for e in events
        if e["ph"] == "M" and e["pid"] == cause_pid and e["name"] == "thread_name" and "rank 5" in e["args"]["name"]
    )
    slices = {e["args"]["launch"]: e for e in events if e["ph"] == "X" and e["pid"] == cause_pid and e["tid"] == thread}
    assert truth_struck <= set(slices), sorted(truth_struck - set(slices))
    assert all(slices[k]["args"]["cost_us"] >= 0 for k in slices)

    # every flow has both ends; each starts at rank 5 and ends at a rank whose barrier wait was longer (by the events)
    starts = {e["id"]: e for e in events if e["ph"] == "s"}
    ends = {e["id"]: e for e in events if e["ph"] == "f"}
    assert starts and set(starts) == set(ends)
    assert {e["pid"] for e in starts.values()} == {5}
    wait = {(e["pid"], e["args"]["launch"]): e["dur"] for e in barrier}
    at = {(e["pid"], e["ts"]): e["args"]["launch"] for e in barrier}
    for flow_id, start in starts.items():
        launch = at[(5, start["ts"])]
        assert ends[flow_id]["pid"] != 5 and wait[(ends[flow_id]["pid"], launch)] > wait[(5, launch)]
