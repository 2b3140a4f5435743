"""The pmu stage as a library function, without Snakemake (the whole DAG: tests/workflow/test_pmu_roles.py)."""

import json
import shutil

import pandas as pd
import pyarrow.parquet as pq
import pytest

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
    # The 950 header without dump/op_basic_info.txt: the writer is named, the chip is not.
    a5 = (
        "columns of the msopprof *ForA5_ 44ba9d9..d6c29df / msopprof "
        "*ForA5_ bac21ac writers (written for Ascend 950, by its name)"
    )
    assert roles["chips"] == [{"name": "chip unknown", "family": None, "source": a5, "columns": a5}]


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


A2_WRITER = "columns of the msopprof *For910B_ bac21ac..79ae61a writer (written for Atlas A2/A3, by its name)"


def test_a_910b2_default_run_names_its_chip_from_the_data_and_measures_not_provided_against_its_writer(tmp_path):
    status, roles = import_a2(tmp_path)
    assert status.state == "ok", status.reason
    source = "Run Soc Version in dump/op_basic_info.txt"
    assert roles["chips"] == [{"name": "Ascend910B2", "family": "A2/A3", "source": source, "columns": A2_WRITER}]
    assert roles["summary"]["chips"] == roles["chips"]  # summary.json's pmu.chips
    # Hand-checked (SOURCE.md): Stage = AIV 0-1 (20.5, 21.0 us) -> median 20.75; Send = AIV 2 (30.0 us).
    assert (
        roles["roles"]["Stage"]["aiv_time_us_median"] == 20.75 and roles["roles"]["Send"]["aiv_time_us_median"] == 30.0
    )
    # Its PipeUtilization holds the columns of the open-source A2 header before e581c4a (other order):
    # that writer wrote no scalar detail columns, so none is "not provided"; nor is any 950 column.
    assert roles["missing_columns"] == [] and roles["new_columns"] == {}
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


def test_without_a_chip_in_the_data_the_chip_is_unknown_with_the_writer_its_columns_fit(tmp_path):
    status, roles = import_a2(tmp_path, without_dump=True)
    assert status.state == "ok", status.reason
    assert roles["chips"] == [{"name": "chip unknown", "family": None, "source": A2_WRITER, "columns": A2_WRITER}]
    assert not set(roles["missing_columns"]) & ONLY_950


CANN_910B2 = FIXTURES / "msopprof" / "cann_910b2"
CANN_852 = "columns of the CANN 8.5.2 msprof op / CANN 8.3.RC2 msprof op writers (seen on Ascend910B2)"


def import_cann(tmp_path, export, metrics, env=None, edit=None):
    target = tmp_path / "pmu" / "node0"
    shutil.copytree(CANN_910B2 / export, target)
    if edit:
        edit(next(target.glob("OPPROF_*")))
    kernel = "main_kernel" if export.startswith("cann852") else "add_custom"
    overlay = {
        **ONE_RANK,
        "analyze": {"pmu_dir": str(tmp_path / "pmu")},
        "pmu": {"metrics": metrics},
        "kernel": {**ONE_RANK["kernel"], "name": kernel},
    }
    run = stage_run(
        tmp_path, "pmu", outputs=OUTPUTS, inputs={"env": env} if env else {}, params={"identity": None}, overlay=overlay
    )
    return run.finish(pmu(run, {})), json.loads(run.outputs["stats"].read_text()), run


NO_L0_UB = ["PipeUtilization", "ResourceConflictRatio", "ArithmeticUtilization", "L2Cache", "Memory"]


@pytest.mark.parametrize("export,stage_median,send", [("cann852_1block", 5.25, None), ("cann852_2blocks", 5.5, 5.5)])
def test_cann_852_910b2_exports_without_op_basic_info_are_ok_and_never_called_a_950(
    tmp_path, export, stage_median, send
):
    status, roles, _ = import_cann(tmp_path, export, NO_L0_UB)
    assert status.state == "ok", status.reason
    assert roles["chips"] == [{"name": "chip unknown", "family": None, "source": CANN_852, "columns": CANN_852}]
    assert all("950" not in str(c["name"]) and c["family"] is None for c in roles["chips"])
    # Hand-checked (SOURCE.md): AIVs in block order 5.0, 5.5 us (one block) or 5.0, 6.0, 5.5, 6.5 us (two blocks);
    # Stage = the first two, Send the third.
    assert roles["roles"]["Stage"]["aiv_time_us_median"] == stage_median
    assert send is None or roles["roles"]["Send"]["aiv_time_us_median"] == send
    # Judged against the 8.x writer: the DBI columns it writes are
    # NA (aic side, counted for a mix kernel); nothing is new.
    assert (
        roles["missing_columns"] == ["aic_mte1_active_bw(GB/s)", "aic_mte2_active_bw(GB/s)"]
        and roles["new_columns"] == {}
    )
    assert "aiv_mte1_wait_ratio" in roles["metric_sets"]["ResourceConflictRatio"]["columns"]
    warnings = {v.check: v.detail for v in status.validations if not v.passed}
    assert warnings["chip named by the data"] == f"chip unknown ({CANN_852})"


def test_a_cann_83rc2_vector_export_fits_the_cann_writers_and_measures_nothing_as_not_provided(tmp_path):
    metrics = ["PipeUtilization", "ResourceConflictRatio", "ArithmeticUtilization", "Memory", "MemoryL0", "MemoryUB"]
    status, roles, _ = import_cann(tmp_path, "cann83rc2_vector", metrics)
    assert status.state == "ok", status.reason
    # The two CANN writers write the same columns wherever both were seen (no real 8.5.2 MemoryL0/UB is public): a tie.
    assert roles["chips"] == [{"name": "chip unknown", "family": None, "source": CANN_852, "columns": CANN_852}]
    assert roles["missing_columns"] == [] and all(m["missing_columns"] == [] for m in roles["metric_sets"].values())
    assert roles["roles"]["Stage"]["aiv_time_us_median"] == 8.25  # AIVs 8.0, 8.5, 9.0 us: Stage = 8.0, 8.5


def test_columns_of_no_catalogued_writer_are_listed_as_new_and_kept_in_the_tables(tmp_path):
    def add_column(opprof):
        path = opprof / "ResourceConflictRatio.csv"
        lines = path.read_text().splitlines()
        path.write_text(
            "".join(line + ("aiv_vec_future_ratio," if i == 0 else "0.25,") + "\n" for i, line in enumerate(lines))
        )

    status, roles, run = import_cann(tmp_path, "cann852_1block", NO_L0_UB, edit=add_column)
    assert status.state == "ok", status.reason
    assert roles["new_columns"] == {"ResourceConflictRatio": ["aiv_vec_future_ratio"]}
    assert roles["summary"]["new_columns"] == roles["new_columns"]
    assert roles["chips"][0]["source"] == CANN_852  # one new column: still the best fit of every file
    assert roles["metric_sets"]["ResourceConflictRatio"]["roles"]["Stage"]["aiv_vec_future_ratio"] == 0.25
    metrics = pq.read_table(run.outputs["metrics"]).to_pandas()
    assert (metrics["metric"] == "aiv_vec_future_ratio").sum() == 3  # every row of the file, none dropped
    detail = {v.check: v.detail for v in status.validations}["columns of a known writer"]
    assert detail == "new columns: ResourceConflictRatio: aiv_vec_future_ratio (kept in the tables)"


def test_the_env_captures_npu_smi_names_the_chip_of_a_node_whose_launches_do_not(tmp_path):
    smi = tmp_path / "npu_smi_info.txt"
    smi.write_text(
        "| NPU   Name                | Health        | Power(W)    Temp(C)           Hugepages-Usage(page)|\n"
        "| Chip                      | Bus-Id        | AICore(%)   Memory-Usage(MB)  HBM-Usage(MB)        |\n"
        "| 0     910B2               | OK            | 90.1        40                0    / 0             |\n"
        "| 0                         | 0000:C1:00.0  | 0           0    / 0          3400 / 65536         |\n"
    )
    probe = {"available": True, "output_file": str(smi)}
    env = tmp_path / "env.json"
    env.write_text(json.dumps({"nodes": [{"node": 0, "probes": {"npu_smi_info": probe}}]}))
    status, roles, _ = import_cann(tmp_path, "cann852_1block", NO_L0_UB, env=env)
    assert status.state == "ok", status.reason
    assert roles["chips"] == [
        {"name": "910B2", "family": "A2/A3", "source": "npu-smi info Name on node 0 (env capture)", "columns": CANN_852}
    ]


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


def test_the_runs_msprof_chip_names_the_launches_where_npu_smi_names_none(tmp_path):
    from dispatchprof.stages.pmu import timeline_chip

    stats = tmp_path / "timeline_stats.json"
    # As formats/msprof.py prof_chips writes them: a chip id number in info.json names no chip; NPU_INFO does.
    stats.write_text(json.dumps({"chips": ["Ascend910B2 (NPU_INFO of the db)", "platform_version 5 (info.json)"]}))
    assert timeline_chip(stats).as_dict() == {
        "name": "Ascend910B2",
        "family": "A2/A3",
        "source": "NPU_INFO of the timeline's msprof db",
        "columns": "",
    }
    stats.write_text(json.dumps({"chips": ["platform_version 5 (info.json)"]}))
    assert timeline_chip(stats) is None
    stats.write_text(json.dumps({"chips": ["Ascend910B2 (NPU_INFO of the db)", "Ascend950PR (NPU_INFO of the db)"]}))
    assert timeline_chip(stats) is None  # two chips: which launch ran where is not said
    stats.write_text(json.dumps({"chips": ["Ascend910B2 (NPU_INFO of the db)"]}))
    target = tmp_path / "pmu" / "node0"
    shutil.copytree(CANN_910B2 / "cann852_1block", target)
    overlay = {
        **ONE_RANK,
        "analyze": {"pmu_dir": str(tmp_path / "pmu")},
        "pmu": {"metrics": NO_L0_UB},
        "kernel": {**ONE_RANK["kernel"], "name": "main_kernel"},
    }
    run = stage_run(
        tmp_path,
        "pmu",
        outputs=OUTPUTS,
        inputs={"timeline_stats": str(stats)},
        params={"identity": None},
        overlay=overlay,
    )
    assert run.finish(pmu(run, {})).state == "ok"
    chips = json.loads(run.outputs["stats"].read_text())["chips"]
    assert chips == [
        {
            "name": "Ascend910B2",
            "family": "A2/A3",
            "source": "NPU_INFO of the timeline's msprof db",
            "columns": CANN_852,
        }
    ]
