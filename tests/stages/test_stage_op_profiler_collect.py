"""The op profiler's collect part as a library function, without Snakemake: what decides before a run, and what its
logs say (the runs themselves: tests/workflow/test_op_profiler.py)."""

import json
from pathlib import Path

from conftest import stage_run, write_part_status
from dispatchprof.stages.op_profiler_collect import log_failures, op_profiler_collect
from dispatchprof.tools.launch import NodeResult

OUTPUTS = {"raw": "raw", "run": "run"}


def test_a_timeline_kind_not_configured_is_disabled(tmp_path):
    run = stage_run(tmp_path, "pipe_timeline", outputs=OUTPUTS, params={"needed": []}, part="collect")
    status = op_profiler_collect(run, "instr")  # the default config runs PipeTimeline only
    assert (status.state, status.reason) == ("disabled", "InstrTimeline is not in pipe_timeline.runs")


def test_no_usable_op_profiler_skips_the_run(tmp_path):
    timeline = write_part_status(tmp_path / "timeline" / "status.json", "timeline", "ok")
    env = tmp_path / "env.json"
    env.write_text(json.dumps({"op_profiler_entry": "none"}))
    run = stage_run(
        tmp_path,
        "pmu",
        inputs={"timeline": timeline, "env": env},
        outputs=OUTPUTS,
        params={"needed": ["timeline"]},
        part="collect",
    )
    status = op_profiler_collect(run)
    assert status.state == "skipped" and "no usable op profiler" in status.reason


def test_failure_lines_are_named_by_node(tmp_path):
    logs = [tmp_path / "node0.log", tmp_path / "node1.log"]
    logs[0].write_text("Profiling results saved in /x\n")
    logs[1].write_text("ok\n[ERROR] replay failed\n")
    nodes = [NodeResult(0, logs[0]), NodeResult(1, logs[1]), NodeResult(2, Path(tmp_path / "missing.log"))]
    assert log_failures(nodes) == ["node 1: [ERROR] replay failed"]
