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
