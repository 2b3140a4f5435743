"""The local probe under `msopprof simulator`: I-cache misses (CACHEMISS), pipe busy time, hot instructions.

Everything here is "simulator, single card, local probe": a piece of the kernel run alone on a cycle model. It
tests a local hypothesis (does this code miss the I-cache, which instructions dominate) and never speaks for the
multi-rank kernel, whose waits on peers the simulator cannot model.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

import pandas as pd

from dispatchprof.formats.simulator import (
    SimulatorRun,
    core_files,
    read_code_exe,
    read_core_trace,
    read_instr_exe,
    read_summary_trace,
)
from dispatchprof.formats.trace_events import unmatched_warning

LABEL = "simulator, single card, local probe"
SCOPE = (
    "a piece of the kernel run alone under msopprof simulator on one card: it validates a local hypothesis (I-cache "
    "misses, hot instructions of that piece) and never speaks "
    "for the multi-rank kernel (no peers, no waits, no network)"
)
NOT_PIPES = {"CACHEMISS", "ALL", "FLOWCTRL", "USEMASK", "PUSHQ"}  # lanes that mark events, not a pipe's work


def union_us(frame: pd.DataFrame) -> float:
    """Length of the union of [ts, ts + dur) intervals: a pipe busy with overlapping events counts once."""
    total, end = 0.0, None
    for start, stop in sorted(zip(frame["ts_us"], frame["ts_us"] + frame["dur_us"])):
        if end is None or start > end:
            total += stop - start
            end = stop
        elif stop > end:
            total += stop - end
            end = stop
    return total


def cachemiss(misses: pd.DataFrame, top: int, lanes: list[str]) -> dict[str, Any] | None:
    """I-cache misses per core of the cores whose trace has a CACHEMISS lane (``lanes``); a core whose lane is declared
    but holds no event missed 0 times. No core with the lane: None, "not provided" (never 0)."""
    if not lanes:
        return None
    counts = Counter(misses["pc"])
    per_core = Counter(misses["core"])
    return {
        "total": int(len(misses)),
        "per_core": {core: int(per_core.get(core, 0)) for core in sorted(set(lanes) | set(per_core))},
        "top_pcs": [
            {"pc": pc, "count": int(n)} for pc, n in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))[:top]
        ],
    }


def pipe_busy(events: pd.DataFrame) -> dict[str, dict[str, float]]:
    """Per core and pipe, the union of its intervals in µs. Pipes run in parallel: never add them up."""
    work = events[~events["pipe"].isin(NOT_PIPES)]
    return {
        core: {pipe: round(union_us(g), 6) for pipe, g in sorted(c.groupby("pipe"))}
        for core, c in sorted(work.groupby("core"))
    }


def analyze_run(run: SimulatorRun, top: int) -> dict[str, Any]:
    """One simulated kernel: the per-core traces give the events (the summary trace is the cross-check), the
    per-core CSVs give the hot instructions and source lines."""
    prefix = f"{run.kernel}/{run.n}/" if run.kernel is not None else ""
    traced = {
        prefix + name: read_core_trace(d / "trace.json", prefix + name)
        for name, d in run.cores.items()
        if (d / "trace.json").is_file()
    }
    per_core = list(traced.values())
    lanes = {core: set(frame.attrs["pipes"]) for core, frame in traced.items()}  # declared lanes, with events or not
    summary_path = run.directory / "trace.json"
    summary = read_summary_trace(summary_path) if summary_path.is_file() else None
    if per_core:
        events, source = pd.concat(per_core, ignore_index=True), "per-core trace.json"
    elif summary is not None:
        events, source = summary.assign(core=prefix + summary["core"]), "summary trace.json"
        lanes = {
            core: set(g["pipe"]) for core, g in events.groupby("core")
        }  # the summary declares no lanes: those with events
    else:
        events, source = None, None
    instr, code = [], []
    for name, d in run.cores.items():
        files = core_files(d)
        if "instr" in files:
            instr.append(read_instr_exe(files["instr"]).assign(core=prefix + name))
        if "code" in files:
            code.append(read_code_exe(files["code"]).assign(core=prefix + name))
    read = [(run.cores[name] / "trace.json", traced[prefix + name]) for name in run.cores if prefix + name in traced]
    read += [(summary_path, summary)] if summary is not None else []
    unmatched = [
        w for w in (unmatched_warning(str(path), frame.attrs.get("unmatched", [])) for path, frame in read) if w
    ]
    agreement = None
    if per_core and summary is not None:
        agreement = {
            "per_core_traces": int((events["pipe"] == "CACHEMISS").sum()),
            "summary_trace": int((summary["pipe"] == "CACHEMISS").sum()),
        }
    return {
        "events": events,
        "events_from": source,
        "lanes": lanes,
        "instr": instr,
        "code": code,
        "cachemiss_agreement": agreement,
        "unmatched": unmatched,
    }


def probe_result(runs: list[SimulatorRun], top: int) -> dict[str, Any]:
    """The probe's evidence over every simulated kernel found. Raises nothing of its own: the parsers' errors name
    the file."""
    parts = [analyze_run(r, top) for r in runs]
    frames = [p["events"] for p in parts if p["events"] is not None]
    events = pd.concat(frames, ignore_index=True) if frames else None
    instr = [f for p in parts for f in p["instr"]]
    code = [f for p in parts for f in p["code"]]
    misses = events[events["pipe"] == "CACHEMISS"] if events is not None else None
    instr_frame = pd.concat(instr, ignore_index=True) if instr else None
    code_frame = pd.concat(code, ignore_index=True) if code else None
    instr_top = (
        [
            {
                "core": r.core,
                "instr": r.instr,
                "addr": int(r.addr),
                "pc": r.pc,
                "pipe": r.pipe,
                "cycles": int(r.cycles),
                "call_count": int(r.call_count),
                "running_time_us": float(r.running_time_us),
                "detail": r.detail,
            }
            for r in instr_frame.sort_values(["cycles", "core", "addr"], ascending=[False, True, True])
            .head(top)
            .itertuples()
        ]
        if instr_frame is not None
        else []
    )
    code_top = (
        [
            {
                "code": code,
                "cycles": int(g["cycles"].sum()),
                "call_count": int(g["call_count"].sum()),
                "cores": int(g["core"].nunique()),
            }
            for code, g in code_frame.groupby("code")
        ]
        if code_frame is not None
        else []
    )
    code_top = sorted(code_top, key=lambda r: (-r["cycles"], r["code"]))[:top]
    agreements = [p["cachemiss_agreement"] for p in parts if p["cachemiss_agreement"]]
    lanes = {core: pipes for p in parts for core, pipes in p["lanes"].items()}
    cores = sorted(set(lanes) | {c for f in instr + code for c in f["core"].unique()})
    return {
        "label": LABEL,
        "scope": SCOPE,
        "kernels": [
            {
                "opprof": str(r.opprof),
                "simulator_dir": str(r.directory),
                "kernel": r.kernel,
                "n": r.n,
                "cores": sorted(r.cores),
            }
            for r in runs
        ],
        "events_from": sorted({p["events_from"] for p in parts if p["events_from"]}),
        "cores": cores,  # every simulated core a trace or an instruction CSV covers
        "cachemiss": cachemiss(misses, top, sorted(c for c, pipes in lanes.items() if "CACHEMISS" in pipes))
        if misses is not None
        else None,
        "cachemiss_agreement": {
            "per_core_traces": sum(a["per_core_traces"] for a in agreements),
            "summary_trace": sum(a["summary_trace"] for a in agreements),
        }
        if agreements
        else None,
        "pipe_busy_us": pipe_busy(events) if events is not None else {},
        "pipe_busy_definition": (
            "per core and pipe, the union of the pipe's event intervals "
            "(µs, simulated); pipes run in parallel, never add them up"
        ),
        "span_us": {
            core: round(float((g["ts_us"] + g["dur_us"]).max() - g["ts_us"].min()), 6)
            for core, g in sorted(events.groupby("core"))
        }
        if events is not None
        else {},
        "instr_top": instr_top,
        "code_top": code_top,
        "unmatched_begin_end": [
            w for p in parts for w in p["unmatched"]
        ],  # B/E events in no pair: not in the intervals
    }


def summary_section(result: dict[str, Any]) -> dict[str, Any]:
    """summary.json's `probe` section: probe.cachemiss.{total,per_core,top_pcs},
    probe.instr_top.{core,instr,addr,cycles}."""
    return {
        "label": LABEL,
        "cachemiss": result["cachemiss"],
        "instr_top": [{k: r[k] for k in ("core", "instr", "addr", "cycles")} for r in result["instr_top"]],
        "pipe_busy_us": result["pipe_busy_us"],
    }
