"""The cost account's pictures, drawn as SVG without matplotlib: the causes by cost with their CIs (launch period and
timed kernel scope), and per rank its median arrival and end after the launch's first."""

from __future__ import annotations

import html
from collections.abc import Callable, Mapping, Sequence
from typing import Any

FONT = 11
PERIOD, TIMED = "#0969da", "#cf222e"


def _label(cause: Mapping[str, Any]) -> str:
    if cause.get("rank") is not None:
        who = f"rank {cause['rank']}"
    elif cause.get("node") is not None:
        who = f"node {cause['node']}"
    elif cause.get("ranks"):  # late-ending ranks, named together
        ranks = list(cause["ranks"])
        who = f"ranks {', '.join(map(str, ranks[:4]))}{', ...' if len(ranks) > 4 else ''}"
    else:
        who = "group"
    return f"{who}: {str(cause['evidence']).replace('_', ' ')}"


def causes_svg(causes: Sequence[Mapping[str, Any]], width: int = 640) -> str:
    """One pair of bars per cause (launch period, timed kernel scope), whiskers at the 95% CI; ranked as given. A cost
    that is only bounded (``cost_bound_us``) gets a dashed outline out to its bound around its estimate's bar."""
    if not causes:
        return ""
    rows = list(causes)[:12]
    left, right, top, bar, gap = 200, 20, 34, 9, 8
    height = top + len(rows) * (2 * bar + gap) + 30
    values = [
        v
        for c in rows
        for v in (
            c.get("cost_us_per_launch") or 0.0,
            *(c.get("cost_ci_us") or [0, 0]),
            c.get("cost_timed_us_per_launch") or 0.0,
        )
    ]
    values += [v for c in rows for v in (c.get("cost_timed_ci_us") or [0, 0]) if v is not None]
    values += [c["cost_bound_us"][1] for c in rows if c.get("cost_bound_us")]
    high = max([v for v in values if v is not None and v == v] + [1e-9])
    scale = (width - left - right) / high

    def x(v: float | None) -> float:
        return left + max(0.0, v or 0.0) * scale

    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
        f'role="img" font-size="{FONT}" font-family="sans-serif">',
        "<title>Causes by cost (us per launch): launch period and timed kernel scope, 95% CI</title>",
        '<text x="4" y="14" font-weight="bold">Causes by cost (us per launch, 95% CI)</text>',
        f'<rect x="{left}" y="20" width="10" height="8" '
        f'fill="{PERIOD}"/><text x="{left + 14}" y="28">launch period</text>',
        f'<rect x="{left + 110}" y="20" width="10" height="8" '
        f'fill="{TIMED}"/><text x="{left + 124}" y="28">timed kernel scope</text>',
    ]
    if any(c.get("cost_bound_us") for c in rows):
        parts.append(
            f'<rect x="{left + 250}" y="20" width="10" height="8" fill="none" stroke="{PERIOD}" '
            f'stroke-dasharray="3,2"/><text x="{left + 264}" y="28">at most (no pure barrier)</text>'
        )
    for i, c in enumerate(rows):
        y = top + i * (2 * bar + gap)
        parts.append(f'<text x="{left - 6}" y="{y + bar + 4}" text-anchor="end">{html.escape(_label(c))}</text>')
        for k, (key, ci_key, colour) in enumerate(
            (("cost_us_per_launch", "cost_ci_us", PERIOD), ("cost_timed_us_per_launch", "cost_timed_ci_us", TIMED))
        ):
            v, yy = c.get(key) or 0.0, y + k * bar
            bound = c.get("cost_bound_us") if key == "cost_us_per_launch" else None
            faint = ' fill-opacity="0.45"' if bound else ""  # an estimate that is not established
            parts.append(
                f'<rect x="{left}" y="{yy}" width="{x(v) - left:.1f}" height="{bar - 1}" '
                f'fill="{colour}"{faint}><title>{v:.2f} us</title></rect>'
            )
            if bound:  # the cost is this bound; the bar is the estimate on clocks fitted to the ends (not established)
                parts.append(
                    f'<rect x="{left}" y="{yy}" width="{x(bound[1]) - left:.1f}" height="{bar - 1}" fill="none" '
                    f'stroke="{colour}" stroke-dasharray="3,2"><title>at most {bound[1]:.2f} '
                    f"us (a bound: no pure barrier); estimate {v:.2f} us</title></rect>"
                )
            ci = c.get(ci_key)
            if ci and None not in ci and ci[0] == ci[0]:
                mid = yy + (bar - 1) / 2
                parts.append(
                    f'<line x1="{x(ci[0]):.1f}" x2="{x(ci[1]):.1f}" y1="{mid:.1f}" '
                    f'y2="{mid:.1f}" stroke="#24292f" stroke-width="1.2"/>'
                )
    parts += _axis_and_end(height, left, width - right, high, x)
    return "".join(parts)


def offsets_svg(offsets: Mapping[str, Any], marked: Sequence[int] = (), width: int = 640, max_ranks: int = 64) -> str:
    """Per rank (a row) its median arrival and end after the launch's first, on corrected clocks: two dots. The
    named causes' ranks are marked. Above ``max_ranks`` ranks, the ranks with the latest ends are shown."""
    ranks, arrival, end = (
        offsets.get("ranks") or [],
        offsets.get("arrival_us_median") or [],
        offsets.get("end_us_median") or [],
    )
    if not ranks:
        return ""
    rows = list(zip(ranks, arrival, end))
    shown = sorted(rows, key=lambda r: -max(r[1], r[2]))[:max_ranks] if len(rows) > max_ranks else rows
    shown = sorted(shown)
    left, right, top, step = 70, 20, 34, 12
    height = top + len(shown) * step + 30
    high = max([max(a, e) for _, a, e in shown] + [1e-9])
    scale = (width - left - right) / high
    mark = set(marked)
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
        f'role="img" font-size="{FONT}" font-family="sans-serif">',
        "<title>Per rank: median arrival and end after the launch's first (us, corrected clocks)</title>",
        '<text x="4" y="14" font-weight="bold">Per rank: median arrival and end after the launch\'s first (us)'
        + (f" ({len(shown)} of {len(rows)} ranks: the latest)" if len(shown) < len(rows) else "")
        + "</text>",
        f'<circle cx="{left + 5}" cy="24" r="4" fill="{PERIOD}"/><text '
        f'x="{left + 14}" y="28">arrival at the barrier</text>',
        f'<circle cx="{left + 155}" cy="24" r="4" fill="{TIMED}"/><text '
        f'x="{left + 164}" y="28">end of the kernel</text>',
    ]
    for i, (rank, a, e) in enumerate(shown):
        y = top + i * step + step / 2
        weight = ' font-weight="bold"' if rank in mark else ""
        parts.append(
            f'<text x="{left - 6}" y="{y + 4:.1f}" text-anchor="end"{weight}>rank '
            f"{rank}{' *' if rank in mark else ''}</text>"
        )
        parts.append(f'<line x1="{left}" x2="{width - right}" y1="{y:.1f}" y2="{y:.1f}" stroke="#eaeef2"/>')
        parts.append(
            f'<circle cx="{left + a * scale:.1f}" cy="{y:.1f}" r="3.5" '
            f'fill="{PERIOD}"><title>rank {rank}: arrival +{a:.2f} us</title></circle>'
        )
        parts.append(
            f'<circle cx="{left + e * scale:.1f}" cy="{y:.1f}" r="3.5" '
            f'fill="{TIMED}"><title>rank {rank}: end +{e:.2f} us</title></circle>'
        )
    parts += _axis_and_end(height, left, width - right, high, lambda v: left + v * scale)
    return "".join(parts)


def _axis_and_end(height: int, left: float, right_x: float, high: float, x: Callable[[float], float]) -> list[str]:
    """The µs axis under a chart (five ticks from 0 to ``high``, placed by ``x``) and the SVG's end."""
    axis_y = height - 22
    parts = [f'<line x1="{left}" x2="{right_x}" y1="{axis_y}" y2="{axis_y}" stroke="#57606a"/>']
    for k in range(5):
        v = high * k / 4
        parts.append(f'<text x="{x(v):.1f}" y="{axis_y + 14}" text-anchor="middle">{v:.3g}</text>')
    parts.append("</svg>")
    return parts
