"""The per-core sections of the report as data (report/model.py): the msopprof PMU roles and the SIMT stalls of PC
sampling."""

from __future__ import annotations

from typing import Any

from dispatchprof.report.context import ReportContext
from dispatchprof.report.model import Code, Figure, Link, Paragraph, Section, Strong, Table, Text, num, state_line, text

ROLE_HEADER = (
    "role (by median aiv_time)",
    "cores (all ranks)",
    "aiv_time median / max / spread (us)",
    "busy (some pipe active) median, range (us)",
    "no pipe active, median (us)",
    "total cycles median",
    "I-cache miss rate median / max",
    "vec / MTE2 / MTE3 ratio (median)",
)
NP = "not provided"
BUSY_NOTE = (
    "Busy time is a range: from the largest pipe time to min(sum of pipe times, aiv_time), as pipes overlap; it "
    "includes the scalar pipe, where a core polling a flag spins too; the rest of aiv_time "
    "had no pipe active (polling, instruction fetch or stalls: the PMU cannot tell which)."
)


def role_row(role: str, v: dict[str, Any]) -> tuple[Text, ...]:
    aiv = (
        NP
        if v["aiv_time_us_median"] is None
        else " / ".join(num(v[k]) for k in ("aiv_time_us_median", "aiv_time_us_max", "aiv_time_us_spread"))
    )
    busy = (
        NP
        if v.get("busy_us_median_low") is None
        else f"{num(v['busy_us_median_low'])} - {num(v['busy_us_median_high'])}"
    )
    icache = NP
    if v["aiv_icache_miss_rate_median"] is not None:
        icache = (
            f"{num(100 * v['aiv_icache_miss_rate_median'], '.2f')}% "
            f"/ {num(100 * v['aiv_icache_miss_rate_max'], '.2f')}%"
        )
    ratios = " / ".join(
        num(v[k], ".2f", "n/p") for k in ("aiv_vec_ratio_median", "aiv_mte2_ratio_median", "aiv_mte3_ratio_median")
    )
    cells = (
        role,
        str(v["cores"]),
        aiv,
        busy,
        num(v.get("no_pipe_us_median"), ".1f", NP),
        num(v["aiv_total_cycles_median"], ".0f", NP),
        icache,
        ratios,
    )
    return tuple(text(x) for x in cells)


def launch_table(pmu: dict[str, Any]) -> Table:
    launches = pmu["launches"]
    rows = []
    for role in pmu["order_by_aiv_time"]:
        cells = [text(role)]
        for n in launches:
            v = pmu["roles_by_launch"][str(n)].get(role)
            if v and v["aiv_time_us_median"] is not None:
                high = f" ({num(v['busy_us_median_high'])})" if v["busy_us_median_high"] is not None else ""
                cells.append(text(num(v["aiv_time_us_median"]) + high))
            else:
                cells.append(text(NP))
        rows.append(tuple(cells))
    return Table(("role: median aiv_time (busy upper bound), us", *(f"launch {n}" for n in launches)), tuple(rows))


def metric_set_sections(pmu: dict[str, Any]) -> list[Section]:
    sections = []
    for name, t in (pmu.get("metric_sets") or {}).items():
        rows = tuple(
            (text(role), *(text(num(vals[col], ".4g", NP)) for col in t["columns"]))
            for role, vals in t["roles"].items()
        )
        note: list[Any] = [f"{t['definition']}; ratios are fractions 0-1, only (%) columns are percent."]
        absent = list(dict.fromkeys((t.get("not_provided") or []) + (t.get("missing_columns") or [])))
        if absent:
            note += [" Not provided (absent or NA on every vector row; never read as 0): ", Code(", ".join(absent))]
        sections.append(
            Section(
                f"{name} per role",
                f"pmu-{name}",
                (Table(("role", *t["columns"]), rows, footnotes=(text(*note),)),),
                level=4,
            )
        )
    return sections


def busiest_paragraph(pmu: dict[str, Any]) -> Paragraph:
    """The rank and role busier than the same role elsewhere, or that none is; then what busy time is."""
    b = pmu["busiest"]
    if not b:
        said: list[Any] = [
            "No role on any rank is busier than the same role elsewhere beyond the "
            "role's spread across ranks (pmu.busiest_alpha, pmu.busiest_min_excess)."
        ]
        return Paragraph(text(*said, f" {BUSY_NOTE} {pmu['replay_note']}."))
    said = [Strong(f"Busiest against its peers: rank {b['rank']}, {b['role']}")]
    pattern = {
        "same_us": " (every role of the rank by about the same µs: LocalWindowCopy, which every core runs)",
        "same_fraction": " (every role of the rank by about the same fraction: its own work as a whole)",
    }
    said.append(pattern.get(b.get("every_role_pattern") or "", "") + ": ")
    if b.get("nonscalar") and b["ranked_by"] == "nonscalar_us_high":
        ns = b["nonscalar"]
        few = (
            ", from its cores only: too few ranks to measure the spread between ranks"
            if b.get("spread_measured") is False
            else ""
        )
        said.append(
            f"+{num(100 * ns['excess_ratio'], '.0f')}% without the scalar pipe ({num(ns['us'])} us against "
            f"{num(ns['peers_median_us'])} us; the role's spread {num(ns['noise_us'], '.2f')} us{few}); "
        )
    said.append(
        f"busy {num(b['busy_us_high'])} us against the same role's median of "
        f"{num(b['peers_median_us'])} us over ranks (+{num(b['excess_us'])} us)"
    )
    if b.get("excess_us_per_launch") is not None:
        low = f"+{num(b['excess_us_per_launch_low'])} to " if b.get("excess_us_per_launch_low") is not None else ""
        said.append(f"; {low}+{num(b['excess_us_per_launch'])} us per core and launch (pipes overlap)")
    said.append(
        ". Named: the largest relative excess among those beyond the role's spread across ranks (pmu.busiest_alpha) "
        "and pmu.busiest_min_excess; compared without the scalar pipe, where a polling loop "
        "spins, and net of what waiting shows on the other pipes (poll_slope in roles.json)."
    )
    return Paragraph(text(*said, f" {BUSY_NOTE} {pmu['replay_note']}."))


def pmu_head(pmu: dict[str, Any]) -> list[Any]:
    blocks: list[Any] = []
    if (pmu.get("coverage") or {}).get("missing"):
        blocks.append(
            Paragraph(
                text(
                    Strong(f"Partial coverage: {pmu['coverage']['sentence']}."),
                    " Roles are compared over the ranks present.",
                ),
                "warning",
            )
        )
    if pmu.get("inferred_ranks"):
        inferred = ", ".join(str(r) for r in pmu["inferred_ranks"])
        blocks.append(
            Paragraph(
                text(
                    Strong("Rank numbers are inferred"),
                    f" for ranks {inferred}: from device ids (cluster.infer_rank), not recorded.",
                ),
                "warning",
            )
        )
    chips = "; ".join(
        c["name"] + (f" ({c['family']})" if c.get("family") and c["family"] != c["name"] else "") + f", {c['source']}"
        for c in pmu["chips"]
    )
    entry = (
        f"Entry: {pmu['entry']} · chip: {chips or 'not known'} · kernel "
        f"{', '.join(pmu['kernel'])} · rank mapping: {', '.join(pmu['rank_mapping'])} · "
    )
    blocks.append(Paragraph(text(entry, Link("roles.json", pmu["link"]), f". {pmu['roles_assumption']}."), "muted"))
    rows = tuple(role_row(role, pmu["roles"][role]) for role in pmu["order_by_aiv_time"])
    pooled = (
        (text(f"{len(pmu['launches'])} profiled launch(es) per rank; {pmu['roles_pooling']}."),)
        if pmu.get("launches")
        else ()
    )
    blocks.append(Table(ROLE_HEADER, rows, footnotes=pooled))
    if len(pmu.get("launches") or []) > 1:
        blocks.append(launch_table(pmu))
    return blocks


def pmu_tail(c: ReportContext, pmu: dict[str, Any]) -> list[Any]:
    blocks: list[Any] = []
    if "busiest" in pmu:
        blocks.append(busiest_paragraph(pmu))
        if pmu["roles_check"]["checked"]:
            blocks.append(Paragraph(text(pmu["roles_check"]["sentence"]), "muted"))
    if pmu.get("busy_svg"):
        caption = (
            "Compare a role band across ranks (down a column group): a rank whose cores are busier than the same role "
            "elsewhere stands out as a bright row segment. No-pipe time "
            "holds waiting for peers, so it is not a measure of slowness."
        )
        blocks.append(Figure("Busy time per rank and AIV core", path=c.figures.get("pmu_busy"), svg=pmu["busy_svg"]))
        blocks.append(
            Figure(
                "No pipe active per rank and AIV core",
                path=c.figures.get("pmu_no_pipe"),
                svg=pmu["no_pipe_svg"],
                caption=caption,
            )
        )
    order = " > ".join(pmu["order_by_icache_miss_rate"])
    note = (
        f"Roles by I-cache miss rate: {order}. No threshold verdict: a high miss rate on a "
        "role that spends little time matters little; read it beside the absolute times."
    )
    rows = tuple(
        tuple(
            text(x)
            for x in (
                str(i),
                str(k["rank"]),
                str(k.get("launch", 0)),
                str(k["aiv_index"]),
                k["role"],
                num(k["aiv_time_us"]),
                num(None if k["aiv_icache_miss_rate"] is None else 100 * k["aiv_icache_miss_rate"], ".2f", "n/p") + "%",
            )
        )
        for i, k in enumerate(pmu["longest_cores"], 1)
    )
    header = ("longest cores", "rank", "launch", "AIV index", "role", "aiv_time (us)", "I-cache miss rate")
    blocks += [Paragraph(text(note), "muted"), Table(header, rows)]
    if pmu["missing_columns"]:
        blocks.append(
            Paragraph(
                text(
                    "Not provided by this tool version (absent or NA in every row; never read as 0): ",
                    Code(", ".join(pmu["missing_columns"])),
                )
            )
        )
    if pmu.get("new_columns"):  # columns no catalogued writer writes (formats/msopprof_writers.py): kept, listed
        listed = "; ".join(f"{metric}: {', '.join(cols)}" for metric, cols in pmu["new_columns"].items())
        blocks.append(
            Paragraph(text("New columns (no catalogued writer writes them; kept in the tables): ", Code(listed)))
        )
    blocks += [Paragraph(text("Pipeline trace: ", Code(t)), "muted") for t in pmu["traces"]]
    return blocks


def pmu_section(c: ReportContext) -> list[Section]:
    """The PMU per core and role: the roles' times, busiest against its peers, the pictures, the longest cores; then
    each metric set of pmu.metrics per role, a heading each."""
    head = Section("Per core and role (msopprof PMU)", "pmu", (state_line(c.stages["pmu"]),), level=3)
    pmu = c.pmu
    if not pmu:
        return [head]
    head = Section(head.heading, head.anchor, (*head.blocks, *pmu_head(pmu), *pmu_tail(c, pmu)), level=3)
    return [head, *metric_set_sections(pmu)]


def stall_tables(c: ReportContext, pcs: dict[str, Any]) -> list[Any]:
    stalls = pcs["stalls"]
    all_samples = stalls.get("all_samples") or {}
    rows = tuple(
        (
            text(st),
            text(f"{num(100 * all_samples[st])}%" if st in all_samples else ""),
            text(f"{num(100 * stalls['not_issue'][st])}%" if st in stalls["not_issue"] else "-"),
        )
        for st in pcs["states"]
    )
    dens = pcs["denominators"]
    note = text(
        f"Two denominators, never mixed: {dens['all_samples']}; {dens['not_issue']}. ", Link("stalls.json", pcs["link"])
    )
    blocks: list[Any] = [
        Table(("state", "all samples (Active included)", "not issued (Active excluded)"), rows, footnotes=(note,))
    ]
    hot = pcs["hot_lines"]
    if hot:
        header = (
            "hot line",
            "share of all PC samples (Active included; mean over ranks with samples)",
            "ranks",
            "top stall",
            "active",
            "SIMT function",
        )
        rows = tuple(
            (
                text(Code(f"{h['file']}:{h['line']}")),
                text(f"{num(100 * h['share_of_samples'])}%"),
                text(str(h["ranks"])),
                text(h["top_stall"]),
            )
            + (text(f"{num(100 * h['active_fraction'], '.0f')}%"), text(h["function"] or ""))
            for h in hot
        )
        covered = num(100 * sum(h["share_of_samples"] for h in hot))
        note = (
            f"Share: {pcs['hot_line_share']}. The top {len(hot)} lines cover {covered}% of "
            "the samples; the rest fall on other lines or on PCs that map to no source line."
        )
        blocks.append(Table(header, rows, footnotes=(text(note),)))
    else:
        blocks.append(Paragraph(text("No source lines: see the source-mapping warning in the ledger.")))
    if pcs.get("per_role"):
        if pcs.get("per_role_img") or c.figures.get("pcsampling_stalls_per_role"):
            blocks.append(
                Figure(
                    "Reasons not to issue, per role",
                    path=c.figures.get("pcsampling_stalls_per_role"),
                    src=pcs.get("per_role_img"),
                )
            )
        rows = tuple(
            (
                text(role),
                text(", ".join(r["functions"])),
                text(", ".join(f"{st} {num(100 * v, '.0f')}%" for st, v in list(r["stalls"].items())[:3])),
            )
            for role, r in pcs["per_role"].items()
        )
        note = f"{pcs['per_role_definition']}. Roles without SIMT code (TokenCopyToBuffer, CalCumSum) have no row."
        blocks.append(
            Table(
                ("role", "SIMT functions", "main reasons not to issue (share of its not-issued samples)"),
                rows,
                footnotes=(text(note),),
            )
        )
    return blocks


def pcsampling_section(c: ReportContext) -> Section:
    """SIMT stalls: the rank coverage, the stall states under both denominators, hot lines, reasons per role."""
    stage = c.stages["pcsampling"]
    blocks: list[Any] = [state_line(stage)]
    cov = (stage.get("details") or {}).get("coverage")
    if cov:
        gap = (f"; {cov['text']}. Every table below describes only the ranks with samples.",) if cov["missing"] else ()
        blocks.append(
            Paragraph(
                text(Strong(f"Rank coverage: {cov['found']} of {cov['expected']} ranks have PC samples"), *gap),
                "warning" if cov["missing"] else "",
            )
        )
    pcs = c.pcsampling
    if pcs and pcs.get("stalls"):
        blocks += stall_tables(c, pcs)
    elif pcs:
        blocks.append(Paragraph(text(pcs["no_samples"])))
    if pcs:
        blocks.append(Paragraph(text(Strong("Caution:"), f" {c.cautions['pc_samples']}."), "muted"))
    return Section("SIMT stalls (PC sampling)", "pcsampling", tuple(blocks), level=3)
