"""The history's trend: the kernel-scope headline of each compared run, its 95% CI as a whisker, the reference mean
and the band of the smallest visible change around it, change points as dashed lines, the newest run marked."""

from __future__ import annotations

import html
from collections.abc import Mapping, Sequence
from typing import Any

FONT = 11
POINT, NEWEST, BAND = "#0969da", "#cf222e", "#ddf4ff"


def _span(points: Sequence[Mapping[str, Any]], extra: Sequence[float]) -> tuple[float, float]:
    values = [v for p in points for v in (p["value"], p.get("ci_low"), p.get("ci_high")) if v is not None]
    values += [v for v in extra if v is not None]
    low, high = min(values), max(values)
    pad = (high - low) * 0.08 or abs(high) * 0.01 or 1.0
    return low - pad, high + pad


def trend_svg(trend: Mapping[str, Any], headline: Mapping[str, Any] | None, width: int = 640) -> str:
    """The picture, or "" when fewer than two runs have the headline."""
    points = [p for p in trend.get("runs", []) if p.get("value") is not None]
    if len(points) < 2:
        return ""
    ref = (headline or {}).get("reference")
    band = (headline or {}).get("smallest_visible")
    extra = [ref - band, ref + band] if ref is not None and band is not None else []
    low, high = _span(points, extra)
    left, right, top, bottom, height = 64, 16, 28, 30, 220

    def x(i: int) -> float:
        return left + (width - left - right) * (i / max(len(points) - 1, 1))

    def y(v: float) -> float:
        return top + (height - top - bottom) * (high - v) / (high - low)

    title = f"{trend.get('metric')} per run ({trend.get('unit', 'us')}), 95% CI"
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" role="img" '
        f'font-size="{FONT}" font-family="sans-serif"><title>{html.escape(title)}</title>',
        f'<text x="4" y="14" font-weight="bold">{html.escape(title)}</text>',
    ]
    if extra:
        parts.append(
            f'<rect x="{left}" y="{y(extra[1]):.1f}" width="{width - left - right}" '
            f'height="{y(extra[0]) - y(extra[1]):.1f}" fill="{BAND}"><title>reference {ref:.1f} us, smallest visible '
            f"change {band:.1f} us</title></rect>",
        )
        parts.append(f'<line x1="{left}" x2="{width - right}" y1="{y(ref):.1f}" y2="{y(ref):.1f}" stroke="#57606a"/>')
    cuts = set(trend.get("change_points") or [])
    for i, p in enumerate(points):
        colour = NEWEST if i == len(points) - 1 else POINT
        if p["run_id"] in cuts:
            parts.append(
                f'<line x1="{x(i):.1f}" x2="{x(i):.1f}" y1="{top}" y2="{height - bottom}" stroke="#9a6700" '
                f'stroke-dasharray="4,3"><title>change point: run {html.escape(p["run_id"])}</title></line>'
            )
        if p.get("ci_low") is not None and p.get("ci_high") is not None:
            parts.append(
                f'<line x1="{x(i):.1f}" x2="{x(i):.1f}" y1="{y(p["ci_low"]):.1f}" y2="{y(p["ci_high"]):.1f}" '
                f'stroke="{colour}"/>'
            )
        parts.append(
            f'<circle cx="{x(i):.1f}" cy="{y(p["value"]):.1f}" r="3" fill="{colour}"><title>'
            f"{html.escape(p['recorded_at'])} run {html.escape(p['run_id'])}: {p['value']:.1f} us</title></circle>"
        )
    parts += [
        f'<text x="{left - 6}" y="{y(high) + 10:.1f}" text-anchor="end">{high:.1f}</text>',
        f'<text x="{left - 6}" y="{y(low):.1f}" text-anchor="end">{low:.1f}</text>',
        f'<text x="{left}" y="{height - 8}">{html.escape(points[0]["recorded_at"][:16])}</text>',
        f'<text x="{width - right}" y="{height - 8}" text-anchor="end">'
        f"{html.escape(points[-1]['recorded_at'][:16])} (newest)</text>",
        "</svg>",
    ]
    return "".join(parts)
