"""The report's DebugClock section: a phase chart per role that keeps start offsets (an inline SVG of broken bars:
the legacy stacked bars start every phase at zero and lose them), and the answer chain's fallback sentence."""

from __future__ import annotations

from html import escape
from typing import Any, Mapping

WAIT_COLOUR, WORK_COLOUR = "#d08770", "#5e81ac"


def phase_svg(role: str, bars: list[Mapping[str, Any]], wait_keys: set[str], width: int = 720) -> str:
    """One role's phases as bars from their median start offset for their median duration (pooled over ranks)."""
    if not bars:
        return ""
    end = max(b["start_us"] + b["us"] for b in bars) or 1.0
    row, label_w, pad = 18, 150, 4
    scale = (width - label_w - 10) / end
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" '
        f'height="{row * len(bars) + 24}" role="img" aria-label="{escape(role)} phases">'
    ]
    for i, b in enumerate(bars):
        y = i * row + pad
        colour = WAIT_COLOUR if b["key"] in wait_keys else WORK_COLOUR
        x, w = label_w + b["start_us"] * scale, max(1.0, b["us"] * scale)
        title = f"{b['key']} {b['phase']}: starts {b['start_us']:.2f} us, lasts {b['us']:.2f} us (medians)"
        parts.append(f'<text x="0" y="{y + 12}" font-size="11">{escape(str(b["key"]))} {escape(b["phase"])}</text>')
        parts.append(
            f'<rect x="{x:.1f}" y="{y}" width="{w:.1f}" height="{row - 6}" '
            f'fill="{colour}"><title>{escape(title)}</title></rect>'
        )
    axis_y = row * len(bars) + pad + 12
    parts.append(f'<text x="{label_w}" y="{axis_y}" font-size="10">0 us</text>')
    parts.append(
        f'<text x="{width - 10}" y="{axis_y}" font-size="10" '
        f'text-anchor="end">{end:.1f} us from the core\'s first tick</text>'
    )
    parts.append("</svg>")
    return "".join(parts)


def section(stats: Mapping[str, Any]) -> dict[str, Any]:
    """What the templates render: the stats plus one SVG per role, the wait/work heat maps (rank x role; html) and
    the wait/work table by role then rank (markdown)."""
    from dispatchprof.report.heatmap_svg import heatmap_svg

    key = "slots" if stats["source"] == "legacy_csv" else "phases"
    charts = {}
    for role, bars in stats["phase_chart"].items():
        waits = {k for k, v in stats["roles"].get(role, {}).get(key, {}).items() if v["wait"]}
        charts[role] = phase_svg(role, bars, waits)
    maps = stats.get("wait_work_heatmaps") or {}
    titles = {
        "wait_us": "Wait slots per rank and role (mixed: wait + work; sum of medians)",
        "work_us": "Work slots per rank and role (sum of medians)",
    }
    heatmaps = {k: heatmap_svg(maps[k], title, "role") for k, title in titles.items() if k in maps}
    return {
        **stats,
        "key": key,
        "charts": charts,
        "wait_work_svgs": heatmaps,
        "wait_work_rows": sorted(stats["wait_work"], key=lambda r: (r["role"], r["rank"])),
    }


def local_window_copy_sentence(section: Mapping[str, Any], rank: int | None) -> str:
    """For the rank the timeline names slow by itself (own_work): its LocalWindowCopy slot against its peers. The
    slot is a wait slot (wait plus copy), left out of busiest; for a rank that ends late by itself it holds its own
    copy beside the wait every rank has."""
    entry = (
        ((section.get("local_window_copy") or {}).get("per_rank") or {}).get(str(rank)) if rank is not None else None
    )
    if not entry or entry.get("peers_median_us") is None:
        return ""
    text = (
        f" Rank {rank}, slow by itself in the timeline: its LocalWindowCopy slot (wait plus copy, median over cores "
        f"and launches) takes {entry['median_us']:.1f} us against a median of "
        f"{entry['peers_median_us']:.1f} us on the other ranks ({entry['excess_us']:+.1f} us per launch"
    )
    if entry.get("peers_spread_us") is None:
        return text + ")."
    verdict = (
        "it stands out: its own copying, since a rank slow by itself waits no longer than its peers"
        if entry.get("stands_out")
        else "within that spread, so DebugClock does not single out its LocalWindowCopy"
    )
    return text + f"; the other ranks spread by {entry['peers_spread_us']:.1f} us): {verdict}."


def slot_text(best: Mapping[str, Any]) -> str:
    """A busiest entry's slot as the sentences name it: the legacy slot with its phase, or the AKL phase alone."""
    return f"slot {best['slot']} ({best['phase']})" if best.get("slot") is not None else f"phase {best['phase']}"


def _shared(section: Mapping[str, Any]) -> str:
    """When the busiest rank's slot is the busiest node's, and the rank is on it: the rank does not stand alone."""
    best, node = section.get("busiest"), section.get("busiest_node")
    if (
        not best
        or not node
        or best["rank"] not in node["ranks"]
        or (best["role"], best["phase"]) != (node["role"], node["phase"])
    ):
        return ""
    return f" (one of node {node['node']}'s ranks, which all share this excess: the node's, not the rank's alone)"


def node_sentence(section: Mapping[str, Any], straggler: Mapping[str, Any]) -> str:
    """DebugClock's busiest node (a work slot slower on every rank of one node than on the other nodes' ranks), with
    its excess beside the timeline's top cause. Empty when no node stands out."""
    best = section.get("busiest_node")
    if not best:
        return ""
    slot = slot_text(best)
    spread = f"; {best['excess_us'] / best['peers_spread_us']:.0f}x their spread" if best.get("peers_spread_us") else ""
    text = (
        f" Every rank of node {best['node']} runs {best['role']} {slot} longer than the other nodes' ranks: "
        f"{best['median_us']:.1f} us against {best['peers_median_us']:.1f} us (each rank's slowest core, median "
        f"over launches; +{best['excess_us']:.1f} us per launch{spread}). A slowdown the node's ranks share"
    )
    text += (
        ": its sends out of the node (the link from it, or its senders), not one rank"
        if best["role"] == "URMASendToken"
        else ", not one rank: the node's own work in that role"
    )
    text += "; where that phase is on the critical path, the group would save about that much per launch."
    node, evidence, cost = straggler.get("node"), straggler.get("evidence"), straggler.get("cost_us_per_launch")
    if evidence == "late_ending_node" and cost is not None:
        where = (
            "the same node's late end"
            if node == best["node"]
            else f"node {node}'s late end (it may receive those sends: the link into it, not its own work)"
        )
        text += (
            f" The timeline's top cause is {where} at {cost:.1f} us per launch: a late end counts only "
            "its lead over the others, and a slowdown every node waits for moves every end alike."
        )
    return text


def also_sentence(section: Mapping[str, Any]) -> str:
    """DebugClock beside an ok PMU: what its busiest work slot
    says (a DEBUG_CLOCK_ON build, not the replayed launch)."""
    best = section.get("busiest")
    text = "DebugClock also ran (a DEBUG_CLOCK_ON build): "
    if best:
        slot = slot_text(best)
        return (
            text + f"rank {best['rank']}'s {best['role']} {slot} exceeds the same role and slot on "
            f"the other ranks by {best['excess_us']:.1f} us per launch{_shared(section)}."
        )
    return text + "no work slot on any rank exceeds the same role and slot elsewhere by debugclock.busiest_min_excess."


def fallback_sentence(section: Mapping[str, Any], pmu_state: str) -> str:
    """The answer chain's link (2) when PMU is not ok and DebugClock ran instead."""
    where = (
        "DebugClock ticks of a DEBUG_CLOCK_ON build (legacy CSV)"
        if section["source"] == "legacy_csv"
        else "DebugClock ticks of a DEBUG_CLOCK_ON build (AKL traces)"
    )
    best = section.get("busiest")
    text = f"The PMU is {pmu_state}, so the role link uses the DebugClock fallback ({where}): "
    if best:
        slot = slot_text(best)
        text += (
            f"rank {best['rank']}'s {best['role']} {slot} exceeds the same role and slot on the other ranks "
            f"by {best['excess_us']:.1f} us per launch (per-rank median over cores and launches)"
        )
        text += _shared(section) or ", so it is the slow sender the others wait for"
    else:
        text += (
            "no work slot on any rank exceeds the same role and slot elsewhere by "
            "debugclock.busiest_min_excess: the busiest role is not established"
        )
    return (
        text + "; wait slots (mixed work and wait) are left out, and a late "
        "arrival before the entry barrier is invisible to DebugClock."
    )
