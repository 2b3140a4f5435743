"""Tables and lists the report shows, derived from stage outputs (no rendering here)."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
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


# the validation every op-profiler replay run records (op_profiler_collect.py)
REPLAY_CHECK = "op-profiler log has no failure line"
HCCL_CAUTION = (
    "The msprof HCCL view shows HCCL collectives only: the kernel's SHMEM/URMA traffic (UDMA/RDMA writes issued "
    "from AIV cores) does not appear there, so an empty or quiet HCCL lane says nothing about the network"
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
            f"Kernel replay verified in this run by {', '.join(verified)}: each "
            "replayed the kernel on every rank and precision still passed afterwards"
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
            "Kernel replay not verified here: the op-profiler data was imported, "
            "and its precision after replay was not checked in this run"
        )
    if pmu is None or not pmu.ok or not (verified or imported):
        items.append(
            "PMU replay compatibility of the full kernel unresolved: kernel "
            "replay of a cross-rank kernel was not verified in this run"
        )
        debugclock = statuses.get("debugclock")
        if debugclock is not None and debugclock.ok:
            items.append(
                "Per-role phases come from the DebugClock fallback (a "
                "DEBUG_CLOCK_ON build): pipe utilisation per core is not measured"
            )
    if not network_evidence:
        items.append(
            "Network evidence (link counters, RDMA/UDMA transfer "
            f"traces) is not collected by this workflow. {HCCL_CAUTION}"
        )
    probe = statuses.get("probe")
    if probe is not None and probe.ok:
        items.append(
            "The probe's numbers are simulator, single card, local probe: they "
            "test a local hypothesis and never speak for the multi-rank kernel"
        )
    return items


@dataclass
class ReportContext:
    """Everything report.html and report.md show, read once from the stages' outputs (stages/report.py). The
    section builders (report/parts.py) turn it into the report model; the templates' shells read the run's name,
    kernel and cluster fields by name."""

    experiment: str
    """The experiment's name (results/<experiment>/)."""
    mode: str
    """collect (this workflow ran the kernel) or analyze (imported artifacts)."""
    toolchain: str
    """sim, cann or none (imported): the banner and every "simulated" label follow it."""
    generated: str
    """When the report was rendered (ISO seconds)."""
    kernel_name: str
    """The profiled kernel's name (kernel.name)."""
    nodes: int
    """cluster.nodes."""
    ranks_per_node: int
    """cluster.ranks_per_node."""
    world: int
    """Ranks in the collective (nodes x ranks per node)."""
    transport: str
    """deepep.transport when collected here; analyze.shape's, or "not known", for imported data."""
    shape: dict[str, Any]
    """The shape the data was measured with, and ``known``: whether it is known at all."""
    roles: list[dict[str, Any]]
    """kernel.roles: the AIV roles in AIV order (name, count): a configured assumption."""
    build_summary: str
    """The build stage's reason (its state too when the build left a placeholder)."""
    env_nodes: list[dict[str, Any]]
    """One row per node of the captured environment (environment_rows)."""
    env_warnings: list[str]
    """Mismatches between the nodes' environments."""
    timeline: dict[str, Any] | None
    """The merged timeline's stats, links, drill-downs, next steps and pictures; None without timeline data."""
    crosscheck: dict[str, Any]
    """msprof-analyze's cross-check of the timeline (state, reason, rows)."""
    comparisons: list[dict[str, Any]]
    """Each A/B comparison this experiment is part of, linked."""
    pmu: dict[str, Any] | None
    """The PMU roles (roles.json) with their pictures, when the stage is ok."""
    pcsampling: dict[str, Any] | None
    """The SIMT stalls (stalls.json) with their picture, when the stage is ok."""
    debugclock: dict[str, Any] | None
    """DebugClock's phases and charts, when the stage is ok."""
    pipe_timeline: dict[str, Any] | None
    """The pipe timeline's runs, whenever one was parsed."""
    answer: list[Any]
    """The Answer's items (report/verdict.py): lines and the causes table."""
    evidence_parts: list[dict[str, str]]
    """The answer's evidence: one part per question with every qualification (report/summary.py)."""
    baseline: dict[str, Any] | None
    """The baseline's stats, links, embedded plots and link pictures, when the stage is ok."""
    correctness: dict[str, Any] | None
    """The precision test's per-rank table link and failed rows; None where it holds no ranks."""
    probe: dict[str, Any] | None
    """The local probe's results, when the stage is ok."""
    open_boundaries: list[str]
    """What this report cannot say (open_boundaries)."""
    artifact_guide: dict[str, Any]
    """Which artifact opens in which MindStudio Insight view (report/artifacts.py)."""
    cautions: dict[str, str]
    """The fixed cautions: what the HCCL view and PC samples cannot say."""
    analysis_settings: list[tuple[str, str]]
    """The analysis keys of the configuration and their values as shown."""
    stages: dict[str, dict[str, Any]]
    """Every stage's status as a dict, with ``link`` to its status.json."""
    figures: dict[str, str]
    """Every chart's file beside report.md: name -> link relative to the report directory."""
    history: dict[str, Any] | None = None
    """The history gate's verdict (history.json) with its trend picture (``trend_svg``); None when history is off."""

    def fields(self) -> dict[str, Any]:
        """The fields by name (shallow), as the templates' shells read them."""
        return {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}
