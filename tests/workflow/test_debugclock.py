"""The debugclock stage on the simulated cluster (2 nodes x 8 ranks): the fallback when kernel replay hangs, with a
slow URMASendToken role on rank 5. One collected run shared by the assertions, then an analyze-mode run over its
legacy CSVs. The no-fault decision (disabled) is covered by tests/analysis/test_debugclock_phases.py::test_decision."""

import hashlib
import json
import shutil

import pandas as pd
import pytest

from conftest import SHORT_RUN, assert_ended_by_fail_on, base_overlay, copy_workflow
from workflow.test_end_to_end import processes_mentioning

FAULTS = {"replay": "hang", "slow_role": {"rank": 5, "role": "URMASendToken", "factor": 2.0}}


@pytest.fixture(scope="module")
def collected(tmp_path_factory):
    wf = copy_workflow(tmp_path_factory.mktemp("dc") / "wf")
    overlay = base_overlay(
        sim=FAULTS,
        timeouts={"pmu": 8},
        debugclock={"iterations": 12, "warmup": 4, "format": "both"},
    )
    result = wf.snakemake(overlay=overlay, timeout=900)
    assert_ended_by_fail_on(result, "baseline/pmu is timeout")
    return wf


def read(wf, path):
    return json.loads((wf.root / "results/baseline" / path).read_text())


def test_replay_hang_falls_back_to_debugclock_which_names_the_slow_sender(collected):
    assert collected.status("pmu")["state"] == "timeout"
    status = collected.status("debugclock")
    assert status["state"] == "ok", status
    stats = read(collected, "debugclock/stats.json")
    assert (
        stats["source"] == "akl_trace" and stats["found"]["legacy_csv"] == 16 and stats["found"]["akl_trace"] == 16 * 12
    )
    best = stats["busiest"]
    assert (best["rank"], best["role"], best["slot"], best["phase"]) == (5, "URMASendToken", 4, "send_complete")
    assert stats["role_mismatches"] == [] and stats["launches"] == 16 * (12 - 4)
    assert (
        stats["busiest_node"] is None
    )  # one slow rank is not its node: the node's other ranks send as fast as the rest
    assert stats["toolchain"] == "sim"


def test_summary_keys_and_overhead(collected):
    dc = read(collected, "report/summary.json")["debugclock"]
    assert dc["source"] == "akl_trace" and dc["busiest"]["rank"] == 5
    send = dc["roles"]["URMASendToken"]["phases"]["send_complete"]["median_us"]
    assert send > 10 * dc["roles"]["URMASendToken"]["phases"]["queues_ready"]["median_us"]
    assert dc["roles"]["CalCumSum"]["phases"]["dispatch_ready"]["wait"]
    assert dc["wait_slots"]["CalCumSum"] == [2, 6]
    over = read(collected, "debugclock/stats.json")["overhead"]
    assert over["on_median_us"] > over["off_median_us"] and over["ratio"] == pytest.approx(
        over["on_median_us"] / over["off_median_us"]
    )
    api = over["scopes"]["api"]
    # the export after the kernel's end tick costs the API scope far more than the markers cost the kernel scope
    assert api["on_median_us"] - api["off_median_us"] > 10 * (over["on_median_us"] - over["off_median_us"])
    assert dc["overhead"] == {k: over[k] for k in ("on_median_us", "off_median_us", "ratio")}


def test_the_baseline_build_is_never_the_debug_build(collected):
    collect = read(collected, "debugclock/collect/status.json")
    check = next(v for v in collect["validations"] if v["check"].startswith("baseline build untouched"))
    assert check["passed"] and "unchanged" in check["detail"]
    base_flags = collected.root / "workflow/sim/ascend_deepep/build/device_compile_flags.txt"
    tree_flags = collected.root / "results/baseline/debugclock/tree/build/device_compile_flags.txt"
    assert "-DDEBUG_CLOCK_ON" not in base_flags.read_text() and "-DDEBUG_CLOCK_ON" in tree_flags.read_text()
    assert collect["details"]["precision_on"] == "passed on every rank"
    # the ON runs' latencies are not the baseline's: it keeps its own call count (each DebugClock run makes 12)
    latency = pd.read_parquet(collected.root / "results/baseline/baseline/latency.parquet")
    assert latency["iteration"].max() + 1 == SHORT_RUN["baseline"]["iterations"] != 12
    assert processes_mentioning(str(collected.root)) == []


def test_the_on_run_loaded_the_worktree_build_and_its_log_names_the_sha256(collected):
    collect = read(collected, "debugclock/collect/status.json")
    check = next(v for v in collect["validations"] if v["check"].startswith("the ON run imported the DEBUG build"))
    assert check["passed"], check
    tree = (collected.root / "results/baseline/debugclock/tree").resolve()
    base = (collected.root / "workflow/sim/ascend_deepep").resolve()
    libraries = collect["details"]["libraries"]
    assert libraries["on"]["modules"] == [str(tree / "ascend_deepep/__init__.py")]
    assert libraries["off"]["modules"] == [str(base / "ascend_deepep/__init__.py")]
    on_lib = libraries["on"]["files"][str(tree / "build/libascend_deepep_kernels.so")]
    off_lib = libraries["off"]["files"][str(base / "build/libascend_deepep_kernels.so")]
    assert on_lib["ranks"] == off_lib["ranks"] == 16 and on_lib["sha256"] != off_lib["sha256"]
    assert on_lib["sha256"] == [hashlib.sha256((tree / "build/libascend_deepep_kernels.so").read_bytes()).hexdigest()]
    logs = "".join(p.read_text() for p in (collected.root / "results/baseline/debugclock/run/on0").glob("node*.log"))
    assert f"dispatchprof: loaded {tree / 'build/libascend_deepep_kernels.so'} sha256 {on_lib['sha256'][0]}" in logs


def test_report_has_the_section_the_fallback_link_and_the_boundary(collected):
    html = (collected.root / "results/baseline/report/report.html").read_text()
    assert "DebugClock phases per role" in html and html.count("<svg") >= 4
    assert "Wait slots per rank and role" in html and "Work slots per rank and role" in html  # the wait/work heat maps
    assert (
        "the role link uses the DebugClock fallback" in html
        and "rank 5&#39;s URMASendToken slot 4 (send_complete)" in html
    )
    assert "PMU replay compatibility of the full kernel unresolved" in html
    assert "Slot numbers are not comparable across roles" in html and "Instrumentation overhead" in html
    md = (collected.root / "results/baseline/report/report.md").read_text()
    assert "### DebugClock phases per role" in md and "| URMASendToken phase |" in md


def test_analyze_mode_reads_the_legacy_csvs_by_node(collected, tmp_path):
    raw = collected.root / "results/baseline/debugclock/raw/run0"
    imported = tmp_path / "clock"
    for csv in raw.rglob("dispatch_clock_rank_*.csv"):
        target = imported / csv.relative_to(raw)
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(csv, target)
    wf = copy_workflow(tmp_path / "wf")
    result = wf.snakemake(overlay=base_overlay(mode="analyze", analyze={"debugclock_dir": str(imported)}))
    assert result.returncode == 0, result.stderr[-3000:]
    status = wf.status("debugclock")
    assert status["state"] == "ok" and status["source"] == "import", status
    stats = read(wf, "debugclock/stats.json")
    assert stats["source"] == "legacy_csv" and stats["overhead"] is None and stats["toolchain"] == "none"
    assert (stats["busiest"]["rank"], stats["busiest"]["role"], stats["busiest"]["slot"]) == (5, "URMASendToken", 4)
    slots = pd.read_parquet(wf.root / "results/baseline/debugclock/segments.parquet")
    assert sorted(slots["node"].unique()) == [0, 1] and slots["launch"].unique().tolist() == [0]


def test_analyze_mode_without_the_dir_is_skipped_and_a_bad_file_is_invalid(tmp_path):
    wf = copy_workflow(tmp_path / "wf")
    # without the dir no debugclock job runs: rule not_provided writes its status (one job for every stage without data)
    result = wf.snakemake("--until", "not_provided", overlay=base_overlay(mode="analyze"))
    assert result.returncode == 0, result.stderr[-3000:]
    assert wf.status("debugclock")["state"] == "skipped" and "not provided" in wf.status("debugclock")["reason"]
    bad = tmp_path / "bad" / "node0"
    bad.mkdir(parents=True)
    (bad / "dispatch_clock_rank_0.csv").write_text("rank,aiv_id,time_0_cycles\n0,0\n")
    result = wf.snakemake(
        "--until", "debugclock", overlay=base_overlay(mode="analyze", analyze={"debugclock_dir": str(tmp_path / "bad")})
    )
    assert_ended_by_fail_on(result, "baseline/debugclock is invalid")
    status = wf.status("debugclock")
    assert (
        status["state"] == "invalid" and "dispatch_clock_rank_0.csv: line 2: 2 fields; expected 3" in status["reason"]
    )


def test_a_precision_failure_of_the_legacy_debug_build_makes_the_stage_invalid_everywhere(tmp_path):
    wf = copy_workflow(tmp_path / "wf")
    overlay = base_overlay(
        sim={"replay": "hang", "debugclock": "overwrite"},
        timeouts={"pmu": 8},
    )
    result = wf.snakemake("--until", "debugclock", overlay=overlay, timeout=900)
    assert_ended_by_fail_on(result, "baseline/pmu is timeout", "baseline/debugclock is invalid")
    collect = json.loads((wf.root / "results/baseline/debugclock/collect/status.json").read_text())
    assert collect["state"] == "invalid", collect
    assert (
        collect["reason"].startswith("the DEBUG_CLOCK_ON run failed the precision check (run 0: ")
        and "tpSendCountsOut" in collect["reason"]
    ), collect
    assert "not the kernel's" in collect["details"]["precision_on"]
    assert any(
        not v["passed"] and v["severity"] == "error" and "precision of the DEBUG_CLOCK_ON run" in v["check"]
        for v in collect["validations"]
    )
    stage = wf.status("debugclock")
    assert stage["state"] == "invalid" and "the DEBUG_CLOCK_ON run failed the precision check" in stage["reason"], stage
    assert wf.status("correctness")["state"] == "ok"
    assert (
        "debugclock" in result.stdout + result.stderr and "invalid" in result.stdout + result.stderr
    )  # the end-of-run table
