"""The system timeline's section of the report as data (report/model.py): coverage, what the group waits for, the
causes ranked by cost with their next steps, the pictures, node clocks, drill-downs and msprof-analyze's cross-check."""

from __future__ import annotations

from typing import Any

from dispatchprof.report.context import ReportContext
from dispatchprof.report.model import (
    Code,
    Figure,
    Items,
    Link,
    Paragraph,
    Section,
    Strong,
    Table,
    Text,
    num,
    state_line,
    text,
)

CAUSE_HEADER = (
    "#",
    "cause",
    "evidence",
    "cost, launch period (us/launch, 95% CI)",
    "cost, timed kernel scope (us/launch)",
    "share of the excess",
    "waiting caused (us/launch, summed)",
    "launches struck",
)
BOUND_NOTE = (
    '; "at most": without a pure barrier (baseline.synchronize_start) '
    "a late arrival's saving compares arrivals across nodes on clocks "
    "fitted to the target's ends, so only the bound is established (removing a delay gives back no more than the delay)"
)


def look_at_it(tl: dict[str, Any], timeline: dict[str, Any]) -> list[Any]:
    """How to open the merged trace and what it shows; the replay without the top cause where there is one."""
    parts: list[Any] = [
        Strong("Look at it:"),
        " open the ",
        Link("merged timeline", timeline["trace"]),
        ' in ui.perfetto.dev or chrome://tracing. Each rank ("node k / rank r") shows the target kernel, on its second '
        "thread the barrier kernel (its start is the arrival, its length the wait) and on its third the host call that "
        "launched it; \"counters per launch\" plots each launch's kernel time against the links' bound. ",
    ]
    if tl.get("causes"):
        parts += [
            'At the top, the process "causes (cost account)" has a thread per named cause with a slice in each drawn '
            "launch it struck (its saving there in the args) and arrows from the cause's rank to the ranks that waited "
            "for it; the report's typical and costliest launches are marked there. Open the ",
            Link("replay without the top cause", timeline["replay"]),
            " in a second tab: the same launches as the cost account replays them without it, each earlier by its own "
            "saving and those of the launches before it (its metadata says how; a cause outside the timed scope "
            "leaves the kernel-time counter where it was). ",
        ]
    return parts + [
        "MindStudio Insight imports the PROF_ folders: ",
        Code(timeline["prof_folders"]),
        " (it writes its cache into the folder it opens: copy them first).",
    ]


def coverage_blocks(tl: dict[str, Any], timeline: dict[str, Any]) -> list[Any]:
    cov = tl["coverage"]
    blocks: list[Any] = []
    if cov["missing"]:
        found = cov.get("sentence") or f"{cov['found']} of {cov['expected']} ranks"
        blocks.append(
            Paragraph(
                text(
                    Strong(f"Partial coverage: {found}."),
                    " The ranks present are analysed; a rank without data may be the one the others wait for.",
                ),
                "warning",
            )
        )
    if (tl.get("rank_mapping") or {}).get("note"):
        blocks.append(
            Paragraph(text(Strong("Rank numbers are inferred"), f": {tl['rank_mapping']['note']}."), "warning")
        )
    missing = (
        f"; missing {'rank' if len(cov['missing']) == 1 else 'ranks'} {', '.join(str(r) for r in cov['missing'])}"
        if cov["missing"]
        else ""
    )
    trace = (
        (" · ", Link("merged trace", timeline["trace"]), " (Perfetto / chrome://tracing)") if "straggler" in tl else ()
    )
    blocks.append(
        Paragraph(
            text(
                f"Coverage: {cov['found']} of {cov['expected']} ranks have device data{missing}. ",
                Link("stats.json", timeline["link"]),
                *trace,
            ),
            "muted",
        )
    )
    if "straggler" in tl:
        blocks.append(Paragraph(text(*look_at_it(tl, timeline)), "muted"))
    if tl.get("coverage_rows"):
        header = ("node", "local rank", "global rank", "device", "pid", "PROF dir", "state", "detail")
        rows = tuple(
            (
                *(
                    text(str(r[k]) if r[k] is not None else "-")
                    for k in ("node", "local_rank", "global_rank", "device", "pid")
                ),
                text(Code(r["prof_dir"] or "-")),
                text(r["state"]),
                text(r["detail"]),
            )
            for r in tl["coverage_rows"]
        )
        blocks.append(Table(header, rows, anchor="coverage"))
    return blocks


def longest_sentence(ld: dict[str, Any]) -> str:
    if ld["rank"] is None and not ld.get("ranks"):
        return f"Longest durations: {ld['kind'] or 'not established'}."
    who = f"rank {ld['rank']}" if ld["rank"] is not None else f"ranks {', '.join(str(r) for r in ld['ranks'])} (tied)"
    out = (
        f"Longest durations: {who}, {ld['kind']} "
        f"({num(100 * (ld['fraction'] or 0), '.0f')}% of {ld['launches_compared']} launches)"
    )
    if ld.get("label") == "waits longest":
        out += (
            f": in a coupled kernel {'this rank waits' if ld['rank'] is not None else 'these ranks wait'} "
            "longest, not the one waited for"
        )
    return out + "."


def waits_paragraph(tl: dict[str, Any]) -> Paragraph:
    """The target kernel, its alignment, its coupling, what the group waits for, the longest durations, the gaps."""
    said: list[Any] = [
        "Target kernel ",
        Code(tl["kernel_name"]),
        " (pattern ",
        Code(tl["pattern"]),
        f"). {tl['alignment']}.",
    ]
    if tl.get("schema_versions"):
        said.append(f" msprof db schema {', '.join(tl['schema_versions'])}.")
    if "coupling" in tl:
        cp, sg = tl["coupling"], tl["straggler"]
        said += [
            " Coupling: ",
            Strong(cp["state"]),
            f" ({cp['reason']}; {cp['kernel']}). What the group waits for: ",
            Strong(sg["evidence"]),
        ]
        said.append(f": {sg['explanation']}." + (f" {sg['coverage_note']}." if sg.get("coverage_note") else ""))
        said.append(" " + longest_sentence(tl["longest_duration"]))
    if tl.get("gap_us"):
        said.append(
            " Launch gaps (start minus previous end, same rank): median "
            f"{num(tl['gap_us']['median'])} us, P95 {num(tl['gap_us']['p95'])} us."
        )
    return Paragraph(text(*said))


def cause_cells(i: int, c: dict[str, Any]) -> tuple[Text, ...]:
    if c["rank"] is not None:
        who = f"rank {c['rank']}"
    elif c["node"] is not None:
        who = f"node {c['node']} (ranks {', '.join(str(r) for r in c['ranks'])})"
    else:
        who = f"ranks {', '.join(str(r) for r in c['ranks'])} (late-ending)" if c["ranks"] else "the group"
    lo, hi = (num(x, ".2f") for x in c["cost_ci_us"])
    cost = f"{num(c['cost_us_per_launch'], '.2f')} ({lo}-{hi})"
    if c.get("cost_not_established"):  # a rank that paces the group's end: the timeline sees no saving
        cost = "not established (the others' own work is hidden behind their wait for it)"
    if c.get("cost_bound_us"):
        bound = num(c["cost_bound_us"][1], ".2f")
        cost = (
            f"at most {bound} (estimate {num(c['cost_us_per_launch'], '.2f')}, "
            f"{lo}-{hi}, on clocks fitted to the ends: not established)"
        )
    share = f"{num(100 * c['cost_share'], '.0f')}%" if c["cost_share"] is not None else "n/a"
    cells = (
        str(i),
        who,
        c["evidence"],
        cost,
        num(c["cost_timed_us_per_launch"], ".2f"),
        share,
        num(c["wait_caused_us_per_launch"]),
    )
    return (*(text(x) for x in cells), text(f"{num(100 * c['fraction'], '.0f')}%"))


def causes_blocks(c: ReportContext, tl: dict[str, Any], timeline: dict[str, Any]) -> list[Any]:
    """The causes ranked by cost, with the cost's definition, their picture, and what would confirm each."""
    causes = tl["causes"]
    excess = tl["straggler"]["excess"]
    note = (
        "Cost: the group time per launch that removing the cause alone would save (launch period: one launch's last "
        "end to the next's; timed: the kernel-scope latency, where a late arrival before the entry barrier costs "
        f"nothing), averaged over {causes[0]['launches']} launches, "
        "zero where it did not strike; costs are not additive"
        + (BOUND_NOTE if any(x.get("cost_bound_us") for x in causes) else "")
        + f". Share: of the group's excess ({excess['definition']}: {num(excess['period_us_per_launch'] or 0)} us per "
        "launch). Waiting caused: Scalasca's delay cost, summed over the ranks that waited. Frequency never ranks."
    )
    rows = tuple(cause_cells(i, x) for i, x in enumerate(causes, 1))
    intro = Paragraph(
        text(
            "Causes ranked by cost (what removing each alone saves per "
            "launch; costs are not additive, frequency never ranks):"
        )
    )
    blocks: list[Any] = [intro, Table(CAUSE_HEADER, rows, footnotes=(text(note),), anchor="causes")]
    if timeline.get("causes_svg"):
        blocks.append(
            Figure("Causes by cost per launch, with 95% CIs", path=c.figures.get("causes"), svg=timeline["causes_svg"])
        )
    steps = timeline.get("next_steps") or []
    if steps:
        blocks.append(
            Paragraph(
                text(f"What would confirm each cause, and the command that collects or opens it ({steps[0]['note']}):")
            )
        )
        items = []
        for s in steps:
            where = (
                f" rank {s['rank']}"
                if s["rank"] is not None
                else (f" node {s['node']}" if s["node"] is not None else "")
            )
            commands = [piece for cmd in s["commands"] for piece in (" ", Code(cmd))]
            items.append(text(f"{s['evidence']}{where}: {s['confirm']}.", *commands))
        blocks.append(Items(tuple(items)))
    return blocks


def clock_blocks(tl: dict[str, Any]) -> list[Any]:
    """Node clocks against node 0, and each rank's median waits (folded: a reader's second look)."""
    header = (
        "node",
        "offset (us)",
        "drift (ppm)",
        "drift stderr (ppm)",
        "drift",
        "release skew (us)",
        "residual spread (us)",
        "launches",
        "reference",
    )
    rows = []
    for n, ck in tl["node_clock"].items():
        state = ck.get("drift_state", "") + (
            " (above 100 ppm: suspect the fit)" if ck.get("drift_state") == "implausible" else ""
        )
        cells = (
            n,
            num(ck["offset_us"]),
            num(ck["drift_ppm"], ".2f"),
            num(ck.get("drift_ppm_stderr"), ".2f", ""),
            state,
        )
        cells += (
            num(ck.get("release_skew_us"), ".2f", ""),
            num(ck["spread_us"], ".2f"),
            str(ck["launches"]),
            ck["reference"],
        )
        rows.append(tuple(text(x) for x in cells))
    waits = tl["entry_wait_us"]
    wait_rows = tuple(
        (text(r), text(num(w["sync_barrier_median"])), text(num(w["kernel_entry_median"])))
        for r, w in waits["per_rank"].items()
    )
    return [
        Table(header, tuple(rows), collapsed="Node clocks against node 0"),
        Table(
            ("rank", "barrier kernel wait, median (us)", "kernel entry wait, median (us)"),
            wait_rows,
            footnotes=(text(f"{waits['definition']}."),),
        ),
    ]


def later_blocks(c: ReportContext, tl: dict[str, Any], timeline: dict[str, Any]) -> list[Any]:
    """The offsets picture, the time outside the kernel scope, the call chain, drill-downs and the entry waits."""
    blocks: list[Any] = []
    if timeline.get("offsets_svg"):
        caption = f"{tl['rank_offsets']['definition']}; * a named cause."
        blocks.append(
            Figure(
                "Arrival and end offsets per rank",
                path=c.figures.get("rank_offsets"),
                svg=timeline["offsets_svg"],
                caption=caption,
            )
        )
    tmk = tl.get("timeline_minus_kernel_scope_us")
    if tmk and tmk["median"] is not None:
        blocks.append(
            Paragraph(
                text(
                    f"Timeline minus kernel scope: median {num(tmk['median'])} "
                    f"us per rank. Definition: {tmk['definition']}"
                ),
                "muted",
            )
        )
    if tl.get("call_chain"):
        rows = tuple(
            (text(Code(x["name"])), text(num(x["per_iteration"], ".2f")), text(num(x["median_us"])), text(x["role"]))
            for x in tl["call_chain"]
        )
        header = ("other kernel between target launches", "per iteration", "median (us)", "role")
        blocks.append(Table(header, rows, footnotes=(text(f"Call chain: {tl['call_chain_scope']}."),)))
    if timeline["drilldowns"]:
        items = []
        for d in timeline["drilldowns"]:
            said: list[Any] = [
                f"rank {d['rank']} (node {d['node']}, device {d['device']}): {d['launches']} "
                f"launches used, median {num(d['median_us'])} us, P95 {num(d['p95_us'])} us"
            ]
            if d.get("calls_between"):
                first = d["calls_between"][0]
                said += [
                    "; longest other kernel between launches ",
                    Code(first["name"]),
                    f" ({num(first['median_us'])} us)",
                ]
            items.append(text(*said, " · ", Link("launch table (CSV)", d["csv"]), " · ", Link("plot", d["svg"])))
        blocks += [Paragraph(text("Drill-down (own job per rank, every launch interval):")), Items(tuple(items))]
    if timeline.get("entry_wait_svg"):
        caption = (
            "A dark row is a rank that arrived last and waited least: late on its host (the Answer names a late host "
            "when the timeline finds one), or still busy with the previous launch; "
            "bright rows waited for it. A late node darkens a block of rows."
        )
        blocks.append(
            Figure(
                "Entry wait per rank and launch",
                path=c.figures.get("entry_wait"),
                svg=timeline["entry_wait_svg"],
                caption=caption,
            )
        )
    return blocks


def crosscheck_blocks(c: ReportContext, tl: dict[str, Any], timeline: dict[str, Any]) -> list[Any]:
    blocks: list[Any] = []
    sg = tl.get("straggler") or {}
    if sg.get("rank") is not None and sg["rank"] not in timeline["drilled"]:
        drill = (
            "Drill into the straggler: ",
            Code(timeline["drill_command"]),
            " (or add it to ",
            Code("timeline.detail_ranks"),
            ").",
        )
        blocks.append(Paragraph(text(*drill), "muted"))
    x = c.crosscheck
    said = f"Cross-check with {x['tool']}: {x['state']}"
    said += (
        f": it kept {x['their_ranks']} ranks, we found {x['our_ranks']}." if x["state"] == "ok" else f" ({x['reason']})"
    )
    if x.get("read") == "copied":
        said += f" It read a copy of its files ({x['copied_bytes'] / 2**20:.1f} MiB): {x['copy_needed'][0]}."
    if x.get("left_out_count"):
        n = x["left_out_count"]
        said += f" Not read: {n} {'entry' if n == 1 else 'entries'} of the tree (the first: {x['left_out'][0]})."
    blocks.append(Paragraph(text(said + (f" {x['note']}" if x.get("note") else "")), "muted"))
    if x["state"] == "ok":
        rows = tuple(
            tuple(
                text(v)
                for v in (
                    str(r["their_rank"]),
                    str(r["our_rank"]) if r["our_rank"] is not None else "unknown",
                    str(r["their_count"]),
                    num(r["their_median_us"]),
                    num(r["our_median_us"], ".1f", ""),
                )
            )
            for r in x["rows"]
        )
        header = ("their rank", "our rank", "their count", "their median (us)", "our median (us)")
        blocks.append(Table(header, rows, collapsed="msprof-analyze per rank beside ours"))
    return blocks


def timeline_section(c: ReportContext) -> Section:
    """The system timeline (msprof): coverage, the causes the group pays for, and how each rank arrives and waits."""
    stage = c.stages["timeline"]
    source = {"sim": "simulator", "none": "import"}.get(c.toolchain, "hardware")
    blocks: list[Any] = [state_line(stage, f" (source: {source})")]
    timeline = c.timeline
    if timeline:
        tl = timeline["stats"]
        blocks += coverage_blocks(tl, timeline)
        if "straggler" in tl:
            blocks.append(waits_paragraph(tl))
        if tl.get("per_rank"):
            header = ("rank", "node", "device", "launches used", "median (us)", "P95 (us)")
            rows = tuple(
                tuple(
                    text(x)
                    for x in (
                        r,
                        str(v["node"]),
                        str(v["device"]) if v["device"] is not None else "-",
                        str(v["launches"]),
                        num(v["median_us"]),
                        num(v["p95_us"]),
                    )
                )
                for r, v in tl["per_rank"].items()
            )
            blocks.append(Table(header, rows, collapsed="Per-rank timeline statistics"))
        if tl.get("causes"):
            blocks += causes_blocks(c, tl, timeline)
        blocks += later_blocks(c, tl, timeline)
        if "node_clock" in tl:
            blocks += clock_blocks(tl)
        blocks += crosscheck_blocks(c, tl, timeline)
        blocks.append(Paragraph(text(Strong("Caution:"), f" {c.cautions['hccl']}."), "muted"))
    return Section("System timeline (msprof)", "timeline", tuple(blocks), level=3)
