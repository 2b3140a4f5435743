"""`msopprof simulator` output (docs/formats.md §2) for the stand-in probe: the simulator executes the
probe's instruction stream on a small model of one AI vector core and writes what the real tool writes:
- `OPPROF_*/simulator/trace.json`: the summary (schemaVersion 2; pid = core string, tid = pipe string, X events with
  args{pc_addr, code, detail}, SET/WAIT flags as B/E pairs plus flow events, µs floats);
- `OPPROF_*/simulator/visualize_data.bin`: the same JSON as a TRACE (0x2) block;
- `OPPROF_*/simulator/<core>/{<core>_code_exe.csv, <core>_instr_exe.csv, trace.json}`: per core, CSVs without a
  trailing comma sorted by cycles (decimal addr, unquoted detail with commas) and the per-core trace (schemaVersion 1,
  integer pids declared by process_name M-events, integer tids with thread_name);
- CACHEMISS events: tid/pipe CACHEMISS, name = the missed line's address as 0x%08x, dur = 1 cycle.

The model (an assumption, not camodel): a direct-mapped I-cache of ICACHE_SETS lines of 128 bytes, a miss stalls
fetch for MISS_PENALTY cycles; scalar-side pipes issue in order and block, MTE2/MTE3/VECTOR run in parallel with
the scalar stream (an instruction waits only for its own pipe). Its ground truth (what it wrote) goes to
sim_truth.json beside the OPPROF_ directory, for tests only.
"""

from __future__ import annotations

import json
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

from simprof.opprof_writer import block, opprof_name

FREQ_MHZ = 1650.0  # cycles per µs (the 950 fixtures' rated frequency)
LINE = 128
ICACHE_SETS = 16
MISS_PENALTY = 30
PIPE_PIDS = {
    "SCALAR": 10,
    "SCALARLDST": 20,
    "VECTOR": 30,
    "CUBE": 40,
    "MTE1": 50,
    "MTE2": 60,
    "MTE3": 70,
    "FIXP": 80,
    "FLOWCTRL": 90,
    "ALL": 100,
    "CACHEMISS": 110,
}
BLOCKING = {"SCALAR", "SCALARLDST", "FLOWCTRL"}


def execute(stream: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """(instruction events, I-cache misses), times in cycles."""
    cache: dict[int, int] = {}
    pipe_free: dict[str, int] = defaultdict(int)
    t = 0
    events, misses = [], []
    for ins in stream:
        line = ins["pc"] // LINE * LINE
        if cache.get((line // LINE) % ICACHE_SETS) != line:
            misses.append({"line": line, "cycle": t})
            cache[(line // LINE) % ICACHE_SETS] = line
            t += MISS_PENALTY
        start = max(t, pipe_free[ins["pipe"]])
        pipe_free[ins["pipe"]] = start + ins["cycles"]
        t = start + ins["cycles"] if ins["pipe"] in BLOCKING else start + 1
        events.append({**ins, "start": start})
    return events, misses


def us(cycles: float) -> float:
    return round(cycles / FREQ_MHZ, 6)


def miss_detail(line: int) -> str:
    return f"icache read address is 0x{line:08x}, size is 0x{LINE:08x}, type:1, last:0, status is MISS"


def core_trace(core: str, events: list[dict[str, Any]], misses: list[dict[str, Any]]) -> dict[str, Any]:
    used = sorted({e["pipe"] for e in events} | ({"CACHEMISS"} if misses else set()), key=PIPE_PIDS.get)
    meta = []
    for pipe in used:
        meta.append({"name": "process_name", "ph": "M", "pid": PIPE_PIDS[pipe], "args": {"name": pipe}})
        meta.append({"name": "thread_name", "ph": "M", "pid": PIPE_PIDS[pipe], "tid": 0, "args": {"name": core}})
    xs = [
        {
            "name": e["instr"],
            "ph": "X",
            "pid": PIPE_PIDS[e["pipe"]],
            "tid": 0,
            "ts": us(e["start"]),
            "dur": us(e["cycles"]),
            "args": {"pc_addr": f"0x{e['pc']:08x}", "code": e["code"], "detail": e["detail"]},
        }
        for e in events
    ]
    xs += [
        {
            "name": f"0x{m['line']:08x}",
            "ph": "X",
            "pid": PIPE_PIDS["CACHEMISS"],
            "tid": 0,
            "ts": us(m["cycle"]),
            "dur": us(1),
            "cname": "thread_state_runnable",
            "args": {"detail": miss_detail(m["line"])},
        }
        for m in misses
    ]
    return {"schemaVersion": 1, "traceEvents": meta + sorted(xs, key=lambda e: e["ts"])}


def summary_trace(runs: dict[str, tuple[list[dict[str, Any]], list[dict[str, Any]]]]) -> dict[str, Any]:
    out: list[dict[str, Any]] = []
    flow = 0
    for core, (events, misses) in runs.items():
        for e in events:
            args = {"pc_addr": f"0x{e['pc']:08x}", "code": e["code"], "detail": e["detail"]}
            out.append(
                {
                    "name": e["instr"],
                    "ph": "X",
                    "pid": core,
                    "tid": e["pipe"],
                    "ts": us(e["start"]),
                    "dur": us(e["cycles"]),
                    "args": args,
                }
            )
            if (
                e["instr"] == "SET_FLAG"
            ):  # a SET/WAIT pair: B/E on the flag lane and a flow arrow, as the tool draws them
                flow += 1
                out.append({"name": "SET_FLAG", "ph": "B", "pid": core, "tid": "FLAG", "ts": us(e["start"])})
                out.append({"name": "SET_FLAG", "ph": "E", "pid": core, "tid": "FLAG", "ts": us(e["start"] + 1)})
                out.append({"name": "flag", "ph": "s", "id": flow, "pid": core, "tid": "FLAG", "ts": us(e["start"])})
                out.append(
                    {
                        "name": "flag",
                        "ph": "f",
                        "id": flow,
                        "pid": core,
                        "tid": "FLAG",
                        "ts": us(e["start"] + 1),
                        "bp": "e",
                    }
                )
        for m in misses:
            out.append(
                {
                    "name": f"0x{m['line']:08x}",
                    "ph": "X",
                    "pid": core,
                    "tid": "CACHEMISS",
                    "ts": us(m["cycle"]),
                    "dur": us(1),
                    "cname": "thread_state_runnable",
                    "args": {"pc_addr": f"0x{m['line']:08x}", "code": "", "detail": miss_detail(m["line"])},
                }
            )
    return {"schemaVersion": 2, "traceEvents": out}


def instr_csv(events: list[dict[str, Any]]) -> str:
    agg: dict[tuple[str, int, str], dict[str, Any]] = {}
    for e in events:
        row = agg.setdefault((e["instr"], e["pc"], e["pipe"]), {"count": 0, "cycles": 0, "detail": e["detail"]})
        row["count"] += 1
        row["cycles"] += e["cycles"]
    rows = sorted(agg.items(), key=lambda kv: -kv[1]["cycles"])
    lines = ["instr,addr,pipe,call_count,cycles,running_time(us),detail"]
    lines += [
        f"{i},{pc},{pipe},{r['count']},{r['cycles']},{r['cycles'] / FREQ_MHZ:.6f},{r['detail']}"
        for (i, pc, pipe), r in rows
    ]
    return "\n".join(lines) + "\n"


def code_csv(events: list[dict[str, Any]]) -> str:
    agg: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    for e in events:
        agg[e["code"]][0] += 1
        agg[e["code"]][1] += e["cycles"]
    lines = ["code,call_count,cycles,running_time(us)"]
    lines += [f"{code},{n},{c},{c / FREQ_MHZ:.6f}" for code, (n, c) in sorted(agg.items(), key=lambda kv: -kv[1][1])]
    return "\n".join(lines) + "\n"


def write_simulation(output: Path, record: dict[str, Any], soc: str, seed: int) -> Path:
    """Execute the probe's streams and write one single-kernel OPPROF_ tree; return its root."""
    root = output / opprof_name(seed)
    sim = root / "simulator"
    (root / "dump").mkdir(parents=True)
    (root / "dump" / "op_basic_info.txt").write_text(
        f"Op Name={record['kernel']}\nRun Soc Version={soc}\nHas Simt=0\nIs MC2=0\n"
    )
    runs = {core: execute(stream) for core, stream in record["cores"].items()}
    for core, (events, misses) in runs.items():
        d = sim / core
        d.mkdir(parents=True)
        (d / f"{core}_instr_exe.csv").write_text(instr_csv(events))
        (d / f"{core}_code_exe.csv").write_text(code_csv(events))
        (d / "trace.json").write_text(json.dumps(core_trace(core, events, misses)))
    summary = json.dumps(summary_trace(runs))
    (sim / "trace.json").write_text(summary)
    (sim / "visualize_data.bin").write_bytes(block(0x2, summary.encode()))
    truth = {
        "schema": "dispatchprof.sim_truth_probe/1",
        "toolchain": "sim",
        "note": "what the stand-in simulator wrote, for tests only; the workflow's analysis never reads it",
        "opprof": root.name,
        "cachemiss": {
            "total": sum(len(m) for _, m in runs.values()),
            "per_core": {core: len(m) for core, (_, m) in runs.items()},
            "per_pc": dict(Counter(f"0x{x['line']:08x}" for _, m in runs.values() for x in m)),
        },
        "instructions": {core: len(e) for core, (e, _) in runs.items()},
    }
    (output / "sim_truth.json").write_text(json.dumps(truth, indent=1))
    return root
