"""Stage pipe_timeline: fold the PipeTimeline / InstrTimeline runs (or the import), read every rank's trace.json (or
the TRACE block of visualize_data.bin), and tabulate pipe busy time and MTE overlap per core and role, and
InstrTimeline's top instructions per pipe.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Mapping

import pandas as pd

from dispatchprof.analysis.opprof_runs import PerRank, rank_runs, read_each_rank, refused_details, refused_validations
from dispatchprof.analysis.pipe_timeline import (
    BANDWIDTH_CAUTION,
    INSTR_NOTE,
    INSTR_PC_LIMIT,
    PARALLEL_CAUTION,
    assign_roles,
    core_table,
    pcs_per_pipe,
    role_table,
    top_instructions,
    unassigned,
)
from dispatchprof.analysis.rank_identity import RankIdentityError, coverage_of, load_identities, refused_sentence
from dispatchprof.shell.atomic import write_json_atomic, write_parquet_atomic
from dispatchprof.shell.config import world_ranks
from dispatchprof.formats.msopprof import OpprofFormatError
from dispatchprof.formats.trace_json import TraceFormatError, read_run_trace
from dispatchprof.tools.opprofiler import TIMELINE_KINDS
from dispatchprof.shell.stage import StageRun
from dispatchprof.shell.status import Status, Validation, worst_state

REFUSAL_NOTE = (
    "an expected outcome: the msopprof docs say PipeTimeline/InstrTimeline do not support "
    "comm-compute fused kernels, and whether elastic_dispatch_kernel counts as one is not known"
)
CORE_MAPPING = {
    "block_id": (
        "assumed: trace.json's core<N>.veccore0 is block_id N, i.e. AIV index N of this AIV-only kernel "
        "(docs/formats.md §2 does not say; pipe_timeline.core_mapping); cube cores and veccore1 are not placed"
    ),
    "unknown": "unknown (pipe_timeline.core_mapping): cores are not placed on roles",
}


def read_sources(
    run: StageRun, parts: Mapping[str, Status]
) -> tuple[list[tuple[str, Path, str | None]], dict[str, dict]]:
    """(kind label, raw dir, identity dir) of every run to read, and the state of each configured run."""
    cfg = run.config
    runs: dict[str, dict] = {}
    sources = []
    if cfg["mode"] == "analyze":
        part = parts["pipe_timeline_import"]
        runs["import"] = {"state": part.state, "reason": part.reason}
        if part.ok:
            sources.append(("import", Path(cfg["analyze"]["pipe_timeline_dir"]), None))
        return sources, runs
    for kind, metric in TIMELINE_KINDS.items():
        part = parts[f"{kind}_collect"]
        entry = {
            "metric": metric,
            "state": part.state,
            "reason": part.reason,
            "options": part.details.get("options", []),
        }
        if part.state == "failed" and "refused" in part.reason:
            entry["note"] = REFUSAL_NOTE
        runs[metric] = entry
        if part.ok:
            base = Path("results") / run.experiment / "pipe_timeline" / kind
            sources.append((metric, base / "raw", str(base / "run" / "identity")))
    return sources, runs


def not_run_status(
    run: StageRun, enabled: Mapping[str, Status], runs: dict[str, dict], upstream: dict[str, str]
) -> Status:
    """No configured run has data to read: the stage's state is the worst of its runs', and the reason says why once."""
    bad = dict(enabled)
    state = worst_state(p.state for p in bad.values())
    if state == "skipped":  # the runs share their upstream: its cause once, not per run
        label, first = next((label, p) for label, p in bad.items() if p.state == "skipped")
        reason = f"{label}: {first.reason}" + (f" (and {len(bad) - 1} more run skipped)" if len(bad) > 1 else "")
    else:
        reason = "; ".join(f"{label}: {p.state} ({p.reason})" for label, p in bad.items())
    if any("note" in r for r in runs.values()):
        reason += f" ({REFUSAL_NOTE})"
    root = next((p.root_cause for p in bad.values() if p.root_cause), None)
    return run.status(state, reason, upstream=upstream, root_cause=root, details={"runs": runs})


def read_traces(
    run: StageRun, sources: list[tuple[str, Path, str | None]], runs: dict[str, dict]
) -> tuple[list[pd.DataFrame], list[str], list[Validation]]:
    """Every rank's trace events of every source, the state of each source, and the warnings on the way. A rank
    whose trace cannot be read is left out with why (``runs`` lists it under refused), the source goes on with the
    rest; one below the coverage keeps its events."""
    cfg = run.config
    frames, states, validations = [], [], []
    for label, raw, identity in sources:
        unplaced: list[str] = []
        try:
            found = rank_runs(
                raw,
                cfg["cluster"]["nodes"],
                cfg["cluster"]["ranks_per_node"],
                cfg["kernel"]["name"],
                load_identities(identity),
                cfg["cluster"]["infer_rank"],
                unplaced,
            )
        except RankIdentityError as exc:
            runs.setdefault(label, {})
            runs[label].update(state="invalid", reason=str(exc))
            states.append("invalid")
            continue
        read = read_each_rank(
            found, lambda r: read_run_trace(r.run.directory), (OpprofFormatError, TraceFormatError), unplaced
        )
        validations += [
            Validation(f"{label}: {v.check}", v.passed, v.severity, v.detail)
            for v in refused_validations(read, "trace")
        ]
        states.append(
            source_traces(label, read, runs, frames, validations, world_ranks(cfg), cfg["stats"]["min_rank_coverage"])
        )
    return frames, states, validations


def source_traces(
    label: str,
    read: PerRank[Any],
    runs: dict[str, dict],
    frames: list[pd.DataFrame],
    validations: list[Validation],
    world: int,
    min_fraction: float,
) -> str:
    """One source's traces into ``frames``, its coverage and refused ranks into ``runs[label]``; its state."""
    traces, without, unmatched = [], [], []
    for rank, launches in read.read.items():
        for r, trace in launches:
            if trace is None or trace.events.empty:
                without.append(rank)
                continue
            kind = label if label != "import" else ("InstrTimeline" if trace.has_instructions else "PipeTimeline")
            traces.append(trace.source)
            frames.append(trace.events.assign(rank=rank, launch=r.run.n if r.run.n is not None else 0, run=kind))
            if trace.unmatched:  # begin/end events without their pair: not intervals, and not silently gone either
                unmatched.append(trace.warning)
    if unmatched:
        runs.setdefault(label, {})["unmatched_begin_end"] = unmatched
        validations.append(Validation(f"{label}: every B/E event is in a pair", False, "warning", "; ".join(unmatched)))
    with_trace = sorted(set(read.read) - set(without))  # a rank with a run without a trace is not counted covered
    cov = coverage_of(world, with_trace, min_fraction)
    entry = runs.setdefault(label, {"state": "ok"})
    entry["traces"] = traces
    entry["rank_coverage"] = {**cov.as_dict(), "sentence": cov.sentence(), **refused_details(read)}
    left_out = refused_sentence(read.refused)
    if not cov.enough:
        entry.update(
            state="invalid",
            reason=(
                "trace.json (or a TRACE block in visualize_data.bin) "
                f"for {cov.sentence()}: below stats.min_rank_coverage"
            )
            + (f"; {len(without)} kernel runs have none (not a PipeTimeline/InstrTimeline run?)" if without else "")
            + left_out,
        )
        return "invalid"
    if not cov.complete:
        validations.append(
            Validation(f"{label}: every rank has a trace", False, "warning", f"analysed {cov.sentence()}{left_out}")
        )
    return "ok"


def tabulate_runs(
    events: pd.DataFrame,
    runs: dict[str, dict],
    settings: Mapping[str, Any],
    roles: list[dict],
    validations: list[Validation],
) -> dict[str, pd.DataFrame]:
    """Per detected run (PipeTimeline, InstrTimeline): its cores placed on roles, and the role table in ``runs``."""
    per_run: dict[str, pd.DataFrame] = {}
    for kind in ("PipeTimeline", "InstrTimeline"):
        mine = events[events["run"] == kind] if len(events) else events
        if not len(mine):
            continue
        cores = assign_roles(core_table(mine), roles, settings["core_mapping"]).assign(run=kind)
        per_run[kind] = cores
        entry = runs.setdefault(kind, {"state": "ok", "reason": "imported"})
        entry["roles"] = role_table(cores, roles)
        entry["unassigned"] = unassigned(cores)
        entry["cores_per_rank"] = int(cores.groupby(["rank", "launch"]).size().max())
        if kind == "InstrTimeline":
            entry["top_instructions"] = top_instructions(mine, settings["top_instructions"])
            entry["pcs_per_pipe_max"] = pcs_per_pipe(mine)
            entry["instr_note"] = INSTR_NOTE
            full = [p for p, n in entry["pcs_per_pipe_max"].items() if n >= INSTR_PC_LIMIT]
            if full:
                validations.append(
                    Validation(
                        "InstrTimeline PC limit",
                        False,
                        "warning",
                        f"{', '.join(full)} reached {INSTR_PC_LIMIT} PCs on a core: data may be dropped",
                    )
                )
    for kind in per_run:  # analyze mode: the import's coverage is each detected run's
        runs[kind].setdefault("rank_coverage", runs.get("import", {}).get("rank_coverage"))
        runs[kind].setdefault("traces", runs.get("import", {}).get("traces", []))
    return per_run


def pipe_timeline_result(run: StageRun, runs: dict[str, dict], primary: str | None) -> dict[str, Any]:
    """stats.json of the stage, with its summary."""
    settings = run.config["pipe_timeline"]
    role_view = runs[primary]["roles"] if primary else {}
    result = {
        "toolchain": run.toolchain,
        "source": run.source,
        "runs": runs,
        "roles_from": primary,
        "roles": role_view,
        "core_mapping": settings["core_mapping"],
        "core_mapping_note": CORE_MAPPING[settings["core_mapping"]],
        "time_unit": "µs (trace.json ts/dur are cycles / aicore frequency; displayTimeUnit is only the viewer's)",
        "cautions": {"parallel_pipes": PARALLEL_CAUTION, "mte_bandwidth": BANDWIDTH_CAUTION},
        "sampling_note": (
            "the device timelines are sampling-based: msopprof shows only a "
            "subset of cores (6 on 950), so each role carries its coverage"
        ),
    }
    result["summary"] = {
        "runs": {k: v.get("state") for k, v in runs.items()},
        "roles_from": primary,
        "roles": {
            role: {
                "coverage": v["coverage"],
                "cores_seen": v["cores_seen"],
                "cores_of_role": v["cores_of_role"],
                "pipes": v["pipes"],
            }
            for role, v in role_view.items()
        },
        "top_instructions": runs.get("InstrTimeline", {}).get("top_instructions"),
    }
    return result


def pipe_timeline_reason(
    runs: Mapping[str, dict], role_view: Mapping[str, Any], roles: list[dict], validations: list[Validation]
) -> str:
    pieces = []
    for kind, entry in runs.items():
        text = f"{kind}: {entry.get('state')}"
        if entry.get("state") == "ok" and entry.get("roles"):
            seen = sum(v["cores_seen"] for v in entry["roles"].values())
            text += (
                f" ({(entry.get('rank_coverage') or {}).get('sentence', 'ranks not known')}, "
                f"{seen} of {sum(int(r['count']) for r in roles)} AIV cores placed on roles)"
            )
            text += refused_sentence((entry.get("rank_coverage") or {}).get("refused") or {}).replace(
                ". Left out", "; left out"
            )
        elif entry.get("state") not in ("ok", "disabled"):
            text += f" ({entry.get('reason')}{'; ' + entry['note'] if entry.get('note') else ''})"
        pieces.append(text)
    empty = [r for r, v in role_view.items() if not v["cores_seen"]]
    if empty:
        pieces.append(f"roles without a sampled core: {', '.join(empty)}")
        validations.append(
            Validation("every role sampled", False, "warning", f"no sampled core for {', '.join(empty)}")
        )
    return "; ".join(pieces)


def pipe_timeline(run: StageRun, parts: Mapping[str, Status]) -> Status:
    cfg = run.config
    settings = cfg["pipe_timeline"]
    roles = cfg["kernel"]["roles"]
    enabled = {label: p for label, p in parts.items() if p.state != "disabled"}
    upstream = {label: p.state for label, p in parts.items()}
    if not enabled:
        why = "pipe_timeline.runs is empty" if cfg["mode"] == "collect" else next(iter(parts.values())).reason
        return run.status("disabled", why, upstream=upstream)
    sources, runs = read_sources(run, parts)
    if not sources:
        return not_run_status(run, enabled, runs, upstream)
    frames, states, validations = read_traces(run, sources, runs)
    events = pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()
    per_run = tabulate_runs(events, runs, settings, roles, validations)
    for kind in per_run:  # analyze mode: the import's coverage is each detected run's
        runs[kind].setdefault("rank_coverage", runs.get("import", {}).get("rank_coverage"))
        runs[kind].setdefault("traces", runs.get("import", {}).get("traces", []))
    primary = "PipeTimeline" if "PipeTimeline" in per_run else ("InstrTimeline" if per_run else None)
    all_cores = pd.concat(per_run.values(), ignore_index=True) if per_run else pd.DataFrame({"placeholder": []})
    meta = {"dispatchprof.toolchain": run.toolchain, "dispatchprof.source": run.source}
    write_parquet_atomic(run.outputs["cores"], all_cores, meta)
    result = pipe_timeline_result(run, runs, primary)
    write_json_atomic(run.outputs["stats"], result)
    state = worst_state([p.state for p in enabled.values()] + states)
    return run.status(
        state,
        pipe_timeline_reason(runs, result["roles"], roles, validations),
        upstream=upstream,
        validations=validations,
        artifacts=[str(p) for p in run.outputs.values()],
        details={"runs": {k: v.get("state") for k, v in runs.items()}},
    )
