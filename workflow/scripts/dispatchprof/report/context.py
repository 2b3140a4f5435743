"""Tables and lists the report shows, derived from stage outputs (no rendering here)."""

from __future__ import annotations

from typing import Any, Mapping

from dispatchprof.status import Status


def environment_rows(env: Mapping[str, Any]) -> tuple[list[dict[str, Any]], list[str]]:
    rows = []
    for node in env.get("nodes", []):
        versions = node["versions"]
        flags = node["compile_flags"]
        rows.append(
            {
                "node": node["node"],
                "hostname": node["hostname"],
                "cann": versions["cann"].get("version", "unavailable"),
                "driver": versions["driver"].get("version", "unavailable"),
                "firmware": versions["firmware"].get("version", "unavailable"),
                "commit": (node["probes"]["repo_commit"]["value"] or "unavailable")[:12],
                "flags": (" ".join(flags["optimization"]) + (" -g" if flags["debug_info"] else "")) if flags.get("available") else "unavailable",
                "op_entry": node["op_profiler_entry"],
                "clock_sync": node.get("clock_sync", "not recorded"),
                "unavailable": ", ".join(n for n, p in node["probes"].items() if not p["available"]) or "none",
            }
        )
    return rows, list(env.get("mismatches", []))


def open_boundaries(statuses: Mapping[str, Status]) -> list[str]:
    """What this report cannot say, stage by stage, plus the evidence no stage collects."""
    items = [f"{name}: {s.state}: {s.reason}" for name, s in statuses.items() if s.state not in ("ok", "disabled")]
    if statuses["pmu"].state != "ok":
        items.append("PMU replay compatibility of the full kernel unresolved: kernel replay of a cross-rank kernel was not verified in this run")
        if "debugclock" in statuses and statuses["debugclock"].ok:
            items.append("Per-role phases come from the DebugClock fallback (a DEBUG_CLOCK_ON build): pipe utilisation per core is not measured")
    items.append("Network evidence (link counters, RDMA/UDMA transfer traces) is not collected by this workflow")
    return items
