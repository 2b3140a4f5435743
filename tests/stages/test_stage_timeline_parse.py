"""The timeline's parse part as a library function, without Snakemake (the whole DAG: tests/workflow)."""

import json
import sys

import pyarrow.parquet as pq

from conftest import ROOT, stage_run, write_part_status
from dispatchprof.stages.timeline_parse import timeline_parse

OUTPUTS = {"coverage": "coverage.parquet", "launches": "launches.parquet", "ranks": "ranks.json", "plots": "plots"}
ONE_RANK = {"mode": "analyze", "cluster": {"nodes": 1, "ranks_per_node": 1}}


def simulated_prof(root, launches=5):
    """A PROF_ of one rank, written by the simulator's writer (the code the msprof stand-in uses)."""
    sys.path.insert(0, str(ROOT / "workflow" / "sim"))
    from simprof.prof_writer import write_prof

    events, t = [], 1_795_977_981_065_797_700
    for i in range(launches):
        events.append({"name": "elastic_dispatch_kernel", "task_type": "AI_VECTOR_CORE", "stream": 1, "task_id": i + 1, "start_ns": t, "dur_ns": 100_000 + i})
        t += 1_000_000
    return write_prof(root, {"pid": 4242, "hostname": "n0", "device_id": 0, "rank_id": "0", "start_ns": events[0]["start_ns"]}, events)


def parse_run(tmp_path, overlay):
    return stage_run(
        tmp_path, "timeline", outputs=OUTPUTS, params={"needed": [], "nodes": [0, 0], "identity": None, "skip": 1}, overlay=overlay, part="nodes0-0"
    )


def test_a_rank_of_the_node_range_is_parsed_into_its_launches(tmp_path):
    (tmp_path / "raw" / "node0").mkdir(parents=True)
    simulated_prof(tmp_path / "raw" / "node0")
    status = timeline_parse(parse_run(tmp_path, {**ONE_RANK, "analyze": {"timeline_dir": str(tmp_path / "raw")}}))
    assert status.state == "ok", status.reason
    assert status.reason == "node 0: 1 of 1 ranks with data, kernel elastic_dispatch_kernel"
    ranks = json.loads((tmp_path / "out" / "ranks.json").read_text())["ranks"]
    assert ranks[0]["present"] and ranks[0]["launches"] == 4  # timeline skip: the first launch left out
    assert pq.read_table(tmp_path / "out" / "launches.parquet").num_rows == 5
    assert (tmp_path / "out" / "plots" / "rank0.svg").is_file()


def test_a_node_without_prof_directories_is_ok_and_says_who_is_missing(tmp_path):
    (tmp_path / "raw").mkdir()
    status = timeline_parse(parse_run(tmp_path, {**ONE_RANK, "analyze": {"timeline_dir": str(tmp_path / "raw")}}))
    assert status.state == "ok" and status.reason == "node 0: 0 of 1 ranks with data"
    assert [v.check for v in status.validations if not v.passed] == ["every rank of these nodes has timeline data"]


def test_a_needed_input_not_ok_skips_the_part(tmp_path):
    collect = write_part_status(tmp_path / "collect" / "status.json", "timeline", "failed", part="collect")
    run = stage_run(tmp_path, "timeline", inputs={"timeline_collect": collect}, outputs=OUTPUTS, params={"needed": ["timeline_collect"]}, part="nodes0-0")
    assert timeline_parse(run).state == "skipped"
