"""summary.json: the machine-readable result of an experiment (stable keys; later stages add sections)."""

from __future__ import annotations

from typing import Any, Mapping

from dispatchprof.status import Status

SCHEMA = "dispatchprof.summary/1"


def build_summary(experiment: str, toolchain: str, mode: str, statuses: Mapping[str, Status]) -> dict[str, Any]:
    return {
        "schema": SCHEMA,
        "experiment": experiment,
        "toolchain": toolchain,
        "mode": mode,
        "stages": {stage: {"state": s.state, "reason": s.reason} for stage, s in statuses.items()},
    }


def answer_paragraph(statuses: Mapping[str, Status], toolchain: str, world: int) -> str:
    """The report's opening answer: what is known, and what evidence is missing (never more than that)."""
    measured = [s for s in ("baseline", "timeline", "pmu", "pcsampling") if statuses[s].ok]
    missing = [s for s in ("baseline", "timeline", "pmu", "pcsampling") if not statuses[s].ok]
    text = []
    if toolchain == "sim":
        text.append("These results come from the simulated cluster: they exercise the workflow and are not measurements.")
    corr = statuses["correctness"]
    if corr.state == "ok":
        text.append(f"The precision test passed on all {world} ranks.")
    elif corr.state != "disabled":
        text.append(f"The precision test did not pass ({corr.state}: {corr.reason}), so no performance evidence was collected.")
    if measured:
        text.append(f"Evidence available: {', '.join(measured)}.")
    if missing:
        text.append(
            "No conclusion about what is slow can be drawn from stages without evidence: "
            + "; ".join(f"{s} is {statuses[s].state} ({statuses[s].reason})" for s in missing)
            + "."
        )
    return " ".join(text)
