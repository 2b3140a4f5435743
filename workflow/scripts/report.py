"""Entry point of rule report: render report.html and summary.json from whatever the stages left."""

import datetime
import json
import os
import sys
from pathlib import Path

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")  # no BLAS here: spare the thread pool OpenBLAS starts at import (timeline_parse.py)
sys.path.insert(0, snakemake.scriptdir)

import pyarrow.parquet as pq  # noqa: E402  (not pandas: the report job should cost its rendering only)

from dispatchprof.shell.atomic import write_json_atomic, write_text_atomic  # noqa: E402
from dispatchprof.shell.config import SHAPE_KEYS, world_ranks  # noqa: E402
from dispatchprof.report.artifacts import artifact_guide  # noqa: E402
from dispatchprof.report.context import HCCL_CAUTION, PC_SAMPLES_CAUTION, environment_rows, open_boundaries  # noqa: E402
from dispatchprof.report.figures import render_figures  # noqa: E402
from dispatchprof.report.html import embed_png, render  # noqa: E402
from dispatchprof.report.markdown import spaced_tables  # noqa: E402
from dispatchprof.report.summary import answer_paragraph, build_summary, next_steps  # noqa: E402
from dispatchprof.shell.stage import StageRun, run_stage  # noqa: E402
from dispatchprof.shell.status import Status, read_status  # noqa: E402


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


def collect_parts(statuses: dict) -> dict:
    """Each stage's collect part, where a replay run records its checks (the stage's final status folds it away)."""
    parts = {}
    for stage in statuses:
        root = Path("results") / snakemake.wildcards.experiment / stage
        if (root / "collect" / "status.json").is_file():
            parts[stage] = read_status(root / "collect" / "status.json")
        for path in sorted(root.glob("*/collect/status.json")):  # a stage of several runs (pipe_timeline/pipe, /instr)
            parts[f"{stage}/{path.parent.parent.name}"] = read_status(path)
    return parts


def not_provided(evidence: dict) -> dict:
    """Metrics a stage that ran could not provide (the stage's own lists; never read as 0)."""
    pmu, pcs = evidence.get("pmu") or {}, evidence.get("pcsampling") or {}
    out = {"pmu": list(pmu.get("missing_columns") or [])}
    for name, t in (pmu.get("metric_sets") or {}).items():
        out["pmu"] += [f"{name}: {c}" for c in dict.fromkeys((t.get("not_provided") or []) + (t.get("missing_columns") or []))]
    if pcs and not pcs.get("stalls"):
        out["pcsampling"] = ["SIMT stall samples (no TopStallReason block)"]
    return out


def debugclock_section(path: str, status: Status, sections: dict) -> dict | None:
    """The DebugClock section (stage debugclock) when it is ok; its summary also goes to the answer and summary.json."""
    from dispatchprof.report.debugclock import section

    data = json.loads(Path(path).read_text())
    if not status.ok or data.get("placeholder"):
        return None
    sections["debugclock"] = {
        **data["summary"],
        "overhead": {k: data["overhead"][k] for k in ("on_median_us", "off_median_us", "ratio")} if data.get("overhead") else None,
    }
    return section(data)


def pipe_timeline_context(path: str, link) -> dict | None:
    """pipe_timeline.json for the report, with links to its trace files; None when it is a placeholder."""
    data = json.loads(Path(path).read_text())
    if data.get("placeholder"):
        return None
    for entry in data["runs"].values():
        entry["trace_links"] = [link(t) if not Path(t).is_absolute() else t for t in entry.get("traces", [])]
    return {**data, "link": link(path)}


def body(run: StageRun) -> Status:
    cfg = run.config
    out_dir = run.outputs["html"].parent

    def link(path: str) -> str:
        return os.path.relpath(path, out_dir)

    statuses = {stage: read_status(run.inputs[stage]) for stage in run.params["stages"]}
    env = json.loads(Path(run.inputs["env"]).read_text())
    build = json.loads(Path(run.inputs["build_record"]).read_text())
    ranks = pq.ParquetFile(run.inputs["correctness_ranks"]).read()  # one file: read_table would import pyarrow.dataset (~0.3 s)
    correctness = None
    if "global_rank" in ranks.column_names:
        failed = [row for row in ranks.to_pylist() if not row["passed"]]
        correctness = {"link": link(run.inputs["correctness_ranks"]), "failed_rows": failed}
    env_nodes, env_warnings = environment_rows(env)
    sections = {}
    baseline = None
    if statuses["baseline"].ok:
        stats = json.loads(Path(run.inputs["baseline_stats"]).read_text())
        sections["baseline"] = stats["summary"]
        plot_dir = Path(run.inputs["baseline_plots"])
        baseline = {
            "stats": stats,
            "link": link(run.inputs["baseline_stats"]),
            "parquet": link(str(Path(run.inputs["baseline_stats"]).with_name("latency.parquet"))),
            "plots": {name: embed_png(plot_dir / f"{name}.png") for name in ("kernel_per_rank", "kernel_iteration_max", "slowest_rank", "api_per_rank")},
            "timeline_minus_kernel": None,
        }
    crosscheck = (
        json.loads(Path(run.inputs["timeline_crosscheck"]).read_text())
        if run.inputs.get("timeline_crosscheck")
        else {"tool": "msprof-analyze cluster -m compute_op_sum", "state": "skipped", "reason": "timeline.crosscheck is off"}
    )
    timeline = None
    timeline_stats = json.loads(Path(run.inputs["timeline_stats"]).read_text())
    if not timeline_stats.get("placeholder"):
        timeline = {
            "stats": timeline_stats,
            "link": link(run.inputs["timeline_stats"]),
            "trace": link(str(Path(run.inputs["timeline_stats"]).with_name("merged_trace.json"))),
            "drilldowns": [],
        }
        for path in run.inputs.get("timeline_ranks", []):
            detail = json.loads(Path(path).read_text())
            if not detail.get("placeholder"):
                csv, svg = (link(str(Path(path).with_name(name))) for name in ("launches.csv", "launches.svg"))
                timeline["drilldowns"].append({**detail, "csv": csv, "svg": svg})
        timeline["drilled"] = [d["rank"] for d in timeline["drilldowns"]]
        timeline["next_steps"] = next_steps(timeline_stats.get("causes") or [], run.experiment)
        if statuses["timeline"].ok:
            sections["timeline"] = timeline_stats["summary"]
            if baseline:
                baseline["timeline_minus_kernel"] = timeline_stats["timeline_minus_kernel_scope_us"]
    evidence = {}
    for stage, key in (("pmu", "pmu_stats"), ("pcsampling", "pcsampling_stats"), ("probe", "probe_stats")):
        data = json.loads(Path(run.inputs[key]).read_text())
        if statuses[stage].ok and not data.get("placeholder"):
            evidence[stage] = {**data, "link": link(run.inputs[key])}
            sections[stage] = data["summary"]
    pipe_timeline = pipe_timeline_context(run.inputs["pipe_timeline_stats"], link)
    render_figures(timeline, evidence.get("pmu"), evidence.get("pcsampling"))
    debugclock = debugclock_section(run.inputs["debugclock_stats"], statuses["debugclock"], sections)
    comparisons = []
    for path in run.inputs.get("comparisons", []):
        data = json.loads(Path(path).read_text())
        comparisons.append({**data, "link": link(path), "html": link(str(Path(path).with_name("comparison.html")))})
    context = {
        "experiment": run.experiment,
        "mode": cfg["mode"],
        "toolchain": run.toolchain,
        "generated": datetime.datetime.now().isoformat(timespec="seconds"),
        "kernel_name": cfg["kernel"]["name"],
        "nodes": cfg["cluster"]["nodes"],
        "ranks_per_node": cfg["cluster"]["ranks_per_node"],
        "world": world_ranks(cfg),
        "transport": cfg["deepep"]["transport"] if cfg["mode"] == "collect" else (cfg["analyze"]["shape"] or {}).get("transport", "not known"),
        "shape": shown_shape(cfg),
        "roles": cfg["kernel"]["roles"],
        "build_summary": statuses["build"].reason if not build.get("placeholder") else f"{statuses['build'].state}: {statuses['build'].reason}",
        "env_nodes": env_nodes,
        "env_warnings": env_warnings,
        "timeline": timeline,
        "crosscheck": crosscheck,
        "comparisons": comparisons,
        "pmu": evidence.get("pmu"),
        "pcsampling": evidence.get("pcsampling"),
        "debugclock": debugclock,
        "pipe_timeline": pipe_timeline,
        "answer": answer_paragraph(statuses, run.toolchain, world_ranks(cfg), sections, comparisons),
        "baseline": baseline,
        "correctness": correctness,
        "probe": evidence.get("probe"),
        "open_boundaries": open_boundaries(statuses, collect_parts(statuses), not_provided(evidence)),
        "artifact_guide": artifact_guide(
            Path("results") / run.experiment,
            {k: v for k, v in cfg["analyze"].items() if k == "latency_csv" or k.endswith("_dir")} if cfg["mode"] == "analyze" else {},
            out_dir,
            cfg["report"]["insight_version"],
            run.toolchain,
        ),
        "cautions": {"hccl": HCCL_CAUTION, "pc_samples": PC_SAMPLES_CAUTION},
        "analysis_settings": [(key, shown_value(value)) for key, value in json.loads(run.params["analysis_settings"])],
        "stages": {name: {**s.to_dict(), "link": link(run.inputs[name])} for name, s in statuses.items()},
    }
    templates = Path(snakemake.scriptdir).parent / "templates"
    write_text_atomic(run.outputs["html"], render(templates, context))
    write_text_atomic(run.outputs["markdown"], spaced_tables(render(templates, context, "report.md.j2")))
    sections["pipe_timeline"] = pipe_timeline["summary"] if pipe_timeline else None
    summary = build_summary(
        run.experiment,
        run.toolchain,
        cfg["mode"],
        statuses,
        {s: sections.get(s) for s in ("baseline", "timeline", "pmu", "pcsampling", "pipe_timeline", "debugclock", "probe")},
    )
    # pipe_timeline: present whenever a run was parsed (its runs' states inside), even if another run was refused
    summary["pipe_timeline"] = sections["pipe_timeline"]
    write_json_atomic(run.outputs["summary"], summary)
    not_ok = [s for s, st in statuses.items() if st.state not in ("ok", "disabled")]
    reason = "rendered" + (f"; stages without evidence: {', '.join(not_ok)}" if not_ok else "")
    return run.status("ok", reason, upstream={s: st.state for s, st in statuses.items()}, artifacts=[str(p) for p in run.outputs.values()])


run_stage(snakemake, "report", body)
