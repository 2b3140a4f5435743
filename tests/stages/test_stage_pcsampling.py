"""The pcsampling stage as a library function, without Snakemake (the whole DAG: tests/workflow)."""

import json
import shutil

from conftest import FIXTURES, stage_run
from dispatchprof.stages.pcsampling import pcsampling, stall_reason

OUTPUTS = {"stats": "pcsampling.json"}
ONE_RANK = {"mode": "analyze", "cluster": {"nodes": 1, "ranks_per_node": 1}}


def test_an_imported_rank_is_decoded_into_stalls_and_a_reason(tmp_path):
    root = tmp_path / "pc"
    shutil.copytree(FIXTURES / "msopprof" / "launches3", root / "node0")
    for launch in (root / "node0").glob("OPPROF_*/*/[0-9]"):  # the fixture's own files hold no stall samples
        shutil.copy(FIXTURES / "msopprof" / "pcsampling" / "visualize_data.bin", launch / "visualize_data.bin")
    run = stage_run(
        tmp_path,
        "pcsampling",
        outputs=OUTPUTS,
        params={"identity": None},
        overlay={**ONE_RANK, "analyze": {"pcsampling_dir": str(root)}},
    )
    status = pcsampling(run, {})
    stats = json.loads(run.outputs["stats"].read_text())
    assert status.state == "ok", status.reason
    assert stats["coverage"]["found"] == 1 and stats["summary"]["hot_lines"]
    assert status.reason.startswith("stall samples on 1 of 1 ranks; top stall Scoreboard_Not_Ready")


def test_no_visualize_data_is_invalid(tmp_path):
    (tmp_path / "pc").mkdir()
    run = stage_run(
        tmp_path,
        "pcsampling",
        outputs=OUTPUTS,
        params={"identity": None},
        overlay={**ONE_RANK, "analyze": {"pcsampling_dir": str(tmp_path / "pc")}},
    )
    assert (
        pcsampling(run, {}).reason
        == f"no rank has PC sampling output: no visualize_data.bin under {tmp_path / 'pc'} (node<k>/OPPROF_*/...)"
    )


def one_kernel_opprof(tmp_path, dump=None):
    """A PcSampling run in the one-kernel layout: visualize_data.bin at the OPPROF_ root and no OpBasicInfo.csv."""
    opprof = tmp_path / "pc" / "node0" / "OPPROF_20260512101500_QZJXKWMVBNHTRPLA"
    opprof.mkdir(parents=True)
    shutil.copy(FIXTURES / "msopprof" / "pcsampling" / "visualize_data.bin", opprof / "visualize_data.bin")
    if dump is not None:
        (opprof / "dump").mkdir()
        (opprof / "dump" / "op_basic_info.txt").write_text(dump)
    run = stage_run(
        tmp_path,
        "pcsampling",
        outputs=OUTPUTS,
        params={"identity": None},
        overlay={**ONE_RANK, "analyze": {"pcsampling_dir": str(tmp_path / "pc")}},
    )
    return pcsampling(run, {}), opprof


def test_a_visualize_data_bin_without_op_basic_info_says_the_file_is_there_and_what_is_missing(tmp_path):
    status, opprof = one_kernel_opprof(tmp_path)
    assert status.state == "invalid" and "no visualize_data.bin for any rank" not in status.reason
    assert f"1 visualize_data.bin found (first: {opprof / 'visualize_data.bin'})" in status.reason
    assert (
        "no OpBasicInfo.csv (nor dump/op_basic_info.txt) beside it, so its kernel, device and pid are not known"
        in status.reason
    )


def test_without_op_basic_info_csv_the_dump_names_the_kernel_and_device(tmp_path):
    status, _ = one_kernel_opprof(
        tmp_path,
        "Op Name=elastic_dispatch_kernel\nBlock Dim=2\nRun Soc Version=Ascend950PR_9599\nDevice Id=0\nPid=4242\n",
    )
    assert status.state == "ok", status.reason
    other, _ = one_kernel_opprof(
        tmp_path / "b", "Op Name=elastic_dispatch_kernel\nDevice Id=2\nPid=4242\n"
    )  # device 2, one rank per node
    assert (
        other.state == "invalid"
        and "holds device 2, which maps to no rank" in other.reason
        and "cluster.infer_rank: device_order" in other.reason
    )


def test_the_reason_names_the_top_stall_and_the_hottest_line():
    cov = {"state": "full", "found": 2, "expected": 2, "text": "2 of 2 ranks"}
    stalls = {"not_issue": {"MEM": 0.25, "SYNC": 0.75}}
    line = {"file": "k.cpp", "line": 12, "function": "CalCumSum", "share_of_samples": 0.125}
    assert stall_reason(cov, stalls, [line]) == (
        "stall samples on 2 of 2 ranks; top stall SYNC (75% of not-issued "
        "samples); hottest line k.cpp:12 (CalCumSum, 12.5% of all samples)"
    )
    assert stall_reason({**cov, "state": "partial"}, stalls, []).startswith("PARTIAL COVERAGE: 2 of 2 ranks; ")


def test_one_rank_with_a_truncated_visualize_data_is_left_out_named_and_the_others_are_decoded(tmp_path):
    """Four ranks of one node (the three-launch run, device d each), rank 1's launch-2 file cut short."""
    source = next((FIXTURES / "msopprof" / "launches3").glob("OPPROF_*"))
    node = tmp_path / "pc" / "node0"
    for device in range(4):
        prof = node / f"OPPROF_2025031701181{device}_{'DNMFKOVQMZFKYLUP'[device:] + 'ABCD'[:device]}"
        shutil.copytree(source, prof)
        for launch in prof.glob("*/[0-9]"):
            shutil.copy(FIXTURES / "msopprof" / "pcsampling" / "visualize_data.bin", launch / "visualize_data.bin")
            basic = next(launch.glob("OpBasicInfo_*.csv"))
            basic.write_text(basic.read_text().replace(",2,NA,0,4242,", f",2,NA,{device},{4242 + device},"))
    bad = next(node.glob("OPPROF_20250317011811_*")) / "elastic_dispatch_kernel" / "2" / "visualize_data.bin"
    bad.write_bytes(bad.read_bytes()[:37])
    overlay = {
        **ONE_RANK,
        "cluster": {"nodes": 1, "ranks_per_node": 4},
        "analyze": {"pcsampling_dir": str(tmp_path / "pc")},
    }
    run = stage_run(tmp_path, "pcsampling", outputs=OUTPUTS, params={"identity": None}, overlay=overlay)
    status = run.finish(pcsampling(run, {}))
    assert status.state == "ok", status.reason
    assert status.reason.startswith(
        "PARTIAL COVERAGE: samples on 3 of 4 ranks; missing rank 1 (visualize_data.bin refused: rank 1)"
    ), status.reason
    assert f"Left out, their files refused: rank 1 ({bad}: " in status.reason, status.reason
    stats = json.loads(run.outputs["stats"].read_text())
    assert (
        stats["coverage"]["missing"] == [1]
        and stats["coverage"]["without_output"] == []
        and str(bad) in stats["coverage"]["refused"]["1"]
    )
    assert sorted(stats["per_rank"]) == ["0", "2", "3"]
