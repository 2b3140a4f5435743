"""The msopprof sections of the report as data (report/model.py): the pipe timeline per role (PipeTimeline /
InstrTimeline) and the local probe on the simulator."""

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

PIPES = ("VECTOR", "SCALAR", "MTE2", "MTE3", "MTE1", "CUBE", "FIXP")
SPAN = "core span (first to last event, waits included), us"
OVERLAPS = ("MTE2&VECTOR", "MTE2&SCALAR", "MTE3&VECTOR", "MTE3&SCALAR")


def run_rows(pt: dict[str, Any]) -> tuple[tuple[Text, ...], ...]:
    rows = []
    for name, r in pt["runs"].items():
        state = (
            r["state"]
            + (f": {r['reason']}" if r["state"] not in ("ok", "disabled") else "")
            + (f" ({r['note']})" if r.get("note") else "")
        )
        options = text(Code(" ".join(r["options"]))) if r.get("options") else text("none")
        coverage = (r.get("rank_coverage") or {}).get("sentence", "")
        links = r.get("trace_links") or []
        traces: list[Any] = []
        for i, t in enumerate(links[:2]):
            traces += [", " if i else "", Link("/".join(t.split("/")[-4:]), t)]
        if len(links) > 2:
            traces.append(f" and {len(links) - 2} more")
        rows.append((text(name), text(state), options, text(coverage), text(*traces)))
    return tuple(rows)


def role_tables(pt: dict[str, Any]) -> list[Any]:
    """Busy time per pipe and role, and the memory pipes' overlap with compute, each with its caution."""
    roles = pt["roles"]
    shown = [p for p in PIPES if any(v.get("pipes") and p in v["pipes"] for v in roles.values())]
    rows = []
    for role, v in roles.items():
        if v.get("pipes"):
            cells = [text(num((v["pipes"].get(p) or {}).get("busy_us_median"), ".1f", "not provided")) for p in shown]
            cells.append(text(num(v.get("span_us_median"))))
        else:
            cells = [text(v["note"]), *(text("") for _ in shown)]
        rows.append((text(role), text(str(v["coverage"])), text(str(v["ranks_seen"])), *cells))
    intro = (
        "Busy time per pipe (µs, union of the pipe's intervals on a core), "
        f"median over the role's sampled cores, from {pt['roles_from']}:"
    )
    blocks: list[Any] = [
        Paragraph(text(intro)),
        Table(("role", "coverage", "ranks", *(f"{p} busy" for p in shown), SPAN), tuple(rows)),
    ]
    blocks.append(Paragraph(text(Strong(f"Caution: {pt['cautions']['parallel_pipes']}.")), "warning"))
    overlap_rows = []
    for role, v in roles.items():
        if not v.get("overlap"):
            continue
        cells = []
        for k in OVERLAPS:
            o = v["overlap"].get(k) or {}
            if o.get("overlap_us_median") is None:
                cells.append(text("not provided"))
                continue
            share = (
                f" ({num(100 * o['fraction_of_mte_median'], '.0f')}% of the MTE pipe)"
                if o.get("fraction_of_mte_median") is not None
                else ""
            )
            cells.append(text(f"{num(o['overlap_us_median'])} us{share}"))
        overlap_rows.append((text(role), *cells))
    note = (
        "Overlap: the time a memory pipe (MTE2 GM→UB, MTE3 UB→GM) was busy while VECTOR "
        "or SCALAR also was (median per role): data movement hidden behind compute."
    )
    blocks.append(
        Table(
            ("role", "MTE2 & VECTOR", "MTE2 & SCALAR", "MTE3 & VECTOR", "MTE3 & SCALAR"),
            tuple(overlap_rows),
            footnotes=(text(note),),
        )
    )
    blocks.append(Paragraph(text(Strong(f"Caution: {pt['cautions']['mte_bandwidth']}.")), "warning"))
    return blocks


def instr_section(instr: dict[str, Any]) -> Section:
    blocks: list[Any] = [Paragraph(text(Strong(f"{instr['instr_note']}.")), "warning")]
    for pipe, rows in instr["top_instructions"].items():
        cells = tuple(
            (
                text(r["name"]),
                text(Code(r["pc_addr"])),
                text(Code(r["code"] or "")),
                text(num(r["total_us"])),
                text(str(r["count"])),
            )
            for r in rows
        )
        blocks.append(Table((f"{pipe} instruction", "PC", "code", "total, us", "events"), cells))
    pcs = ", ".join(f"{p} {n}" for p, n in instr["pcs_per_pipe_max"].items())
    blocks.append(
        Paragraph(text(f"Distinct PCs per pipe on one core, at most: {pcs} (the tool keeps at most 1024)."), "muted")
    )
    return Section(
        "InstrTimeline: top instructions per pipe (total time over every rank, core and launch)",
        "instr-timeline",
        tuple(blocks),
        level=4,
    )


def pipe_timeline_sections(c: ReportContext) -> list[Section]:
    """Each run's state and traces, busy time per pipe and role, the memory pipes' overlap, InstrTimeline's top."""
    blocks: list[Any] = [state_line(c.stages["pipe_timeline"])]
    pt = c.pipe_timeline
    sections = []
    if pt:
        blocks.append(Table(("run", "state", "options", "ranks with a trace", "traces"), run_rows(pt)))
        if pt["roles"]:
            blocks += role_tables(pt)
        unplaced = ((pt["runs"].get(pt["roles_from"]) or {}).get("unassigned") or {}).get("cores")
        note = pt["sampling_note"][:1].upper() + pt["sampling_note"][1:] + f". core→role: {pt['core_mapping_note']}."
        note += f" Not placed on a role: {', '.join(str(x) for x in unplaced)}." if unplaced else ""
        blocks.append(
            Paragraph(text(note + f" Times: {pt['time_unit']}. ", Link("pipe_timeline.json", pt["link"])), "muted")
        )
        instr = pt["runs"].get("InstrTimeline")
        if instr and instr.get("top_instructions"):
            sections.append(instr_section(instr))
    heading = "Pipe timeline per role (msopprof PipeTimeline / InstrTimeline)"
    return [Section(heading, "pipe-timeline", tuple(blocks), level=3), *sections]


def probe_blocks(probe: dict[str, Any]) -> list[Any]:
    blocks: list[Any] = [
        Paragraph(
            text(Strong(probe["label"]), f": {probe['scope']}. Source: ", Link("probe.json", probe["link"]), "."),
            "warning",
        )
    ]
    cm = probe.get("cachemiss")
    if cm:
        per_core = ", ".join(f"{core} {n}" for core, n in cm["per_core"].items())
        blocks.append(
            Paragraph(text("I-cache misses (CACHEMISS events): ", Strong(str(cm["total"])), f", per core {per_core}."))
        )
        rows = tuple((text(Code(p["pc"])), text(str(p["count"]))) for p in cm["top_pcs"])
        blocks.append(Table(("missed line (PC)", "CACHEMISS events"), rows, anchor="probe-top-pcs"))
    else:
        blocks.append(
            Paragraph(
                text("I-cache misses: not provided (no CACHEMISS lane in the simulator's traces; never read as 0).")
            )
        )
    if probe.get("pipe_busy_us"):
        pipes = sorted({p for v in probe["pipe_busy_us"].values() for p in v})
        rows = tuple(
            (
                text(core),
                text(num(probe["span_us"][core], ".3f")),
                *(text(num(v[p], ".3f") if p in v else "-") for p in pipes),
            )
            for core, v in probe["pipe_busy_us"].items()
        )
        note = text(
            Strong("Pipes run in parallel: never sum them."),
            " Busy time: per core and pipe, the union of the pipe's event "
            "intervals (µs, simulated); span: first event to last end on the core.",
        )
        blocks.append(
            Table(
                ("core", "span (us)", *(f"{p} busy (us)" for p in pipes)), rows, footnotes=(note,), anchor="probe-pipes"
            )
        )
    if probe.get("instr_top"):
        keys = ("core", "instr", "addr")
        rows = tuple(
            (
                *(text(str(r[k])) for k in keys),
                text(Code(r["pc"])),
                text(str(r["pipe"])),
                text(str(r["cycles"])),
                text(str(r["call_count"])),
            )
            + (text(Code(str(r["detail"]))),)
            for r in probe["instr_top"]
        )
        header = ("core", "instruction", "addr (decimal)", "PC", "pipe", "cycles", "calls", "detail")
        note = text("Hot instructions from the simulator's *_instr_exe.csv (sorted by cycles).")
        blocks.append(Table(header, rows, footnotes=(note,), anchor="probe-instr"))
    return blocks


def probe_section(c: ReportContext) -> Section:
    """The local probe: its scope first (simulator, one card), then I-cache misses, pipe busy time, hot instructions."""
    blocks: list[Any] = [state_line(c.stages["probe"])]
    if c.probe:
        blocks += probe_blocks(c.probe)
    return Section("Local probe (msopprof simulator)", "probe", tuple(blocks), level=3)


def artifact_section(c: ReportContext) -> Section:
    """Which artifact opens in which MindStudio Insight view, each linked (or its absolute path, when imported)."""
    g = c.artifact_guide
    simulated = " (simulated, not measurements)" if g["toolchain"] == "sim" else ""
    blocks: list[Any] = [
        Paragraph(
            text(
                "MindStudio Insight version this data needs: ",
                Strong(str(g["insight_version"])),
                " (config ",
                Code("report.insight_version"),
                f") · toolchain of the artifacts: {g['toolchain']}{simulated}.",
            )
        ),
        Items(tuple(text(n) for n in g["notes"])),
    ]
    if not g["groups"]:
        blocks.append(
            Paragraph(
                text("No artifact of a kind MindStudio Insight opens was produced or imported in this run."), "muted"
            )
        )
        return Section("Artifacts and where to open them (MindStudio Insight)", "artifact-guide", tuple(blocks))
    rows = []
    for grp in g["groups"]:
        files: list[Any] = []
        for i, a in enumerate(grp["artifacts"]):
            files += [", " if i else "", Link(a["shown"], a["href"]) if a["href"] else Code(a["shown"])]
            files += [] if a["href"] else [" (imported, read in place)"]
        count = f"{grp['count']} path{'s' if grp['count'] != 1 else ''}: "
        rows.append((text(grp["what"]), text(grp["view"]), text(count, *files)))
    blocks.append(Table(("artifact", "opens in", "files"), tuple(rows), anchor="artifacts"))
    return Section("Artifacts and where to open them (MindStudio Insight)", "artifact-guide", tuple(blocks))


def debugclock_head(c: ReportContext, dc: dict[str, Any]) -> list[Any]:
    """Where the phases come from, the slot busier than its peers, and the node slower on every rank."""
    simulated = (
        (" ", Strong("Simulated"), ": the stand-in's DEBUG build, not a measurement.") if c.toolchain == "sim" else ()
    )
    found = (
        f" ({dc['found']['legacy_csv']} legacy CSV file(s), {dc['found']['akl_trace']} "
        f"AKL capture(s)); {dc['ranks']} ranks, {dc['cores']} cores, "
    )
    found += (
        f"{dc['launches']} rank-launches. Cycles to us at "
        f"{num(dc['clock_hz'], '.0f')} Hz ({dc['clock_key']}). {dc['statistics']}."
    )
    blocks: list[Any] = [Paragraph(text("Source: ", Strong(dc["source"]), found, *simulated))]
    b = dc.get("busiest")
    if b:
        slot = b["slot"] if b["slot"] is not None else "-"
        said = (
            f": median {num(b['median_us'], '.2f')} us against {num(b['peers_median_us'], '.2f')} "
            f"us on the other ranks (+{num(b['excess_us'], '.2f')} us)."
        )
        said += " Wait slots are left out: a rank that waits longer waits for someone else."
        blocks.append(
            Paragraph(
                text(
                    Strong(f"Busiest against its peers: rank {b['rank']}, {b['role']}, slot {slot} ({b['phase']})"),
                    said,
                )
            )
        )
    else:
        blocks.append(
            Paragraph(
                text("No work slot exceeds the same role and slot on the other ranks by debugclock.busiest_min_excess.")
            )
        )
    bn = dc.get("busiest_node")
    if bn:
        where = f"slot {bn['slot']}" if bn["slot"] is not None else "phase"
        said = (
            f": median over its ranks of each rank's slowest core (median over launches) {num(bn['median_us'], '.2f')} "
            f"us against {num(bn['peers_median_us'], '.2f')} us on the other nodes' ranks "
            f"(+{num(bn['excess_us'], '.2f')} us per launch; their spread {num(bn['peers_spread_us'], '.2f')} us, gate "
            "debugclock.busiest_node_alpha). A slowdown the node's ranks share: for "
            "URMASendToken, its sends out of the node (the link from it, or its senders)."
        )
        blocks.append(
            Paragraph(
                text(
                    Strong(f"Slower on every rank of a node: node {bn['node']}, {bn['role']}, {where} ({bn['phase']})"),
                    said,
                )
            )
        )
    if dc.get("role_mismatches"):
        m = dc["role_mismatches"][0]
        first = (
            f" on {len(dc['role_mismatches'])} cores (first: rank {m['rank']} AIV "
            f"{m['block']}: configured {m['kernel_roles']}, paths say {m['event_paths']})."
        )
        blocks.append(Paragraph(text(Strong("kernel.roles disagrees with the AKL event paths"), first), "warning"))
    return blocks


def range_cell(low: float | None, high: float | None) -> Text:
    return text(f"{num(low, '.2f')}-{num(high, '.2f')}" if low is not None else "")


def phase_tables(c: ReportContext, dc: dict[str, Any]) -> list[Any]:
    """Per role: its phase chart, and each slot's (or phase's) start, median, spread and missing values."""
    unit = dc["key"][:-1]
    blocks: list[Any] = []
    for role, svg in dc["charts"].items():
        alt = f"{role}: median start offset and duration per {unit}, pooled over ranks (orange: wait slot)"
        blocks.append(Figure(alt, path=c.figures.get(f"debugclock_phases_{role}"), svg=svg))
        rows = tuple(
            (
                text(str(k)),
                text(v["phase"]),
                text("wait (mixed)" if v["wait"] else ""),
                text(num(v["start_median_us"], ".2f", "")),
                text(num(v["median_us"], ".2f", "not provided")),
                range_cell(v["p25_us"], v["p75_us"]),
                range_cell(v["min_us"], v["max_us"]),
                text(str(v["n"])),
                text(str(v["missing"])),
            )
            for k, v in dc["roles"][role][dc["key"]].items()
        )
        header = (
            f"{role} {unit}",
            "phase",
            "wait",
            "start us",
            "median us",
            "P25-P75 us",
            "min-max us",
            "n",
            "missing",
        )
        blocks.append(Table(header, rows))
    return blocks


def wait_work_section(c: ReportContext, dc: dict[str, Any]) -> Section:
    """Wait against work per role and rank: the heat maps, and the table they are drawn from (folded under them)."""
    missing = sum(r["missing"] for r in dc["wait_work_rows"])
    caption = (
        "Compare a role (a column) down the ranks: a bright work cell is a rank whose role works longer than the "
        f"same role elsewhere; a bright wait cell waits longer, for someone else. {missing} missing values in all."
    )
    svgs = list(dc["wait_work_svgs"].items())
    blocks: list[Any] = [
        Figure(k, path=c.figures.get(f"debugclock_{k}"), svg=svg, caption=caption if i == len(svgs) - 1 else "")
        for i, (k, svg) in enumerate(svgs)
    ]
    rows = tuple(
        (
            text(r["role"]),
            text(str(r["rank"])),
            text(num(r["wait_slots_us"], ".2f")),
            text(num(r["work_slots_us"], ".2f")),
            text(str(r["missing"])),
        )
        for r in dc["wait_work_rows"]
    )
    slots = "; ".join(f"{role} {', '.join(str(s) for s in ss)}" for role, ss in dc["wait_slots"].items())
    note = f"Sums of per-rank medians. Wait slots per role: {slots} (debugclock.wait_slots)."
    header = ("role", "rank", "wait slots, us (mixed)", "work slots, us", "missing values")
    collapsed = "Wait and work per role and rank" if svgs else None
    blocks.append(Table(header, rows, footnotes=(text(note),), collapsed=collapsed))
    return Section("Wait versus work per role and rank", "debugclock-wait-work", tuple(blocks), level=4)


def overhead_section(dc: dict[str, Any]) -> Section:
    o_all = dc.get("overhead")
    blocks: list[Any] = []
    if not o_all:
        blocks.append(Paragraph(text("Not measured: imported DebugClock files carry no OFF run."), "muted"))
    else:
        rows = []
        for scope, o in o_all["scopes"].items():
            if not o:
                rows.append((text(scope), text("not collected"), (), (), (), ()))
                continue
            values = (
                num(o["off_median_us"]),
                num(o["on_median_us"]),
                num(o["off_p95_us"]),
                num(o["on_p95_us"]),
                num(o["ratio"], ".4f", "-"),
            )
            rows.append((text(scope), *(text(v) for v in values)))
        note = f"Per-iteration max over ranks, us. {o_all['note']}."
        if dc["collect"].get("precision_on"):
            note += f" Precision of the ON run: {dc['collect']['precision_on']}."
        blocks.append(
            Table(
                ("scope", "OFF median", "ON median", "OFF P95", "ON P95", "ON / OFF"),
                tuple(rows),
                footnotes=(text(note),),
            )
        )
    cautions = " ".join(dc["cautions"])
    clipped = (
        f"Clipped by the old analyzer (reported here): {dc['clipped']['missing']} "
        f"missing, {dc['clipped']['above_500000_cycles']} above 500000 cycles."
    )
    blocks.append(Paragraph(text(f"Cautions: {cautions} {clipped}"), "muted"))
    return Section(
        "Instrumentation overhead (DebugClock ON vs OFF, same inputs)", "debugclock-overhead", tuple(blocks), level=4
    )


def debugclock_sections(c: ReportContext) -> list[Section]:
    """DebugClock's phases per role: the busiest slot and node, each role's phases, wait against work, the overhead."""
    dc = c.debugclock
    heading = "DebugClock phases per role"
    if not dc:
        stage = c.stages["debugclock"]
        why = f"No DebugClock evidence: the debugclock stage is {stage['state']} ({stage['reason']})."
        return [Section(heading, "debugclock", (Paragraph(text(why), "muted"),), level=3)]
    head = Section(heading, "debugclock", (*debugclock_head(c, dc), *phase_tables(c, dc)), level=3)
    return [head, wait_work_section(c, dc), overhead_section(dc)]
