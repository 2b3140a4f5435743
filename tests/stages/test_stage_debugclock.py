"""The debugclock stage as a library function, without Snakemake (the whole DAG: tests/workflow/test_debugclock.py)."""

import json

from conftest import FIXTURES, stage_run
from dispatchprof.stages.debugclock import debugclock, debugclock_validations

OUTPUTS = {"segments": "segments.parquet", "per_rank": "per_rank.parquet", "stats": "debugclock.json"}
ANALYZE = {"mode": "analyze", "cluster": {"nodes": 2, "ranks_per_node": 1}}


def test_imported_legacy_csvs_are_summarised(tmp_path):
    run = stage_run(
        tmp_path, "debugclock", outputs=OUTPUTS, overlay={**ANALYZE, "analyze": {"debugclock_dir": str(FIXTURES / "deepep" / "debugclock" / "legacy")}}
    )
    status = debugclock(run, {})
    assert status.state == "ok", status.reason
    assert status.reason.startswith("legacy_csv: 2 ranks")
    stats = json.loads(run.outputs["stats"].read_text())
    assert stats["overhead"] is None and stats["data_source"] == "import"


def test_no_directory_given_is_skipped_and_an_empty_one_is_invalid(tmp_path):
    run = stage_run(tmp_path, "debugclock", outputs=OUTPUTS, overlay=ANALYZE)
    assert debugclock(run, {}).state == "skipped"
    run = stage_run(tmp_path, "debugclock", outputs=OUTPUTS, overlay={**ANALYZE, "analyze": {"debugclock_dir": str(tmp_path)}})
    status = debugclock(run, {})
    assert status.state == "invalid" and status.reason.startswith("no DebugClock file under")


def test_clipping_and_dropped_markers_are_warnings():
    checks = debugclock_validations({"role_mismatches": [], "clipped": {"missing": 1}, "dropped_markers": 3})
    assert [(v.check, v.severity) for v in checks] == [("legacy analyzer clipping", "warning"), ("AKL recorder capacity", "warning")]
