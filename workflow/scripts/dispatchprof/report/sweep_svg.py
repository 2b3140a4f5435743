"""A sweep's picture per axis: each ranked point's kernel median (per-iteration max) against its value on the axis,
its 95% CI as a whisker, the best in red, and the links' bound of each point (the baseline's bandwidth bound_us) as a
grey tick: how far each point is from what its links allow. Values that are not numbers are placed in order."""

from __future__ import annotations

import html
from collections.abc import Mapping, Sequence
from typing import Any

FONT = 11
POINT, BEST, BOUND = "#0969da", "#cf222e", "#8c959f"


def axes_of(points: Sequence[Mapping[str, Any]]) -> list[str]:
    """The keys whose values differ between the ranked points, in the order of the first point's params."""
    ranked = [p for p in points if p["state"] == "ok"]
    keys = list(dict.fromkeys(k for p in ranked for k in p["params"]))
    return [k for k in keys if len({repr(p["params"].get(k)) for p in ranked}) > 1]


def _positions(values: list[Any]) -> tuple[list[float], list[str]]:
    if all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in values):
        return [float(v) for v in values], [f"{v:g}" for v in values]
    order = list(dict.fromkeys(repr(v) for v in values))
    return [float(order.index(repr(v))) for v in values], [str(v) for v in values]


def axis_svg(points: Sequence[Mapping[str, Any]], key: str, best: str | None, width: int = 560) -> str:
    """The picture of one axis, or "" with fewer than two ranked points on it."""
    ranked = [p for p in points if p["state"] == "ok" and key in p["params"]]
    if len(ranked) < 2:
        return ""
    xs, labels = _positions([p["params"][key] for p in ranked])
    ys = [v for p in ranked for v in (p["median_us"], *(p["ci95"] or []), p.get("bound_us")) if v is not None]
    low, high = min(ys), max(ys)
    pad = (high - low) * 0.08 or abs(high) * 0.01 or 1.0
    low, high = low - pad, high + pad
    x_low, x_high = min(xs), max(xs)
    x_pad = (x_high - x_low) * 0.08 or 1.0
    x_low, x_high = x_low - x_pad, x_high + x_pad
    height, left, right, top, bottom = 240, 64, 16, 16, 40

    def sx(x: float) -> float:
        return left + (x - x_low) / (x_high - x_low) * (width - left - right)

    def sy(y: float) -> float:
        return top + (high - y) / (high - low) * (height - top - bottom)

    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" font-size="{FONT}" '
        f'font-family="sans-serif"><title>{html.escape(key)}</title>',
        f'<line x1="{left}" y1="{height - bottom}" x2="{width - right}" y2="{height - bottom}" stroke="#000"/>',
        f'<line x1="{left}" y1="{top}" x2="{left}" y2="{height - bottom}" stroke="#000"/>',
        f'<text x="{left - 4}" y="{sy(high - pad) + 4:.1f}" text-anchor="end">{high - pad:.0f}</text>',
        f'<text x="{left - 4}" y="{sy(low + pad) + 4:.1f}" text-anchor="end">{low + pad:.0f}</text>',
        f'<text x="{left + (width - left - right) / 2:.0f}" y="{height - 6}" text-anchor="middle">'
        f"{html.escape(key)} (kernel median us, 95% CI; grey: links' bound)</text>",
    ]
    for p, x, label in zip(ranked, xs, labels):
        colour = BEST if p["name"] == best else POINT
        cx = sx(x)
        if p["ci95"]:
            parts.append(
                f'<line x1="{cx:.1f}" y1="{sy(p["ci95"][0]):.1f}" x2="{cx:.1f}" y2="{sy(p["ci95"][1]):.1f}" '
                f'stroke="{colour}"/>'
            )
        parts.append(f'<circle cx="{cx:.1f}" cy="{sy(p["median_us"]):.1f}" r="3.5" fill="{colour}"/>')
        if p.get("bound_us") is not None:
            y = sy(p["bound_us"])
            parts.append(f'<line x1="{cx - 6:.1f}" y1="{y:.1f}" x2="{cx + 6:.1f}" y2="{y:.1f}" stroke="{BOUND}"/>')
        parts.append(f'<text x="{cx:.1f}" y="{height - bottom + 14}" text-anchor="middle">{html.escape(label)}</text>')
    parts.append("</svg>")
    return "".join(parts)
