"""The stage sections of the report as data (report/model.py): the baseline, the links' limit, and the
localisation evidence (timeline, PMU, PC sampling; the pipe timeline, probe and DebugClock are still template pairs).
Each builder lays out what its stage computed; nothing is chosen or phrased anew here."""

from __future__ import annotations

from typing import Any

from dispatchprof.report.context import ReportContext
from dispatchprof.report.model import (
    Code,
    Figure,
    Link,
    Paragraph,
    Part,
    Section,
    Strong,
    Table,
    Text,
    num,
    state_line,
    text,
)
from dispatchprof.report.timeline_section import timeline_section
from dispatchprof.report.core_sections import pcsampling_section, pmu_section
from dispatchprof.report.tool_sections import debugclock_sections, pipe_timeline_sections, probe_section

PLOTS = (
    ("kernel_per_rank", "Kernel-scope latency per rank (warm-up marked x)"),
    ("kernel_iteration_max", "Per-iteration max over ranks"),
    ("slowest_rank", "How often each rank is the longest (in a collective: slow, or waiting longest)"),
    ("api_per_rank", "Full-API latency per rank"),
)


def thousands(n: int) -> str:
    return f"{n:,}"


def scope_rows(st: dict[str, Any]) -> tuple[tuple[Text, ...], ...]:
    rows = []
    for name in ("kernel", "api"):
        sc = st["scopes"][name]
        q = sc.get("per_iteration_max_us")
        if not q:
            rows.append((text(name), text(sc.get("reason") or "no measured iteration"), (), (), (), ()))
            continue
        median = f"{num(q['median'])} us [{num(q['median_ci95'][0])}, {num(q['median_ci95'][1])}]"
        p95 = f"{num(q['p95'])} us [{num(q['p95_ci95'][0])}, {num(q['p95_ci95'][1])}]"
        rows.append(
            (text(name), text(sc["boundary"]), text(median), text(p95), text(f"{num(q['mean'])} us"), text(str(q["n"])))
        )
    return tuple(rows)


def kernel_paragraphs(k: dict[str, Any]) -> list[Any]:
    """What the kernel scope says of the ranks: its interpretation, the spread, the rank slow by itself, the tail."""
    blocks: list[Any] = []
    if "slowest_named" in k:
        spread = k["per_iteration_spread_us"]
        named = k["slowest_named"]
        who = (
            Strong(f"Rank {named['rank']} is slow by itself") if named["rank"] is not None else "No rank is named slow"
        )
        blocks.append(
            Paragraph(
                text(
                    f"Kernel scope {k['interpretation']}. Spread over ranks per iteration: "
                    f"median {num(spread['median'])} us, P95 {num(spread['p95'])} us. ",
                    who,
                    f": {named['why']}.",
                )
            )
        )
    if k.get("tail_hint"):
        blocks.append(Paragraph(text(Strong("Tail stability:"), " ", k["tail_hint"])))
    blocks += [Paragraph(text(f"warning: {w}"), "muted") for w in k.get("warnings") or []]
    return blocks


def bytes_blocks(b: dict[str, Any]) -> list[Any]:
    """The bytes per dispatch call, the CSV's own byte columns against them, and the bandwidth they give."""
    blocks: list[Any] = []
    if b["available"]:
        d = b["definitions"]
        rows = (
            (
                text("cross-rank token bytes"),
                text(thousands(b["cross_rank_token_bytes"])),
                text(d["cross_rank_token_bytes"]),
            ),
            (text("logical output bytes"), text(thousands(b["logical_output_bytes"])), text(d["logical_output_bytes"])),
        )
        blocks.append(
            Table(
                ("bytes per dispatch call (all ranks)", "value", "definition"),
                rows,
                footnotes=(text(f"{d['excluded']}."),),
            )
        )
    else:
        blocks.append(Paragraph(text(f"Byte accounting not available: {b['reason']}"), "muted"))
    if b.get("csv"):
        csv = b["csv"]
        said: list[Any] = [
            f"The latency CSV carries its own byte columns: processed_bytes {thousands(csv['processed_bytes'])}, "
            f"sent_bytes {thousands(csv['sent_bytes'])} per call (all ranks; {csv['definition']})."
        ]
        for col, q in ((b.get("agreement") or {}).get("pairs") or {}).items():
            if q["agree"]:
                said += [f" {col} against {q['against']}: ", Strong("agree"), " on every rank."]
            else:
                mismatch = ", ".join(str(r) for r in q["mismatch"])
                said += [
                    f" {col} against {q['against']}: ",
                    Strong("differ"),
                    f" on ranks {mismatch} ([csv, computed] {q['mismatch']}).",
                ]
        if b.get("agreement"):
            said.append(f" {b['agreement']['note']}.")
        blocks.append(Paragraph(text(*said)))
    if b.get("bandwidth"):
        bw = b["bandwidth"]
        per_rank = ", ".join(f"rank {r}: {num(g, '.2f')}" for r, g in bw["per_rank"].items())
        rows = (
            (text("group"), text(f"{num(bw['group']['gbps_median'], '.2f')} GB/s"), text(bw["group"]["definition"])),
            (
                text("per rank"),
                text(f"{per_rank} GB/s"),
                text(f"{bw['per_rank_definition']}. ", Strong("Caution:"), f" {bw['per_rank_caveat']}."),
            ),
        )
        blocks.append(
            Table(
                ("bandwidth (kernel scope)", "value", "definition"),
                rows,
                footnotes=(text(f"Bytes used: {b['used']} ({b['used_why']})."),),
            )
        )
    return blocks


def baseline_section(c: ReportContext) -> Section:
    """The baseline's latency per scope with CIs, what the kernel scope says of the ranks, bytes, plots, per rank."""
    blocks: list[Any] = [state_line(c.stages["baseline"])]
    if not c.baseline:
        return Section("Performance baseline", "baseline", tuple(blocks))
    st, base = c.baseline["stats"], c.baseline
    k, policy = st["scopes"]["kernel"], st["policy"]
    blocks.append(
        Paragraph(
            text(
                f"Policy: {policy['iterations']} calls per rank, {policy['warmup']} warm-up calls excluded; "
                f"synchronisation: {policy['synchronize_start']}; after "
                f"each call: {policy['after_each_call']}. Source: ",
                Link("stats.json", base["link"]),
                ", ",
                Link("latency.parquet", base["parquet"]),
                ", ",
                Code(str(k["source_file"])),
                ".",
            ),
            "muted",
        )
    )
    header = ("scope", "what it measures", "per-iteration max: median [95% CI]", "P95 [95% CI]", "mean", "n")
    akl = k["akl"]
    note = (
        "Per-iteration max: for each measured iteration the longest rank's latency, then the median / P95 over "
        "iterations (linear interpolation; percentile-bootstrap CIs, fixed seed). The kernel and "
        "full-API scopes measure different things and are not subtracted from each other here."
    )
    if akl["mean_of_rank_means_us"] is not None:
        note += (
            " For comparison with ascend-kernel-lab (its conventions, labelled): mean of per-rank means over the last "
            f"{akl['last_n']} samples {num(akl['mean_of_rank_means_us'])} us; "
            f"mean of launch maxima {num(akl['mean_of_launch_max_us'])} us."
        )
    blocks.append(Table(header, scope_rows(st), footnotes=(text(note),)))
    blocks += kernel_paragraphs(k)
    blocks += bytes_blocks(st["bytes"])
    for name, title in PLOTS:
        if base["plots"].get(name) or c.figures.get(f"baseline_{name}"):
            blocks.append(Figure(title, path=c.figures.get(f"baseline_{name}"), src=base["plots"].get(name)))
    rows = tuple(
        (
            text(r),
            text(num(v["median_us"])),
            text(num(v["p95_us"])),
            text(num(v["max_us"])),
            text(num(v["fraction_slowest"], ".2f")),
            text(str(v["n"])),
        )
        for r, v in k["per_rank"].items()
    )
    blocks.append(
        Table(
            ("rank", "median (us)", "P95 (us)", "max (us)", "fraction longest", "n"),
            rows,
            collapsed="Per-rank statistics (kernel scope)",
        )
    )
    return Section("Performance baseline", "baseline", tuple(blocks))


def link_rows(bw: dict[str, Any]) -> tuple[tuple[Text, ...], ...]:
    rows = []
    for cls, v in bw["links"].items():
        kind = "simulator capacity" if v["peak_kind"] == "simulator" else v["peak_kind"]
        peak = f"{num(v['peak_gbps'])} GB/s ({kind})" if v["peak_gbps"] is not None else "peak not configured"
        busiest = f"{v['busiest']['where']}: {thousands(v['busiest']['bytes'])} B" if v["busiest"] else "-"
        at_peak = f"{num(v['bound_us'])} us" if v["bound_us"] is not None else "-"
        achieved = f"{num(v['achieved_gbps'], '.2f')} GB/s" if v["achieved_gbps"] is not None else "-"
        own = num(v["efficiency"], ".2f", "not established (below)")
        rows.append(
            tuple(text(x) for x in (cls, thousands(v["bytes_per_launch"]), peak, busiest, at_peak, achieved, own))
        )
    return tuple(rows)


def peak_sources(bw: dict[str, Any]) -> str:
    parts = []
    for cls, v in bw["links"].items():
        source = v["peak_source"] or (
            "no source given" if v["peak_gbps"] is not None else f"not configured (hardware.links.{cls}.peak_gbps)"
        )
        if v["peak_kind"] == "simulator":
            configured = v.get("configured_peak_gbps")
            source += (
                f" (hardware.links.{cls}.peak_gbps is "
                f"{configured if configured is not None else 'null'}: not used under the simulator)"
            )
        parts.append(f"{cls}: {source}")
    return "Peak sources: " + "; ".join(parts) + "."


def bound_paragraph(bw: dict[str, Any]) -> Paragraph:
    if bw["efficiency"] is None:
        return Paragraph(text(f"The bound is not established: {bw.get('reason') or 'no bound'}."))
    lo, hi = bw["efficiency_ci95"]
    return Paragraph(
        text(
            Strong(f"Bound {num(bw['bound_us'])} us"),
            f", set by {bw['sets_bound']} ({bw['busiest']['where']}); measured "
            f"{num(bw['measured_us'])} us (median per-iteration max, kernel scope): ",
            Strong(f"efficiency {num(100 * bw['efficiency'], '.0f')}%"),
            f" (95% CI {num(100 * lo)}-{num(100 * hi)}%). {bw.get('efficiency_definition')}.",
        )
    )


def bytes_per_rank(bw: dict[str, Any]) -> Table:
    classes = list(bw["bytes"])
    ranks = sorted({int(r) for b in bw["bytes"].values() for r in [*b["sent_per_rank"], *b["received_per_rank"]]})
    header = ("rank", *(f"{c} {d}" for c in classes for d in ("sent", "received")))
    rows = tuple(
        (
            text(str(r)),
            *(
                text(thousands(bw["bytes"][c][k].get(str(r), 0)))
                for c in classes
                for k in ("sent_per_rank", "received_per_rank")
            ),
        )
        for r in ranks
    )
    return Table(header, rows, collapsed="Bytes per rank and link class (sent / received per launch)")


def links_section(c: ReportContext) -> Section:
    """How far the measured kernel time is from the time its bytes need at the links' peaks."""
    bw = (c.baseline or {}).get("stats", {}).get("bandwidth")
    if not bw:
        why = f"Not available: the baseline is {c.stages['baseline']['state']}" + (
            " (its statistics predate the link bound)" if c.baseline else ""
        )
        return Section("How far from the links' limit", "links", (Paragraph(text(why + "."), "muted"),))
    simulated = ", simulated" if c.toolchain == "sim" else ""
    blocks: list[Any] = []
    if bw.get("links"):
        header = (
            "link class",
            "bytes per launch (all ranks)",
            "peak (per rank, one direction)",
            "busiest",
            "time at peak",
        )
        header += ("achieved (average over the kernel)", "own efficiency")
        own = (
            f"A class's own efficiency {bw['links']['inter_node']['efficiency_why']}."
            if "inter_node" in bw["links"]
            else None
        )
        blocks.append(Table(header, link_rows(bw), footnotes=(text(own),) if own else ()))
    blocks.append(bound_paragraph(bw))
    if bw.get("warning"):
        blocks.append(Paragraph(text(Strong("Warning:"), f" {bw['warning']}."), "warning"))
    blocks.append(
        Paragraph(
            text(
                f"What the efficiency is not: it is {bw['not']}. A slow link shows as a group far from its bound "
                "with no rank standing out; DebugClock's send phases per node tell a slow link from slow senders."
            )
        )
    )
    blocks.append(Paragraph(text(f"Bytes: {bw['definition']}."), "muted"))
    if bw.get("bytes"):
        pairs = "; ".join(
            f"{cls} " + ", ".join(f"{p}: {thousands(n)}" for p, n in b["per_node_pair"].items())
            for cls, b in bw["bytes"].items()
        )
        blocks.append(
            Paragraph(text(f"Bytes per launch per node pair (source node -> destination node): {pairs}."), "muted")
        )
        blocks.append(bytes_per_rank(bw))
    if c.baseline.get("link_bound_svg"):
        caption = (
            "The measured kernel time (median per-iteration max over ranks, whisker at its 95% CI) against the "
            "time each link class's bytes need at its peak on its busiest rank; the longest of those is the bound"
            + (". Simulated data." if simulated else ".")
        )
        alt = f"Measured kernel time against each link class's bound (us per launch){simulated}"
        blocks.append(Figure(alt, path=c.figures.get("links_bound"), svg=c.baseline["link_bound_svg"], caption=caption))
    if c.baseline.get("node_pairs_svg"):
        caption = (
            "Bytes each launch sends from a node (row) to a node (column); hover a cell for its exact value. The time "
            "per node pair is not measured, so no GB/s per pair is drawn" + (". Simulated data." if simulated else ".")
        )
        alt = f"Bytes per launch from node to node{simulated}; time per node pair: not measured"
        blocks.append(
            Figure(alt, path=c.figures.get("links_node_pairs"), svg=c.baseline["node_pairs_svg"], caption=caption)
        )
    if bw.get("links"):
        blocks.append(Paragraph(text(peak_sources(bw)), "muted"))
    return Section("How far from the links' limit", "links", tuple(blocks))


def stage_parts(c: ReportContext) -> list[Part]:
    """The baseline, the links' limit, and the localisation evidence stage by stage."""
    localisation = Section("Localisation evidence", "localisation", ())
    tools = [*pipe_timeline_sections(c), probe_section(c), *debugclock_sections(c)]
    return [
        baseline_section(c),
        links_section(c),
        localisation,
        timeline_section(c),
        *pmu_section(c),
        pcsampling_section(c),
        *tools,
    ]
