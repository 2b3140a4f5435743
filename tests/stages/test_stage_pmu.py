"""The pmu stage as a library function, without Snakemake (the whole DAG: tests/workflow/test_pmu_roles.py)."""

import json
import shutil

import pandas as pd
import pyarrow.parquet as pq

from conftest import FIXTURES, stage_run
from dispatchprof.stages.pmu import pmu, unequal_launches

OUTPUTS = {"metrics": "metrics.parquet", "cores": "cores.parquet", "stats": "roles.json"}
ONE_RANK = {
    "mode": "analyze",
    "cluster": {"nodes": 1, "ranks_per_node": 1},
    "kernel": {"roles": [{"name": "Stage", "count": 2}, {"name": "Send", "count": 1}, {"name": "Sum", "count": 1}]},
}


def test_an_imported_three_launch_run_gives_role_tables_and_a_reason(tmp_path):
    shutil.copytree(FIXTURES / "msopprof" / "launches3", tmp_path / "pmu" / "node0")  # <dir>/node<k>/OPPROF_*
    overlay = {**ONE_RANK, "analyze": {"pmu_dir": str(tmp_path / "pmu")}}
    run = stage_run(tmp_path, "pmu", outputs=OUTPUTS, params={"identity": None}, overlay=overlay)
    status = pmu(run, {})
    assert status.state == "ok", status.reason
    assert "4 vector cores on" in status.reason and "3 launches each" in status.reason
    roles = json.loads(run.outputs["stats"].read_text())
    assert (
        roles["entry"] == "import"
        and roles["launches"] == [0, 1, 2]
        and roles["roles"]["Stage"]["aiv_time_us_median"] == 185.0
    )
    assert pq.read_table(run.outputs["cores"]).num_rows == 12


def test_no_opprof_run_is_invalid_and_says_the_coverage(tmp_path):
    (tmp_path / "empty").mkdir()
    run = stage_run(
        tmp_path,
        "pmu",
        outputs=OUTPUTS,
        params={"identity": None},
        overlay={**ONE_RANK, "analyze": {"pmu_dir": str(tmp_path / "empty")}},
    )
    status = pmu(run, {})
    assert status.state == "invalid" and "stats.min_rank_coverage" in status.reason
    assert not run.outputs["stats"].exists()


def test_ranks_with_unequal_launches_are_named():
    cores = pd.DataFrame({"rank": [0, 0, 1], "kernel": ["k"] * 3, "launch": [0, 1, 0]})
    problem = unequal_launches(cores, {"mode": "analyze", "pmu": {"launch_count": 2}})
    assert problem.startswith("launches per rank differ: 2 expected (the most any rank has), but rank 1 has 1")
    assert unequal_launches(cores[cores["rank"] == 0], {"mode": "collect", "pmu": {"launch_count": 2}}) is None


A2_DEFAULT = FIXTURES / "msopprof" / "a2_910b2_default"
# The 950's own columns (pipeForA5_ / *ForA5_), which an A2 tool never writes: never "not provided" on a 910B2.
ONLY_950 = {
    "aiv_vec_sfu_ratio",
    "aiv_ub_read_bw_gm(GB/s)",
    "aiv_ub_write_bw_gm(GB/s)",
    "aiv_vec_ldu_cflt_ratio",
    "aiv_read_close_hit",
    "aiv_vec_vf_ratio",
}


def import_a2(tmp_path, without_dump=False):
    target = tmp_path / "pmu" / "node0"
    shutil.copytree(
        A2_DEFAULT, target, ignore=shutil.ignore_patterns("*.py", "*.md", *(["dump"] if without_dump else []))
    )
    overlay = {**ONE_RANK, "analyze": {"pmu_dir": str(tmp_path / "pmu")}, "pmu": {"metrics": ["Default"]}}
    run = stage_run(tmp_path, "pmu", outputs=OUTPUTS, params={"identity": None}, overlay=overlay)
    return run.finish(pmu(run, {})), json.loads(run.outputs["stats"].read_text())


def test_a_910b2_default_run_names_its_chip_from_the_data_and_measures_not_provided_against_the_a2_writer(tmp_path):
    status, roles = import_a2(tmp_path)
    assert status.state == "ok", status.reason
    assert roles["chips"] == [
        {"name": "Ascend910B2", "family": "A2/A3", "source": "Run Soc Version in dump/op_basic_info.txt"}
    ]
    assert roles["summary"]["chips"] == roles["chips"]  # summary.json's pmu.chips
    # Hand-checked (SOURCE.md): Stage = AIV 0-1 (20.5, 21.0 us) -> median 20.75; Send = AIV 2 (30.0 us).
    assert (
        roles["roles"]["Stage"]["aiv_time_us_median"] == 20.75 and roles["roles"]["Send"]["aiv_time_us_median"] == 30.0
    )
    # The file leaves out the A2 writer's aiv scalar detail columns: those, and only those, are not provided.
    assert roles["missing_columns"] == sorted(
        f"aiv_scalar_{c}_time(us)"
        for c in ("single", "dual", "mte2_stall", "mte3_stall", "stall_by_ub", "vector_stall", "wait_ib", "wait")
    )
    not_provided = set(roles["missing_columns"]).union(
        *(set(m["missing_columns"]) for m in roles["metric_sets"].values())
    )
    assert not not_provided & ONLY_950
    assert sorted(roles["metric_sets"]) == [
        "ArithmeticUtilization",
        "L2Cache",
        "Memory",
        "MemoryL0",
        "MemoryUB",
        "ResourceConflictRatio",
    ]
    assert all(m["missing_columns"] == [] for m in roles["metric_sets"].values())


def test_without_a_chip_in_the_data_the_family_is_inferred_from_the_column_order_and_labelled_so(tmp_path):
    status, roles = import_a2(tmp_path, without_dump=True)
    assert status.state == "ok", status.reason
    assert roles["chips"] == [{"name": "A2/A3", "family": "A2/A3", "source": "inferred from the CSV columns"}]
    assert not set(roles["missing_columns"]) & ONLY_950


def four_ranks(tmp_path):
    """The three-launch run as four ranks of one node (device d, pid 4242 + d): <dir>/node0/OPPROF_* each."""
    source = next((FIXTURES / "msopprof" / "launches3").glob("OPPROF_*"))
    node = tmp_path / "pmu" / "node0"
    profs = {}
    for device in range(4):
        prof = node / f"OPPROF_2025031701181{device}_{'DNMFKOVQMZFKYLUP'[device:] + 'ABCD'[:device]}"
        shutil.copytree(source, prof)
        for basic in prof.glob("*/*/OpBasicInfo_*.csv"):
            basic.write_text(basic.read_text().replace(",2,NA,0,4242,", f",2,NA,{device},{4242 + device},"))
        profs[device] = prof
    return profs


def pmu_of(tmp_path, raw):
    overlay = {**ONE_RANK, "cluster": {"nodes": 1, "ranks_per_node": 4}, "analyze": {"pmu_dir": str(raw)}}
    run = stage_run(tmp_path, "pmu", outputs=OUTPUTS, params={"identity": None}, overlay=overlay)
    return run.finish(pmu(run, {})), run


def test_one_rank_with_an_unreadable_metric_csv_is_left_out_named_and_the_others_are_analysed(tmp_path):
    intact, intact_run = pmu_of(tmp_path / "intact", four_ranks(tmp_path / "a")[0].parent.parent)
    assert intact.state == "ok" and "on 4/4 ranks" in intact.reason, intact.reason
    profs = four_ranks(tmp_path / "b")
    (bad,) = profs[2].glob("*/1/PipeUtilization_*.csv")
    bad.write_bytes(b"\x00\xff" * 300)  # launch 1 of rank 2: garbage
    status, run = pmu_of(tmp_path / "broken", profs[0].parent.parent)
    assert status.state == "ok" and "on 3/4 ranks (missing rank 2)" in status.reason, status.reason
    assert f"Left out, their files refused: rank 2 ({bad}: " in status.reason, status.reason
    assert any(not v.passed and str(bad) in v.detail for v in status.validations)
    roles = json.loads(run.outputs["stats"].read_text())
    assert roles["coverage"]["missing"] == [2] and str(bad) in roles["coverage"]["refused"]["2"]
    # rank 2 is out whole (its two readable launches too); the other ranks' numbers are the intact run's
    cores, intact_cores = (
        pq.read_table(run.outputs["cores"]).to_pandas(),
        pq.read_table(intact_run.outputs["cores"]).to_pandas(),
    )
    assert sorted(cores["rank"].unique()) == [0, 1, 3]
    kept = intact_cores[intact_cores["rank"] != 2].reset_index(drop=True)
    pd.testing.assert_frame_equal(cores.reset_index(drop=True)[kept.columns], kept)
