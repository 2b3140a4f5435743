"""The stand-in's visualize_data.bin PC-sampling blocks are what msopprof's writer would produce
(docs/formats.md §2 and tests/fixtures/msopprof/SOURCE.md): stall columns declared CUSTOM_PERCENTAGE,
Percent a ratio 0..1 of its own total, Details sample counts; read back by the library's parser."""

from __future__ import annotations

import sys

import pytest

from conftest import ROOT
from dispatchprof.formats.visualize_bin import decode_pc_sampling

sys.path.insert(0, str(ROOT / "workflow" / "sim"))
from simprof.opprof_writer import pc_samples, write_kernel_run  # noqa: E402

FUNCTION_US = {
    "simt_prepare_mapping": 20.0,
    "buildRemoteWqeDesc": 30.0,
    "simt_nw_mj_vf": 15.0,
    "simt_write_wqe_v4": 25.0,
}
SIMT = {
    "repo": str(ROOT / "workflow/sim/ascend_deepep"),
    "source": "kernels/elastic_dispatch.cpp",
    "has_debug_line": True,
    "function_us": FUNCTION_US,
}
ALL, NOT_ISSUE = "Stall Sampling(All Samples)", "Stall Sampling(Not Issue)"


def test_stall_percent_is_a_ratio_of_its_own_total_and_details_are_counts():
    pc = pc_samples(3, SIMT, "ok")
    lines = pc["files"][0]["Lines"]
    for records in (lines, pc["instructions"]):
        # every simulated sample maps to a line and an instruction: the ratios sum to 1, each over its own total
        assert sum(r[ALL]["Percent"] for r in records) == pytest.approx(1.0)
        assert sum(r[NOT_ISSUE]["Percent"] for r in records) == pytest.approx(1.0)
        assert all(isinstance(n, int) for r in records for n in r[ALL]["Details"].values())
    first = lines[0]
    assert first[ALL]["Percent"] == pytest.approx(sum(first[ALL]["Details"].values()) / pc["samples"])
    assert first[ALL] is not pc["instructions"][0][ALL]  # one object each, so Percent is computed once for each


def test_the_parser_reads_the_stand_ins_block_as_fractions(tmp_path):
    proc = {"device_id": 0, "pid": 1234}
    cores = [
        {
            "block_id": 0,
            "sub_block_id": "vector0",
            "aiv_time_us": 10.0,
            "vec_ratio": 0.1,
            "scalar_ratio": 0.2,
            "mte2_ratio": 0.1,
            "mte3_ratio": 0.1,
            "icache_miss_rate": 0.01,
        }
    ]
    write_kernel_run(
        tmp_path, "elastic_dispatch_0", proc, cores, ["PcSampling", "Source"], None, pc_samples(3, SIMT, "ok")
    )
    decoded = decode_pc_sampling(tmp_path / "visualize_data.bin")
    assert sum(r["share"] for r in decoded.lines) == pytest.approx(1.0)
    assert max(r["share"] for r in decoded.lines) < 0.5  # 24 lines: no single line holds most samples
    assert decoded.lines[0]["File"] == "kernels/elastic_dispatch.cpp"
    assert all(sum(r["mix"].values()) == pytest.approx(1.0) for r in decoded.lines if r["mix"])
