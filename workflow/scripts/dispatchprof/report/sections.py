"""The report's sections as data (report/model.py), built once from the report's context and rendered as HTML and
Markdown by the same model. The Answer's evidence is chosen and phrased in report/verdict.py and report/summary.py;
these builders only lay it out. The stage sections are in report/stage_sections.py, the order in report/parts.py."""

from __future__ import annotations

from typing import Any, Sequence

from dispatchprof.report.context import ReportContext
from dispatchprof.report.model import (
    Code,
    Definitions,
    Figure,
    Items,
    Link,
    Paragraph,
    Section,
    Strong,
    Table,
    Text,
    state_line,
    text,
)
from dispatchprof.report.verdict import TABLE_HEADER, CauseTable, Line


def answer_section(answer: Sequence[Line | CauseTable], launch: Figure | None = None) -> Section:
    """The Answer: its lines (each with its step as a command), the causes table and its footnotes, in order; then
    the picture of a typical and the costliest launch per rank, when the timeline drew one."""
    blocks: list[Any] = []
    lines: list[Text] = []
    for item in answer:
        if isinstance(item, Line):
            lines.append(text(item.text, " " if item.step else None, Code(item.step) if item.step else None))
            continue
        if lines:
            blocks.append(Items(tuple(lines), css="answer"))
            lines = []
        rows = tuple(
            (text(r.who), text(r.kind), text(r.cost), text(r.share), text(r.seen_by), text(Code(r.step)))
            for r in item.rows
        )
        blocks.append(
            Table(
                TABLE_HEADER, rows, footnotes=(text(" ".join(item.footnotes)),) if item.footnotes else (), css="causes"
            )
        )
    if lines:
        blocks.append(Items(tuple(lines), css="answer"))
    if launch is not None:
        blocks.append(launch)
    return Section("Answer", "answer", tuple(blocks))


def launch_figure(c: ReportContext) -> Figure | None:
    """Per rank, a typical and the costliest launch (analysis/waits/picture.py, report/launch_svg.py): who waits for
    whom. Its words stay short: the Answer's word count takes them."""
    svg = (c.timeline or {}).get("launch_svg")
    return Figure("Launch picture", path=c.figures.get("launch"), svg=svg) if svg else None


def evidence_section(parts: Sequence[dict[str, str]]) -> Section:
    """Each question of the answer with every qualification of its numbers."""
    intro = Paragraph(
        text(
            "Each question of the answer with every qualification of its numbers (the sections below hold the tables)."
        ),
        "muted",
    )
    terms = Definitions(tuple((p["title"], text(p["text"])) for p in parts), css="evidence")
    return Section("The answer's evidence", "evidence", (intro, terms))


def environment_section(c: ReportContext) -> Section:
    """What ran where: the shape, the roles, the build, and each node's versions."""
    roles = ", ".join(f"{r['name']} × {r['count']}" for r in c.roles)
    shape = c.shape
    rows: list[tuple[str, Text]] = [
        ("toolchain", text(c.toolchain)),
        ("nodes × cards", text(f"{c.nodes} × {c.ranks_per_node} = {c.world} ranks")),
        ("transport", text(c.transport)),
        ("AIV count", text(str(shape["num_aiv"]))),
    ]
    if shape["known"]:
        rows.append(
            (
                "T / H / K / E",
                text(f"{shape['num_tokens']} / {shape['hidden']} / {shape['num_topk']} / {shape['num_experts']}"),
            )
        )
        rows.append(("dtype, routing, seed", text(f"{shape['dtype']}, {shape['route']}, {shape['seed']}")))
    else:
        rows.append(
            ("shape", text("not known: imported data; give ", Code("analyze.shape"), " when you know what was run"))
        )
    rows.append(
        ("roles (AIV order)", text(roles, " (configured assumption; verify against the tiling of your commit)"))
    )
    rows.append(("build", text(c.build_summary)))
    blocks: list[Any] = [Table(("input", "value"), tuple((text(k), v) for k, v in rows))]
    if c.env_nodes:
        header = (
            "node",
            "hostname",
            "CANN",
            "driver",
            "firmware",
            "repo commit",
            "device flags",
            "op profiler",
            "clock sync",
            "unavailable probes",
        )
        keys = (
            "node",
            "hostname",
            "cann",
            "driver",
            "firmware",
            "commit",
            "flags",
            "op_entry",
            "clock_sync",
            "unavailable",
        )
        nodes = tuple(tuple(text(Code(e[k])) if k == "commit" else text(str(e[k])) for k in keys) for e in c.env_nodes)
        blocks.append(Table(header, nodes))
        blocks += [Paragraph(text(f"warning: {w}"), "muted") for w in c.env_warnings]
    else:
        env = c.stages["env_capture"]
        blocks.append(Paragraph(text(f"No environment was captured ({env['state']}: {env['reason']})."), "muted"))
    return Section("Environment and inputs", "environment", tuple(blocks))


def correctness_section(c: ReportContext) -> Section:
    """The precision gate: its state, the per-rank table linked, and every rank that failed."""
    link = (" ", Link("per-rank table", c.correctness["link"])) if c.correctness else ()
    blocks: list[Any] = [state_line(c.stages["correctness"], *link)]
    failed = (c.correctness or {}).get("failed_rows") or []
    if failed:
        header = ("global rank", "node", "local rank", "passed", "node exit code", "log")
        rows = tuple(
            (
                *(text(str(r[k])) for k in ("global_rank", "node", "local_rank", "passed", "exit_code")),
                text(Code(str(r["log_path"]))),
            )
            for r in failed
        )
        blocks.append(Table(header, rows))
    return Section("Correctness gate", "correctness", tuple(blocks))


def comparison_section(c: ReportContext) -> Section:
    """Each A/B comparison this experiment is part of, with its verdict and its page."""
    if not c.comparisons:
        return Section(
            "Controlled comparison",
            "comparison",
            (Paragraph(text("No comparison configured for this experiment (config ", Code("compare"), ")."), "muted"),),
        )
    rows = []
    for cmp in c.comparisons:
        verdict = cmp["verdict"] if cmp["state"] == "ok" else cmp["state"]
        detail = " ".join([cmp["reason"], *(f"({n})" for n in cmp["notes"])])
        artifacts = text(Link("comparison.html", cmp["html"]), " · ", Link("json", cmp["link"]))
        rows.append(
            (
                text(cmp["a"]),
                text(cmp["b"]),
                text(Strong(verdict)),
                text(detail),
                text("; ".join(cmp["warnings"] or [])),
                artifacts,
            )
        )
    return Section(
        "Controlled comparison",
        "comparison",
        (Table(("A", "B", "verdict", "detail", "warnings", "artifacts"), tuple(rows)),),
    )


def history_section(c: ReportContext) -> Section:
    """The run against its comparable history: the trend, then every gated metric's verdict with what moved."""
    h = c.history
    if not h or h.get("state") != "ok":
        why = (h or {}).get("reason") or "history.path is null"
        return Section("History", "history", (Paragraph(text(f"No history gate for this run: {why}."), "muted"),))
    blocks: list[Any] = [Paragraph(text(Strong(h["verdict"]), f": {h['reason']}."))]
    if h.get("trend_svg"):
        blocks.append(Figure("History trend", path=c.figures.get("history"), svg=h["trend_svg"]))
    rows = []
    for m in h["metrics"]:
        moved = ", ".join(f"{e['metric']} {e['change']:+.1f}" for e in m.get("explained_by", [])[:3])
        numbers = [f"{m[k]:.4g}" if isinstance(m.get(k), float) else "" for k in ("newest", "reference", "change")]
        visible = f"{m['smallest_visible']:.3g}" if "smallest_visible" in m else ""
        rows.append(
            (
                text(Code(m["metric"])),
                text(Strong(m["verdict"])),
                *map(text, numbers),
                text(visible),
                text(m.get("why") or moved),
            )
        )
    header = ("metric", "verdict", "newest", "reference", "change", "smallest visible", "why / moved with it")
    notes = tuple(text(n) for n in [*h.get("environment_changes", []), *h.get("notes", [])])
    blocks.append(Table(header, tuple(rows), footnotes=notes))
    return Section("History", "history", tuple(blocks))


def settings_section(c: ReportContext) -> Section:
    """The analysis keys behind the numbers: changing one re-analyses, nothing is collected again."""
    summary = (
        'The choices behind these numbers: the analysis keys of the configuration (config/README.md, "Phases"). '
        "Changing one re-analyses and re-renders; nothing is collected again"
    )
    rows = tuple((text(Code(key)), text(Code(value))) for key, value in c.analysis_settings)
    return Section("Analysis settings", "analysis-settings", (Table(("key", "value"), rows, collapsed=summary),))


def boundaries_section(c: ReportContext) -> Section:
    return Section("Open boundaries", "open-boundaries", (Items(tuple(text(b) for b in c.open_boundaries)),))


def ledger_section(c: ReportContext) -> Section:
    """Every stage's state, source and reason, with every validation it did not meet, linked to its status.json."""
    rows = []
    for name, s in c.stages.items():
        failed = [
            f"{v['severity']}: {v['check']}, not met: {v['detail']}"
            for v in s.get("validations") or []
            if not v["passed"]
        ]
        reason = "; ".join([s["reason"], *failed])
        rows.append(
            (
                text(name),
                text(s["state"]),
                text(str(s["source"])),
                text(str(s["toolchain"])),
                text(reason),
                text(Link("status.json", s["link"])),
            )
        )
    return Section(
        "Evidence ledger",
        "ledger",
        (Table(("stage", "state", "source", "toolchain", "reason", "status"), tuple(rows)),),
    )
