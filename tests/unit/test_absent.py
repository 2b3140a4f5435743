"""Analyze mode's stand-in for the stages with nothing to analyse (dispatchprof.stages.absent, rule not_provided): which
stages it covers, and that it writes what the stages' own jobs wrote before it existed (texts recorded from those
jobs' status files; the report and summary.json render them)."""

import copy

import yaml

from conftest import ROOT
from dispatchprof.stages.absent import absent_stages, absent_statuses

DEFAULT = yaml.safe_load((ROOT / "config" / "config.yaml").read_text())


def analyze_config(**given):
    cfg = copy.deepcopy(DEFAULT)
    cfg["mode"] = "analyze"
    cfg["analyze"].update(given)
    return cfg


def test_collect_mode_has_no_absent_stage():
    assert absent_stages(DEFAULT) == ()


def test_analyze_mode_stands_in_for_collection_stages_and_for_every_stage_not_given():
    assert absent_stages(analyze_config(timeline_dir="/data")) == (
        "env_capture",
        "build",
        "correctness",
        "baseline",
        "pmu",
        "pcsampling",
        "pipe_timeline",
        "probe",
        "debugclock",
    )
    given = absent_stages(analyze_config(timeline_dir="/data", pmu_dir="/p", latency_csv="/l.csv", debugclock_dir="/d"))
    assert given == ("env_capture", "build", "correctness", "pcsampling", "pipe_timeline", "probe")


def test_the_timeline_is_never_stood_in_for():
    # without a timeline the analysis has no subject: its own jobs run and say so
    assert "timeline" not in absent_stages(analyze_config(timeline_dir=None))


def test_statuses_are_those_the_stages_own_jobs_wrote():
    cfg = analyze_config(timeline_dir="/data")
    seen = {
        rule: (s.state, s.reason, s.upstream, s.source, s.part)
        for stage in absent_stages(cfg)
        for rule, s in absent_statuses(stage, "baseline", cfg).items()
    }
    assert seen["env_capture"] == (
        "disabled",
        "env capture is not part of analyze mode: the artifacts were collected elsewhere",
        {},
        "import",
        None,
    )
    assert seen["build"][:2] == ("disabled", "no build in analyze mode: the artifacts were collected elsewhere")
    assert seen["correctness"][:2] == (
        "disabled",
        "precision is not checked in analyze mode: the artifacts were collected elsewhere",
    )
    assert seen["pmu_import"] == (
        "skipped",
        "not provided in analyze mode (analyze.pmu_dir is null)",
        {},
        "import",
        "import",
    )
    assert seen["pmu"] == (
        "skipped",
        "pmu_import: not provided in analyze mode (analyze.pmu_dir is null)",
        {"pmu_import": "skipped"},
        "import",
        None,
    )
    assert seen["baseline"][1] == "baseline_import: not provided in analyze mode (analyze.latency_csv is null)"
    assert seen["debugclock"] == ("skipped", "not provided: analyze.debugclock_dir is not set", {}, "import", None)
    assert set(seen) == {"env_capture", "build", "correctness", "debugclock"} | {
        f"{s}{p}" for s in ("baseline", "pmu", "pcsampling", "pipe_timeline", "probe") for p in ("", "_import")
    }


def test_pipe_timeline_lists_its_import_run_as_its_own_job_did():
    status = absent_statuses("pipe_timeline", "baseline", analyze_config(timeline_dir="/data"))["pipe_timeline"]
    assert status.details == {
        "runs": {
            "import": {"state": "skipped", "reason": "not provided in analyze mode (analyze.pipe_timeline_dir is null)"}
        }
    }
    assert status.validations == [] and status.root_cause is None
