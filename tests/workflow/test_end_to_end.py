"""The whole DAG on the simulated cluster (2 nodes x 8 ranks), as a user runs it."""

import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import time
from html import unescape
from pathlib import Path

import pandas as pd
import pytest
import yaml

from conftest import ROOT, assert_ended_by_fail_on, base_overlay, copy_workflow, without_slurm_probe
from dispatchprof.shell.config import load_schema
from dispatchprof.tools.crosscheck import REVISITED

LATER = ("baseline", "timeline", "pmu", "pcsampling", "pipe_timeline")


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


def test_demo_run_has_env_build_correctness_baseline_ok_and_honest_placeholders(demo_run):
    workflow_copy, result = demo_run
    assert result.returncode == 0, result.stderr[-3000:]
    assert "Report: results/baseline/report/report.html" in result.stdout
    for stage in ("env_capture", "build", "correctness", "baseline", "timeline", "pmu", "pcsampling", "pipe_timeline"):
        status = workflow_copy.status(stage)
        assert status["state"] == "ok", status
        assert status["toolchain"] == "sim"
    summary = json.loads((workflow_copy.root / "results/baseline/report/summary.json").read_text())
    trace = json.loads((workflow_copy.root / "results/baseline/timeline/merged_trace.json").read_text())
    assert {e["pid"] for e in trace["traceEvents"] if e["ph"] == "X"} == set(range(16))
    assert trace["metadata"]["toolchain"] == "sim"  # opened in a viewer, away from the report that says so
    assert {k: summary["timeline"]["coverage"][k] for k in ("expected", "found", "missing")} == {
        "expected": 16,
        "found": 16,
        "missing": [],
    }
    assert summary["timeline"]["kernel_name"] == "elastic_dispatch_kernel"
    defaults = yaml.safe_load((workflow_copy.root / "config/config.yaml").read_text())["timeline"]
    assert all(
        v["launches"] == defaults["iterations"] - defaults["warmup"] == 200
        for v in summary["timeline"]["per_rank"].values()
    )
    # The msprof-analyze cross-check (timeline.crosscheck: auto; the other tests turn it off) ran on every rank
    # (requirements-dev.txt installs msprof-analyze; without it, auto skips it and says so).
    cross = json.loads((workflow_copy.root / "results/baseline/timeline/crosscheck.json").read_text())
    if shutil.which("msprof-analyze"):
        assert cross["state"] == "ok" and cross["their_ranks"] == cross["our_ranks"] == 16, cross
        assert sorted(row["their_rank"] for row in cross["rows"]) == list(range(16))
    else:
        assert cross["state"] == "skipped", cross
    profs = list((workflow_copy.root / "results/baseline/timeline/raw").glob("node*/PROF_*/device_*/info.json.*"))
    assert sorted(json.loads(p.read_text())["rank_id"] for p in profs) == list(
        range(16)
    )  # RANK_ID reached the profiler
    ranks = pd.read_parquet(workflow_copy.root / "results/baseline/correctness/ranks.parquet")
    assert len(ranks) == 16 and ranks["passed"].all() and sorted(ranks["node"].unique()) == [0, 1]
    env = json.loads((workflow_copy.root / "results/baseline/env_capture/env.json").read_text())
    assert [n["node"] for n in env["nodes"]] == [0, 1] and env["op_profiler_entry"] == "msopprof"
    # the stand-in msprof's --help shows the application after the options: msprof [options] bash <probe>
    assert {n["msprof_form"]["form"] for n in env["nodes"]} == {"trailing"} and all(
        not n["set_env"]["used"] for n in env["nodes"]
    )
    timeline_collect = json.loads((workflow_copy.root / "results/baseline/timeline/collect/status.json").read_text())
    assert timeline_collect["details"]["msprof_form"] == "trailing" and "--application" not in " ".join(
        timeline_collect["command"]
    )
    build = json.loads((workflow_copy.root / "results/baseline/build/build.json").read_text())
    assert "-g" in build["device_compile_flags"] and all(len(lib["sha256"]) == 64 for lib in build["libraries"])
    summary = json.loads((workflow_copy.root / "results/baseline/report/summary.json").read_text())
    assert summary["schema"] == "dispatchprof.summary/6" and summary["toolchain"] == "sim"
    assert set(summary["stages"]) == {"env_capture", "build", "correctness", *LATER, "debugclock", "probe"}
    # no fault: PMU is ok, so the DebugClock fallback is not needed (debugclock.when: fallback)
    debugclock = workflow_copy.status("debugclock")
    assert debugclock["state"] == "disabled" and "fallback not needed: PMU is ok" in debugclock["reason"], debugclock
    assert summary["debugclock"] is None and not (workflow_copy.root / "results/baseline/debugclock/tree").exists()
    # the demo's PipeTimeline run: per-role pipe busy time, with the roles the 6 sampled cores did not reach said so
    roles = summary["pipe_timeline"]["roles"]
    assert summary["pipe_timeline"]["runs"] == {"PipeTimeline": "ok", "InstrTimeline": "disabled"}
    assert roles["URMASendToken"]["pipes"]["MTE2"]["busy_us_median"] > 0 and roles["SelfCopyToken"]["pipes"] is None
    html = (workflow_copy.root / "results/baseline/report/report.html").read_text()
    assert "SIMULATED DATA" in html and "Evidence ledger" in html
    assert "kernel scope:" in html and "full-API scope:" in html and "data:image/png;base64," in html
    assert summary["baseline"]["per_iteration_max_us"]["n"] == 100
    # the link bound at the simulator's own rates: the classes split
    # the cross-rank bytes exactly, the efficiency is in (0, 1]
    bandwidth = summary["baseline"]["bandwidth"]
    links = bandwidth["links"]
    assert (
        links["intra_node"]["bytes_per_launch"] + links["inter_node"]["bytes_per_launch"]
        == summary["baseline"]["bytes"]["cross_rank_token_bytes"]
    )
    assert 0 < bandwidth["efficiency"] <= 1 and links["inter_node"]["peak_kind"] == "simulator", bandwidth
    assert "How far from the links&#39; limit" in html  # every text of the model is escaped
    assert set(summary["baseline"]["per_rank"]) == {str(r) for r in range(16)}
    latency = pd.read_parquet(workflow_copy.root / "results/baseline/baseline/latency.parquet")
    assert list(latency.columns) == ["experiment", "scope", "rank", "node", "iteration", "warmup", "us"]
    assert len(latency) == 2 * 16 * 110 and latency.groupby("scope")["rank"].nunique().to_dict() == {
        "api": 16,
        "kernel": 16,
    }
    driver = workflow_copy.root / "results/baseline/baseline/perf_driver.py"
    assert driver.is_file() and not driver.is_symlink()
    identity = json.loads((workflow_copy.root / "results/baseline/baseline/run/identity/rank11.json").read_text())
    assert identity["node"] == 1 and identity["local_rank"] == 3 and identity["RANK_ID"] == "11"
    logs = (workflow_copy.root / "results/baseline/correctness/run/node1.log").read_text()
    assert "[rank 15]" in logs and "[rank 8]" in logs


def test_precision_failure_skips_everything_after_correctness_and_a_rerun_recovers(workflow_copy):
    overlay = base_overlay(sim={"precision_fail_rank": 5})
    result = workflow_copy.snakemake(overlay=overlay)
    # fail_on (by default failed, timeout, invalid): the failed gate makes the process exit 1, after the report and
    # the table were written; the skipped stages after it do not count
    assert_ended_by_fail_on(result, "baseline/correctness is failed")
    assert (
        "fail_on [failed, timeout, invalid, unreadable]: baseline/correctness is failed; exit status 1 "
        in result.stderr
    )
    correctness = workflow_copy.status("correctness")
    assert (
        correctness["state"] == "failed"
        and "rank 5" in correctness["reason"]
        and correctness["details"]["cause"] == "precision"
    )
    cause = {"stage": "correctness", "state": "failed", "reason": correctness["reason"]}
    for stage in LATER:
        status = workflow_copy.status(stage)
        assert status["state"] == "skipped" and status["root_cause"] == cause, status
        assert status["reason"].count("rank 5 did not pass") == 1, status["reason"]
    html = (workflow_copy.root / "results/baseline/report/report.html").read_text()
    assert "rank 5 did not pass" in html
    # The end-of-run table: one line per stage, the skipped ones by their root cause.
    table = result.stdout[result.stdout.index("Stages (sim data):") :]
    assert re.search(r"baseline\s+correctness\s+failed\s+rank 5 did not pass", table)
    assert re.search(r"baseline\s+pmu\s+skipped\s+root cause: correctness failed: rank 5", table)
    assert table.rstrip().endswith(
        "Report: results/baseline/report/report.html (Markdown: results/baseline/report/report.md)"
    )

    # A plain rerun with nothing to do answers from the states on disk: the table again, and fail_on (before, it said
    # "Nothing to be done" and exited 0 over the failed stage). A precision failure is no cause that goes by itself:
    # nothing is retried.
    again = workflow_copy.snakemake(overlay=overlay)
    assert_ended_by_fail_on(again, "baseline/correctness is failed")
    assert "Nothing to be done" in again.stdout + again.stderr and "Runs again" not in again.stderr
    assert re.search(r"baseline\s+correctness\s+failed\s+rank 5 did not pass", again.stdout)
    assert "Report: results/baseline/report/report.html (up to date: nothing needed to run)" in again.stdout

    overlay["sim"] = {"precision_fail_rank": None}
    result = workflow_copy.snakemake("-R", "correctness", overlay=overlay)
    assert result.returncode == 0, result.stderr[-3000:]
    assert workflow_copy.status("correctness")["state"] == "ok"
    assert workflow_copy.status("baseline")["state"] == "ok"


def test_dead_node_ends_in_timeout_within_budget_and_leaves_no_process(workflow_copy):
    overlay = base_overlay(sim={"dead_node": 1}, timeouts={"correctness": 6})
    started = time.monotonic()
    result = workflow_copy.snakemake(overlay=overlay)
    assert_ended_by_fail_on(result, "baseline/correctness is timeout")
    assert time.monotonic() - started < 120
    status = workflow_copy.status("correctness")
    assert (
        status["state"] == "timeout"
        and "6 s budget" in status["reason"]
        and status["details"]["cause"] == "infrastructure"
    )
    # Named as what it is: before, "ranks 8, ..., 15 had not passed" read as a precision problem.
    assert status["reason"].startswith("not run: node 1 never became ready (none of its ranks 8-15 started)"), status[
        "reason"
    ]
    assert "precision" not in status["reason"]
    html = (workflow_copy.root / "results/baseline/report/report.html").read_text()
    assert "The precision test was not run because node 1 never became ready" in html
    assert processes_mentioning(str(workflow_copy.root)) == []


def synthetic_timeline(root: Path, nodes: int = 2, per_node: int = 8, launches: int = 6, rank_id: bool = False) -> None:
    import sys

    from conftest import ROOT

    sys.path.insert(0, str(ROOT / "workflow" / "sim"))
    from simprof.prof_writer import write_prof

    for node in range(nodes):
        for local in range(per_node):
            rank = node * per_node + local
            t = 1_795_977_981_000_000_000 + node * 1_700_000
            events = [
                {
                    "name": "elastic_dispatch_kernel",
                    "task_type": "AI_VECTOR_CORE",
                    "stream": 1332,
                    "task_id": i + 1,
                    "start_ns": t + i * 50_000_000,
                    "dur_ns": 1_000_000
                    + 1000 * rank
                    + (40_000 if rank == nodes * per_node - 1 else 0),  # the last rank: slower by its own work
                }
                for i in range(launches)
            ]
            proc = {
                "pid": 1000 + rank,
                "hostname": f"n{node}",
                "device_id": local,
                "rank_id": rank if rank_id else None,
                "start_ns": t,
            }
            write_prof(root / f"node{node}", proc, events)


def test_analyze_mode_imports_in_place_and_skips_what_was_not_provided(workflow_copy, tmp_path):
    csv = tmp_path / "dispatch_latency.csv"
    rows = "".join(f"{r},{i},{10 + r},{int(i == 0)},{int(i != 0)}\n" for i in range(3) for r in range(16))
    csv.write_text("rank,iteration,elapsed_us,is_warmup,in_average\n" + rows)
    mtime = csv.stat().st_mtime
    timeline_dir = tmp_path / "timeline"
    synthetic_timeline(timeline_dir)
    result = workflow_copy.snakemake(
        overlay=base_overlay(mode="analyze", analyze={"latency_csv": str(csv), "timeline_dir": str(timeline_dir)})
    )
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
    timeline = workflow_copy.status("timeline")
    # no barrier kernel, two nodes: the last rank's own 40 us are seen against its own node's ranks (one clock), but
    # whether it ends last in the group compares ends across nodes, which no pure barrier establishes: listed with its
    # lead and why, not named, and never among the waiting ranks
    assert timeline["state"] == "ok" and timeline["source"] == "import", timeline
    assert (
        "Listed, not named: rank 15 own_work (40.0 us lead" in timeline["reason"]
        and "not established" in timeline["reason"]
    ), timeline
    straggler = json.loads((workflow_copy.root / "results/baseline/timeline/stats.json").read_text())["straggler"]
    assert straggler["evidence"] == "none" and [(c["evidence"], c["rank"]) for c in straggler["unnamed"]] == [
        ("own_work", 15)
    ]
    assert 15 not in straggler["waiting"]["ranks"]
    node_status = json.loads((workflow_copy.root / "results/baseline/timeline/nodes/nodes0-1/status.json").read_text())
    assert any("inferred" in v["detail"] for v in node_status["validations"])
    pmu_import = json.loads((workflow_copy.root / "results/baseline/pmu/import/status.json").read_text())
    assert pmu_import["state"] == "skipped" and "not provided in analyze mode" in pmu_import["reason"]
    manifest = json.loads((workflow_copy.root / "results/baseline/baseline/import/manifest.json").read_text())
    assert manifest["files"][0]["path"] == str(csv) and csv.stat().st_mtime == mtime
    assert "IMPORTED DATA" in (workflow_copy.root / "results/baseline/report/report.html").read_text()


def test_an_analyze_tree_with_a_directory_loop_gets_its_cross_check_and_its_report(workflow_copy, tmp_path):
    """Issue 58: ``ln -s .. <tree>/node0/PROF_x/loop`` made timeline_crosscheck die with ELOOP, and no report was
    built. The tree (rollback-journal dbs) is now read in place, the loop named, and the tree left as it was."""
    csv = tmp_path / "dispatch_latency.csv"
    rows = "".join(f"{r},{i},{10 + r},{int(i == 0)},{int(i != 0)}\n" for i in range(3) for r in range(16))
    csv.write_text("rank,iteration,elapsed_us,is_warmup,in_average\n" + rows)
    timeline_dir = tmp_path / "timeline"
    synthetic_timeline(timeline_dir, rank_id=True)
    prof = sorted((timeline_dir / "node0").glob("PROF_*"))[0]
    os.symlink("..", prof / "loop")
    before = sorted((str(p), p.lstat().st_size, p.lstat().st_mtime_ns) for p in timeline_dir.rglob("*"))
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    result = workflow_copy.snakemake(
        overlay=base_overlay(
            mode="analyze",
            analyze={"latency_csv": str(csv), "timeline_dir": str(timeline_dir)},
            timeline={"crosscheck": "auto"},
        ),
        env={**os.environ, "TMPDIR": str(tmp)},
    )
    assert result.returncode == 0, result.stderr[-3000:]
    assert workflow_copy.status("timeline")["state"] == "ok"
    cross = json.loads((workflow_copy.root / "results/baseline/timeline/crosscheck.json").read_text())
    if shutil.which("msprof-analyze"):
        assert cross["state"] == "ok" and cross["read"] == "in_place" and cross["their_ranks"] == 16, cross
        assert cross["left_out"] == [f"{prof / 'loop'}: {REVISITED}"], cross
    else:
        assert cross["state"] == "skipped" and "not installed" in cross["reason"], cross
    report = (workflow_copy.root / "results/baseline/report/report.html").read_text()
    if shutil.which("msprof-analyze"):
        assert "Not read: 1 entry of the tree" in report and "kept 16 ranks" in report
    assert sorted((str(p), p.lstat().st_size, p.lstat().st_mtime_ns) for p in timeline_dir.rglob("*")) == before
    assert not list(tmp.rglob("msprof_*.db"))  # nothing copied (nor left behind)


def longest_fractions(truth: dict, key: str, skip: int) -> dict[int, float]:
    """Per rank: in which fraction of the truth's launches (after ``skip``) its ``key`` is the longest."""
    launches = truth["launches"][skip:]
    longest = [max(launch["ranks"], key=lambda r: r[key])["rank"] for launch in launches]
    return {rank: longest.count(rank) / len(launches) for rank in sorted(set(longest))}


def test_a_slow_rank_is_where_the_truth_puts_it_and_a_spiky_rank_moves_only_the_tail(demo_run, workflow_copy):
    """One run per knob, same noise seed: only the knob differs. The run without a knob is the shared demo run (the
    same full-length config without sim knobs).

    Changed with the coupled event model: this test used to expect rank 7 to be the slowest rank in >= 90% of the
    iterations ("longest = slowest"). In a collective, rank 7's slow sends stretch every peer on the other node (they
    wait for its tokens), so the longest duration falls on rank 7 or on one of the ranks waiting for it. What the
    baseline and the timeline report must be what the model's events say: the longest-duration fractions equal the
    truth's, and the truth's root cause is rank 7. Naming the awaited rank is the timeline's next step (issue
    "Wait-aware localisation")."""
    demo, demo_result = demo_run
    assert demo_result.returncode == 0, demo_result.stderr[-3000:]
    per_iter = {
        "plain": json.loads((demo.root / "results/baseline/baseline/stats.json").read_text())["scopes"]["kernel"][
            "per_iteration_max_us"
        ]
    }
    for name, knobs in (("slow", {"slow_rank": 7, "slow_factor": 1.15}), ("spiky", {"spiky_rank": 3})):
        # full length: the fractions of iterations in which each rank is longest need the default 110 calls
        result = workflow_copy.snakemake(
            "--until", "timeline" if name == "slow" else "baseline", overlay=base_overlay(full_length=True, sim=knobs)
        )
        assert result.returncode == 0, result.stderr[-3000:]
        stats = json.loads((workflow_copy.root / "results/baseline/baseline/stats.json").read_text())["scopes"][
            "kernel"
        ]
        per_iter[name] = stats["per_iteration_max_us"]
        if name == "spiky":
            # what happened: the tail the baseline reports is the events' tail (p95 of the per-launch max), and
            # rank 3's spikes struck (a cause of its own in the truth, with its counterfactual cost)
            truth = json.loads(
                (workflow_copy.root / "results/baseline/baseline/run/latency/sim_truth.json").read_text()
            )
            maxima = [
                max(r["kernel_mode_us"] for r in launch["ranks"])
                for launch in truth["launches"][truth["run"]["warmup"] :]
            ]
            assert stats["per_iteration_max_us"]["p95"] == pytest.approx(
                float(pd.Series(maxima).quantile(0.95)), rel=1e-3
            )
            assert any(
                c["knob"] == "spiky_rank" and c["ranks"] == [3] and c["cost_timed_us_per_launch"] > 0
                for c in truth["causes"]
            ), truth["causes"]
        if name == "slow":
            truth = json.loads(
                (workflow_copy.root / "results/baseline/baseline/run/latency/sim_truth.json").read_text()
            )
            assert truth["root_causes"][0]["ranks"] == [7]
            expected = longest_fractions(truth, "kernel_mode_us", skip=truth["run"]["warmup"])
            # the truth is rounded to 1 ns: a near-tie between rank 7
            # and a rank waiting for its tokens may flip one launch
            one_launch = 1 / (len(truth["launches"]) - truth["run"]["warmup"])
            assert {
                int(r): v["fraction_slowest"] for r, v in stats["per_rank"].items() if v["fraction_slowest"]
            } == pytest.approx(expected, abs=one_launch + 1e-9)
            assert stats["slowest_rank"]["rank"] == max(expected, key=lambda r: (expected[r], -r)) == 7
            timeline = json.loads((workflow_copy.root / "results/baseline/timeline/stats.json").read_text())
            truth = json.loads(
                (workflow_copy.root / "results/baseline/timeline/run/latency/sim_truth.json").read_text()
            )
            expected = longest_fractions(truth, "task_us", skip=timeline["per_rank"]["0"]["skipped"])
            one_launch = 1 / timeline["longest_duration"]["launches_compared"]
            assert {int(r): f for r, f in timeline["longest_duration"]["per_rank_fraction"].items()} == pytest.approx(
                expected, abs=one_launch + 1e-9
            )
            # nobody arrives late; rank 7's own work is slower in every launch, and the peers that wait for its tokens
            # end late with it. A slowdown in every launch is the typical launch: the timeline's cost account does not
            # cost it (benchmarks/localisation_results.md, slow_rank), and it never blames another rank for it
            # Any other rank named is one the events say costs the group at least min_cost_us (a built-in spike of
            # its own, e.g. spikes/15 at 2.0 us per launch): never a victim of rank 7.
            true_cost: dict[int, float] = {}
            for cause in truth["causes"]:
                if len(cause["ranks"]) == 1:
                    rank = cause["ranks"][0]
                    true_cost[rank] = max(true_cost.get(rank, 0.0), cause["cost_us_per_launch"])
            waits = load_schema(ROOT / "workflow/schemas/config.schema.yaml")["properties"]["timeline"]["properties"]
            min_cost = waits["waits"]["properties"]["min_cost_us"]["default"]  # the run sets no timeline.waits
            strag = timeline["straggler"]
            assert strag["evidence"] != "late_arrival", strag
            assert strag["rank"] in (None, 7) or true_cost.get(strag["rank"], 0.0) >= min_cost, (strag, true_cost)
            named = {c["rank"] for c in timeline["causes"] if c["evidence"] in ("own_work", "late_arrival")}
            assert all(r == 7 or true_cost.get(r, 0.0) >= min_cost for r in named), (named, true_cost)
            assert stats["slowest_named"]["rank"] is None  # rank 7 is longest in a third of the iterations only
    plain, spiky = per_iter["plain"], per_iter["spiky"]
    assert abs(spiky["median"] - plain["median"]) / plain["median"] < 0.02
    assert spiky["p95"] > plain["p95"]


def test_one_missing_device_leaves_a_timeline_over_the_other_ranks_and_says_so(workflow_copy):
    # pipe_timeline off: not what this test reads (the demo and test_pipe_timeline.py cover it)
    result = workflow_copy.snakemake(
        overlay=base_overlay(sim={"missing_device": {"node": 1, "local_rank": 3}}, pipe_timeline={"runs": []})
    )
    assert result.returncode == 0, result.stderr[-3000:]
    timeline = workflow_copy.status("timeline")
    assert timeline["state"] == "ok" and "15/16 ranks (missing rank 11)" in timeline["reason"], timeline
    assert (
        timeline["details"]["coverage"]["missing"] == [11]
        and "the device side was not collected" in timeline["details"]["coverage"]["why_missing"]["11"]
    )
    assert any(not v["passed"] and "rank 11" in v["detail"] for v in timeline["validations"])
    stats = json.loads((workflow_copy.root / "results/baseline/timeline/stats.json").read_text())
    assert (
        len([r for r, d in stats["per_rank"].items() if d["launches"]]) == 15
        and stats["per_rank"]["11"]["launches"] == 0
    )
    assert stats["schema_versions"] == ["1.2.0"]  # META_DATA of the stand-in's dbs, recorded for provenance
    assert workflow_copy.status("pmu")["state"] == "ok"  # later stages proceed on the ranks present
    html = (workflow_copy.root / "results/baseline/report/report.html").read_text()
    assert 'id="coverage"' in html and "Partial coverage: 15/16 ranks (missing rank 11)" in html
    summary = json.loads((workflow_copy.root / "results/baseline/report/summary.json").read_text())
    assert summary["timeline"]["coverage"]["found"] == 15
    assert (
        "The msprof timeline covers 15/16 ranks (missing rank 11)"
        in (workflow_copy.root / "results/baseline/report/report.md").read_text()
    )


def place_real_sample(root: Path) -> Path:
    """The real custom-kernel export as a colleague shares it:
    <dir>/node0/PROF_<valid name>/mindstudio_profiler_output/."""
    from conftest import FIXTURES

    prof = root / "node0" / "PROF_000001_20260402160352000_ABCDEFGHIJ"
    shutil.copytree(FIXTURES / "msprof-real" / "custom_kernel_5_launches", prof)
    return prof


def test_a_shared_real_export_analyses_to_its_five_launches_and_reruns_when_it_changes(workflow_copy, tmp_path):
    prof = place_real_sample(tmp_path / "shared")
    overlay = {
        "mode": "analyze",
        "cluster": {"nodes": 1, "ranks_per_node": 1},
        "kernel": {"name": "matmul_kernel"},
        "analyze": {"timeline_dir": str(tmp_path / "shared")},
        "timeline": {"crosscheck": "off"},
    }
    result = workflow_copy.snakemake(overlay=base_overlay(**overlay))
    assert result.returncode == 0, result.stderr[-3000:]
    stats = json.loads((workflow_copy.root / "results/baseline/timeline/stats.json").read_text())
    assert stats["per_rank"]["0"]["launches"] == 5 and stats["per_rank"]["0"]["median_us"] == pytest.approx(
        348.697, abs=1e-9
    )
    assert stats["rank_mapping"]["inferred_ranks"] == [0] and stats["longest_duration"]["rank"] is None
    markdown = (workflow_copy.root / "results/baseline/report/report.md").read_text()
    assert "single rank" in markdown and "consistently" not in markdown and "Rank numbers are inferred" in markdown
    assert "not known: imported data" in markdown  # the shape row of the environment table (report/sections.py)
    quiet = workflow_copy.snakemake("-n", overlay=base_overlay(**overlay))
    assert "timeline_import" not in quiet.stdout + quiet.stderr
    csv = next((prof / "mindstudio_profiler_output").glob("op_statistic_*.csv"))
    csv.write_text(csv.read_text() + "\n")  # one file of the analysed tree changes
    again = workflow_copy.snakemake("-n", overlay=base_overlay(**overlay))
    plan = again.stdout + again.stderr
    assert "rule timeline_import" in plan and "Params have changed" in plan, plan[-2000:]


def test_missing_text_export_is_exported_and_profiler_errors_are_caught(workflow_copy):
    result = workflow_copy.snakemake("--until", "timeline", overlay=base_overlay(sim={"export_missing": True}))
    assert result.returncode == 0, result.stderr[-3000:]
    collect = json.loads((workflow_copy.root / "results/baseline/timeline/collect/status.json").read_text())
    assert len(collect["details"]["exported"]) == 16 and workflow_copy.status("timeline")["state"] == "ok"
    result = workflow_copy.snakemake("--until", "timeline", overlay=base_overlay(sim={"profiler_error": True}))
    assert_ended_by_fail_on(result, "baseline/timeline is invalid")
    status = workflow_copy.status("timeline")
    assert status["state"] == "invalid" and "[ERROR]" in status["reason"]


def test_dry_run_shows_parse_jobs_by_node_range_drill_downs_by_rank_and_the_merge(workflow_copy):
    result = workflow_copy.snakemake("-n", overlay=base_overlay(timeline={"nodes_per_job": 1, "detail_ranks": [3, 12]}))
    out = result.stdout
    assert out.count("rule timeline_parse:") == 2 and "nodes=0-0" in out and "nodes=1-1" in out, out
    assert out.count("rule timeline_rank:") == 2 and "rank=12" in out and "rule timeline:" in out
    grouped = workflow_copy.snakemake("-n", overlay=base_overlay())
    assert grouped.stdout.count("rule timeline_parse:") == 1 and "nodes=0-1" in grouped.stdout


def test_a_late_rank_is_what_the_group_waits_for_in_collect_and_in_analyze_mode(workflow_copy, tmp_path):
    """Issue "Wait-aware localisation": a host-late rank (default loop: synchronize_start) is named through the barrier
    kernel, the ranks that wait longest are not; the raw PROF_ directories of that run, analysed elsewhere (analyze
    mode, no sidecars), give the same answer."""
    result = workflow_copy.snakemake(
        "--until",
        "timeline",
        overlay=base_overlay(sim={"late_rank": 11, "late_us": 80}, timeline={"crosscheck": "off"}),
    )
    assert result.returncode == 0, result.stderr[-3000:]
    truth = json.loads((workflow_copy.root / "results/baseline/timeline/run/latency/sim_truth.json").read_text())
    assert truth["root_causes"][0]["ranks"] == [11]
    stats = json.loads((workflow_copy.root / "results/baseline/timeline/stats.json").read_text())
    strag = stats["straggler"]
    assert (strag["evidence"], strag["rank"]) == ("late_arrival", 11) and stats["coupling"]["state"] == "coupled", strag
    # the longest durations are the waiting ranks', never the late rank's; a short run may tie rank 11 among them
    # (1/7 of the launches each): then the label says a named cause is among them, not that it waits
    longest = stats["longest_duration"]
    assert longest["rank"] != 11
    assert longest["label"] == ("longest, a named cause" if 11 in longest["ranks"] else "waits longest"), longest
    # its cost: what the truth's barrier says rank 11 held the group per launch (its arrival minus the next one's, up to
    # the 80 us it was late), over the launches the timeline analysed
    analysed = stats["causes"][0]["launches"]
    held = []
    for launch in truth["launches"][-analysed:]:
        arrivals = sorted(r["arrival_us"] for r in launch["ranks"])
        last = max(launch["ranks"], key=lambda r: r["arrival_us"])
        held.append(min(80.0, arrivals[-1] - arrivals[-2]) if last["rank"] == 11 else 0.0)
    assert strag["cost_us_per_launch"] == pytest.approx(sum(held) / len(held), rel=0.1)
    assert 11 not in strag["waiting"]["ranks"] and stats["causes"][0]["rank"] == 11
    offset = stats["node_clock"]["1"]["offset_us"]
    assert abs(offset - (truth["clocks"]["1"]["offset_us"] - truth["clocks"]["0"]["offset_us"])) < 20
    raw = tmp_path / "collected"
    shutil.copytree(workflow_copy.root / "results/baseline/timeline/raw", raw)
    # the same launches as the collection analysed (imported data skips none by default)
    skipped = stats["per_rank"]["0"]["skipped"]
    analyze = base_overlay(
        mode="analyze", analyze={"timeline_dir": str(raw)}, timeline={"crosscheck": "off", "skip_launches": skipped}
    )
    # under the collected experiment's name, analyze mode is refused before anything runs: the report would mix both
    refused = workflow_copy.snakemake(overlay=analyze)
    assert (
        refused.returncode == 1
        and "experiment 'baseline'" in refused.stderr
        and "holds collect-mode results" in refused.stderr
    )
    assert (
        "e.g. baseline_analyzed" in refused.stderr
        and json.loads((workflow_copy.root / "results/baseline/timeline/stats.json").read_text()) == stats
    )
    result = workflow_copy.snakemake(overlay={**analyze, "experiment": "analyzed"})
    assert result.returncode == 0, result.stderr[-3000:]
    imported = json.loads((workflow_copy.root / "results/analyzed/timeline/stats.json").read_text())
    assert imported["source"] == "import" and (imported["straggler"]["evidence"], imported["straggler"]["rank"]) == (
        "late_arrival",
        11,
    )
    # the same causes and costs as the collection's own analysis
    assert [(c["evidence"], c["rank"], c["node"]) for c in imported["causes"]] == [
        (c["evidence"], c["rank"], c["node"]) for c in stats["causes"]
    ]
    assert [c["cost_us_per_launch"] for c in imported["causes"]] == pytest.approx(
        [c["cost_us_per_launch"] for c in stats["causes"]], rel=1e-6
    )
    html = (workflow_copy.root / "results/analyzed/report/report.html").read_text()
    assert "rank 11 arrives" in html and "<title>Entry wait per rank and launch (" in html
    assert (
        '<table id="causes">' in html
        and "<title>Causes by cost" in html
        and "results/analyzed/timeline/ranks/rank11/detail.json" in html
    )
    # issue 33: every snakemake command the report prints runs when copied (this run was started with
    # --configfile config/config.yaml overlay.yaml, which names the experiment): a dry run of each plans its target
    markdown = (workflow_copy.root / "results/analyzed/report/report.md").read_text()
    printed = {unescape(cmd) for cmd in re.findall(r"<code>(snakemake [^<]*)</code>", html)} | set(
        re.findall(r"`(snakemake [^`]*)`", markdown)
    )
    assert any("rank11/detail.json" in cmd for cmd in printed) and all(
        "--configfile config/config.yaml overlay.yaml" in cmd for cmd in printed
    ), printed
    for cmd in sorted(printed):
        words = shlex.split(cmd)
        dry = subprocess.run(
            [sys.executable, "-m", "snakemake", *words[1:], "-n"],
            cwd=workflow_copy.root,
            capture_output=True,
            text=True,
            timeout=120,
            env=without_slurm_probe(),
        )
        assert dry.returncode == 0 and "MissingRuleException" not in dry.stderr, (cmd, dry.stderr[-2000:])


def test_a_rank_whose_msprof_session_never_ended_is_incomplete_and_its_cut_tables_are_not_read(
    demo_run, workflow_copy, tmp_path
):
    """The demo's PROF_ directories analysed elsewhere, one of them from a process that died under msprof: its
    SESSION_TIME_INFO.endTimeNs is NULL and its TASK table is cut (here: end times that are no numbers). That
    rank is incomplete and says why; its tables are not read, so they cannot fail the parse of the other 15."""
    import sqlite3

    demo, _ = demo_run
    raw = tmp_path / "collected"
    shutil.copytree(demo.root / "results/baseline/timeline/raw", raw)
    prof = sorted((raw / "node1").glob("PROF_*"))[2]
    rank = json.loads(next(prof.glob("device_*/info.json.*")).read_text())["rank_id"]
    with sqlite3.connect(next(prof.glob("msprof_*.db"))) as conn:
        conn.execute("UPDATE SESSION_TIME_INFO SET endTimeNs = NULL")
        conn.execute("UPDATE TASK SET endNs = 'cut short'")
    result = workflow_copy.snakemake(
        "--until",
        "timeline",
        overlay=base_overlay(mode="analyze", analyze={"timeline_dir": str(raw)}, timeline={"crosscheck": "off"}),
    )
    assert result.returncode == 0, result.stderr[-3000:]
    timeline = workflow_copy.status("timeline")
    assert timeline["state"] == "ok" and f"15/16 ranks (missing rank {rank})" in timeline["reason"], timeline
    assert "session never ended" in timeline["details"]["coverage"]["why_missing"][str(rank)]
    stats = json.loads((workflow_copy.root / "results/baseline/timeline/stats.json").read_text())
    assert stats["per_rank"][str(rank)]["launches"] == 0 and stats["schema_versions"] == ["1.2.0"]
    assert sum(1 for d in stats["per_rank"].values() if d["launches"]) == 15


def test_two_runs_started_at_once_on_one_machine_each_get_their_own_ports(tmp_path):
    # Before: both used 29520/8399; the second failed with "ranks ... did not pass the precision check".
    copies = [copy_workflow(tmp_path / f"clone{i}") for i in (1, 2)]
    procs = []
    for wf in copies:
        cmd = [
            sys.executable,
            "-m",
            "snakemake",
            "--cores",
            "1",
            "--until",
            "correctness",
            "--configfile",
            "config/config.yaml",
        ]
        procs.append(
            subprocess.Popen(
                cmd, cwd=wf.root, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=without_slurm_probe()
            )
        )
    outputs = [proc.communicate(timeout=600)[0] for proc in procs]
    assert [proc.returncode for proc in procs] == [0, 0], [o[-2000:] for o in outputs]
    statuses = [wf.status("correctness") for wf in copies]
    assert [s["state"] for s in statuses] == ["ok", "ok"], [s["reason"] for s in statuses]
    ports = [set(s["details"]["ports"].values()) for s in statuses]
    assert not ports[0] & ports[1] and all(len(p) == 2 for p in ports)


def test_a_test_flag_the_test_does_not_have_is_refused_by_env_capture_by_name(workflow_copy):
    args = [*base_config_test_args(workflow_copy), "--frobnicate", "1"]
    result = workflow_copy.snakemake("--until", "correctness", overlay=base_overlay(deepep={"test_args": args}))
    assert_ended_by_fail_on(result, "baseline/env_capture is failed")
    env = workflow_copy.status("env_capture")
    assert env["state"] == "failed" and "--frobnicate (deepep.test_args)" in env["reason"]
    assert env["reason"].count("preflight on node") == 2  # every node checked, every problem listed
    correctness = workflow_copy.status("correctness")
    assert correctness["state"] == "skipped" and correctness["root_cause"]["stage"] == "env_capture"
    assert not (workflow_copy.root / "results/baseline/correctness/run/node0.log").exists()  # nothing was launched


def base_config_test_args(workflow_copy) -> list[str]:
    import yaml

    return yaml.safe_load((workflow_copy.root / "config/config.yaml").read_text())["deepep"]["test_args"]


def test_every_output_of_the_demo_run_has_the_mode_the_umask_gives(demo_run):
    """Every file the run wrote, its raw records included (the perf driver's per-rank api, identity and routing
    files, the stand-in's latency CSV), is 0666 less the umask, as a plain open() makes it: tempfile's 0600 would lock
    a lead out of a run on a shared filesystem."""
    workflow_copy, result = demo_run
    assert result.returncode == 0, result.stderr[-3000:]
    umask = os.umask(0)
    os.umask(umask)
    expected = 0o666 & ~umask
    files = [p for p in (workflow_copy.root / "results").rglob("*") if p.is_file() and not p.is_symlink()]
    wrong = sorted(
        str(p.relative_to(workflow_copy.root))
        for p in files
        if p.stat().st_mode & 0o666 != expected and not os.access(p, os.X_OK)
    )
    assert len(files) > 100 and not wrong, (oct(expected), wrong[:10], len(wrong))
