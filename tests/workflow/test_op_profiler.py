"""PMU and PC sampling on the simulated cluster: the demo, replay hazards, entries, and missing evidence."""

import json
import shutil
import time

import pandas as pd
import pytest

from conftest import assert_ended_by_fail_on, base_overlay
from dispatchprof.formats.visualize_bin import STATES
from workflow.test_end_to_end import processes_mentioning


def read(workflow_copy, path):
    return json.loads((workflow_copy.root / "results/baseline" / path).read_text())


def replayed_role_medians(workflow_copy) -> dict[str, float]:
    """What happened in the replayed launches msopprof profiled: per role, the median aiv_time over every core of
    every rank (the stand-in's sim_truth.json, written from the replay's events)."""
    replays = read(workflow_copy, "pmu/run/latency/sim_truth.json")["replays"]
    times: dict[str, list[float]] = {}
    for replay in replays:
        for rank in replay["ranks"]:
            for core in rank["cores"]:
                times.setdefault(core["role"], []).append(core["aiv_time_us"])
    return {role: float(pd.Series(v).median()) for role, v in times.items()}


def test_demo_has_per_role_pmu_for_every_rank_and_a_stall_table(demo_run):
    workflow_copy, result = demo_run
    assert result.returncode == 0, result.stderr[-3000:]
    assert workflow_copy.status("pmu")["state"] == "ok" and workflow_copy.status("pcsampling")["state"] == "ok"
    roles = read(workflow_copy, "pmu/roles.json")
    assert set(roles["per_rank"]) == {str(r) for r in range(16)}
    assert roles["summary"]["entry"] == "msopprof"
    assert {r: v["cores"] for r, v in roles["summary"]["roles"].items()} == {
        "TokenCopyToBuffer": 288,
        "URMASendToken": 288,
        "SelfCopyToken": 64,
        "CalCumSum": 256,
    }
    assert roles["summary"]["missing_columns"] == ["aiv_mte3_active_bw(GB/s)"]
    stalls = read(workflow_copy, "pcsampling/stalls.json")
    summary = read(workflow_copy, "report/summary.json")
    assert set(summary["pcsampling"]["stalls"]["not_issue"]) == set(STATES) - {
        "Active"
    }  # the 8 stall states of the format
    assert "Active" in summary["pcsampling"]["stalls"]["all_samples"]
    assert len(summary["pcsampling"]["hot_lines"]) == 10 and stalls["source_mapped"]
    assert any(stalls["simt_functions_in_hot_lines"].values())
    # every rank sampled: coverage is stated in stalls.json and the status, none missing
    assert stalls["coverage"]["expected"] == stalls["coverage"]["found"] == 16 and stalls["coverage"]["missing"] == []
    assert workflow_copy.status("pcsampling")["details"]["coverage"]["found"] == 16
    # hot-line shares are fractions of all samples; the report shows them x100 with the denominator named
    hot = summary["pcsampling"]["hot_lines"]
    assert (
        0 < hot[-1]["share_of_samples"] <= hot[0]["share_of_samples"] < 1
        and sum(h["share_of_samples"] for h in hot) <= 1 + 1e-9
    )
    html = (workflow_copy.root / "results/baseline/report/report.html").read_text()
    assert (
        f"<td>{100 * hot[0]['share_of_samples']:.1f}%</td>" in html
        and "share of all PC samples (Active included" in html
    )
    assert "Rank coverage: 16 of 16 ranks have PC samples" in html
    # per role, the median aiv_time is the replayed events' (every core's wait to the end included, so the roles'
    # medians lie close together and their order is the events', not a fixed one)
    truth = replayed_role_medians(workflow_copy)
    assert {r: v["aiv_time_us_median"] for r, v in summary["pmu"]["roles"].items()} == pytest.approx(truth, abs=0.01)


def test_replay_hang_times_out_within_budget_leaves_nothing_and_skips_pc_sampling(workflow_copy):
    started = time.monotonic()
    result = workflow_copy.snakemake(overlay=base_overlay(sim={"replay": "hang"}, timeouts={"pmu": 8}))
    assert_ended_by_fail_on(result, "baseline/pmu is timeout")
    assert time.monotonic() - started < 150
    pmu = workflow_copy.status("pmu")
    assert (
        pmu["state"] == "timeout"
        and "kernel replay may not be compatible with cross-rank communication" in pmu["reason"]
    )
    pcs = workflow_copy.status("pcsampling")
    assert pcs["state"] == "skipped" and "pmu" in pcs["reason"]
    assert processes_mentioning(str(workflow_copy.root)) == []
    html = (workflow_copy.root / "results/baseline/report/report.html").read_text()
    assert "PMU replay compatibility of the full kernel unresolved" in html


def test_hot_icache_role_ranks_first_by_miss_rate_and_time_order_is_separate(workflow_copy):
    # pipe_timeline off: not what this test reads (the demo and test_pipe_timeline.py cover it)
    overlay = base_overlay(
        sim={"icache_hot_role": "SelfCopyToken", "op_entry": "msprof_op", "pcsampling": "no_samples"},
        pipe_timeline={"runs": []},
    )
    result = workflow_copy.snakemake(overlay=overlay)
    assert result.returncode == 0, result.stderr[-3000:]
    roles = read(workflow_copy, "pmu/roles.json")
    assert roles["order_by_icache_miss_rate"][0] == "SelfCopyToken"
    # the time order is the replayed events' (the longest role within the CSV's 0.01 us), not the miss-rate order
    truth = replayed_role_medians(workflow_copy)
    assert truth[roles["order_by_aiv_time"][0]] >= max(truth.values()) - 0.01
    assert truth["SelfCopyToken"] < max(truth.values()) and roles["order_by_aiv_time"][0] != "SelfCopyToken"
    assert roles["entry"] == "msprof op"
    pcs = workflow_copy.status("pcsampling")
    assert pcs["state"] == "ok" and pcs["reason"].startswith("no SIMT samples")
    answer = (workflow_copy.root / "results/baseline/report/report.html").read_text()
    assert "the SelfCopyToken role has the highest I-cache miss rate" in answer


def test_corrupting_replay_is_invalid_and_an_unsupported_pc_sampling_fails_clearly(workflow_copy):
    result = workflow_copy.snakemake("--until", "pmu", overlay=base_overlay(sim={"replay": "corrupt"}))
    assert_ended_by_fail_on(result, "baseline/pmu is invalid")
    pmu = workflow_copy.status("pmu")
    assert pmu["state"] == "invalid" and "replay changed the results" in pmu["reason"]
    result = workflow_copy.snakemake("--until", "pcsampling", overlay=base_overlay(sim={"pcsampling": "unsupported"}))
    assert_ended_by_fail_on(result, "baseline/pcsampling is failed")
    pcs = workflow_copy.status("pcsampling")
    assert pcs["state"] == "failed" and "maybe in wrong soc platform" in pcs["reason"]


def test_without_debug_info_the_stall_table_stays_and_source_mapping_is_a_warning(workflow_copy):
    overlay = base_overlay(deepep={"build_env": {"DEBUG_CLOCK_ON": "OFF", "DEVICE_DEBUG_INFO": "OFF"}})
    result = workflow_copy.snakemake("--until", "pcsampling", overlay=overlay)
    assert result.returncode == 0, result.stderr[-3000:]
    pcs = workflow_copy.status("pcsampling")
    assert pcs["state"] == "ok"
    warning = [v for v in pcs["validations"] if v["check"] == "source mapping"]
    assert warning and "-g" in warning[0]["detail"]
    assert read(workflow_copy, "pcsampling/stalls.json")["stalls"]["not_issue"]


def test_no_usable_op_profiler_skips_pmu_with_the_reason(workflow_copy):
    result = workflow_copy.snakemake("--until", "pmu", overlay=base_overlay(sim={"op_entry": "none"}))
    assert result.returncode == 0, result.stderr[-3000:]
    pmu = workflow_copy.status("pmu")
    assert pmu["state"] == "skipped" and "no usable op profiler" in pmu["reason"]


def test_three_launches_and_the_other_metrics_are_kept_by_launch_and_shown_per_role(workflow_copy):
    # Before: launches 1 and 2 were folded into launch 0, and Memory/L2Cache were collected and never read.
    # pipe_timeline stays on: the only workflow run that replays it over several launches (pmu.launch_count)
    overlay = base_overlay(
        pmu={"launch_count": 3, "iterations": 3, "metrics": ["PipeUtilization", "Memory", "L2Cache"]}
    )
    result = workflow_copy.snakemake(overlay=overlay)
    assert result.returncode == 0, result.stderr[-3000:]
    pmu = workflow_copy.status("pmu")
    assert pmu["state"] == "ok" and "3 launches each" in pmu["reason"], pmu["reason"]
    roles = read(workflow_copy, "pmu/roles.json")
    assert roles["launches"] == [0, 1, 2] and sorted(roles["roles_by_launch"]) == ["0", "1", "2"]
    send = roles["roles"]["URMASendToken"]
    assert (send["cores"], send["launches"], send["samples"]) == (288, 3, 3 * 288)
    metrics = pd.read_parquet(workflow_copy.root / "results/baseline/pmu/metrics.parquet")
    assert metrics.groupby("rank")["launch"].nunique().tolist() == [3] * 16
    assert set(metrics["metric_set"]) == {"PipeUtilization", "Memory", "L2Cache"}
    assert sorted(roles["metric_sets"]) == ["L2Cache", "Memory"]
    memory = roles["metric_sets"]["Memory"]
    assert (
        "aiv_gm_to_ub_bw(GB/s)" in memory["columns"]
        and memory["roles"]["URMASendToken"]["aiv_gm_to_ub_bw(GB/s)"] is not None
    )
    assert "GM_to_L1_datas(KB)" in memory["not_provided"]  # NA on every vector row: listed, never 0
    html = (workflow_copy.root / "results/baseline/report/report.html").read_text()
    assert "Memory per role" in html and "L2Cache per role" in html and "launch 2" in html

    # PC sampling on 7 of 16 ranks is below stats.min_rank_coverage: invalid, never ok (before: ok with 1 of 16).
    # First, while pmu is untouched: a rerun of pmu would make pcsampling_collect collect again.
    devices = sorted((workflow_copy.root / "results/baseline/pcsampling/raw").glob("node*/OPPROF_*/device*"))
    assert len(devices) == 16
    for device_dir in devices[7:]:
        for path in device_dir.glob("*/*/visualize_data.bin"):
            path.unlink()
    result = workflow_copy.snakemake("--until", "pcsampling", "--forcerun", "pcsampling", overlay=overlay)
    pcs = workflow_copy.status("pcsampling")
    assert pcs["state"] == "invalid" and "samples on 7 of 16 ranks" in pcs["reason"], pcs["reason"]

    # A requested CSV that one launch lacks makes the stage invalid, naming the metric, rank and launch.
    raw = workflow_copy.root / "results/baseline/pmu/raw"
    victim = sorted(raw.glob("node1/OPPROF_*/device1/*/2/Memory_*.csv"))[0]
    victim.unlink()
    result = workflow_copy.snakemake("--until", "pmu", "--forcerun", "pmu", overlay=overlay)
    pmu = workflow_copy.status("pmu")
    assert pmu["state"] == "invalid" and "msopprof wrote no CSV for Memory: rank 9 launch 2" in pmu["reason"], pmu[
        "reason"
    ]

    # One rank's PMU data gone altogether: the other 15 ranks are analysed and the coverage is said first.
    for device_dir in raw.glob("node1/OPPROF_*/device1"):
        shutil.rmtree(device_dir)
    result = workflow_copy.snakemake("--until", "pmu", "--forcerun", "pmu", overlay=overlay)
    pmu = workflow_copy.status("pmu")
    assert (
        pmu["state"] == "ok"
        and pmu["reason"].startswith("PARTIAL COVERAGE")
        and "15/16 ranks (missing rank 9)" in pmu["reason"]
    ), pmu["reason"]
    assert read(workflow_copy, "pmu/roles.json")["coverage"]["missing"] == [9]
