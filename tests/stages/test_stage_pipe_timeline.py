"""The pipe_timeline stage as a library function, without Snakemake
(the whole DAG: tests/workflow/test_pipe_timeline.py)."""

import json
import shutil

from conftest import FIXTURES, stage_run
from dispatchprof.shell.status import Status
from dispatchprof.stages.pipe_timeline import pipe_timeline

OUTPUTS = {"cores": "cores.parquet", "stats": "stats.json"}
ONE_RANK = {"mode": "analyze", "cluster": {"nodes": 1, "ranks_per_node": 1}}


def part(state, reason="a test's part", **fields):
    return Status(stage="pipe_timeline", experiment="baseline", state=state, reason=reason, toolchain="sim", **fields)


def imported_tree(tmp_path):
    """The 3-launch OPPROF_ fixture under node0/, each launch with the PipeTimeline trace.json fixture."""
    root = tmp_path / "pt"
    shutil.copytree(FIXTURES / "msopprof" / "launches3", root / "node0")
    for launch in (root / "node0").glob("OPPROF_*/*/[0-9]"):
        shutil.copy(FIXTURES / "msopprof" / "pipe_timeline" / "trace_pipe.json", launch / "trace.json")
    return root


def test_an_imported_pipe_timeline_is_tabulated_per_role(tmp_path):
    run = stage_run(
        tmp_path,
        "pipe_timeline",
        outputs=OUTPUTS,
        overlay={**ONE_RANK, "analyze": {"pipe_timeline_dir": str(imported_tree(tmp_path))}},
    )
    status = pipe_timeline(run, {"pipe_timeline_import": part("ok")})
    assert status.state == "ok", status.reason
    stats = json.loads(run.outputs["stats"].read_text())
    assert stats["roles_from"] == "PipeTimeline" and stats["runs"]["PipeTimeline"]["state"] == "ok"
    assert status.reason.startswith("import: ok; PipeTimeline: ok (")


def test_runs_skipped_for_one_upstream_cause_say_it_once(tmp_path):
    run = stage_run(tmp_path, "pipe_timeline", outputs=OUTPUTS)
    parts = {f"{kind}_collect": part("skipped", "timeline: failed") for kind in ("pipe", "instr")}
    status = pipe_timeline(run, parts)
    assert (status.state, status.reason) == ("skipped", "pipe_collect: timeline: failed (and 1 more run skipped)")


def test_no_configured_run_is_disabled(tmp_path):
    run = stage_run(tmp_path, "pipe_timeline", outputs=OUTPUTS)
    status = pipe_timeline(run, {"pipe_collect": part("disabled")})
    assert (status.state, status.reason) == ("disabled", "pipe_timeline.runs is empty")


def test_one_rank_with_a_truncated_trace_is_left_out_named_and_the_others_are_tabulated(tmp_path):
    """Four ranks of one node (the three-launch run, device d each), rank 3's launch-0 trace.json cut short."""
    source = imported_tree(tmp_path / "one") / "node0"
    (prof,) = source.glob("OPPROF_*")
    node = tmp_path / "pt" / "node0"
    for device in range(4):
        copy = node / f"OPPROF_2025031701181{device}_{'DNMFKOVQMZFKYLUP'[device:] + 'ABCD'[:device]}"
        shutil.copytree(prof, copy)
        for basic in copy.glob("*/*/OpBasicInfo_*.csv"):
            basic.write_text(basic.read_text().replace(",2,NA,0,4242,", f",2,NA,{device},{4242 + device},"))
    bad = next(node.glob("OPPROF_20250317011813_*")) / "elastic_dispatch_kernel" / "0" / "trace.json"
    bad.write_text(bad.read_text()[:300])
    overlay = {
        **ONE_RANK,
        "cluster": {"nodes": 1, "ranks_per_node": 4},
        "analyze": {"pipe_timeline_dir": str(tmp_path / "pt")},
    }
    run = stage_run(tmp_path, "pipe_timeline", outputs=OUTPUTS, overlay=overlay)
    status = run.finish(pipe_timeline(run, {"pipe_timeline_import": part("ok")}))
    assert status.state == "ok", status.reason
    assert (
        "3/4 ranks (missing rank 3)" in status.reason
        and f"left out, their files refused: rank 3 ({bad}: line 4: not valid JSON" in status.reason
    ), status.reason
    assert any(not v.passed and str(bad) in v.detail for v in status.validations)
    stats = json.loads(run.outputs["stats"].read_text())
    assert str(bad) in stats["runs"]["import"]["rank_coverage"]["refused"]["3"]
