"""The layouts users hand analyze mode (issue 49 item 4), each read by the timeline's parse part as it is, never
renamed and never written: a torch_npu tree of two ranks (real, tests/fixtures/torch_npu-real), a bare
mindstudio_profiler_output/ (real, HELIX), a single PROF_* and PROF_*/device_<n> trees without node<k>/ (synthetic,
written by the simulator's msprof writer), and the refusals that end with the config line that fixes them."""

import hashlib
import json
import shutil
import sqlite3

import pyarrow.parquet as pq
import pytest
from test_stage_timeline_parse import parse_run, simulated_prof

from conftest import FIXTURES
from dispatchprof.stages.timeline_parse import timeline_parse

TORCH = FIXTURES / "torch_npu-real" / "two_ranks_db"
TORCH_TEXT = FIXTURES / "torch_npu-real" / "two_ranks_text"
HELIX = FIXTURES / "msprof-real" / "custom_kernel_5_launches"
MUL = "aclnnMuls_MulAiCore_Mul"  # 18 launches on each rank of the torch_npu sample (its SOURCE.md)


def snapshot(root):
    """Every entry under ``root`` with its bytes' hash, size and mtime (ns): equal before and after means unchanged."""
    return {
        str(p.relative_to(root)): (
            hashlib.sha256(p.read_bytes()).hexdigest() if p.is_file() else "dir",
            p.stat().st_size,
            p.stat().st_mtime_ns,
        )
        for p in sorted(root.rglob("*"))
    }


def analyze(tmp_path, root, ranks_per_node=2, kernel=MUL, **analyze_keys):
    overlay = {"mode": "analyze", "cluster": {"nodes": 1, "ranks_per_node": ranks_per_node}, "kernel": {"name": kernel}}
    status = timeline_parse(
        parse_run(tmp_path, {**overlay, "analyze": {"timeline_dir": str(root), **analyze_keys}}, skip=0)
    )
    ranks = json.loads((tmp_path / "out" / "ranks.json").read_text())["ranks"] if status.state == "ok" else []
    return status, {r["rank"]: r for r in ranks}


def test_a_torch_npu_tree_of_two_ranks_maps_each_from_its_profiler_info_and_reads_its_db_in_place(tmp_path):
    before = snapshot(TORCH)
    status, ranks = analyze(tmp_path, TORCH)
    assert status.state == "ok", status.reason
    assert status.reason == f"node 0: 2 of 2 ranks with data, kernel {MUL}"
    # medians by hand (SOURCE.md): TASK.endNs - startNs of the 18 launches, 1500 ns on rank 0, 1420 ns on rank 1
    assert (ranks[0]["launches"], ranks[0]["median_us"]) == (18, pytest.approx(1.5, abs=1e-12))
    assert (ranks[1]["launches"], ranks[1]["median_us"]) == (18, pytest.approx(1.42, abs=1e-12))
    assert (
        ranks[0]["mapping"] == "recorded (profiler_info_0.json rank_id)"
        and ranks[1]["mapping"] == "recorded (profiler_info_1.json rank_id)"
    )
    assert ranks[0]["prof"].endswith("rank0_ascend_pt") and (ranks[0]["device"], ranks[1]["device"]) == (0, 1)
    assert status.details["chips"] == ["Ascend910B (NPU_INFO of the db)"]
    # each launch's host call (CANN_API, by connectionId) goes into the launch table, its API named in the record
    assert all(
        (r["host_api"], r["host_api_table"], r["host_api_launches"]) == ("launch", "CANN_API", 18)
        for r in ranks.values()
    )
    launches = pq.read_table(tmp_path / "out" / "launches.parquet").to_pydict()
    assert launches["api_start_ns"][0] is not None and all(d is not None and d > 0 for d in launches["api_dur_ns"])
    assert snapshot(TORCH) == before  # nothing written, not even a -shm beside the dbs


def test_a_torch_npu_tree_under_node_directories_keeps_its_recorded_ranks(tmp_path):
    shutil.copytree(TORCH / "rank0_ascend_pt", tmp_path / "tree" / "node0" / "host_4242_20250109071747123_ascend_pt")
    shutil.copytree(TORCH / "rank1_ascend_pt", tmp_path / "tree" / "node0" / "host_4243_20250109071747125_ascend_pt")
    status, ranks = analyze(tmp_path, tmp_path / "tree")
    assert status.state == "ok" and sorted(ranks) == [0, 1] and ranks[1]["median_us"] == pytest.approx(1.42, abs=1e-12)


@pytest.mark.parametrize("given", ["mindstudio_profiler_output", "."])
def test_a_bare_real_export_is_one_rank_numbered_from_its_device(tmp_path, given):
    status, ranks = analyze(tmp_path, HELIX / given, ranks_per_node=1, kernel="matmul_kernel")
    assert status.state == "ok", status.reason
    assert ranks[0]["median_us"] == pytest.approx(348.697, abs=1e-9) and ranks[0]["mapping"] == "inferred (device_id)"


def test_a_single_prof_directory_handed_as_it_is_is_read(tmp_path):
    prof = simulated_prof(tmp_path / "shared", launches=5, rank_id="-1")  # synthetic: the simulator's msprof writer
    status, ranks = analyze(tmp_path, prof, ranks_per_node=1, kernel="elastic_dispatch_kernel")
    assert status.state == "ok", status.reason
    assert (
        ranks[0]["launches"] == 5
        and ranks[0]["median_us"] == pytest.approx(100.002, abs=1e-9)
        and ranks[0]["mapping"] == "inferred (device_id)"
    )


def test_prof_device_trees_without_node_directories_map_by_rank_id_or_device(tmp_path):
    root = tmp_path / "profs"
    simulated_prof(root, launches=3, device=1, rank_id="0")  # the recorded rank wins over the device id
    simulated_prof(root, launches=4, device=5, rank_id="-1", pid=4343)  # none recorded: local rank = device id
    status, ranks = analyze(tmp_path, root, ranks_per_node=8, kernel="elastic_dispatch_kernel")
    assert status.state == "ok", status.reason
    assert (ranks[0]["launches"], ranks[0]["mapping"], ranks[0]["device"]) == (3, "recorded (info.json rank_id)", 1)
    assert (ranks[5]["launches"], ranks[5]["mapping"]) == (4, "inferred (device_id)")


def test_a_directory_that_names_no_rank_is_refused_with_the_config_line_and_the_line_maps_it(tmp_path):
    export = tmp_path / "tree" / "from_alice" / "mindstudio_profiler_output"
    shutil.copytree(HELIX / "mindstudio_profiler_output", export)
    (tmp_path / "tree" / "from_bob").mkdir()
    shutil.copytree(HELIX / "mindstudio_profiler_output", tmp_path / "tree" / "from_bob" / "mindstudio_profiler_output")
    status, _ = analyze(tmp_path, tmp_path / "tree", ranks_per_node=2, kernel="matmul_kernel")
    # both exports hold device 0: the same rank claimed twice, refused with both named and the line that fixes it
    assert (
        status.state == "invalid"
        and "rank 0 is claimed twice" in status.reason
        and "from_alice" in status.reason
        and "from_bob" in status.reason
    )
    assert (
        f'analyze.rank_map: {{"{tmp_path}/tree/from_bob/mindstudio_profiler_output": <its global rank>}}'
        in status.reason
    )
    rank_map = {"from_alice/mindstudio_profiler_output": 0, "from_bob/mindstudio_profiler_output": 1}
    status, ranks = analyze(
        tmp_path / "again", tmp_path / "tree", ranks_per_node=2, kernel="matmul_kernel", rank_map=rank_map
    )
    assert status.state == "ok", status.reason
    assert sorted(ranks) == [0, 1] and {r["mapping"] for r in ranks.values()} == {"recorded (analyze.rank_map)"}


def test_a_rank_map_entry_that_names_no_data_directory_is_refused(tmp_path):
    status, _ = analyze(tmp_path, TORCH, rank_map={"rank7_ascend_pt": 7})
    assert (
        status.state == "invalid" and "analyze.rank_map names" in status.reason and "rank7_ascend_pt" in status.reason
    )


def test_torch_npu_files_that_disagree_on_the_rank_are_refused_naming_both(tmp_path):
    tree = tmp_path / "tree"
    shutil.copytree(TORCH, tree)
    (tree / "rank1_ascend_pt" / "profiler_info_1.json").rename(tree / "rank1_ascend_pt" / "profiler_info_3.json")
    status, ranks = analyze(tmp_path, tree)
    assert status.state == "ok" and ranks[0]["present"] and not ranks[1]["present"]
    assert "field 'rank_id' is 1 but the file name says rank 3" in ranks[1]["reason"]


def test_a_torch_npu_directory_with_nothing_to_read_says_what_is_missing_and_how_to_get_a_db(tmp_path):
    tree = tmp_path / "tree" / "n1_77_20250109071747123_ascend_pt"
    (tree / "ASCEND_PROFILER_OUTPUT").mkdir(parents=True)
    (tree / "ASCEND_PROFILER_OUTPUT" / "trace_view.json").write_text("[]")
    (tree / "profiler_info_0.json").write_text('{"rank_id": 0}')
    status, ranks = analyze(tmp_path, tmp_path / "tree", ranks_per_node=1)
    assert status.state == "ok" and not ranks[0]["present"]
    assert (
        "without ASCEND_PROFILER_OUTPUT/ascend_pytorch_profiler*.db" in ranks[0]["reason"]
        and "export_type db" in ranks[0]["reason"]
    )


def test_a_real_torch_npu_text_export_of_two_ranks_is_read_from_kernel_details(tmp_path):
    before = snapshot(TORCH_TEXT)
    status, ranks = analyze(tmp_path, TORCH_TEXT)
    assert status.state == "ok", status.reason
    # by hand (SOURCE.md): 18 launches each, medians of Duration(us) 1.47 us (rank 0) and 1.38 us (rank 1)
    assert (ranks[0]["launches"], ranks[0]["median_us"], ranks[0]["source"]) == (
        18,
        pytest.approx(1.47, abs=1e-12),
        "kernel_details",
    )
    assert (ranks[1]["launches"], ranks[1]["median_us"]) == (18, pytest.approx(1.38, abs=1e-12))
    assert ranks[1]["mapping"] == "recorded (profiler_info_1.json rank_id)"
    # a text export records no host API calls: none read, and no launch has one
    assert (ranks[0]["host_api"], ranks[0]["host_api_table"], ranks[0]["host_api_launches"]) == (None, None, 0)
    launches = pq.read_table(tmp_path / "out" / "launches.parquet").to_pydict()
    assert set(launches["api_start_ns"]) == {None} and len(launches["api_start_ns"]) == 36
    # its HCCL rows are communication ops: not launches of a kernel.name that names them
    status, ranks = analyze(tmp_path / "hccl", TORCH_TEXT, kernel="hcom_*")
    assert (
        not ranks[0]["present"]
        and "communication tasks (HCCL ops) are not part of the timeline stage" in ranks[0]["reason"]
    )
    assert snapshot(TORCH_TEXT) == before


def test_an_hccl_kernel_name_says_communication_tasks_are_not_part_of_the_timeline(tmp_path):
    status, ranks = analyze(tmp_path, TORCH, kernel="hcom_allReduce_*")
    assert status.state == "ok" and not ranks[0]["present"]
    reason = ranks[0]["reason"]
    assert "communication tasks (HCCL ops) are not part of the timeline stage" in reason
    assert "holds 4 communication ops (COMMUNICATION_OP) matching it" in reason  # the real db's four hcom_allReduce ops


def test_a_tree_with_no_profiler_data_is_refused_by_the_import_naming_the_layouts(tmp_path):
    from dispatchprof.stages.imports import checked_import

    (tmp_path / "empty" / "a" / "b").mkdir(parents=True)
    state, reason, _ = checked_import("timeline_dir", str(tmp_path / "empty"), 1, 2)
    assert (
        state == "invalid"
        and "no profiler data directory found" in reason
        and "*_ascend_pt" in reason
        and "mindstudio_profiler_output" in reason
    )
    state, reason, details = checked_import("timeline_dir", str(TORCH), 1, 2)
    assert (
        state == "ok"
        and "2 data directories (2 torch_npu) without node directories" in reason
        and details["directories"] == 2
    )


def test_the_real_torch_npu_db_has_the_msprof_tables_the_timeline_reads():
    with sqlite3.connect(
        f"file:{TORCH}/rank0_ascend_pt/ASCEND_PROFILER_OUTPUT/ascend_pytorch_profiler_0.db?immutable=1", uri=True
    ) as conn:
        tables = {name for (name,) in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")}
        assert conn.execute("SELECT rankId, deviceId FROM RANK_DEVICE_MAP").fetchall() == [(0, 0)]
    assert {
        "TASK",
        "COMPUTE_TASK_INFO",
        "STRING_IDS",
        "COMMUNICATION_OP",
        "RANK_DEVICE_MAP",
        "SESSION_TIME_INFO",
    } <= tables


def test_a_directory_under_no_node_directory_is_parsed_by_the_job_of_its_ranks_node(tmp_path):
    from test_stage_timeline_parse import OUTPUTS

    from conftest import stage_run

    tree = tmp_path / "tree"
    shutil.copytree(TORCH_TEXT / "rank0_ascend_pt", tree / "a_ascend_pt")
    shutil.copytree(TORCH_TEXT / "rank1_ascend_pt", tree / "b_ascend_pt")
    (
        tree / "b_ascend_pt" / "profiler_info_1.json"
    ).unlink()  # rank 9 of a 2 x 8 cluster (the profiler_info edited here)
    (tree / "b_ascend_pt" / "profiler_info_9.json").write_text(json.dumps({"rank_id": 9}))
    overlay = {
        "mode": "analyze",
        "cluster": {"nodes": 2, "ranks_per_node": 8},
        "kernel": {"name": MUL},
        "analyze": {"timeline_dir": str(tree)},
    }
    seen = {}
    for node in (0, 1):
        run = stage_run(
            tmp_path / f"n{node}",
            "timeline",
            outputs=OUTPUTS,
            params={"needed": [], "nodes": [node, node], "identity": None, "skip": 0},
            overlay=overlay,
        )
        status = timeline_parse(run)
        assert status.state == "ok", status.reason
        ranks = json.loads((tmp_path / f"n{node}" / "out" / "ranks.json").read_text())["ranks"]
        seen[node] = {r["rank"]: r["prof"] for r in ranks if r["present"]}
    assert seen == {0: {0: str(tree / "a_ascend_pt")}, 1: {9: str(tree / "b_ascend_pt")}}
