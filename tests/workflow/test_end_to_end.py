"""The whole DAG on the simulated cluster (2 nodes x 8 ranks), as a user runs it."""

import json
import os
import time
from pathlib import Path

import pandas as pd

from conftest import base_overlay

LATER = ("baseline", "timeline", "pmu", "pcsampling")
NOT_YET = ("timeline", "pmu", "pcsampling")


def processes_mentioning(marker: str) -> list[int]:
    """PIDs whose command line or environment mentions ``marker`` (this test's own directory)."""
    pids = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            if "State:\tZ" in (entry / "status").read_text():
                continue
            blob = (entry / "cmdline").read_bytes() + (entry / "environ").read_bytes()
        except OSError:
            continue
        if marker.encode() in blob:
            pids.append(int(entry.name))
    return pids


def test_demo_run_has_env_build_correctness_baseline_ok_and_honest_placeholders(workflow_copy):
    result = workflow_copy.snakemake(overlay=base_overlay())
    assert result.returncode == 0, result.stderr[-3000:]
    assert "Report: results/baseline/report/report.html" in result.stdout
    for stage in ("env_capture", "build", "correctness", "baseline"):
        status = workflow_copy.status(stage)
        assert status["state"] == "ok", status
        assert status["toolchain"] == "sim"
    for stage in NOT_YET:
        assert workflow_copy.status(stage)["state"] == "skipped"
    assert workflow_copy.status("timeline")["reason"] == "stage not implemented in this version"
    ranks = pd.read_parquet(workflow_copy.root / "results/baseline/correctness/ranks.parquet")
    assert len(ranks) == 16 and ranks["passed"].all() and sorted(ranks["node"].unique()) == [0, 1]
    env = json.loads((workflow_copy.root / "results/baseline/env_capture/env.json").read_text())
    assert [n["node"] for n in env["nodes"]] == [0, 1] and env["op_profiler_entry"] == "msopprof"
    build = json.loads((workflow_copy.root / "results/baseline/build/build.json").read_text())
    assert "-g" in build["device_compile_flags"] and all(len(lib["sha256"]) == 64 for lib in build["libraries"])
    summary = json.loads((workflow_copy.root / "results/baseline/report/summary.json").read_text())
    assert summary["schema"] == "dispatchprof.summary/1" and summary["toolchain"] == "sim"
    assert set(summary["stages"]) == {"env_capture", "build", "correctness", *LATER}
    html = (workflow_copy.root / "results/baseline/report/report.html").read_text()
    assert "SIMULATED DATA" in html and "Evidence ledger" in html
    assert "kernel scope:" in html and "full-API scope:" in html and "data:image/png;base64," in html
    assert summary["baseline"]["per_iteration_max_us"]["n"] == 100
    assert set(summary["baseline"]["per_rank"]) == {str(r) for r in range(16)}
    latency = pd.read_parquet(workflow_copy.root / "results/baseline/baseline/latency.parquet")
    assert list(latency.columns) == ["experiment", "scope", "rank", "node", "iteration", "warmup", "us"]
    assert len(latency) == 2 * 16 * 110 and latency.groupby("scope")["rank"].nunique().to_dict() == {"api": 16, "kernel": 16}
    driver = workflow_copy.root / "results/baseline/baseline/perf_driver.py"
    assert driver.is_file() and not driver.is_symlink()
    identity = json.loads((workflow_copy.root / "results/baseline/baseline/run/identity/rank11.json").read_text())
    assert identity["node"] == 1 and identity["local_rank"] == 3 and identity["RANK_ID"] == "11"
    logs = (workflow_copy.root / "results/baseline/correctness/run/node1.log").read_text()
    assert "[rank 15]" in logs and "[rank 8]" in logs


def test_precision_failure_skips_everything_after_correctness_and_a_rerun_recovers(workflow_copy):
    overlay = base_overlay(sim={"precision_fail_rank": 5})
    result = workflow_copy.snakemake(overlay=overlay)
    assert result.returncode == 0, result.stderr[-3000:]
    correctness = workflow_copy.status("correctness")
    assert correctness["state"] == "failed" and "rank 5" in correctness["reason"]
    for stage in LATER:
        status = workflow_copy.status(stage)
        assert status["state"] == "skipped" and "correctness (failed: rank 5" in status["reason"], status
    html = (workflow_copy.root / "results/baseline/report/report.html").read_text()
    assert "rank 5 did not pass" in html

    overlay["sim"] = {"precision_fail_rank": None}
    result = workflow_copy.snakemake("-R", "correctness", overlay=overlay)
    assert result.returncode == 0, result.stderr[-3000:]
    assert workflow_copy.status("correctness")["state"] == "ok"
    assert workflow_copy.status("baseline")["state"] == "ok"


def test_dead_node_ends_in_timeout_within_budget_and_leaves_no_process(workflow_copy):
    overlay = base_overlay(sim={"dead_node": 1}, timeouts={"correctness": 6})
    started = time.monotonic()
    result = workflow_copy.snakemake(overlay=overlay)
    assert result.returncode == 0, result.stderr[-3000:]
    assert time.monotonic() - started < 120
    status = workflow_copy.status("correctness")
    assert status["state"] in ("timeout", "failed") and "6 s budget" in status["reason"]
    assert "rank 8" in status["reason"] or "ranks 0, 1" in status["reason"]
    assert processes_mentioning(str(workflow_copy.root)) == []


def test_analyze_mode_imports_in_place_and_skips_what_was_not_provided(workflow_copy, tmp_path):
    csv = tmp_path / "dispatch_latency.csv"
    rows = "".join(f"{r},{i},{10 + r},{int(i == 0)},{int(i != 0)}\n" for i in range(3) for r in range(16))
    csv.write_text("rank,iteration,elapsed_us,is_warmup,in_average\n" + rows)
    mtime = csv.stat().st_mtime
    result = workflow_copy.snakemake(overlay=base_overlay(mode="analyze", analyze={"latency_csv": str(csv)}))
    assert result.returncode == 0, result.stderr[-3000:]
    for stage in ("env_capture", "build", "correctness"):
        assert workflow_copy.status(stage)["state"] == "disabled"
    imported = json.loads((workflow_copy.root / "results/baseline/baseline/import/status.json").read_text())
    assert imported["state"] == "ok" and imported["source"] == "import" and imported["toolchain"] == "none"
    baseline = workflow_copy.status("baseline")
    assert baseline["state"] == "ok" and baseline["source"] == "import", baseline
    stats = json.loads((workflow_copy.root / "results/baseline/baseline/stats.json").read_text())
    assert stats["scopes"]["api"] == {"available": False, "reason": "not collected in analyze mode"}
    assert stats["scopes"]["kernel"]["per_iteration_max_us"]["n"] == 2
    timeline_import = json.loads((workflow_copy.root / "results/baseline/timeline/import/status.json").read_text())
    assert timeline_import["state"] == "skipped" and "not provided in analyze mode" in timeline_import["reason"]
    manifest = json.loads((workflow_copy.root / "results/baseline/baseline/import/manifest.json").read_text())
    assert manifest["files"][0]["path"] == str(csv) and csv.stat().st_mtime == mtime
    assert "IMPORTED DATA" in (workflow_copy.root / "results/baseline/report/report.html").read_text()


def test_a_consistently_slow_rank_is_the_straggler_and_a_spiky_rank_moves_only_the_tail(workflow_copy):
    """One run per knob, same noise seed: only the knob differs."""
    per_iter = {}
    for name, knobs in (("plain", {}), ("slow", {"slow_rank": 7, "slow_factor": 1.15}), ("spiky", {"spiky_rank": 3})):
        result = workflow_copy.snakemake("--until", "baseline", overlay=base_overlay(sim=knobs))
        assert result.returncode == 0, result.stderr[-3000:]
        stats = json.loads((workflow_copy.root / "results/baseline/baseline/stats.json").read_text())["scopes"]["kernel"]
        per_iter[name] = stats["per_iteration_max_us"]
        if name == "slow":
            assert stats["slowest_rank"]["rank"] == 7 and stats["slowest_rank"]["fraction"] >= 0.9, stats["slowest_rank"]
    plain, spiky = per_iter["plain"], per_iter["spiky"]
    assert abs(spiky["median"] - plain["median"]) / plain["median"] < 0.02
    assert spiky["p95"] > 1.3 * plain["p95"]
