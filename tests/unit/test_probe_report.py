"""The probe's config checks and command line, the MindStudio Insight artifact guide and the open boundaries."""

import os
import shutil
from pathlib import Path

import pytest

from conftest import FIXTURES
from dispatchprof.report.artifacts import KINDS, artifact_guide
from dispatchprof.report.context import REPLAY_CHECK, open_boundaries
from dispatchprof.shell.config import probe_problems
from dispatchprof.shell.status import Status, Validation
from dispatchprof.tools.simulator import judge, simulator_command, tool_timeout_min

PROBE = {
    "enabled": True,
    "command": ["python3", "p.py"],
    "soc_version": "Ascend950PR_9599",
    "entry": "msopprof",
    "top": 10,
}


def test_probe_needs_a_command_and_an_explicit_soc_and_refuses_950():
    assert probe_problems(PROBE) == []
    assert probe_problems({**PROBE, "enabled": False, "soc_version": None, "command": []}) == []
    assert any("probe.soc_version must be set" in p for p in probe_problems({**PROBE, "soc_version": None}))
    assert any("'950' is not a SoC name" in p for p in probe_problems({**PROBE, "soc_version": "950"}))
    assert any("probe.command is empty" in p for p in probe_problems({**PROBE, "command": []}))


def test_simulator_timeout_is_whole_minutes_within_the_budget():
    assert [tool_timeout_min(s) for s in (5, 60, 119, 1800, 10**7)] == [1, 1, 1, 30, 2880]
    argv = simulator_command("msprof op", "Ascend950PR_9599", Path("/r/raw"), 1800, ["python3", "p.py", "--x"])
    assert argv == [
        "msprof",
        "op",
        "simulator",
        "--soc-version=Ascend950PR_9599",
        "--output=/r/raw",
        "--timeout=30",
        "python3",
        "p.py",
        "--x",
    ]
    named = simulator_command("msopprof", "Ascend950PR_9599", Path("/r/raw"), 1800, ["./probe"], "build_descriptors*")
    assert named == [
        "msopprof",
        "simulator",
        "--soc-version=Ascend950PR_9599",
        "--output=/r/raw",
        "--timeout=30",
        "--kernel-name=build_descriptors*",
        "./probe",
    ]
    with pytest.raises(ValueError, match="refuses more than 200"):
        simulator_command("msopprof", "A", Path("/" + "x" * 300), 60, ["p"])


def test_judge_names_refusals_timeouts_and_missing_output():
    assert judge("[ERROR] --soc-version=X is invalid\n", 255, False, 0, 600, "msopprof").state == "failed"
    assert (
        "refused the probe: [ERROR] --soc-version=X"
        in judge("[ERROR] --soc-version=X is invalid\n", 255, False, 0, 600, "msopprof").reason
    )
    assert (
        judge(
            "[INFO]  The timeout has reached and the application will be forcibly killed.", 0, False, 1, 600, "msopprof"
        ).state
        == "timeout"
    )
    assert judge("", None, True, 0, 600, "msopprof").state == "timeout"
    assert judge("[INFO] done", 0, False, 0, 600, "msopprof").state == "invalid"
    assert judge("[INFO] done", 0, False, 1, 600, "msopprof").state == "ok"
    # a run that says its results are incomplete is not ok, even with an OPPROF_ tree (docs/formats.md §2 failure lines)
    partial = judge("[WARNING] May cause generating performance files to fail\n", 0, False, 1, 600, "msopprof")
    assert partial.state == "failed" and "May cause generating performance files to fail" in partial.reason


def status(stage, state, reason="r", **kw):
    return Status(stage=stage, experiment="e", state=state, reason=reason, toolchain="sim", **kw)


def test_open_boundaries_list_refused_and_disabled_stages_metrics_replay_and_network():
    replay = [Validation(REPLAY_CHECK, True, "error", "clean")]
    statuses = {
        "pmu": status("pmu", "ok"),
        "pcsampling": status("pcsampling", "failed", "msopprof refused to run: [ERROR] x"),
        "probe": status("probe", "disabled", "probe.enabled is false"),
    }
    items = open_boundaries(
        statuses, {"pmu": status("pmu", "ok", validations=replay)}, {"pmu": ["aiv_mte3_active_bw(GB/s)"]}
    )
    text = "\n".join(items)
    assert "pcsampling: failed: msopprof refused to run: [ERROR] x" in text
    assert "probe: not run (disabled): probe.enabled is false" in text
    assert "pmu: not provided (absent or NA, never read as 0): aiv_mte3_active_bw(GB/s)" in text
    assert "Kernel replay verified in this run by pmu" in text and "unresolved" not in text
    assert "Network evidence" in text and "SHMEM/URMA" in text
    # a new stage is included by its status alone: its replay check and its details.not_provided
    statuses["pipe_timeline"] = status(
        "timeline", "timeout", "PipeTimeline replay hung", validations=replay, details={"not_provided": ["trace.json"]}
    )
    text = "\n".join(open_boundaries(statuses))
    assert (
        "pipe_timeline: timeout: PipeTimeline replay hung" in text
        and "pipe_timeline: not provided (absent or NA, never read as 0): trace.json" in text
    )
    assert (
        "PMU replay compatibility of the full kernel unresolved" in text
    )  # pmu's collect part not given: nothing verified


def test_artifact_guide_lists_every_artifact_with_a_working_link_or_an_absolute_path(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    exp = Path("results/e")
    prof = exp / "timeline/raw/node0/PROF_000001_20260301120000000_ABCDEFGH"
    (prof / "device_0").mkdir(parents=True)
    (prof / "device_0" / "inner.json").write_text("{}")
    opp = exp / "pmu/raw/node0/OPPROF_20260301120000_ABCDEFGHIJKLMNOP"
    opp.mkdir(parents=True)
    for name in ("visualize_data.bin", "PipeUtilization_20260301120000123.csv", "trace.json", "OpBasicInfo.csv"):
        (opp / name).write_text("x")
    (exp / "baseline/collect").mkdir(parents=True)
    (exp / "baseline/collect/dispatch_latency.csv").write_text("rank\n")
    (exp / "baseline/collect/sim_truth.json").write_text("{}")
    imported = tmp_path / "elsewhere"
    shutil.copytree(FIXTURES / "msopprof/simulator/single", imported)
    report = exp / "report"
    report.mkdir()
    guide = artifact_guide(exp, {"probe_dir": str(imported), "pmu_dir": None}, report, None, "sim")
    assert guide["insight_version"] == "not recorded"
    assert guide["kinds_found"] == list(KINDS)  # every kind present once, in the guide's order
    rows = [a for g in guide["groups"] for a in g["artifacts"]]
    for a in rows:
        if a["source"] == "results":
            assert (report / a["href"]).exists() and not os.path.isabs(a["href"])
        else:
            assert a["href"] is None and os.path.isabs(a["shown"]) and Path(a["shown"]).exists()
    shown = {Path(a["path"]).name for a in rows}
    assert "inner.json" not in shown and "OpBasicInfo.csv" not in shown and "sim_truth.json" not in shown
    sims = [a for g in guide["groups"] if g["kind"] == "simulator_trace" for a in g["artifacts"]]
    assert len(sims) == 3 and all(a["source"] == "import" for a in sims)  # summary + 2 per-core traces, read in place
    assert artifact_guide(exp, {}, report, "8.0.RC1", "cann")["insight_version"] == "8.0.RC1"


def test_imported_pmu_data_is_not_called_replay_verified():
    imported = {"pmu": status("pmu", "ok", source="import")}
    assert "Kernel replay not verified here: the op-profiler data was imported" in "\n".join(open_boundaries(imported))
    missing = {"pmu": status("pmu", "skipped", source="import")}
    assert "PMU replay compatibility of the full kernel unresolved" in "\n".join(open_boundaries(missing))


def test_the_answer_states_the_probe_as_a_local_hypothesis_only_when_it_is_ok():
    from dispatchprof.report.summary import evidence_paragraph

    statuses = {s: status(s, "ok") for s in ("correctness", "baseline", "timeline", "pmu", "pcsampling")}
    cm = {"total": 68, "per_core": {"core0.veccore0": 68}, "top_pcs": [{"pc": "0x10f86a00", "count": 17}]}
    probe = {"label": "simulator, single card, local probe", "cachemiss": cm}
    sentence = (
        "A local probe under msopprof simulator (simulator, single card, "
        "local probe) counted 68 I-cache misses, most at 0x10f86a00 (17)"
    )
    assert sentence in evidence_paragraph({**statuses, "probe": status("probe", "ok")}, "sim", 16, {"probe": probe})
    assert "local probe" not in evidence_paragraph(
        {**statuses, "probe": status("probe", "disabled")}, "sim", 16, {"probe": probe}
    )


def test_a_stage_of_several_replay_runs_is_verified_run_by_run():
    replay = [Validation(REPLAY_CHECK, True, "error", "clean")]
    statuses = {"pmu": status("pmu", "ok"), "pipe_timeline": status("pipe_timeline", "ok")}
    parts = {
        "pmu": status("pmu", "ok", validations=replay),
        "pipe_timeline/pipe": status("pipe_timeline", "ok", validations=replay),
        "pipe_timeline/instr": status("pipe_timeline", "failed", "InstrTimeline refused", validations=replay),
    }
    text = "\n".join(open_boundaries(statuses, parts))
    assert "Kernel replay verified in this run by pmu, pipe_timeline/pipe: " in text
    assert "; not verified by pipe_timeline/instr" in text
