"""Issue 63: the merged cluster trace shows the waits and the cause, checked against the simulator's event truth."""

import json
from collections import Counter

import numpy as np
import pytest

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
    # a counter per drawn launch: the group's kernel time, beside the links' bound the baseline computed
    bound = json.loads((workflow_copy.root / "results/baseline/baseline/stats.json").read_text())["bandwidth"]
    assert bound["bound_us"] > 0 and meta["counters"]["links_bound_us"] == bound["bound_us"]
    bounds = [e["args"]["us"] for e in events if e["ph"] == "C" and e["name"] == "links' bound (us)"]
    kernel = [e["args"]["us"] for e in events if e["ph"] == "C" and e["name"] == "group kernel time (us)"]
    assert len(kernel) == len(bounds) > 0 and set(bounds) == {bound["bound_us"]} and min(kernel) > 0
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


def group_ends(events: list[dict]) -> dict[int, float]:
    """launch -> the latest end of the target kernel over the ranks (the rank processes' thread 0)."""
    out: dict[int, float] = {}
    for e in events:
        if e["ph"] == "X" and e["tid"] == 0 and e["pid"] < 999_999:
            launch = e["args"]["launch"]
            out[launch] = max(out.get(launch, float("-inf")), e["ts"] + e["dur"])
    return out


@pytest.mark.parametrize(
    ("sim", "cause", "evidence", "rank"),
    [
        ({"late_rank": 5}, "late_rank", "late_arrival", 5),
        # the slow sender's peers wait for its tokens inside the kernel: the group's wait there (the truth's evidence
        # too), with the slow rank among the ranks that end late
        ({"slow_role": {"rank": 11, "role": "URMASendToken", "factor": 1.5}}, "slow_role", "in_kernel", 11),
    ],
)
def test_the_replay_without_the_top_cause_ends_each_launch_earlier_by_what_the_event_truth_saves(
    workflow_copy, sim, cause, evidence, rank
):
    overlay = base_overlay(sim=sim, timeline={"trace_launches": 0, "iterations": 60, "warmup": 2})
    result = workflow_copy.snakemake("--until", "timeline", overlay=overlay)
    assert result.returncode == 0, result.stderr[-3000:]
    root = workflow_copy.root / "results/baseline/timeline"
    merged = json.loads((root / "merged_trace.json").read_text())
    replay = json.loads((root / "replay_without_top_cause.json").read_text())  # parses as (Chrome trace) JSON
    truth = json.loads((root / "run/latency/sim_truth.json").read_text())
    top = json.loads((root / "stats.json").read_text())["causes"][0]
    assert top["evidence"] == evidence and rank in top["ranks"], top
    truth_top = next(c for c in truth["causes"] if c["cause"] == cause)
    assert truth_top["evidence"] == evidence and rank in truth_top["ranks"]
    meta = replay["metadata"]["replay"]
    assert meta["without"].startswith(evidence.replace("_", " ")) and replay["metadata"]["toolchain"] == "sim"

    before, after = group_ends(merged["traceEvents"]), group_ends(replay["traceEvents"])
    assert set(before) == set(after) and len(before) > 40
    saved = {k: before[k] - after[k] for k in before}
    assert min(saved.values()) >= -1e-6  # the replay never ends a launch later
    # the event truth: per launch, what removing the cause saves in the model's counterfactual launch period (the
    # previous launch's last end to this one's). The replay's launch period saving is the step of its group-end
    # saving from one launch to the next
    truth_saved = {t["call"]: (t["costs"].get(cause) or {}).get("period_us") or 0.0 for t in truth["launches"]}
    steps = [(saved[k] - saved[k - 1], truth_saved[k]) for k in sorted(saved) if k - 1 in saved and k in truth_saved]
    assert len(steps) >= 0.9 * (len(saved) - 1)
    replayed, true = (float(np.mean(x)) for x in zip(*steps))
    low, high = top["cost_ci_us"]
    # the replay's mean step is the cost before the background; the truth's is the cost: within the CI and the
    # background the cost account takes off
    assert replayed == pytest.approx(true, abs=(high - low) + top["background_us_per_launch"])

    # the causes track: a slice in every launch the truth says the cause saves time in
    events = merged["traceEvents"]
    thread = next(
        e["tid"] for e in events if e["ph"] == "M" and e["name"] == "thread_name" and "cause 1:" in e["args"]["name"]
    )
    sliced = {e["args"]["launch"] for e in events if e["ph"] == "X" and e["pid"] == 999_999 and e["tid"] == thread}
    struck = {k for k, v in truth_saved.items() if v > 0 and k in before}
    assert struck and struck <= sliced, sorted(struck - sliced)
    flows = [e for e in events if e["ph"] in "sf"]
    if evidence == "late_arrival":
        assert flows and {e["pid"] for e in flows if e["ph"] == "s"} == {rank}
    else:  # the group waits inside the kernel: the events say for whose tokens, the timeline does not; no arrow
        awaited = [r["tokens_awaited_rank"] for t in truth["launches"] if t["call"] in struck for r in t["ranks"]]
        assert Counter(awaited).most_common(1)[0][0] == rank
        assert not flows and "cannot tell" in merged["metadata"]["causes_track"]["flows"]
