"""Stage probe: parse the simulator's OPPROF_ tree (collected here or imported in place)."""

from __future__ import annotations

from typing import Mapping

from dispatchprof.analysis.probe import LABEL, probe_result, summary_section
from dispatchprof.shell.atomic import write_json_atomic
from dispatchprof.formats.simulator import SimulatorFormatError, simulator_runs
from dispatchprof.shell.stage import StageRun
from dispatchprof.shell.status import Status, Validation


def probe(run: StageRun, needed: Mapping[str, Status]) -> Status:
    """Parse the OPPROF_ tree; ``needed`` holds the parts the entry script found ok before importing this."""
    root = run.raw_dir("probe_dir")
    upstream = {k: p.state for k, p in needed.items()}
    runs = simulator_runs(root)
    if not runs:
        return run.status("invalid", f"no OPPROF_*/simulator/ directory under {root}", upstream=upstream)
    try:
        result = probe_result(runs, run.config["probe"]["top"])
    except SimulatorFormatError as exc:
        return run.status("invalid", str(exc), upstream=upstream)
    validations = []
    agreement = result["cachemiss_agreement"]
    if agreement and agreement["per_core_traces"] != agreement["summary_trace"]:
        validations.append(
            Validation(
                "CACHEMISS in both traces",
                False,
                "warning",
                f"{agreement['per_core_traces']} in the per-core trace.json files, "
                f"{agreement['summary_trace']} in the summary trace.json; the per-core count is used",
            )
        )
    if result["unmatched_begin_end"]:
        validations.append(
            Validation(
                "every B/E event of the traces is in a pair", False, "warning", "; ".join(result["unmatched_begin_end"])
            )
        )
    cm = result["cachemiss"]
    validations.append(
        Validation(
            "CACHEMISS lane",
            cm is not None,
            "warning",
            "a core's trace has a CACHEMISS lane" if cm else "no trace has a CACHEMISS lane",
        )
    )
    result = {"toolchain": run.toolchain, "source": run.source, **result}
    result["summary"] = summary_section(result)
    write_json_atomic(run.outputs["stats"], result)
    if not result["events_from"] and not result["instr_top"]:
        return run.status(
            "invalid",
            f"the simulator tree under {root} holds no trace.json events and no instruction CSV",
            upstream=upstream,
        )
    top = cm["top_pcs"][0] if cm and cm["top_pcs"] else None
    hot = result["instr_top"][0] if result["instr_top"] else None
    misses = (
        f"{cm['total']} I-cache misses (CACHEMISS)"
        if cm
        else "I-cache misses not provided (no CACHEMISS lane in the traces)"
    )
    reason = (
        f"{LABEL}: {misses} over {len(result['cores'])} simulated cores"
        + (f", most at {top['pc']} ({top['count']})" if top else "")
        + (
            f"; hottest instruction {hot['instr']} at {hot['pc']} on {hot['core']} ({hot['cycles']} cycles)"
            if hot
            else ""
        )
    )
    return run.status("ok", reason, upstream=upstream, validations=validations, artifacts=[str(run.outputs["stats"])])
