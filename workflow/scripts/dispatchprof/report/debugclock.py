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
    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{row * len(bars) + 24}" role="img" aria-label="{escape(role)} phases">']
    for i, b in enumerate(bars):
        y = i * row + pad
        colour = WAIT_COLOUR if b["key"] in wait_keys else WORK_COLOUR
        x, w = label_w + b["start_us"] * scale, max(1.0, b["us"] * scale)
        title = f"{b['key']} {b['phase']}: starts {b['start_us']:.2f} us, lasts {b['us']:.2f} us (medians)"
        parts.append(f'<text x="0" y="{y + 12}" font-size="11">{escape(str(b["key"]))} {escape(b["phase"])}</text>')
        parts.append(f'<rect x="{x:.1f}" y="{y}" width="{w:.1f}" height="{row - 6}" fill="{colour}"><title>{escape(title)}</title></rect>')
    axis_y = row * len(bars) + pad + 12
    parts.append(f'<text x="{label_w}" y="{axis_y}" font-size="10">0 us</text>')
    parts.append(f'<text x="{width - 10}" y="{axis_y}" font-size="10" text-anchor="end">{end:.1f} us from the core\'s first tick</text>')
    parts.append("</svg>")
    return "".join(parts)


def section(stats: Mapping[str, Any]) -> dict[str, Any]:
    """What the templates render: the stats plus one SVG per role and the wait/work table by role then rank."""
    key = "slots" if stats["source"] == "legacy_csv" else "phases"
    charts = {}
    for role, bars in stats["phase_chart"].items():
        waits = {k for k, v in stats["roles"].get(role, {}).get(key, {}).items() if v["wait"]}
        charts[role] = phase_svg(role, bars, waits)
    return {**stats, "key": key, "charts": charts, "wait_work_rows": sorted(stats["wait_work"], key=lambda r: (r["role"], r["rank"]))}


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
        slot = f"slot {best['slot']} ({best['phase']})" if best.get("slot") is not None else f"phase {best['phase']}"
        text += (
            f"rank {best['rank']}'s {best['role']} {slot} exceeds the same role and slot on the other ranks "
            f"by {best['excess_us']:.1f} us (per-rank median over cores and launches), so it is the slow sender the others wait for"
        )
    else:
        text += "no work slot on any rank exceeds the same role and slot elsewhere by debugclock.busiest_min_excess: the busiest role is not established"
    return text + "; wait slots (mixed work and wait) are left out, and a late arrival before the entry barrier is invisible to DebugClock."
