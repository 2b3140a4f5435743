"""PC-sampling stall reasons of the SIMT code: two denominators, never mixed, and hot source lines.

"All Samples" includes Active (issuing) samples; "Not Issue" excludes them. The parser gives each line or instruction
its ``share`` of all samples of the kernel on that rank (a fraction 0..1) and the state ``mix`` of its own samples.
A hot line's share is of all sampled PCs of the rank, Active included; the lines need not sum to 1 (samples at PCs
that map to no source line count in the denominator only).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any, Iterable, Mapping, Sequence

from dispatchprof.analysis.rank_identity import coverage_of
from dispatchprof.formats.ranklog import name_ranks
from dispatchprof.formats.visualize_bin import STATES, PcSampling

HOT_LINE_SHARE = "share of all PC samples of the kernel on a rank (Active included), mean over the ranks with samples"

SIMT_FUNCTIONS = ("simt_prepare_mapping", "buildRemoteWqeDesc", "simt_nw_mj_vf", "simt_write_wqe_v4")
# Which AIV roles call which SIMT function (docs/formats.md §3): URMASendToken prepares the mapping and builds
# and writes WQEs; SelfCopyToken prepares the mapping too. TokenCopyToBuffer and CalCumSum run no SIMT code.
SIMT_ROLES = {
    "simt_prepare_mapping": ("URMASendToken", "SelfCopyToken"),
    "buildRemoteWqeDesc": ("URMASendToken",),
    "simt_nw_mj_vf": ("URMASendToken",),
    "simt_write_wqe_v4": ("URMASendToken",),
}


def _weighted(
    records: Sequence[Mapping[str, Any]], share: str, mix: str, states: Sequence[str]
) -> dict[str, float] | None:
    """The state mixture over records, each record's mix weighted by its share (both fractions, from the parser)."""
    totals = {s: 0.0 for s in states}
    weight = 0.0
    for r in records:
        if not r.get(mix):
            continue
        weight += r[share]
        for s in states:
            totals[s] += r[share] * r[mix].get(s, 0.0)
    if weight <= 0:
        return None
    norm = sum(totals.values()) or 1.0
    return {s: v / norm for s, v in totals.items()}


def stall_tables(pc: PcSampling) -> dict[str, dict[str, float] | None]:
    """Fractions per state. Not Issue from the TopStallReason table when present (the tool's own totals)."""
    records = pc.instructions or pc.lines
    all_samples = _weighted(records, "share", "mix", STATES)
    if pc.top_stall:
        total = sum(pc.top_stall.values()) or 1.0
        not_issue = {s: pc.top_stall.get(s, 0.0) / total for s in STATES if s != "Active"}
    else:
        not_issue = _weighted(records, "not_issue_share", "not_issue_mix", [s for s in STATES if s != "Active"])
    return {"all_samples": all_samples, "not_issue": not_issue}


def function_at(source: Path, line: int, names: Sequence[str] = SIMT_FUNCTIONS) -> str | None:
    """The candidate SIMT function whose top-level definition encloses ``line`` (None for any other function)."""
    if not source.is_file():
        return None
    current = None
    for number, text in enumerate(source.read_text(encoding="utf-8-sig", errors="replace").splitlines(), 1):
        if number > line:
            break
        if text[:1].isspace() or text.lstrip().startswith("//") or "(" not in text:
            continue  # only top-level declaration lines start or end a function's span
        current = next((n for n in names if re.search(rf"\b{n}\s*\(", text)), None)
    return current


def hot_lines(pc: PcSampling, repo: Path | None, top: int = 10) -> list[dict[str, Any]]:
    rows = []
    for r in pc.lines:
        mix = r.get("mix") or {}
        stalls = {s: v for s, v in mix.items() if s != "Active"}
        rows.append(
            {
                "file": r.get("File"),
                "line": r.get("Line"),
                "share_of_samples": r["share"],  # fraction 0..1 of all samples of the rank
                "top_stall": max(stalls, key=stalls.get) if stalls else None,
                "stalls": stalls,
                "active_fraction": mix.get("Active", 0.0),
                "function": function_at(repo / r["File"], int(r["Line"]))
                if repo and r.get("File") and isinstance(r.get("Line"), int)
                else None,
            }
        )
    return sorted(rows, key=lambda r: -r["share_of_samples"])[:top]


def mean_tables(tables: Sequence[Mapping[str, float] | None]) -> dict[str, float] | None:
    """The unweighted mean over ranks of their stall tables (ranks without samples left out)."""
    present = [t for t in tables if t]
    if not present:
        return None
    return {s: sum(t.get(s, 0.0) for t in present) / len(present) for s in present[0]}


def aggregate(decoded: Sequence[tuple[int, PcSampling]], repo: Path | None, top: int = 10) -> dict[str, Any]:
    """Every rank's decoded PC sampling -> per-rank tables, the mean stall tables over ranks, and the hot lines
    (each line's share averaged over the ranks with samples, with how many ranks saw it). A rank without samples has
    no denominator: counting it as 0 would shrink every share by the fraction of silent ranks."""
    per_rank, all_tables, ni_tables, hot = {}, [], [], {}
    lines_seen = instructions_seen = 0
    for rank, pc in decoded:
        tables = stall_tables(pc) if pc.top_stall is not None else {"all_samples": None, "not_issue": None}
        per_rank[str(rank)] = {
            "samples": pc.top_stall is not None,
            "lines": len(pc.lines),
            "instructions": len(pc.instructions),
            **tables,
        }
        all_tables.append(tables["all_samples"])
        ni_tables.append(tables["not_issue"])
        lines_seen += len(pc.lines)
        instructions_seen += len(pc.instructions)
        if pc.top_stall is None:
            continue
        for row in hot_lines(pc, repo, top=50):
            entry = hot.setdefault((row["file"], row["line"]), {**row, "share_of_samples": 0.0, "ranks": 0})
            entry["share_of_samples"] += row["share_of_samples"]
            entry["ranks"] += 1
    sampled = sum(1 for v in per_rank.values() if v["samples"])
    for entry in hot.values():
        entry["share_of_samples"] /= max(1, sampled)  # mean share over the ranks with samples
    by_function = function_stalls(hot.values())
    return {
        "per_function": by_function,
        "per_role": role_stalls(by_function),
        "per_rank": per_rank,
        "stalls": {"all_samples": mean_tables(all_tables), "not_issue": mean_tables(ni_tables)},
        "hot_lines": sorted(hot.values(), key=lambda e: -e["share_of_samples"])[:top],
        "hot_line_share": HOT_LINE_SHARE,
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
        entry["share_of_samples"] += line["share_of_samples"]
        for state, value in stalls.items():
            entry["weighted"][state] = entry["weighted"].get(state, 0.0) + line["share_of_samples"] * value
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


def coverage(
    world: int, per_rank: Mapping[str, Mapping[str, Any]], min_fraction: float, refused: Iterable[int] = ()
) -> dict[str, Any]:
    """Which of the ``world`` ranks have PC samples, judged as the timeline and PMU judge theirs
    (rank_identity.coverage_of, stats.min_rank_coverage): {expected, found, missing: [ranks], without_output: [ranks
    with no visualize_data.bin], state: full | partial | none | most_missing, text}. A rank absent from per_rank wrote
    no visualize_data.bin; a rank present with samples False wrote one without a TopStallReason block. Below the
    fraction, means over ranks would describe a minority: most_missing, and the stage is invalid.
    ``refused``: ranks whose visualize_data.bin could not be read (missing, but not for want of a file)."""
    covered = coverage_of(world, [int(r) for r, v in per_rank.items() if v.get("samples")], min_fraction)
    refused = sorted(set(refused))
    without_output = [r for r in covered.missing if str(r) not in per_rank and r not in refused]
    n, found, missing = covered.expected, covered.found, covered.missing
    if covered.complete:
        state, text = "full", f"samples on all {n} ranks"
    elif not found:
        state, text = "none", f"no samples on any of the {n} ranks"
    else:
        state = "partial" if covered.enough else "most_missing"
        text = f"samples on {len(found)} of {n} ranks; missing {name_ranks(missing, n)}"
        if without_output:
            text += f" (no visualize_data.bin: {name_ranks(without_output, n)})"
        if refused:
            text += f" (visualize_data.bin refused: {name_ranks(refused, n)})"
    return {
        "expected": n,
        "found": len(found),
        "missing": missing,
        "without_output": without_output,
        "state": state,
        "text": text,
    }
