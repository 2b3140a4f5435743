"""The stand-in's PipeTimeline/InstrTimeline trace.json follows docs/formats.md §2 (string core pids, pipe tids, µs) and
is derived from the event model's phases: read back by the library, a sampled core's busy time per pipe is its
model pipe time; InstrTimeline keeps only the --instr-timeline-pipe pipes; the TRACE block holds the same JSON."""

from __future__ import annotations

import json
import sys

import pytest

from conftest import ROOT
from dispatchprof.analysis.pipe_timeline import core_table
from dispatchprof.formats.trace_json import read_trace_block, read_trace_json

sys.path.insert(0, str(ROOT / "workflow" / "sim"))
from simprof.opprof_writer import sampled_cores, write_kernel_run  # noqa: E402

PIPES = {"vec": "VECTOR", "scalar": "SCALAR", "mte2": "MTE2", "mte3": "MTE3"}


def cores(n):
    """n cores, each a work phase (its own pipe shares) and a polling phase, µs from the kernel start."""
    out = []
    for i in range(n):
        shares = {"vec": 0.1 + 0.01 * i, "scalar": 0.3, "mte2": 0.8, "mte3": 0.5}
        out.append(
            {
                "block_id": i,
                "role": "TokenCopyToBuffer",
                "phases": [
                    {"name": "stage", "work": "stage", "start": 2.0, "end": 12.0 + i, "pipes": shares},
                    {
                        "name": "lwc_wait",
                        "work": None,
                        "start": 12.0 + i,
                        "end": 40.0,
                        "pipes": {"vec": 0.0, "scalar": 0.02, "mte2": 0.0, "mte3": 0.0},
                    },
                ],
            }
        )
    return out


def model_pipe_us(core):
    return {PIPES[k]: sum(p["pipes"][k] * (p["end"] - p["start"]) for p in core["phases"]) for k in PIPES}


def write(tmp_path, metrics, pipes=None, n=20):
    proc = {"device_id": 0, "pid": 7, "phases": cores(n)}
    rows = [
        {
            "aiv_time_us": 40.0,
            "block_id": i,
            "sub_block_id": "vector0",
            "vec_ratio": 0.1,
            "scalar_ratio": 0.1,
            "mte2_ratio": 0.1,
            "mte3_ratio": 0.1,
            "icache_miss_rate": 0.01,
        }
        for i in range(n)
    ]
    write_kernel_run(tmp_path, "elastic_dispatch_kernel", proc, rows, metrics, None, None, pipes)
    return proc


def test_pipe_timeline_shows_six_cores_whose_busy_time_is_the_model(tmp_path):
    proc = write(tmp_path, ["PipeTimeline"])
    raw = json.loads((tmp_path / "trace.json").read_text())
    assert {k: raw[k] for k in ("profilingType", "displayTimeUnit", "schemaVersion")} == {
        "profilingType": "op",
        "displayTimeUnit": "ns",
        "schemaVersion": 1,
    }
    trace = read_trace_json(tmp_path / "trace.json")
    table = core_table(trace.events.assign(rank=0, launch=0))
    assert sorted(table["core"]) == sampled_cores(20) and len(table) == 6
    for row in table.itertuples():
        for pipe, us in model_pipe_us(proc["phases"][row.core]).items():
            assert table.at[row.Index, f"busy_us.{pipe}"] == pytest.approx(us, abs=0.01)
    assert not trace.has_instructions
    assert read_trace_block(tmp_path / "visualize_data.bin").events.equals(trace.events)


def test_instr_timeline_carries_pcs_and_only_the_asked_pipes(tmp_path):
    write(tmp_path, ["InstrTimeline"], ["mte2", "vector"])
    trace = read_trace_json(tmp_path / "trace.json")
    assert trace.has_instructions and set(trace.events["pipe"]) == {"MTE2", "VECTOR"}
    assert trace.events["pc_addr"].str.match(r"^0x[0-9a-f]{8}$").all()


def test_no_timeline_asked_no_trace(tmp_path):
    write(tmp_path, ["PipeUtilization"])
    assert not (tmp_path / "trace.json").exists() and read_trace_block(tmp_path / "visualize_data.bin") is None
