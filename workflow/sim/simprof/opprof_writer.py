"""Write msopprof OPPROF_ directories (docs/formats.md §2-4, §7): CSVs with a trailing comma on
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
    "block_id,sub_block_id,aic_time(us),aic_total_cycles,aic_cube_time(us),aic_cube_ratio,aic_scalar_time(us),"
    "aic_scalar_ratio,aic_mte1_time(us),aic_mte1_ratio,aic_mte1_active_bw(GB/s),aic_mte2_time(us),aic_mte2_ratio,"
    "aic_mte2_active_bw(GB/s),aic_mte3_time(us),aic_mte3_ratio,aic_mte3_active_bw(GB/s),aic_fixpipe_time(us),"
    "aic_fixpipe_ratio,aic_fixpipe_active_bw(GB/s),aic_icache_miss_rate,aiv_time(us),aiv_total_cycles,"
    "aiv_vec_time(us),aiv_vec_ratio,aiv_scalar_time(us),aiv_scalar_ratio,aiv_mte2_time(us),aiv_mte2_ratio,"
    "aiv_mte2_active_bw(GB/s),aiv_mte3_time(us),aiv_mte3_ratio,aiv_mte3_active_bw(GB/s),aiv_icache_miss_rate"
).split(",")
_L2 = (
    "read_close_hit,read_close_miss,read_close_victim,read_far_hit,read_far_miss,read_far_victim,read_hit_rate(%),"
    "write_close_hit,write_close_miss,write_close_victim,"
    "write_far_hit,write_far_miss,write_far_victim,write_hit_rate(%)"
).split(",")
# The other per-core CSVs of METRICS_CSV_MAP, 950 (`*ForA5_`)
# headers: (aic columns, aiv columns, columns of neither side).
OTHER_950 = {
    "ArithmeticUtilization": (
        "aic_cube_ratio,aic_cube_fp_ratio,aic_cube_int_ratio,aic_cube_total_instr_number,"
        "aic_cube_fp_instr_number,aic_cube_int_instr_number".split(","),
        "aiv_vec_ratio,aiv_vec_vf_ratio,aiv_vec_sfu_ratio,aiv_vec_simt_vf_ratio".split(","),
        [],
    ),
    "L2Cache": ([f"aic_{c}" for c in _L2], [f"aiv_{c}" for c in _L2], []),
    "Memory": (
        (
            "aic_l1_read_bw(GB/s),aic_l1_write_bw(GB/s),aic_main_mem_read_bw(GB/s),aic_main_mem_write_bw(GB/s),"
            "aic_mte1_instructions,aic_mte1_ratio,aic_mte2_instructions,"
            "aic_mte2_ratio,aic_mte3_instructions,aic_mte3_ratio"
        ).split(","),
        (
            "aiv_ub_to_gm_bw(GB/s),aiv_gm_to_ub_bw(GB/s),aiv_main_mem_read_bw(GB/s),aiv_main_mem_write_bw(GB/s),"
            "aiv_mte2_instructions,aiv_mte2_ratio,aiv_mte3_instructions,aiv_mte3_ratio"
        ).split(","),
        (
            "read_main_memory_datas(KB),write_main_memory_datas(KB),GM_to_L1_datas(KB),GM_to_L1_bw_usage_rate(%),"
            "L0C_to_L1_datas(KB),L0C_to_L1_bw_usage_rate(%),L0C_to_GM_datas(KB),L0C_to_GM_bw_usage_rate(%),"
            "GM_to_UB_datas(KB),GM_to_UB_bw_usage_rate(%),UB_to_GM_datas(KB),UB_to_GM_bw_usage_rate(%)"
        ).split(","),
    ),
    "MemoryL0": (
        "aic_l0a_read_bw(GB/s),aic_l0a_write_bw(GB/s),aic_l0b_read_bw(GB/s),"
        "aic_l0b_write_bw(GB/s),aic_l0c_read_bw_cube(GB/s),aic_l0c_write_bw_cube(GB/s)".split(","),
        [],
        [],
    ),
    "MemoryUB": (
        [],
        "aiv_ub_read_bw_vector(GB/s),aiv_ub_write_bw_vector(GB/s),"
        "aiv_ub_read_bw_gm(GB/s),aiv_ub_write_bw_gm(GB/s)".split(","),
        [],
    ),
    "ResourceConflictRatio": (
        "aic_cube_wait_ratio,aic_mte1_wait_ratio,aic_mte2_wait_ratio,aic_mte3_wait_ratio".split(","),
        "aiv_vec_stu_cflt_ratio,aiv_vec_ldu_cflt_ratio,aiv_vec_sfu_cflt_ratio,"
        "aiv_vec_wait_ratio,aiv_mte2_wait_ratio,aiv_mte3_wait_ratio".split(","),
        [],
    ),
}
PEAK_GBPS = 400.0  # GM<->UB bandwidth one vector core can draw (simulated), for the (%) usage columns
BASIC_HEADER = [
    "Op Name",
    "Op Type",
    "Task Duration(us)",
    "Block Dim",
    "Mix Block Dim",
    "Device Id",
    "Pid",
    "Current Freq",
    "Rated Freq",
]
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
SAMPLES_PER_US = 40  # PC samples per µs of SIMT time, all cores of a rank (simulated)
BLOCK = {"TRACE": 0x2, "FILE_API": 0x3, "INSTR_API": 0x4, "OP_BASIC_INFO": 0x5, "TOP_STALL_REASON": 0xF}
# VisualizeBinDType codes (msopprof visualize.h). The writer declares its stall columns CUSTOM_PERCENTAGE: an object
# whose Percent is a plain ratio 0..1 and whose Details are per-state sample counts (PERCENTAGE columns hold 0..100).
INT, STRING, CUSTOM_PERCENTAGE = 1, 3, 100
STALL_DTYPES = {"Stall Sampling(All Samples)": CUSTOM_PERCENTAGE, "Stall Sampling(Not Issue)": CUSTOM_PERCENTAGE}


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
    return (
        "OPPROF_" + time.strftime("%Y%m%d%H%M%S") + "_" + "".join(rng.choice(string.ascii_uppercase) for _ in range(16))
    )


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
        aiv = [
            t,
            cycles,
            t * vec,
            vec,
            t * scalar,
            scalar,
            t * mte2,
            mte2,
            core.get("mte2_bw"),
            t * mte3,
            mte3,
            None,
            core["icache_miss_rate"],
        ]
        rows.append([core["block_id"], core["sub_block_id"], *aic, *aiv])
    return rows


def _aiv_values(metric: str, core: dict[str, Any]) -> tuple[list[Any], list[Any]]:
    """A vector core's aiv columns and columns of neither side for one metric set, derived from its pipe view
    (simulated): the same launch seen through another PMU group."""
    t = core["aiv_time_us"]
    vec, mte2, mte3 = core["vec_ratio"], core["mte2_ratio"], core["mte3_ratio"]
    bw = core.get("mte2_bw") or 0.0
    read_kb = bw * t * mte2  # GB/s x us = KB
    write_kb = read_kb * 0.5
    write_bw = write_kb / t if t else 0.0
    if metric == "ArithmeticUtilization":
        return [vec, 0.8 * vec, 0.05 * vec, 0.1 * vec], []
    if metric == "L2Cache":
        reads, writes = max(1, int(read_kb / 0.5)), max(1, int(write_kb / 0.5))  # 512-byte requests
        rhit, whit = int(reads * 0.9), int(writes * 0.7)
        return [
            rhit,
            reads - rhit,
            0,
            0,
            0,
            0,
            100.0 * rhit / reads,
            whit,
            writes - whit,
            0,
            0,
            0,
            0,
            100.0 * whit / writes,
        ], []
    if metric == "Memory":
        # The vector side moves no L1/L0C data: those columns are NA on its rows.
        both = [
            read_kb,
            write_kb,
            None,
            None,
            None,
            None,
            None,
            None,
            read_kb,
            min(100.0, 100.0 * bw * mte2 / PEAK_GBPS),
            write_kb,
        ]
        return [write_bw, bw * mte2, bw * mte2, write_bw, int(read_kb), mte2, int(write_kb), mte3], [
            *both,
            min(100.0, 100.0 * write_bw / PEAK_GBPS),
        ]
    if metric == "MemoryUB":
        return [2.0 * bw * vec, bw * vec, bw * mte2, write_bw], []
    if metric == "ResourceConflictRatio":
        return [0.02 * vec, 0.03 * vec, 0.01 * vec, 0.1 * vec, 0.2 * mte2, 0.2 * mte3], []
    return [], []  # MemoryL0: cube-side columns only


def other_rows(metric: str, cores: list[dict[str, Any]]) -> list[list[Any]]:
    aic, _, _ = OTHER_950[metric]
    rows = []
    for core in cores:
        t = core["aiv_time_us"]
        aiv, both = _aiv_values(metric, core)
        rows.append(
            [
                core["block_id"],
                core["sub_block_id"],
                None,
                None,
                *[None] * len(aic),
                t,
                int(round(t * FREQ_MHZ)),
                *aiv,
                *both,
            ]
        )
    return rows


def write_kernel_run(
    directory: Path,
    kernel: str,
    proc: dict[str, Any],
    cores: list[dict[str, Any]],
    metrics: list[str],
    stamp: str | None,
    pc: dict[str, Any] | None,
    instr_pipes: list[str] | None = None,
) -> None:
    """One profiled launch: OpBasicInfo, the metric CSVs asked for, dump/, visualize_data.bin[, trace.json]."""
    directory.mkdir(parents=True, exist_ok=True)
    suffix = f"_{stamp}" if stamp else ""
    asked = {m.lower() for m in metrics}  # --aic-metrics is case-insensitive
    duration = max(c["aiv_time_us"] for c in cores) if cores else 0.0
    basic = [kernel, "vector", duration, len(cores), "NA", proc["device_id"], proc["pid"], "N/A", FREQ_MHZ]
    (directory / f"OpBasicInfo{suffix}.csv").write_text(csv_text(BASIC_HEADER, [basic]))
    if "pipeutilization" in asked:
        (directory / f"PipeUtilization{suffix}.csv").write_text(csv_text(PIPE_950, pipe_rows(cores)))
    for metric, (aic, aiv, both) in OTHER_950.items():
        if metric.lower() in asked:
            header = [
                "block_id",
                "sub_block_id",
                "aic_time(us)",
                "aic_total_cycles",
                *aic,
                "aiv_time(us)",
                "aiv_total_cycles",
                *aiv,
                *both,
            ]
            (directory / f"{metric}{suffix}.csv").write_text(csv_text(header, other_rows(metric, cores)))
    dump = directory / "dump"
    dump.mkdir(exist_ok=True)
    (dump / "op_basic_info.txt").write_text(
        f"Run Soc Version=Ascend950PR_9599\nCurrent Freq=N/A\nRated Freq={FREQ_MHZ}\nHas Simt=1\nIs MC2=0\n"
    )
    blob = block(
        BLOCK["OP_BASIC_INFO"], json.dumps({"Op Name": kernel, "Op Type": "vector", "Block Dim": len(cores)}).encode()
    )
    if pc is not None:
        if pc.get("top_stall_reason_table"):
            blob += block(
                BLOCK["TOP_STALL_REASON"], json.dumps({"top_stall_reason_table": pc["top_stall_reason_table"]}).encode()
            )
        if pc.get("files"):
            dtypes = {
                "Lines": {"Line": INT, "Instructions Executed": INT, **STALL_DTYPES}
            }  # nested, as the writer does
            blob += block(
                BLOCK["FILE_API"], json.dumps({"Cores": ["ALL"], "Files Dtype": dtypes, "Files": pc["files"]}).encode()
            )
        if pc.get("instructions"):
            blob += block(
                BLOCK["INSTR_API"],
                json.dumps(
                    {
                        "Cores": ["ALL"],
                        "Instructions Dtype": {"Instructions": {"Address": STRING, **STALL_DTYPES}},
                        "Instructions": pc["instructions"],
                    }
                ).encode(),
                version=0,
            )
        (dump / "pcSampling.bin0").write_bytes(b"\0" * 16 * max(1, pc.get("samples", 0) // 1000))
    if {"pipetimeline", "instrtimeline"} & asked and proc.get("phases"):
        trace = timeline_trace(proc["phases"], "instrtimeline" in asked, instr_pipes)
        (directory / "trace.json").write_text(json.dumps(trace))
        blob += block(BLOCK["TRACE"], json.dumps(trace).encode())
    blob += block(0x9, b'{"unknown": "a block type a reader must skip"}')
    (directory / "visualize_data.bin").write_bytes(blob)


TIMELINE_CORES = 6  # the device timelines are sampling-based: only 6 cores are shown (docs/formats.md §2)
TRACE_PIPES = {"vec": "VECTOR", "scalar": "SCALAR", "mte2": "MTE2", "mte3": "MTE3"}
SLICES = 4  # a work phase is drawn as this many slices; in each, every pipe starts at the slice start
INSTRUCTIONS = {  # two instructions per pipe (simulated names); the PC differs per role's code
    "VECTOR": ("VADDS", "VCOPY"),
    "SCALAR": ("LD_XD_XN_IMM", "ADD_XD_XN_XM"),
    "MTE2": ("MOV_OUT_TO_UB", "MOV_OUT_TO_UB_ALIGN"),
    "MTE3": ("MOV_UB_TO_OUT", "MOV_UB_TO_OUT_ALIGN"),
}
ROLE_PC = {
    "TokenCopyToBuffer": 0x10F80000,
    "URMASendToken": 0x10F84000,
    "SelfCopyToken": 0x10F88000,
    "CalCumSum": 0x10F8C000,
}


def sampled_cores(n: int) -> list[int]:
    """The cores the device timeline shows: spread evenly over the launch's cores (which ones the tool picks is not
    documented)."""
    if n <= TIMELINE_CORES:
        return list(range(n))
    return sorted({round(k * (n - 1) / (TIMELINE_CORES - 1)) for k in range(TIMELINE_CORES)})


def timeline_trace(cores: list[dict[str, Any]], instr: bool, instr_pipes: list[str] | None) -> dict[str, Any]:
    """Device trace.json (docs/formats.md §2) from the event model's phases: pid core<block_id>.veccore0, tid the pipe,
    ts/dur in µs from the kernel start. Each pipe of a phase is busy its share of every slice, so a core's busy time per
    pipe is the model's pipe time. InstrTimeline adds args
    pc_addr/code and keeps only the --instr-timeline-pipe pipes."""
    events = []
    wanted = {p.upper() for p in instr_pipes} if instr and instr_pipes else None
    for index in sampled_cores(len(cores)):
        core = cores[index]
        pid = f"core{core['block_id']}.veccore0"
        for phase in core["phases"]:
            length = (phase["end"] - phase["start"]) / SLICES
            if length <= 0:
                continue
            for key, share in phase["pipes"].items():
                pipe = TRACE_PIPES[key]
                if share <= 0 or (wanted is not None and pipe not in wanted):
                    continue
                for k in range(SLICES):
                    start = phase["start"] + k * length
                    event = {
                        "name": pipe,
                        "cname": "good",
                        "ph": "X",
                        "ts": round(start, 4),
                        "dur": round(share * length, 4),
                        "pid": pid,
                        "tid": pipe,
                        "args": {},
                    }
                    if instr:
                        j = k % 2
                        pc = (
                            ROLE_PC.get(core["role"], 0x10F90000)
                            + 0x100 * list(TRACE_PIPES.values()).index(pipe)
                            + 0x10 * j
                        )
                        event["name"] = INSTRUCTIONS[pipe][j]
                        event["args"] = {
                            "pc_addr": f"0x{pc:08x}",
                            "code": f"elastic_dispatch.cpp:{200 + (pc & 0xFFF) // 0x10}",
                        }
                    events.append(event)
    return {"profilingType": "op", "displayTimeUnit": "ns", "schemaVersion": 1, "traceEvents": events}


SIMT_STALLS = {  # dominant stall states per SIMT function (simulated)
    "simt_prepare_mapping": {
        "Scoreboard_Not_Ready": 0.30,
        "Warp_Level_Sync": 0.25,
        "Active": 0.25,
        "IBuf_Empty": 0.10,
        "Others": 0.10,
    },
    "buildRemoteWqeDesc": {
        "Scoreboard_Not_Ready": 0.45,
        "Active": 0.20,
        "Resource_conflict": 0.15,
        "IBuf_Empty": 0.10,
        "Nop_Cycles": 0.10,
    },
    "simt_nw_mj_vf": {"Warp_Level_Sync": 0.35, "Active": 0.30, "Register_bank_conflict": 0.15, "Others": 0.20},
    "simt_write_wqe_v4": {
        "Resource_conflict": 0.40,
        "Active": 0.25,
        "Scoreboard_Not_Ready": 0.20,
        "Divergence_Stack_Spill": 0.15,
    },
}


def pc_samples(rank: int, simt: dict[str, Any], mode: str) -> dict[str, Any]:
    """PC-sampling view of the SIMT code: stall reasons per source line and instruction (simulated)."""
    if mode == "no_samples":
        return {"samples": 0}
    repo = Path(simt["repo"])
    source = repo / simt["source"]
    has_debug_line = bool(simt["has_debug_line"])
    lines = source.read_text().splitlines()
    starts = {name: i + 1 for i, text in enumerate(lines) for name in SIMT_STALLS if f" {name}(" in text}
    rng = random.Random(f"pc/{rank}")
    # Samples per function follow the event model's time in it on this rank (function_us); lines share them 1/(k+1).
    function_us = simt["function_us"]
    line_share = [1 / (k + 1) for k in range(6)]
    total = {s: 0 for s in STATES}
    files, instructions = [], []
    address = 0x10F86A00
    for name, mix in SIMT_STALLS.items():
        for k in range(6):
            samples = int(
                function_us.get(name, 0.0) * SAMPLES_PER_US * (0.5 + rng.random()) * line_share[k] / sum(line_share)
            )
            details = {s: int(samples * mix.get(s, 0.0)) for s in STATES}
            for st, n in details.items():
                total[st] += n
            not_issue = {s: n for s, n in details.items() if s != "Active"}
            entry = {
                "Line": starts[name] + 2 + k * 3,
                "Address Range": [[f"0x{address:08x}", f"0x{address + 0x40:08x}"]],
                "Instructions Executed": samples * 3,
                "GPR Count": -1,
                "Process Bytes": -1,
                # Details: sample counts per state, as the writer sums them; Percent is filled in below
                "Stall Sampling(All Samples)": {"Percent": 0.0, "Details": details},
                "Stall Sampling(Not Issue)": {"Percent": 0.0, "Details": not_issue},
            }
            files.append(entry)
            instructions.append(
                {
                    "Address": f"0x{address:08x}",
                    "Source": f"elastic_dispatch.cpp:{entry['Line']}",
                    "Pipe": "SIMT",
                    "AscendC Inner Code": name,
                    # copies: a line's and its instruction's stall objects must not be one dict (filled in once each)
                    **json.loads(
                        json.dumps(
                            {
                                k2: entry[k2]
                                for k2 in (
                                    "Stall Sampling(All Samples)",
                                    "Stall Sampling(Not Issue)",
                                    "Instructions Executed",
                                )
                            }
                        )
                    ),
                }
            )
            address += 0x40
    grand = sum(total.values()) or 1
    grand_not_issue = sum(n for s, n in total.items() if s != "Active") or 1
    for entry in files + instructions:  # Percent, as the writer computes it: a ratio 0..1, each over its own total
        all_samples, not_issue = entry["Stall Sampling(All Samples)"], entry["Stall Sampling(Not Issue)"]
        all_samples["Percent"] = sum(all_samples["Details"].values()) / grand
        not_issue["Percent"] = sum(not_issue["Details"].values()) / grand_not_issue
    return {
        "samples": grand,
        "top_stall_reason_table": {s: n for s, n in total.items() if s != "Active"},
        "active": total["Active"],
        "files": [{"Source": str(source.relative_to(repo)), "Lines": files}] if has_debug_line else [],
        "instructions": instructions,
        "has_debug_line": has_debug_line,
    }
