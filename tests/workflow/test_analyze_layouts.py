"""Analyze mode on the layouts users have (issue 49 item 4), the whole DAG: a real two-rank torch_npu tree, handed
as torch_npu wrote it, read in place."""

import hashlib
import json

import pytest

from conftest import FIXTURES, base_overlay

TORCH = FIXTURES / "torch_npu-real" / "two_ranks_db"


def snapshot(root):
    """Every entry under ``root`` with its bytes' hash and mtime (ns): equal before and after means unchanged."""
    return {
        str(p): (hashlib.sha256(p.read_bytes()).hexdigest() if p.is_file() else "dir", p.stat().st_mtime_ns)
        for p in sorted(root.rglob("*"))
    }


def test_a_torch_npu_tree_of_two_ranks_gives_a_timeline_with_both_medians_and_is_left_as_it_was(workflow_copy):
    before = snapshot(TORCH)
    overlay = {
        "experiment": "torch_npu",
        "mode": "analyze",
        "cluster": {"nodes": 1, "ranks_per_node": 2},
        "kernel": {"name": "aclnnMuls_MulAiCore_Mul"},
        "analyze": {"timeline_dir": str(TORCH)},
        "timeline": {"crosscheck": "off"},
    }
    result = workflow_copy.snakemake(overlay=base_overlay(**overlay))
    assert result.returncode == 0, result.stderr[-3000:]
    timeline = workflow_copy.status("timeline", "torch_npu")
    assert timeline["state"] == "ok", timeline["reason"]
    stats = json.loads((workflow_copy.root / "results/torch_npu/timeline/stats.json").read_text())
    # by hand (tests/fixtures/torch_npu-real/SOURCE.md): 18 launches each, medians 1500 ns and 1420 ns
    assert stats["per_rank"]["0"]["launches"] == 18 and stats["per_rank"]["0"]["median_us"] == pytest.approx(
        1.5, abs=1e-12
    )
    assert stats["per_rank"]["1"]["launches"] == 18 and stats["per_rank"]["1"]["median_us"] == pytest.approx(
        1.42, abs=1e-12
    )
    assert stats["coverage"]["found"] == 2 and stats["rank_mapping"]["inferred_ranks"] == []
    assert stats["rank_mapping"]["how"] == [
        "recorded (profiler_info_0.json rank_id)",
        "recorded (profiler_info_1.json rank_id)",
    ]
    assert snapshot(TORCH) == before
