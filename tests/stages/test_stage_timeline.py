"""The timeline merge as a library function, without Snakemake (the whole DAG: tests/workflow)."""

import json

import pyarrow as pa
import pyarrow.parquet as pq

from conftest import TIMELINE_MERGE_OUTPUTS, stage_run, write_part_status
from dispatchprof.analysis.timeline import ChromeTrace
from dispatchprof.stages.timeline import fold_coverage, timeline, without_top_cause

OUTPUTS = TIMELINE_MERGE_OUTPUTS


def coverage_table(rows):
    return pa.Table.from_pylist(rows)


def test_coverage_folds_the_groups_and_says_why_a_rank_is_missing():
    found = [{"global_rank": r, "state": "found", "detail": ""} for r in range(3)]
    lost = [{"global_rank": 3, "state": "missing", "detail": "no PROF_ directory"}]
    placeholder = pa.table({"placeholder": pa.array([], pa.string())})  # a skipped group's file
    fold = fold_coverage([coverage_table(found), placeholder, coverage_table(lost)], world=4, min_fraction=0.5)
    assert fold.covered.found == [0, 1, 2] and fold.covered.missing == [3] and fold.covered.enough
    assert fold.summary["why_missing"] == {"3": "no PROF_ directory"}
    assert fold.table.num_rows == 4 and fold.absent_rows == lost


def test_a_part_not_ok_folds_into_the_stage_and_writes_the_coverage_it_has(tmp_path):
    parts = [
        write_part_status(tmp_path / f"nodes{g}" / "status.json", "timeline", state, part=f"nodes{g}")
        for g, state in (("0-0", "ok"), ("1-1", "failed"))
    ]
    coverage = []
    for g, rows in (
        ("0-0", [{"global_rank": 0, "state": "found", "detail": ""}]),
        ("1-1", [{"global_rank": 8, "state": "missing", "detail": "node 1 failed"}]),
    ):
        coverage.append(tmp_path / f"nodes{g}" / "coverage.parquet")
        pq.write_table(coverage_table(rows), coverage[-1])
    run = stage_run(
        tmp_path,
        "timeline",
        inputs={"parts": parts, "coverage": coverage},
        outputs=OUTPUTS,
        params={"needed": [], "groups": ["0-0", "1-1"]},
    )
    status = timeline(run)
    assert status.state == "failed" and status.upstream == {"nodes0-0": "ok", "nodes1-1": "failed"}
    assert pq.read_table(run.outputs["coverage"]).num_rows == 2
    stats = json.loads(run.outputs["stats"].read_text())
    assert stats["coverage"]["why_missing"] == {"8": "node 1 failed"} and "causes" not in stats
    assert not run.outputs["trace"].exists()  # StageRun.finish writes its placeholder


def test_too_few_ranks_is_invalid_and_names_the_coverage_key(tmp_path):
    part = write_part_status(tmp_path / "nodes0-1" / "status.json", "timeline", "ok", part="nodes0-1")
    rows = [{"global_rank": 0, "state": "found", "detail": ""}] + [
        {"global_rank": r, "state": "missing", "detail": "no launches"} for r in range(1, 16)
    ]
    pq.write_table(coverage_table(rows), tmp_path / "coverage.parquet")
    run = stage_run(
        tmp_path,
        "timeline",
        inputs={"parts": [part], "coverage": [tmp_path / "coverage.parquet"]},
        outputs=OUTPUTS,
        params={"needed": [], "groups": ["0-1"]},
    )
    status = timeline(run)
    assert status.state == "invalid" and "stats.min_rank_coverage" in status.reason


def test_the_replay_without_a_cause_or_between_ranks_that_do_not_wait_is_an_empty_trace_that_says_why():
    trace = ChromeTrace([], {"toolchain": "sim", "aligned_on": "x", "causes_track": {"causes": []}})
    nothing = without_top_cause(trace, [], {"coupling": {"state": "coupled"}, "struck_by": []})
    alone = without_top_cause(trace, [{"evidence": "own_work"}], {"coupling": {"state": "not_coupled"}})
    for replay, why in ((nothing, "no named cause"), (alone, "do not wait for each other")):
        out = json.loads(replay.json_text())
        assert out["traceEvents"] == [] and out["metadata"]["toolchain"] == "sim"
        assert out["metadata"]["replay"]["without"] is None and why in out["metadata"]["replay"]["why"]
        assert set(out["metadata"]) == {"toolchain", "replay"}  # nothing said of events it does not hold
