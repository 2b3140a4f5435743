"""System-timeline analysis: which PROF_ is which rank, the target kernel's launches, stragglers, gaps.

Cross-node timestamps are not comparable (each host's clock), so ranks are aligned by launch index of
the target kernel, never by absolute time across nodes. Gaps (start minus previous end) and intervals
are computed per rank on its own clock.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping

import numpy as np
import pandas as pd

from dispatchprof.formats.msprof import ProfInfo


def kernel_regex(pattern: str) -> re.Pattern[str]:
    """msopprof --kernel-name semantics: a symbol matches when it starts with the name; '*' is a wildcard."""
    return re.compile("".join(".*" if c == "*" else re.escape(c) for c in pattern))


def matches(frame: pd.DataFrame, pattern: str) -> pd.Series:
    """Rows whose name or op type matches; the regex runs once per distinct string, not per row."""
    regex = kernel_regex(pattern)

    def column(name: str) -> pd.Series:
        values = frame[name].astype(str)
        hits = {v for v in values.unique() if regex.match(v)}
        return values.isin(hits)

    return column("name") | (column("op_type") if "op_type" in frame else False)


@dataclass
class RankAssignment:
    prof: Path
    rank: int | None
    local_rank: int | None
    node: int
    device: int | None
    pid: int | None
    how: str  # sidecar | rank_id | inferred


def assign_ranks(node: int, ranks_per_node: int, infos: list[ProfInfo], identities: Mapping[int, Mapping[str, Any]]) -> list[RankAssignment]:
    """Global rank of each PROF_: the identity sidecar (by PID) first, then info.json rank_id, else inferred
    by sorting this node's device ids (and said so)."""
    out: list[RankAssignment] = []
    inferred = sorted((i for i in infos if i.pid not in identities and i.rank_id is None and i.devices), key=lambda i: i.devices[0])
    order = {id(i): k for k, i in enumerate(inferred)}
    for info in infos:
        device = info.devices[0] if info.devices else None
        ident = identities.get(info.pid) if info.pid is not None else None
        if ident is not None and ident.get("global_rank") is not None:
            rank, how = int(ident["global_rank"]), "sidecar"
        elif info.rank_id is not None:
            rank, how = info.rank_id, "rank_id"
        elif id(info) in order:
            rank, how = node * ranks_per_node + order[id(info)], "inferred"
        else:
            rank, how = None, "unknown"
        local = rank - node * ranks_per_node if rank is not None else None
        out.append(RankAssignment(info.path, rank, local, node, device, info.pid, how))
    return out


def coverage_table(node: int, ranks_per_node: int, assignments: list[RankAssignment], infos: Mapping[Path, ProfInfo]) -> pd.DataFrame:
    """One row per expected rank of this node: its PROF_, device, pid, and found / missing with why."""
    rows = []
    for local in range(ranks_per_node):
        rank = node * ranks_per_node + local
        mine = [a for a in assignments if a.rank == rank]
        with_data = [a for a in mine if infos[a.prof].devices and (infos[a.prof].db or infos[a.prof].text_dir)]
        if with_data:
            a = with_data[0]
            state, why = "found", f"mapped by {a.how}"
        elif mine:
            a = mine[0]
            state, why = "missing", "PROF_ has no device data (no device_<id>/info.json.<id> with a db or an export)"
        else:
            a, state, why = None, "missing", "no PROF_ directory for this rank"
        rows.append(
            {
                "node": node,
                "local_rank": local,
                "global_rank": rank,
                "device": a.device if a else None,
                "pid": a.pid if a else None,
                "prof_dir": str(a.prof) if a else None,
                "state": state,
                "detail": why,
                "duplicates": len(mine) - 1 if len(mine) > 1 else 0,
            }
        )
    return pd.DataFrame(rows).astype({"device": "Int64", "pid": "Int64", "prof_dir": "string"})


def launches(kernels: pd.DataFrame, pattern: str) -> tuple[pd.DataFrame, list[str]]:
    """The target kernel's launches of one rank in start order, with their launch index and the symbols matched."""
    hit = kernels[matches(kernels, pattern)].sort_values("start_ns", kind="stable").reset_index(drop=True)
    hit["launch"] = np.arange(len(hit))
    return hit, sorted(hit["name"].unique().tolist())


def calls_between(kernels: pd.DataFrame, target: pd.DataFrame, pattern: str) -> list[dict[str, Any]]:
    """Other kernels between consecutive target launches on this rank: count per iteration, median duration."""
    if len(target) < 2:
        return []
    others = kernels[~matches(kernels, pattern)]
    starts = target["start_ns"].to_numpy()
    ends = starts + target["dur_ns"].to_numpy()
    o = others["start_ns"].to_numpy()
    before = np.searchsorted(starts, o, side="right") - 1  # the launch each kernel follows
    inside = (before >= 0) & (before < len(starts) - 1)
    inside[inside] &= o[inside] >= ends[before[inside]]
    chosen = others[inside]
    result = []
    for name, group in chosen.groupby("name"):
        result.append({"name": str(name), "per_iteration": len(group) / (len(starts) - 1), "median_us": float(np.median(group["dur_ns"])) / 1000})
    return sorted(result, key=lambda r: -r["median_us"])


def straggler(per_rank_durations: Mapping[int, Mapping[int, float]]) -> dict[str, Any]:
    """Align ranks by launch index; per index the slowest rank; consistently (>= half) vs occasionally slowest."""
    wide = pd.DataFrame(per_rank_durations)  # index: launch, columns: rank
    complete = wide.dropna()
    if complete.empty:
        return {"rank": None, "fraction_slowest": None, "launches_compared": 0, "per_rank_fraction": {}, "per_launch_max_us": []}
    slowest = complete.idxmax(axis=1)
    fractions = slowest.value_counts(normalize=True)
    rank = int(fractions.index[0])
    return {
        "rank": rank,
        "fraction_slowest": float(fractions.iloc[0]),
        "kind": "consistently slowest" if fractions.iloc[0] >= 0.5 else "occasionally slowest (no rank is slowest in half the launches)",
        "launches_compared": int(len(complete)),
        "per_rank_fraction": {str(int(r)): float(f) for r, f in fractions.items()},
        "per_launch_max_us": complete.max(axis=1).tolist(),
    }


def merged_trace(details: Mapping[int, Mapping[str, Any]], align_launch: int) -> dict[str, Any]:
    """Chrome trace (Perfetto, chrome://tracing) of every rank's used launches, each rank shifted so that
    the chosen launch ends at t=0: ranks on different hosts become comparable by launch, not by clock."""
    events: list[dict[str, Any]] = []
    for rank, detail in sorted(details.items()):
        table = detail.get("table") or []
        if not table:
            continue
        anchor = table[min(align_launch, len(table) - 1)]
        zero = anchor["start_ns"] + anchor["dur_us"] * 1000
        events.append(
            {
                "name": "process_name",
                "ph": "M",
                "pid": rank,
                "tid": 0,
                "args": {"name": f"rank {rank} (node {detail.get('node')}, device {detail.get('device')})"},
            }
        )
        events.append({"name": "process_sort_index", "ph": "M", "pid": rank, "tid": 0, "args": {"sort_index": rank}})
        for row in table:
            events.append(
                {
                    "name": detail.get("symbol") or "target kernel",
                    "ph": "X",
                    "pid": rank,
                    "tid": 0,
                    "ts": (row["start_ns"] - zero) / 1000,
                    "dur": row["dur_us"],
                    "args": {"launch": row["launch"], "gap_us": row["gap_us"]},
                }
            )
    return {"displayTimeUnit": "ns", "traceEvents": events, "metadata": {"aligned_on": f"end of used launch {align_launch} of every rank = 0 us"}}
