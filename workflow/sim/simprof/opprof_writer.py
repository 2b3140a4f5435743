"""Write msopprof OPPROF_ directories (shared/formats/msopprof.md §2-4, §7): CSVs with a trailing comma on
every line and literal NA, 17-digit suffixes, the three layouts, and visualize_data.bin blocks."""

from __future__ import annotations

import json
import random
import string
import struct
import time
from pathlib import Path
from typing import Any

PIPE_950 = (
    "block_id,sub_block_id,aic_time(us),aic_total_cycles,aic_cube_time(us),aic_cube_ratio,aic_scalar_time(us),aic_scalar_ratio,aic_mte1_time(us),"
    "aic_mte1_ratio,aic_mte1_active_bw(GB/s),aic_mte2_time(us),aic_mte2_ratio,aic_mte2_active_bw(GB/s),aic_mte3_time(us),aic_mte3_ratio,"
    "aic_mte3_active_bw(GB/s),aic_fixpipe_time(us),aic_fixpipe_ratio,aic_fixpipe_active_bw(GB/s),aic_icache_miss_rate,aiv_time(us),aiv_total_cycles,"
    "aiv_vec_time(us),aiv_vec_ratio,aiv_scalar_time(us),aiv_scalar_ratio,aiv_mte2_time(us),aiv_mte2_ratio,aiv_mte2_active_bw(GB/s),aiv_mte3_time(us),"
    "aiv_mte3_ratio,aiv_mte3_active_bw(GB/s),aiv_icache_miss_rate"
).split(",")
BASIC_HEADER = ["Op Name", "Op Type", "Task Duration(us)", "Block Dim", "Mix Block Dim", "Device Id", "Pid", "Current Freq", "Rated Freq"]
STATES = [
    "IBuf_Empty",
    "Nop_Cycles",
    "Scoreboard_Not_Ready",
    "Register_bank_conflict",
    "Resource_conflict",
    "Warp_Level_Sync",
    "Divergence_Stack_Spill",
    "Others",
    "Active",
]
FREQ_MHZ = 1650
BLOCK = {"TRACE": 0x2, "FILE_API": 0x3, "INSTR_API": 0x4, "OP_BASIC_INFO": 0x5, "TOP_STALL_REASON": 0xF}


def csv_text(header: list[str], rows: list[list[Any]]) -> str:
    """msopprof's writer: every element followed by a comma (so every line ends with one), NA for missing."""

    def cell(v: Any) -> str:
        if v is None:
            return "NA"
        if isinstance(v, float):
            return f"{v:.6f}"
        return str(v)

    return "".join("".join(cell(v) + "," for v in line) + "\n" for line in [header, *rows])


def opprof_name(seed: int) -> str:
    rng = random.Random(seed)
    return "OPPROF_" + time.strftime("%Y%m%d%H%M%S") + "_" + "".join(rng.choice(string.ascii_uppercase) for _ in range(16))


def block(kind: int, payload: bytes, version: int = 0x5A, prefix: bytes = b"") -> bytes:
    """One visualize_data.bin block: 12-byte little-endian header (pack 4), content padded to 4 bytes."""
    content = prefix + payload
    padding = (-len(content)) % 4
    content += b"\0" * padding
    return struct.pack("<QBBBB", len(content), kind, padding, version, 0x5A) + content


def pipe_rows(cores: list[dict[str, Any]]) -> list[list[Any]]:
    rows = []
    for core in cores:
        t = core["aiv_time_us"]
        cycles = int(round(t * FREQ_MHZ))
        vec, scalar, mte2, mte3 = (core[k] for k in ("vec_ratio", "scalar_ratio", "mte2_ratio", "mte3_ratio"))
        aic = [None] * 19
        aiv = [t, cycles, t * vec, vec, t * scalar, scalar, t * mte2, mte2, core.get("mte2_bw"), t * mte3, mte3, None, core["icache_miss_rate"]]
        rows.append([core["block_id"], core["sub_block_id"], *aic, *aiv])
    return rows


def write_kernel_run(
    directory: Path, kernel: str, proc: dict[str, Any], cores: list[dict[str, Any]], metrics: list[str], stamp: str | None, pc: dict[str, Any] | None
) -> None:
    """One profiled launch: OpBasicInfo, the metric CSVs asked for, dump/, visualize_data.bin[, trace.json]."""
    directory.mkdir(parents=True, exist_ok=True)
    suffix = f"_{stamp}" if stamp else ""
    duration = max(c["aiv_time_us"] for c in cores) if cores else 0.0
    basic = [kernel, "vector", duration, len(cores), "NA", proc["device_id"], proc["pid"], "N/A", FREQ_MHZ]
    (directory / f"OpBasicInfo{suffix}.csv").write_text(csv_text(BASIC_HEADER, [basic]))
    if "PipeUtilization" in metrics:
        (directory / f"PipeUtilization{suffix}.csv").write_text(csv_text(PIPE_950, pipe_rows(cores)))
    dump = directory / "dump"
    dump.mkdir(exist_ok=True)
    (dump / "op_basic_info.txt").write_text(f"Run Soc Version=Ascend950PR_9599\nCurrent Freq=N/A\nRated Freq={FREQ_MHZ}\nHas Simt=1\nIs MC2=0\n")
    blob = block(BLOCK["OP_BASIC_INFO"], json.dumps({"Op Name": kernel, "Op Type": "vector", "Block Dim": len(cores)}).encode())
    if pc is not None:
        if pc.get("top_stall_reason_table"):
            blob += block(BLOCK["TOP_STALL_REASON"], json.dumps({"top_stall_reason_table": pc["top_stall_reason_table"]}).encode())
        if pc.get("files"):
            blob += block(
                BLOCK["FILE_API"], json.dumps({"Cores": ["ALL"], "Files Dtype": {"Line": 1, "Instructions Executed": 1}, "Files": pc["files"]}).encode()
            )
        if pc.get("instructions"):
            blob += block(
                BLOCK["INSTR_API"], json.dumps({"Cores": ["ALL"], "Instructions Dtype": {"Address": 3}, "Instructions": pc["instructions"]}).encode(), version=0
            )
        (dump / "pcSampling.bin0").write_bytes(b"\0" * 16 * max(1, pc.get("samples", 0) // 1000))
    if any(m in metrics for m in ("PipeTimeline", "InstrTimeline")):
        trace = {
            "profilingType": "op",
            "displayTimeUnit": "ns",
            "schemaVersion": 1,
            "traceEvents": [
                {"name": "VEC", "cname": "good", "ph": "X", "ts": round(i * 0.8, 3), "dur": 0.5, "pid": f"core{i}.veccore0", "tid": "VECTOR", "args": {}}
                for i in range(6)
            ],
        }
        (directory / "trace.json").write_text(json.dumps(trace))
        blob += block(BLOCK["TRACE"], json.dumps(trace).encode())
    blob += block(0x9, b'{"unknown": "a block type a reader must skip"}')
    (directory / "visualize_data.bin").write_bytes(blob)
