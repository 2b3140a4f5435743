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
    assert roles["entry"] == "import" and roles["launches"] == [0, 1, 2] and roles["roles"]["Stage"]["aiv_time_us_median"] == 185.0
    assert pq.read_table(run.outputs["cores"]).num_rows == 12


def test_no_opprof_run_is_invalid_and_says_the_coverage(tmp_path):
    (tmp_path / "empty").mkdir()
    run = stage_run(tmp_path, "pmu", outputs=OUTPUTS, params={"identity": None}, overlay={**ONE_RANK, "analyze": {"pmu_dir": str(tmp_path / "empty")}})
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
ONLY_950 = {"aiv_vec_sfu_ratio", "aiv_ub_read_bw_gm(GB/s)", "aiv_ub_write_bw_gm(GB/s)", "aiv_vec_ldu_cflt_ratio", "aiv_read_close_hit", "aiv_vec_vf_ratio"}


def import_a2(tmp_path, without_dump=False):
    target = tmp_path / "pmu" / "node0"
    shutil.copytree(A2_DEFAULT, target, ignore=shutil.ignore_patterns("*.py", "*.md", *(["dump"] if without_dump else [])))
    overlay = {**ONE_RANK, "analyze": {"pmu_dir": str(tmp_path / "pmu")}, "pmu": {"metrics": ["Default"]}}
    run = stage_run(tmp_path, "pmu", outputs=OUTPUTS, params={"identity": None}, overlay=overlay)
    return run.finish(pmu(run, {})), json.loads(run.outputs["stats"].read_text())


def test_a_910b2_default_run_names_its_chip_from_the_data_and_measures_not_provided_against_the_a2_writer(tmp_path):
    status, roles = import_a2(tmp_path)
    assert status.state == "ok", status.reason
    assert roles["chips"] == [{"name": "Ascend910B2", "family": "A2/A3", "source": "Run Soc Version in dump/op_basic_info.txt"}]
    assert roles["summary"]["chips"] == roles["chips"]  # summary.json's pmu.chips
    # Hand-checked (SOURCE.md): Stage = AIV 0-1 (20.5, 21.0 us) -> median 20.75; Send = AIV 2 (30.0 us).
    assert roles["roles"]["Stage"]["aiv_time_us_median"] == 20.75 and roles["roles"]["Send"]["aiv_time_us_median"] == 30.0
    # The file leaves out the A2 writer's aiv scalar detail columns: those, and only those, are not provided.
    assert roles["missing_columns"] == sorted(
        f"aiv_scalar_{c}_time(us)" for c in ("single", "dual", "mte2_stall", "mte3_stall", "stall_by_ub", "vector_stall", "wait_ib", "wait")
    )
    not_provided = set(roles["missing_columns"]).union(*(set(m["missing_columns"]) for m in roles["metric_sets"].values()))
    assert not not_provided & ONLY_950
    assert sorted(roles["metric_sets"]) == ["ArithmeticUtilization", "L2Cache", "Memory", "MemoryL0", "MemoryUB", "ResourceConflictRatio"]
    assert all(m["missing_columns"] == [] for m in roles["metric_sets"].values())


def test_without_a_chip_in_the_data_the_family_is_inferred_from_the_column_order_and_labelled_so(tmp_path):
    status, roles = import_a2(tmp_path, without_dump=True)
    assert status.state == "ok", status.reason
    assert roles["chips"] == [{"name": "A2/A3", "family": "A2/A3", "source": "inferred from the CSV columns"}]
    assert not set(roles["missing_columns"]) & ONLY_950
