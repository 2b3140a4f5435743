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
    run = stage_run(tmp_path, "pcsampling", outputs=OUTPUTS, params={"identity": None}, overlay={**ONE_RANK, "analyze": {"pcsampling_dir": str(root)}})
    status = pcsampling(run, {})
    stats = json.loads(run.outputs["stats"].read_text())
    assert status.state == "ok", status.reason
    assert stats["coverage"]["found"] == 1 and stats["summary"]["hot_lines"]
    assert status.reason.startswith("stall samples on 1 of 1 ranks; top stall Scoreboard_Not_Ready")


def test_no_visualize_data_is_invalid(tmp_path):
    (tmp_path / "pc").mkdir()
    run = stage_run(
        tmp_path, "pcsampling", outputs=OUTPUTS, params={"identity": None}, overlay={**ONE_RANK, "analyze": {"pcsampling_dir": str(tmp_path / "pc")}}
    )
    assert pcsampling(run, {}).reason == "no visualize_data.bin for any rank: PC sampling produced no output"


def test_the_reason_names_the_top_stall_and_the_hottest_line():
    cov = {"state": "full", "found": 2, "expected": 2, "text": "2 of 2 ranks"}
    stalls = {"not_issue": {"MEM": 0.25, "SYNC": 0.75}}
    line = {"file": "k.cpp", "line": 12, "function": "CalCumSum", "share_of_samples": 0.125}
    assert stall_reason(cov, stalls, [line]) == (
        "stall samples on 2 of 2 ranks; top stall SYNC (75% of not-issued samples); hottest line k.cpp:12 (CalCumSum, 12.5% of all samples)"
    )
    assert stall_reason({**cov, "state": "partial"}, stalls, []).startswith("PARTIAL COVERAGE: 2 of 2 ranks; ")
