"""Stage report: render report.html, report.md (its charts as files in figures/ beside it) and summary.json from
whatever the stages left.

Every stage's part of the report is built the same way (``Section``): its stats file, read unless a placeholder, and
its status give what the templates render and the summary that the answer paragraph and summary.json read. No
pandas: the report job should cost its rendering only.
"""

from __future__ import annotations

import datetime
import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Mapping

from dispatchprof.report.history import summary_section as history_summary
from dispatchprof.report.history_svg import trend_svg
from dispatchprof.report.artifacts import artifact_guide
from dispatchprof.report.context import (
    HCCL_CAUTION,
    PC_SAMPLES_CAUTION,
    ReportContext,
    environment_rows,
    open_boundaries,
)
from dispatchprof.report.figures import figure_files, render_figures, render_link_figures
from dispatchprof.report.html import embed_png, render
from dispatchprof.report.markdown import spaced_tables
from dispatchprof.report.parts import report_parts
from dispatchprof.shell.invocation import read_invocation
from dispatchprof.report.steps import Run, collect_command
from dispatchprof.report.verdict import Facts, verdict
from dispatchprof.report.summary import evidence_parts, evidence_sentences, build_summary, drill_command, next_steps
from dispatchprof.shell.atomic import write_json_atomic, write_text_atomic
from dispatchprof.shell.config import SHAPE_KEYS, world_ranks
from dispatchprof.shell.rule_keys import RULE_KEYS
from dispatchprof.shell.stage import StageRun
from dispatchprof.shell.intermediates import IntermediateUnreadable
from dispatchprof.shell.status import Status, read_input_status
from dispatchprof.stages.report_inputs import StageFiles, read_stage_files

TEMPLATES = Path(__file__).resolve().parents[3] / "templates"
Link = Callable[[str], str]


def shown_value(value: object, width: int = 100) -> str:
    """A setting's value as compact JSON, cut at ``width`` characters."""
    text = json.dumps(value, separators=(", ", ": "))
    return text if len(text) <= width else text[: width - 1] + "…"


def shown_shape(cfg: dict) -> dict:
    """The shape the data was measured with: the config's when collected here; for imported data only what
    analyze.shape gives, every other key "not known" (shape: describes what this workflow would run)."""
    if cfg["mode"] == "collect":
        return {**cfg["shape"], "known": True}
    given = cfg["analyze"]["shape"] or {}
    return {**{key: given.get(key, "not known") for key in SHAPE_KEYS}, "known": bool(given)}


def collect_parts(experiment: str, statuses: dict) -> dict:
    """Each stage's collect part, where a replay run records its checks (the stage's final status folds it away)."""
    parts = {}
    for stage in statuses:
        root = Path("results") / experiment / stage
        if (root / "collect" / "status.json").is_file():
            parts[stage] = read_input_status(root / "collect" / "status.json")
        for path in sorted(root.glob("*/collect/status.json")):  # a stage of several runs (pipe_timeline/pipe, /instr)
            parts[f"{stage}/{path.parent.parent.name}"] = read_input_status(path)
    return parts


def not_provided(evidence: dict) -> dict:
    """Metrics a stage that ran could not provide (the stage's own lists; never read as 0)."""
    pmu, pcs = evidence.get("pmu") or {}, evidence.get("pcsampling") or {}
    out = {"pmu": list(pmu.get("missing_columns") or [])}
    for name, t in (pmu.get("metric_sets") or {}).items():
        out["pmu"] += [
            f"{name}: {c}" for c in dict.fromkeys((t.get("not_provided") or []) + (t.get("missing_columns") or []))
        ]
    if pcs and not pcs.get("stalls"):
        out["pcsampling"] = ["SIMT stall samples (no TopStallReason block)"]
    return out


@dataclass
class Section:
    """One stage's part of the report: what the templates render, and what the answer and summary.json read."""

    context: dict[str, Any]
    summary: dict[str, Any] | None


def stats_of(files: StageFiles, path: str) -> dict[str, Any] | None:
    """A stage's stats file; None when it is the placeholder of a stage that produced nothing, or cannot be read."""
    data = files.json(path)
    return None if data.get("placeholder") else data


def evidence_section(files: StageFiles, path: str, status: Status, link: Link) -> Section | None:
    """PMU, PC sampling, probe: shown when the stage is ok, its stats linked."""
    data = stats_of(files, path)
    if data is None or not status.ok:
        return None
    return Section({**data, "link": link(path)}, data["summary"])


def debugclock_section(files: StageFiles, path: str, status: Status, link: Link) -> Section | None:
    """DebugClock when it is ok: its phase charts and heat maps, and the summary with the DEBUG_CLOCK_ON overhead."""
    data = stats_of(files, path)
    if data is None or not status.ok:
        return None
    from dispatchprof.report.debugclock import section  # its SVGs: only for a report that has DebugClock data

    overhead = (
        {k: data["overhead"][k] for k in ("on_median_us", "off_median_us", "ratio")} if data.get("overhead") else None
    )
    return Section(section(data), {**data["summary"], "overhead": overhead})


def pipe_timeline_section(files: StageFiles, path: str, status: Status, link: Link) -> Section | None:
    """The pipe timeline whenever a run was parsed, with links to its trace files: its runs' states are inside, so it
    is shown even when another run was refused and the stage is not ok."""
    data = stats_of(files, path)
    if data is None:
        return None
    for entry in data["runs"].values():
        entry["trace_links"] = [link(t) if not Path(t).is_absolute() else t for t in entry.get("traces", [])]
    return Section({**data, "link": link(path)}, data["summary"])


# stage -> (its stats input, its section builder)
SECTIONS: dict[str, tuple[str, Callable[[StageFiles, str, Status, Link], Section | None]]] = {
    "pmu": ("pmu_stats", evidence_section),
    "pcsampling": ("pcsampling_stats", evidence_section),
    "probe": ("probe_stats", evidence_section),
    "debugclock": ("debugclock_stats", debugclock_section),
    "pipe_timeline": ("pipe_timeline_stats", pipe_timeline_section),
}


def baseline_context(
    run: StageRun, files: StageFiles, status: Status, link: Link
) -> tuple[dict[str, Any] | None, dict[str, Any] | None]:
    """The baseline's context (stats, plots) and summary, when it is ok."""
    if not status.ok:
        return None, None
    stats = files.json(run.inputs["baseline_stats"])
    plot_dir = Path(run.inputs["baseline_plots"])
    return {
        "stats": stats,
        "link": link(run.inputs["baseline_stats"]),
        "parquet": link(str(Path(run.inputs["baseline_stats"]).with_name("latency.parquet"))),
        "plots": {
            name: embed_png(plot_dir / f"{name}.png")
            for name in ("kernel_per_rank", "kernel_iteration_max", "slowest_rank", "api_per_rank")
        },
        "timeline_minus_kernel": None,
    }, stats["summary"]


def timeline_context(run: StageRun, files: StageFiles, link: Link, ok: set[str]) -> dict[str, Any] | None:
    """The merged timeline with every per-rank drill-down and the next steps its causes suggest; None without data."""
    timeline_stats = stats_of(files, run.inputs["timeline_stats"])
    if timeline_stats is None:
        return None
    timeline = {
        "stats": timeline_stats,
        "link": link(run.inputs["timeline_stats"]),
        "trace": link(str(Path(run.inputs["timeline_stats"]).with_name("merged_trace.json"))),
        "replay": link(str(Path(run.inputs["timeline_stats"]).with_name("replay_without_top_cause.json"))),
        # MindStudio Insight opens the PROF_ folders themselves (it writes its cache into the folder it opens)
        "prof_folders": (
            str(Path(run.inputs["timeline_stats"]).with_name("raw")) + "/node*/PROF_*"
            if run.config["mode"] == "collect"
            else f"{run.config['analyze']['timeline_dir']}/node*/PROF_*"
        ),
        "drilldowns": [],
    }
    for path in run.inputs.get("timeline_ranks", []):
        detail = files.json(path)
        if not detail.get("placeholder"):
            csv, svg = (link(str(Path(path).with_name(name))) for name in ("launches.csv", "launches.svg"))
            timeline["drilldowns"].append({**detail, "csv": csv, "svg": svg})
    timeline["drilled"] = [d["rank"] for d in timeline["drilldowns"]]
    invocation = read_invocation(Path(run.outputs["html"]).parents[1])  # results/<exp>/invocation.json (onstart)
    steps_run = Run(
        run.experiment, tuple(invocation), run.config["mode"], frozenset(ok), frozenset(timeline["drilled"])
    )
    timeline["next_steps"] = next_steps(timeline_stats.get("causes") or [], run.experiment, invocation, run=steps_run)
    straggler = (timeline_stats.get("straggler") or {}).get("rank")
    timeline["drill_command"] = drill_command(run.experiment, straggler, invocation) if straggler is not None else None
    return timeline


def answer_run(run: StageRun, ok: set[str], timeline: dict[str, Any] | None) -> Run:
    """What the Answer's next steps need of the run: its invocation words, mode, stages with evidence, drilled ranks."""
    invocation = read_invocation(Path(run.outputs["html"]).parents[1])
    return Run(
        run.experiment,
        tuple(invocation),
        run.config["mode"],
        frozenset(ok),
        frozenset((timeline or {}).get("drilled") or ()),
    )


def correctness_context(run: StageRun, files: StageFiles, link: Link) -> dict[str, Any] | None:
    """The precision test's per-rank table, linked, with its failed rows; None where it holds no ranks (or the
    table cannot be read: the stage's note says so)."""
    ranks = files.table(run.inputs["correctness_ranks"])
    if ranks is None or "global_rank" not in ranks.column_names:
        return None
    return {
        "link": link(run.inputs["correctness_ranks"]),
        "failed_rows": [row for row in ranks.to_pylist() if not row["passed"]],
    }


def comparisons_context(run: StageRun, files: StageFiles, link: Link) -> list[dict[str, Any]]:
    """Each A/B comparison this experiment is part of, with links to its JSON and its page; one whose JSON cannot be
    read is left out and named in ``files.damaged`` (the report's status says so)."""
    comparisons = []
    for path in run.inputs.get("comparisons", []):
        try:
            data = files.json(path)
        except IntermediateUnreadable as exc:
            files.damaged.setdefault(f"compare {Path(path).parent.name}", exc)
            continue
        comparisons.append({**data, "link": link(path), "html": link(str(Path(path).with_name("comparison.html")))})
    return comparisons


def write_summary(
    run: StageRun, statuses: Mapping[str, Status], sections: Mapping[str, Any], history: Mapping[str, Any] | None
) -> None:
    """summary.json: the stable keys for scripts (docs/summary.md), from the same sections the pages show."""
    summary = build_summary(
        run.experiment,
        run.toolchain,
        run.config["mode"],
        statuses,
        {
            s: sections.get(s)
            for s in ("baseline", "timeline", "pmu", "pcsampling", "pipe_timeline", "debugclock", "probe")
        },
    )
    # pipe_timeline: present whenever a run was parsed (its runs' states inside), even if another run was refused
    summary["pipe_timeline"] = sections["pipe_timeline"]
    summary["history"] = history_summary(history)
    write_json_atomic(run.outputs["summary"], summary)
    if run.outputs.get("config"):
        write_json_atomic(run.outputs["config"], run_config_record(run))


RUN_CONFIG_SCHEMA = "dispatchprof.run_config/1"


def plain(value: Any) -> Any:
    if isinstance(value, Mapping):
        return {str(k): plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [plain(v) for v in value]
    return value


def run_config_record(run: StageRun) -> dict[str, Any]:
    """results/<experiment>/config.json: the run's config in the sections that say what was measured and how (the
    report's row of RULE_KEYS: a change of one re-renders the report, so the record is never stale). A comparison
    with this directory as a recorded side (shell/compare_config.py) reads its shape, cluster, kernel, toolchain
    and deepep.ref from it."""
    keys = [k for k in RULE_KEYS["report"] if k in run.config]
    return {
        "schema": RUN_CONFIG_SCHEMA,
        "experiment": run.experiment,
        "sections": keys,
        "config": {k: plain(run.config[k]) for k in keys},
    }


def crosscheck_of(run: StageRun, files: StageFiles) -> dict[str, Any]:
    """msprof-analyze's cross-check of the timeline, or why it was skipped (or cannot be shown)."""
    if run.inputs.get("timeline_crosscheck"):
        data = files.json(run.inputs["timeline_crosscheck"])
        if data.get("placeholder") and "tool" not in data:  # cannot be read: the timeline's note names the file
            return {"tool": "msprof-analyze cluster -m compute_op_sum", "state": "invalid", "reason": data["reason"]}
        return data
    return {
        "tool": "msprof-analyze cluster -m compute_op_sum",
        "state": "skipped",
        "reason": "timeline.crosscheck is off",
    }


@dataclass
class StagesRead:
    """What the report read of the stages' outputs: each stage's context as shown (``shown``), the summary sections the
    Answer and summary.json read (``sections``), the baseline's and timeline's contexts, and the figures' files."""

    shown: dict[str, dict[str, Any] | None]
    sections: dict[str, Any]
    baseline: dict[str, Any] | None
    timeline: dict[str, Any] | None
    figures: dict[str, str]


def read_stages(
    run: StageRun, files: StageFiles, statuses: Mapping[str, Status], link: Link, figures: Path
) -> StagesRead:
    """Every stage's stats read once (its context and its summary section), and the report's pictures drawn."""
    sections: dict[str, Any] = {}
    baseline, sections["baseline"] = baseline_context(run, files, statuses["baseline"], link)
    if sections["baseline"] and sections["baseline"].get(
        "bandwidth"
    ):  # the answer's step that tells a slow link from slow senders
        invocation = read_invocation(Path(run.outputs["html"]).parents[1])
        sections["baseline"]["bandwidth"]["tell_apart_command"] = collect_command(
            "debugclock", Run(run.experiment, tuple(invocation))
        )
    ok = {stage for stage, s in statuses.items() if s.ok}
    timeline = timeline_context(run, files, link, ok)
    if timeline and statuses["timeline"].ok:
        sections["timeline"] = timeline["stats"]["summary"]
        if baseline:
            baseline["timeline_minus_kernel"] = timeline["stats"]["timeline_minus_kernel_scope_us"]
    shown: dict[str, dict[str, Any] | None] = {}
    for stage, (key, build_section) in SECTIONS.items():
        section = build_section(files, run.inputs[key], statuses[stage], link)
        shown[stage] = section.context if section else None
        sections[stage] = section.summary if section else None
    render_figures(timeline, shown["pmu"], shown["pcsampling"], figures)
    render_link_figures(baseline, run.toolchain == "sim")
    plots = Path(run.inputs["baseline_plots"]) if baseline else None
    figure_links = figure_files(figures, timeline, shown["pmu"], shown["debugclock"], plots, baseline)
    return StagesRead(shown, sections, baseline, timeline, figure_links)


def history_context(history: dict[str, Any] | None, figures: Path) -> dict[str, Any] | None:
    """history.json with its trend picture drawn (inline for the HTML, figures/history.svg for report.md)."""
    if not history or history.get("state") != "ok" or not history.get("trend"):
        return history
    headline = next((m for m in history["metrics"] if m["metric"] == history["trend"]["metric"]), None)
    svg = trend_svg({**history["trend"], "change_points": history.get("change_points", [])}, headline)
    if svg:
        write_text_atomic(figures / "history.svg", svg)
    return {**history, "trend_svg": svg}


def report(run: StageRun, templates: Path = TEMPLATES) -> Status:
    """The report stage: every stage's status and summary section read once, rendered as report.html and report.md
    from one context (the Answer's verdict, the evidence, each stage's section, figures), and summary.json."""
    cfg = run.config
    out_dir = run.outputs["html"].parent
    figures = Path(run.outputs.get("figures") or out_dir / "figures")

    def link(path: str) -> str:
        return os.path.relpath(path, out_dir)

    statuses = {stage: read_input_status(run.inputs[stage]) for stage in run.params["stages"]}
    files = read_stage_files(run.inputs, statuses)  # a file that cannot be read: its stage is shown invalid, named
    env = files.json(run.inputs["env"])
    build = files.json(run.inputs["build_record"])
    env_nodes, env_warnings = environment_rows(env)
    ok = {stage for stage, s in statuses.items() if s.ok}
    read = read_stages(run, files, statuses, link, figures)
    shown, sections, baseline, timeline = read.shown, read.sections, read.baseline, read.timeline
    comparisons = comparisons_context(run, files, link)
    history = history_context(files.json(run.inputs["history"]) if run.inputs.get("history") else None, figures)
    if history and history.get("trend_svg"):
        read.figures["history"] = os.path.relpath(figures / "history.svg", out_dir)
    evidence = {stage: shown[stage] for stage in ("pmu", "pcsampling") if shown[stage]}
    context = ReportContext(
        experiment=run.experiment,
        mode=cfg["mode"],
        toolchain=run.toolchain,
        generated=datetime.datetime.now().isoformat(timespec="seconds"),
        kernel_name=cfg["kernel"]["name"],
        nodes=cfg["cluster"]["nodes"],
        ranks_per_node=cfg["cluster"]["ranks_per_node"],
        world=world_ranks(cfg),
        transport=cfg["deepep"]["transport"]
        if cfg["mode"] == "collect"
        else (cfg["analyze"]["shape"] or {}).get("transport", "not known"),
        shape=shown_shape(cfg),
        roles=cfg["kernel"]["roles"],
        build_summary=statuses["build"].reason
        if not build.get("placeholder")
        else f"{statuses['build'].state}: {statuses['build'].reason}",
        env_nodes=env_nodes,
        env_warnings=env_warnings,
        timeline=timeline,
        crosscheck=crosscheck_of(run, files),
        comparisons=comparisons,
        pmu=shown["pmu"],
        pcsampling=shown["pcsampling"],
        debugclock=shown["debugclock"],
        pipe_timeline=shown["pipe_timeline"],
        answer=verdict(
            Facts(
                statuses, run.toolchain, world_ranks(cfg), sections, comparisons, answer_run(run, ok, timeline), history
            )
        ),
        evidence_parts=evidence_parts(
            evidence_sentences(statuses, run.toolchain, world_ranks(cfg), sections, comparisons)
        ),
        baseline=baseline,
        correctness=correctness_context(run, files, link),
        probe=shown["probe"],
        open_boundaries=open_boundaries(statuses, collect_parts(run.experiment, statuses), not_provided(evidence)),
        artifact_guide=artifact_guide(
            Path("results") / run.experiment,
            {k: v for k, v in cfg["analyze"].items() if k == "latency_csv" or k.endswith("_dir")}
            if cfg["mode"] == "analyze"
            else {},
            out_dir,
            cfg["report"]["insight_version"],
            run.toolchain,
        ),
        cautions={"hccl": HCCL_CAUTION, "pc_samples": PC_SAMPLES_CAUTION},
        analysis_settings=[(key, shown_value(value)) for key, value in json.loads(run.params["analysis_settings"])],
        stages={name: {**s.to_dict(), "link": link(run.inputs[name])} for name, s in statuses.items()},
        figures=read.figures,
        history=history,
    )
    shown_context = {**context.fields(), "sections": report_parts(context)}  # one model, two renderers
    write_text_atomic(run.outputs["html"], render(templates, shown_context))
    write_text_atomic(run.outputs["markdown"], spaced_tables(render(templates, shown_context, "report.md.j2")))
    write_summary(run, statuses, sections, history)
    not_ok = [s for s, st in statuses.items() if st.state not in ("ok", "disabled")]
    reason = "rendered" + (f"; stages without evidence: {', '.join(not_ok)}" if not_ok else "")
    if files.damaged:  # each shown as its stage's note (or a comparison left out); every other section rendered
        reason += "; files that cannot be read: " + "; ".join(str(exc) for exc in files.damaged.values())
    return run.status(
        "ok",
        reason,
        upstream={s: st.state for s, st in statuses.items()},
        artifacts=[str(p) for p in run.outputs.values()],
    )
