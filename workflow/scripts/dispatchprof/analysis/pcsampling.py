"""PC-sampling stall reasons of the SIMT code: two denominators, never mixed, and hot source lines.

"All Samples" includes Active (issuing) samples; "Not Issue" excludes them. Each line or instruction carries
its share of all samples (Percent) and the state breakdown of its own samples (Details, fractions).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any, Iterable, Mapping, Sequence

from dispatchprof.formats.visualize_bin import ALL, NOT_ISSUE, STATES, PcSampling

SIMT_FUNCTIONS = ("simt_prepare_mapping", "buildRemoteWqeDesc", "simt_nw_mj_vf", "simt_write_wqe_v4")
# Which AIV roles call which SIMT function (shared/formats/deepep.md §4): URMASendToken prepares the mapping and builds
# and writes WQEs; SelfCopyToken prepares the mapping too. TokenCopyToBuffer and CalCumSum run no SIMT code.
SIMT_ROLES = {
    "simt_prepare_mapping": ("URMASendToken", "SelfCopyToken"),
    "buildRemoteWqeDesc": ("URMASendToken",),
    "simt_nw_mj_vf": ("URMASendToken",),
    "simt_write_wqe_v4": ("URMASendToken",),
}


def _weighted(records: Sequence[Mapping[str, Any]], key: str, states: Sequence[str]) -> dict[str, float] | None:
    totals = {s: 0.0 for s in states}
    weight = 0.0
    for r in records:
        entry = r.get(key)
        if not isinstance(entry, dict) or not isinstance(entry.get("Details"), dict):
            continue
        share = float(entry.get("Percent") or 0.0)
        weight += share
        for s in states:
            totals[s] += share * float(entry["Details"].get(s, 0.0))
    if weight <= 0:
        return None
    norm = sum(totals.values()) or 1.0
    return {s: v / norm for s, v in totals.items()}


def stall_tables(pc: PcSampling) -> dict[str, dict[str, float] | None]:
    """Fractions per state. Not Issue from the TopStallReason table when present (the tool's own totals)."""
    records = pc.instructions or pc.lines
    all_samples = _weighted(records, ALL, STATES)
    if pc.top_stall:
        total = sum(pc.top_stall.values()) or 1.0
        not_issue = {s: pc.top_stall.get(s, 0.0) / total for s in STATES if s != "Active"}
    else:
        not_issue = _weighted(records, NOT_ISSUE, [s for s in STATES if s != "Active"])
    return {"all_samples": all_samples, "not_issue": not_issue}


def function_at(source: Path, line: int, names: Sequence[str] = SIMT_FUNCTIONS) -> str | None:
    """The candidate SIMT function whose top-level definition encloses ``line`` (None for any other function)."""
    if not source.is_file():
        return None
    current = None
    for number, text in enumerate(source.read_text(errors="replace").splitlines(), 1):
        if number > line:
            break
        if text[:1].isspace() or text.lstrip().startswith("//") or "(" not in text:
            continue  # only top-level declaration lines start or end a function's span
        current = next((n for n in names if re.search(rf"\b{n}\s*\(", text)), None)
    return current


def hot_lines(pc: PcSampling, repo: Path | None, top: int = 10) -> list[dict[str, Any]]:
    rows = []
    for r in pc.lines:
        entry = r.get(ALL) or {}
        details = entry.get("Details") or {}
        stalls = {s: v for s, v in details.items() if s != "Active"}
        rows.append(
            {
                "file": r.get("File"),
                "line": r.get("Line"),
                "percent_of_samples": float(entry.get("Percent") or 0.0),
                "top_stall": max(stalls, key=stalls.get) if stalls else None,
                "stalls": {k: float(v) for k, v in stalls.items()},
                "active_fraction": float(details.get("Active", 0.0)),
                "function": function_at(repo / r["File"], int(r["Line"])) if repo and r.get("File") and isinstance(r.get("Line"), int) else None,
            }
        )
    return sorted(rows, key=lambda r: -r["percent_of_samples"])[:top]


def mean_tables(tables: Sequence[Mapping[str, float] | None]) -> dict[str, float] | None:
    """The unweighted mean over ranks of their stall tables (ranks without samples left out)."""
    present = [t for t in tables if t]
    if not present:
        return None
    return {s: sum(t.get(s, 0.0) for t in present) / len(present) for s in present[0]}


def aggregate(decoded: Sequence[tuple[int, PcSampling]], repo: Path | None, top: int = 10) -> dict[str, Any]:
    """Every rank's decoded PC sampling -> per-rank tables, the mean stall tables over ranks, and the hot lines
    (each line's share averaged over the ranks, with how many ranks saw it)."""
    per_rank, all_tables, ni_tables, hot = {}, [], [], {}
    lines_seen = instructions_seen = 0
    for rank, pc in decoded:
        tables = stall_tables(pc) if pc.top_stall is not None else {"all_samples": None, "not_issue": None}
        per_rank[str(rank)] = {"samples": pc.top_stall is not None, "lines": len(pc.lines), "instructions": len(pc.instructions), **tables}
        all_tables.append(tables["all_samples"])
        ni_tables.append(tables["not_issue"])
        lines_seen += len(pc.lines)
        instructions_seen += len(pc.instructions)
        for row in hot_lines(pc, repo, top=50):
            entry = hot.setdefault((row["file"], row["line"]), {**row, "percent_of_samples": 0.0, "ranks": 0})
            entry["percent_of_samples"] += row["percent_of_samples"]
            entry["ranks"] += 1
    for entry in hot.values():
        entry["percent_of_samples"] /= max(1, len(per_rank))  # mean share over ranks
    by_function = function_stalls(hot.values())
    return {
        "per_function": by_function,
        "per_role": role_stalls(by_function),
        "per_rank": per_rank,
        "stalls": {"all_samples": mean_tables(all_tables), "not_issue": mean_tables(ni_tables)},
        "hot_lines": sorted(hot.values(), key=lambda e: -e["percent_of_samples"])[:top],
        "lines_seen": lines_seen,
        "instructions_seen": instructions_seen,
    }


def function_stalls(lines: Iterable[Mapping[str, Any]]) -> dict[str, dict[str, Any]]:
    """Per SIMT function: the not-issued stall mixture of its source lines, each line weighted by its share of all
    samples (the mixture sums to 1 over the stall states), and its share of all samples."""
    out: dict[str, dict[str, Any]] = {}
    for line in lines:
        function, stalls = line.get("function"), line.get("stalls") or {}
        if not function or not stalls:
            continue
        entry = out.setdefault(function, {"share_of_samples": 0.0, "weighted": {}})
        entry["share_of_samples"] += line["percent_of_samples"]
        for state, value in stalls.items():
            entry["weighted"][state] = entry["weighted"].get(state, 0.0) + line["percent_of_samples"] * value
    for entry in out.values():
        total = sum(entry["weighted"].values()) or 1.0
        entry["stalls"] = {s: v / total for s, v in sorted(entry.pop("weighted").items(), key=lambda kv: -kv[1])}
    return out


def role_stalls(by_function: Mapping[str, Mapping[str, Any]]) -> dict[str, dict[str, Any]]:
    """Per AIV role: the functions it runs (SIMT_ROLES) and their stall mixture, weighted by their sample shares."""
    out: dict[str, dict[str, Any]] = {}
    for function, entry in by_function.items():
        for role in SIMT_ROLES.get(function, ()):
            r = out.setdefault(role, {"functions": [], "weighted": {}, "share": 0.0})
            r["functions"].append(function)
            r["share"] += entry["share_of_samples"]
            for state, value in entry["stalls"].items():
                r["weighted"][state] = r["weighted"].get(state, 0.0) + entry["share_of_samples"] * value
    for r in out.values():
        total = sum(r["weighted"].values()) or 1.0
        r["stalls"] = {s: v / total for s, v in sorted(r.pop("weighted").items(), key=lambda kv: -kv[1])}
        r.pop("share")
    return out
