"""Tables and lists the report shows, derived from stage outputs (no rendering here)."""

from __future__ import annotations

from typing import Any, Mapping

from dispatchprof.shell.status import Status


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
                "flags": (" ".join(flags["optimization"]) + (" -g" if flags["debug_info"] else ""))
                if flags.get("available")
                else "unavailable",
                "op_entry": node["op_profiler_entry"],
                "clock_sync": node.get("clock_sync", "not recorded"),
                "unavailable": ", ".join(n for n, p in node["probes"].items() if not p["available"]) or "none",
            }
        )
    return rows, list(env.get("mismatches", []))


REPLAY_CHECK = "op-profiler log has no failure line"  # the validation every op-profiler replay run records (op_profiler_collect.py)
HCCL_CAUTION = (
    "The msprof HCCL view shows HCCL collectives only: the kernel's SHMEM/URMA traffic (UDMA/RDMA writes issued from AIV "
    "cores) does not appear there, so an empty or quiet HCCL lane says nothing about the network"
)
PC_SAMPLES_CAUTION = (
    "PC samples x a sampling period is not stall time: samples are a statistical share of where warps were found, "
    "taken on a subset of cycles; read the shares, never multiply them into microseconds"
)


def open_boundaries(
    statuses: Mapping[str, Status],
    collect_parts: Mapping[str, Status] | None = None,
    not_provided: Mapping[str, list[str]] | None = None,
    network_evidence: bool = False,
) -> list[str]:
    """What this report cannot say: every stage (tool mode) refused, failed or not run, every metric not provided,
    whether kernel replay was verified, and whether network evidence exists. Generic over the stages' statuses (and
    their collect parts, where the replay's checks are recorded), so a new stage is included by writing its status
    (and, for metrics, ``details.not_provided``)."""
    items = [f"{name}: {s.state}: {s.reason}" for name, s in statuses.items() if s.state not in ("ok", "disabled")]
    items += [
        f"{name}: not run (disabled): {s.reason}"
        for name, s in statuses.items()
        if s.state == "disabled" and name not in ("report",)
    ]
    metrics = {stage: list(m) for stage, m in (not_provided or {}).items() if m}
    for name, s in statuses.items():
        extra = [m for m in (s.details or {}).get("not_provided", []) if m not in metrics.get(name, [])]
        if extra:
            metrics.setdefault(name, []).extend(extra)
    items += [f"{stage}: not provided (absent or NA, never read as 0): {', '.join(m)}" for stage, m in metrics.items()]
    parts = {**statuses, **(collect_parts or {})}  # a collect part (keyed stage or stage/run) holds the replay's checks
    replayed = [name for name, s in parts.items() if any(v.check == REPLAY_CHECK for v in s.validations)]
    verified = [name for name in replayed if parts[name].ok]
    if verified:
        items.append(
            f"Kernel replay verified in this run by {', '.join(verified)}: each replayed the kernel on every rank and precision still passed afterwards"
            + (
                f"; not verified by {', '.join(n for n in replayed if n not in verified)}"
                if len(verified) < len(replayed)
                else ""
            )
        )
    pmu = statuses.get("pmu")
    imported = pmu is not None and pmu.ok and pmu.source == "import"
    if imported and not verified:
        items.append(
            "Kernel replay not verified here: the op-profiler data was imported, and its precision after replay was not checked in this run"
        )
    if pmu is None or not pmu.ok or not (verified or imported):
        items.append(
            "PMU replay compatibility of the full kernel unresolved: kernel replay of a cross-rank kernel was not verified in this run"
        )
        debugclock = statuses.get("debugclock")
        if debugclock is not None and debugclock.ok:
            items.append(
                "Per-role phases come from the DebugClock fallback (a DEBUG_CLOCK_ON build): pipe utilisation per core is not measured"
            )
    if not network_evidence:
        items.append(
            f"Network evidence (link counters, RDMA/UDMA transfer traces) is not collected by this workflow. {HCCL_CAUTION}"
        )
    probe = statuses.get("probe")
    if probe is not None and probe.ok:
        items.append(
            "The probe's numbers are simulator, single card, local probe: they test a local hypothesis and never speak for the multi-rank kernel"
        )
    return items
