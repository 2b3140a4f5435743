"""Pipe and instruction timelines (msopprof PipeTimeline / InstrTimeline, docs/formats.md §2) per core and
per role.

A pipe's busy time on a core is the union of its intervals (events of one pipe may nest or overlap; summing them
would count a moment twice). The pipes run in parallel, so per-pipe busy times are never summed into a core's busy
time; instead the overlap of the memory pipes (MTE2, MTE3) with VECTOR and SCALAR says how much data movement was
hidden behind compute. The tool samples a subset of cores (6 on 950), so every role carries its coverage: the cores
seen against the cores of the role. Which AIV index a ``core<N>`` is, is a configured assumption
(``pipe_timeline.core_mapping``): docs/formats.md §2 does not say how ``core<N>`` relates to PipeUtilization's block_id.
"""

from __future__ import annotations

from typing import Any, Iterable, Mapping, Sequence

import numpy as np
import pandas as pd

MEMORY_PIPES = ("MTE2", "MTE3")
COMPUTE_PIPES = ("VECTOR", "SCALAR")
INSTR_PC_LIMIT = 1024
INSTR_NOTE = (
    f"InstrTimeline keeps at most {INSTR_PC_LIMIT} PCs per pipe and omits instructions inside SIMT/SIMD VF functions "
    "(docs/formats.md §2): dense code may drop data (narrow it with "
    "pipe_timeline.instr_timeline_pipe), and the SIMT send path is not in this table"
)
PARALLEL_CAUTION = (
    "pipes run in parallel: never sum the pipe columns into a busy time "
    "(a core's busy time lies between its largest pipe and the sum)"
)
BANDWIDTH_CAUTION = (
    "MTE2/MTE3 move data between global memory and the core's local buffer: their busy time and "
    "bandwidth are not network bandwidth (the URMA/SHMEM traffic between ranks is not on these pipes)"
)


def merged(intervals: Iterable[tuple[float, float]]) -> list[tuple[float, float]]:
    """Disjoint sorted intervals covering the same moments."""
    out: list[list[float]] = []
    for start, end in sorted(intervals):
        if end <= start:
            continue
        if out and start <= out[-1][1]:
            out[-1][1] = max(out[-1][1], end)
        else:
            out.append([start, end])
    return [(a, b) for a, b in out]


def union_us(intervals: Iterable[tuple[float, float]]) -> float:
    return float(sum(b - a for a, b in merged(intervals)))


def intersection_us(a: Sequence[tuple[float, float]], b: Sequence[tuple[float, float]]) -> float:
    """Time covered by both sets of intervals (each merged first)."""
    x, y = merged(a), merged(b)
    i = j = 0
    total = 0.0
    while i < len(x) and j < len(y):
        lo, hi = max(x[i][0], y[j][0]), min(x[i][1], y[j][1])
        if hi > lo:
            total += hi - lo
        if x[i][1] < y[j][1]:
            i += 1
        else:
            j += 1
    return total


def core_table(events: pd.DataFrame) -> pd.DataFrame:
    """One row per (rank, launch, core, core_kind): busy µs per pipe (union), span, and the overlaps of MTE2/MTE3 with
    VECTOR and SCALAR. ``events`` holds the trace columns plus rank and launch."""
    rows = []
    keys = ["rank", "launch", "core", "core_kind"]
    for key, group in events.dropna(subset=["core"]).groupby(keys, sort=True):
        spans = {pipe: list(zip(g["ts_us"], g["ts_us"] + g["dur_us"])) for pipe, g in group.groupby("pipe")}
        row: dict[str, Any] = dict(zip(keys, key))
        row["span_us"] = float((group["ts_us"] + group["dur_us"]).max() - group["ts_us"].min())
        for pipe, intervals in spans.items():
            row[f"busy_us.{pipe}"] = union_us(intervals)
        for mem in MEMORY_PIPES:
            for comp in COMPUTE_PIPES:
                if mem in spans and comp in spans:
                    row[f"overlap_us.{mem}&{comp}"] = intersection_us(spans[mem], spans[comp])
                elif mem in spans or comp in spans:
                    row[f"overlap_us.{mem}&{comp}"] = 0.0  # one side never busy: nothing to overlap
        rows.append(row)
    return pd.DataFrame(rows)


def assign_roles(cores: pd.DataFrame, roles: Sequence[Mapping[str, Any]], mapping: str) -> pd.DataFrame:
    """AIV index and role of each core. ``block_id``: core<N>.veccore0 is AIV index N (the kernel's block_id N, one AIV
    per block, as an AIV-only kernel is launched); cube cores and veccore1 cannot be placed and stay ``unassigned``.
    ``unknown``: no core is placed."""
    out = cores.copy()
    bounds = np.cumsum([int(r["count"]) for r in roles])
    names = [r["name"] for r in roles]

    def place(row: pd.Series) -> tuple[float, str]:
        if mapping != "block_id" or row["core_kind"] != "veccore0":
            return np.nan, "unassigned"
        index = int(row["core"])
        return index, names[int(np.searchsorted(bounds, index, side="right"))] if index < bounds[-1] else "unassigned"

    placed = [place(r) for _, r in out.iterrows()] if len(out) else []
    out["aiv_index"] = [p[0] for p in placed]
    out["role"] = [p[1] for p in placed]
    return out


def _median(values: pd.Series) -> float | None:
    values = values.dropna()
    return round(float(values.median()), 3) if len(values) else None


def role_table(cores: pd.DataFrame, roles: Sequence[Mapping[str, Any]]) -> dict[str, dict[str, Any]]:
    """Per role: coverage (distinct AIV indexes seen / cores of the role, ranks seen, samples = rank x launch x core),
    busy_us_median per pipe, and the MTE overlap medians. A role without a sampled core says so, with no numbers."""
    out: dict[str, dict[str, Any]] = {}
    pipe_cols = sorted(c for c in cores.columns if c.startswith("busy_us.")) if len(cores) else []
    overlap_cols = sorted(c for c in cores.columns if c.startswith("overlap_us.")) if len(cores) else []
    for role in roles:
        name, count = role["name"], int(role["count"])
        mine = cores[cores["role"] == name] if len(cores) else cores
        seen = sorted({int(i) for i in mine["aiv_index"].dropna()}) if len(mine) else []
        entry: dict[str, Any] = {
            "cores_of_role": count,
            "cores_seen": len(seen),
            "aiv_indexes_seen": seen,
            "ranks_seen": int(mine["rank"].nunique()) if len(mine) else 0,
            "samples": len(mine),
            "coverage": f"{len(seen)}/{count} cores",
        }
        if not len(mine):
            entry.update(
                pipes=None, overlap=None, note="no sampled core of this role (msopprof shows a subset of cores)"
            )
        else:
            entry["pipes"] = {
                c.split(".", 1)[1]: {"busy_us_median": _median(mine[c])} for c in pipe_cols if mine[c].notna().any()
            }
            entry["span_us_median"] = _median(mine["span_us"])
            entry["overlap"] = {}
            for c in overlap_cols:
                mem = c.split(".", 1)[1].split("&")[0]
                busy = mine.get(f"busy_us.{mem}")
                frac = (mine[c] / busy).where(busy > 0) if busy is not None else pd.Series(dtype=float)
                entry["overlap"][c.split(".", 1)[1]] = {
                    "overlap_us_median": _median(mine[c]),
                    "fraction_of_mte_median": _median(frac),
                }
        out[name] = entry
    return out


def unassigned(cores: pd.DataFrame) -> dict[str, Any]:
    rest = cores[cores["role"] == "unassigned"] if len(cores) else cores
    return {
        "samples": len(rest),
        "cores": sorted({f"core{int(c)}.{k}" for c, k in zip(rest["core"], rest["core_kind"])}) if len(rest) else [],
    }


def top_instructions(events: pd.DataFrame, top: int) -> dict[str, list[dict[str, Any]]]:
    """InstrTimeline: per pipe, the instructions (name, PC) with
    the most total time over every rank, launch and core."""
    instr = events.dropna(subset=["pc_addr"])
    out: dict[str, list[dict[str, Any]]] = {}
    for pipe, group in instr.groupby("pipe", sort=True):
        agg = (
            group.groupby(["name", "pc_addr"], dropna=False)
            .agg(total_us=("dur_us", "sum"), count=("dur_us", "size"), code=("code", "first"))
            .reset_index()
            .sort_values(["total_us", "pc_addr"], ascending=[False, True], kind="stable")
        )
        out[str(pipe)] = [
            {
                "name": r.name,
                "pc_addr": r.pc_addr,
                "code": r.code,
                "total_us": round(float(r.total_us), 3),
                "count": int(r.count),
            }
            for r in agg.head(top).itertuples(index=False)
        ]
    return out


def pcs_per_pipe(events: pd.DataFrame) -> dict[str, int]:
    """Distinct PCs per pipe and core, at most: a pipe at the tool's 1024 limit may have dropped data."""
    instr = events.dropna(subset=["pc_addr"])
    if not len(instr):
        return {}
    per = instr.groupby(["rank", "launch", "core", "core_kind", "pipe"])["pc_addr"].nunique()
    return {str(pipe): int(n) for pipe, n in per.groupby(level="pipe").max().items()}
