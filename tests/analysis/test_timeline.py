import json
import subprocess
import sys
from pathlib import Path

import pandas as pd

from conftest import ROOT
from dispatchprof.analysis.timeline import assign_ranks, calls_between, coverage_table, kernel_regex, launches, merged_trace, straggler
from dispatchprof.formats.msprof import ProfInfo


def test_kernel_names_match_like_msopprof_kernel_name():
    regex = kernel_regex("elastic_dispatch*")
    assert regex.match("elastic_dispatch_kernel_mix_aiv") and regex.match("elastic_dispatch")
    assert not regex.match("aclnn_elastic_dispatch_kernel")
    assert kernel_regex("*dispatch_kernel").match("aclnnElastic_dispatch_kernel_AivKernel")
    assert not kernel_regex("a.b").match("axb")  # only * is special


def info(pid, device, rank_id=None, path="P"):
    return ProfInfo(Path(f"{path}{pid}"), pid, "h", "0", [device] if device is not None else [], rank_id, Path("db") if device is not None else None, None)


def test_ranks_come_from_the_sidecar_then_rank_id_then_inferred_order():
    infos = [info(100, 2), info(101, 0, rank_id=9), info(102, 1), info(103, 5)]
    out = {a.pid: a for a in assign_ranks(1, 8, infos, {100: {"global_rank": 12}})}
    assert (out[100].rank, out[100].how) == (12, "sidecar")
    assert (out[101].rank, out[101].how) == (9, "rank_id")
    assert (out[102].rank, out[102].how, out[103].rank) == (8, "inferred", 9)


def test_coverage_names_missing_device_data_and_absent_ranks():
    infos = [info(100, 0), info(101, None)]
    assigned = assign_ranks(1, 3, infos, {100: {"global_rank": 3}, 101: {"global_rank": 4}})
    table = coverage_table(1, 3, assigned, {i.path: i for i in infos})
    assert table["state"].tolist() == ["found", "missing", "missing"]
    assert "no device data" in table.loc[1, "detail"] and "no PROF_" in table.loc[2, "detail"]


def test_straggler_is_aligned_by_launch_index_and_classified():
    durations = {0: {0: 10, 1: 10, 2: 10}, 1: {0: 12, 1: 12, 2: 9}, 2: {0: 11, 1: 9, 2: 9.5}}
    s = straggler(durations)
    assert s["rank"] == 1 and abs(s["fraction_slowest"] - 2 / 3) < 1e-9 and s["kind"] == "consistently slowest"
    assert s["per_launch_max_us"] == [12, 12, 10]


def test_calls_between_target_launches_are_counted_per_iteration():
    kernels = pd.DataFrame(
        [
            ("barrier", "x", 0, 5),
            ("elastic_dispatch_kernel", "x", 10, 100),
            ("barrier", "x", 200, 6),
            ("layout", "x", 210, 4),
            ("elastic_dispatch_kernel", "x", 220, 100),
            ("barrier", "x", 400, 7),
            ("elastic_dispatch_kernel", "x", 420, 100),
        ],
        columns=["name", "op_type", "start_ns", "dur_ns"],
    )
    hit, _ = launches(kernels, "elastic_dispatch_kernel")
    chain = {c["name"]: c for c in calls_between(kernels, hit, "elastic_dispatch_kernel")}
    assert chain["barrier"]["per_iteration"] == 1.0 and chain["layout"]["per_iteration"] == 0.5
    assert chain["barrier"]["median_us"] == 0.0065


def test_merged_trace_puts_the_chosen_launch_end_of_every_rank_at_zero():
    details = {
        0: {
            "node": 0,
            "device": 0,
            "symbol": "k",
            "table": [
                {"launch": 5, "start_ns": 1_000_000, "dur_us": 2.0, "gap_us": None},
                {"launch": 6, "start_ns": 2_000_000, "dur_us": 3.0, "gap_us": 998.0},
            ],
        },
        9: {"node": 1, "device": 1, "symbol": "k", "table": [{"launch": 5, "start_ns": 9_000_000_000, "dur_us": 4.0, "gap_us": None}]},
    }
    trace = merged_trace(details, align_launch=0)
    json.dumps(trace)
    xs = {(e["pid"], e["args"]["launch"]): e for e in trace["traceEvents"] if e["ph"] == "X"}
    assert xs[(0, 5)]["ts"] + xs[(0, 5)]["dur"] == 0 and xs[(9, 5)]["ts"] + xs[(9, 5)]["dur"] == 0
    assert xs[(0, 6)]["ts"] == 998.0


def test_per_rank_job_computes_gaps_after_skipping_and_writes_svg(tmp_path):
    launches_file = tmp_path / "rank3.json"
    rows = [{"launch": i, "start_ns": i * 1_000_000, "dur_ns": 100_000 + i * 1000, "task_id": i, "stream": 1} for i in range(6)]
    launches_file.write_text(json.dumps({"rank": 3, "node": 0, "present": True, "launches": rows}))
    detail, svg = tmp_path / "detail.json", tmp_path / "plot.svg"
    subprocess.run([sys.executable, str(ROOT / "workflow/scripts/timeline_rank.py"), str(launches_file), "2", str(detail), str(svg)], check=True)
    d = json.loads(detail.read_text())
    assert d["launches"] == 4 and d["skipped"] == 2 and d["table"][0]["launch"] == 2
    assert d["table"][1]["gap_us"] == (3_000_000 - 2_000_000 - 102_000) / 1000
    assert d["median_us"] == 103.5 and svg.read_text().startswith("<svg")
    missing = tmp_path / "rank4.json"
    subprocess.run([sys.executable, str(ROOT / "workflow/scripts/timeline_rank.py"), str(missing), "0", str(detail), str(svg)], check=True)
    assert json.loads(detail.read_text())["present"] is False
