"""Stage pipe_timeline on the simulated cluster (2 nodes x 8 ranks): PipeTimeline and InstrTimeline as two runs, each
parsed; per-role pipe busy time against the event model's truth;
a refusal explained; the same raw tree in analyze mode."""

import json
import shutil
import time
from pathlib import Path

import pandas as pd
import pytest

from conftest import assert_ended_by_fail_on, base_overlay, copy_workflow
from dispatchprof.formats.trace_json import read_trace_json

BOTH = {"runs": ["PipeTimeline", "InstrTimeline"], "instr_timeline_pipe": "mte2|mte3|vector"}
TRACE_PIPES = {"vec": "VECTOR", "scalar": "SCALAR", "mte2": "MTE2", "mte3": "MTE3"}


@pytest.fixture(scope="module")
def both(tmp_path_factory):
    """One demo run with both timelines configured, shared by the assertions below."""
    wf = copy_workflow(tmp_path_factory.mktemp("pipe_timeline") / "wf")
    result = wf.snakemake(overlay=base_overlay(pipe_timeline=BOTH), timeout=1200)
    assert result.returncode == 0, result.stderr[-3000:]
    return wf


def read(wf, path):
    return json.loads((wf.root / "results/baseline" / path).read_text())


def test_both_configured_means_two_runs_each_with_its_own_metric_and_raw_dir(both):
    pipe, instr = (read(both, f"pipe_timeline/{k}/collect/status.json") for k in ("pipe", "instr"))
    assert pipe["state"] == instr["state"] == "ok"
    metrics = lambda s: [a for a in s["command"] if a.startswith("--aic-metrics=")]  # noqa: E731
    assert metrics(pipe) == ["--aic-metrics=PipeTimeline"] and metrics(instr) == ["--aic-metrics=InstrTimeline"]
    assert "--instr-timeline-pipe=mte2|mte3|vector" in instr["command"]
    assert not any(a.startswith("--instr-timeline-pipe") for a in pipe["command"])
    assert any(a.endswith("pipe_timeline/pipe/raw/node0") for a in pipe["command"])
    assert any(a.endswith("pipe_timeline/instr/raw/node0") for a in instr["command"])
    pmu = read(both, "pmu/collect/status.json")  # the PMU run no longer carries a timeline
    assert not any("Timeline" in a for a in metrics(pmu))
    stage = read(both, "pipe_timeline/status.json")
    assert stage["state"] == "ok" and stage["details"]["runs"] == {"PipeTimeline": "ok", "InstrTimeline": "ok"}


def test_per_role_busy_time_is_the_replayed_model_on_the_sampled_cores(both):
    cores = pd.read_parquet(both.root / "results/baseline/pipe_timeline/cores.parquet")
    truth_file = next((both.root / "results/baseline/pipe_timeline/pipe/run").rglob("sim_truth.json"))
    replay = {
        r["rank"]: {c["block_id"]: c for c in r["cores"]}
        for r in json.loads(truth_file.read_text())["replays"][0]["ranks"]
    }
    mine = cores[cores["run"] == "PipeTimeline"]
    assert sorted(mine["rank"].unique()) == list(range(16))
    assert mine.groupby("rank").size().eq(6).all()  # the tool shows 6 cores
    for row in mine.itertuples():
        core = replay[row.rank][row.core]
        assert row.role == core["role"]  # core<N> = block_id N, as the stand-in writes and core_mapping assumes
        for key, pipe in TRACE_PIPES.items():
            assert mine.at[row.Index, f"busy_us.{pipe}"] == pytest.approx(core["pipes_us"][key], abs=0.01)
    summary = read(both, "report/summary.json")["pipe_timeline"]
    roles = summary["roles"]
    for role in ("TokenCopyToBuffer", "URMASendToken", "CalCumSum"):
        seen = mine[mine["role"] == role]
        assert roles[role]["cores_seen"] == seen["core"].nunique() > 0
        assert roles[role]["coverage"] == f"{seen['core'].nunique()}/{roles[role]['cores_of_role']} cores"
        assert roles[role]["pipes"]["MTE2"]["busy_us_median"] == pytest.approx(seen["busy_us.MTE2"].median(), abs=0.001)
    # 6 cores spread over 56: SelfCopyToken (4 cores) is not sampled, and says so
    assert roles["SelfCopyToken"]["cores_seen"] == 0 and roles["SelfCopyToken"]["pipes"] is None
    overlap = read(both, "pipe_timeline/pipe_timeline.json")["roles"]["TokenCopyToBuffer"]["overlap"]
    assert (
        0
        < overlap["MTE2&VECTOR"]["overlap_us_median"]
        <= roles["TokenCopyToBuffer"]["pipes"]["VECTOR"]["busy_us_median"]
    )


def test_instr_timeline_is_narrowed_to_the_configured_pipes_and_ranked(both):
    stats = read(both, "pipe_timeline/pipe_timeline.json")
    instr = stats["runs"]["InstrTimeline"]
    assert set(instr["top_instructions"]) == {"MTE2", "MTE3", "VECTOR"}  # no SCALAR: --instr-timeline-pipe
    for rows in instr["top_instructions"].values():
        totals = [r["total_us"] for r in rows]
        assert totals == sorted(totals, reverse=True) and len(rows) <= 10
    # the ranking is the traces' own sum: recompute the top MTE2 instruction from every InstrTimeline trace.json
    events = pd.concat(
        [read_trace_json(Path(both.root, t) if not Path(t).is_absolute() else Path(t)).events for t in instr["traces"]]
    )
    mte2 = events[events["pipe"] == "MTE2"].groupby(["name", "pc_addr"])["dur_us"].sum().max()
    assert instr["top_instructions"]["MTE2"][0]["total_us"] == pytest.approx(mte2, abs=0.01)
    html = (both.root / "results/baseline/report/report.html").read_text()
    assert "keeps at most 1024 PCs per pipe" in html and "SIMT/SIMD VF" in html
    assert "pipes run in parallel: never sum" in html and "not network bandwidth" in html
    md = (both.root / "results/baseline/report/report.md").read_text()
    assert "| TokenCopyToBuffer | 2/18 cores | 16 |" in md


def test_a_refused_timeline_is_failed_with_the_tools_message_and_explained(tmp_path):
    wf = copy_workflow(tmp_path / "wf")
    result = wf.snakemake("--until", "pipe_timeline", overlay=base_overlay(sim={"pipe_timeline": "fused"}), timeout=900)
    assert_ended_by_fail_on(result, "baseline/pipe_timeline is failed")
    status = wf.status("pipe_timeline")
    assert status["state"] == "failed"
    assert "[ERROR] PipeTimeline and InstrTimeline are not supported for comm-compute fused" in status["reason"]
    assert "expected outcome" in status["reason"] and "not known" in status["reason"]


def test_analyze_mode_reads_an_imported_pipe_timeline_tree_in_place(both, tmp_path):
    raw = tmp_path / "imported"
    shutil.copytree(both.root / "results/baseline/pipe_timeline/pipe/raw", raw)
    wf = copy_workflow(tmp_path / "wf")
    result = wf.snakemake(
        "--until",
        "pipe_timeline",
        overlay=base_overlay(mode="analyze", analyze={"pipe_timeline_dir": str(raw)}),
        timeout=600,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    status = wf.status("pipe_timeline")
    assert status["state"] == "ok" and status["source"] == "import"
    imported = json.loads((wf.root / "results/baseline/pipe_timeline/pipe_timeline.json").read_text())
    collected = read(both, "pipe_timeline/pipe_timeline.json")
    assert imported["roles_from"] == "PipeTimeline"
    assert {r: v["pipes"] for r, v in imported["roles"].items()} == {
        r: v["pipes"] for r, v in collected["roles"].items()
    }


def test_a_hanging_pmu_replay_skips_both_timeline_runs_instead_of_waiting_out_their_timeouts(tmp_path):
    wf = copy_workflow(tmp_path / "wf")
    started = time.monotonic()
    overlay = base_overlay(sim={"replay": "hang"}, timeouts={"pmu": 8}, pipe_timeline=BOTH)
    result = wf.snakemake("--until", "pipe_timeline", overlay=overlay, timeout=900)
    # exit 0: fail_on looks at the stages of the end-of-run table, and up to pipe_timeline the pmu stage is not run
    # (its collection, pmu/collect, timed out; pipe_timeline is skipped, which fail_on does not count by default)
    assert result.returncode == 0, result.stderr[-3000:]
    assert time.monotonic() - started < 200
    status = wf.status("pipe_timeline")
    assert status["state"] == "skipped" and status["root_cause"]["stage"] == "pmu/collect"
    assert status["reason"].count("kernel replay may not be compatible") == 1


def test_a_damaged_imported_trace_leaves_its_rank_out_and_names_the_file(both, tmp_path):
    raw = tmp_path / "imported"
    shutil.copytree(both.root / "results/baseline/pipe_timeline/pipe/raw", raw)
    victim = sorted(raw.rglob("trace.json"))[3]
    victim.write_text(victim.read_text()[:500])
    wf = copy_workflow(tmp_path / "wf")
    result = wf.snakemake(
        "--until",
        "pipe_timeline",
        overlay=base_overlay(mode="analyze", analyze={"pipe_timeline_dir": str(raw)}),
        timeout=600,
    )
    assert result.returncode == 0, (result.stdout + result.stderr)[-3000:]  # the stage is ok on the other ranks
    status = wf.status("pipe_timeline")
    # one bad rank never costs the others: its rank is left out, named with its file, the stage goes on
    assert (
        status["state"] == "ok"
        and f"{victim}: line 1: not valid JSON" in status["reason"]
        and "left out, their files refused: rank " in status["reason"]
    ), status
    assert any(not v["passed"] and str(victim) in v["detail"] for v in status["validations"])
