"""The links section's pictures (baseline.bandwidth), drawn as SVG without matplotlib: the bytes each launch sends from
node i to node j (one cell per node pair, its value in a <title> and written in the cell), and the measured kernel
time with its CI against each link class's bound (the class that sets the bound marked)."""

from __future__ import annotations

import html
from collections.abc import Mapping
from typing import Any

import numpy as np

from dispatchprof.report.heatmap_svg import colours

FONT = 11
MEASURED, BOUND, SETS = "#0969da", "#8c959f", "#cf222e"
PAIR_TIME_MISSING = "time per node pair: not measured (no DebugClock send time per node pair), so no GB/s per pair"


def _svg_open(width: float, height: float, title: str) -> list[str]:
    return [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width:.0f}" height="{height:.0f}" viewBox="0 0 {width:.0f} '
        f'{height:.0f}" role="img" font-family="sans-serif" font-size="{FONT}" style="max-width:100%;height:auto">',
        f"<title>{html.escape(title)}</title>",
        f'<text x="4" y="{FONT + 4}" font-weight="bold">{html.escape(title)}</text>',
    ]


def node_pair_matrix(bytes_by_class: Mapping[str, Mapping[str, Any]]) -> np.ndarray:
    """Bytes per launch from node i (row) to node j (column), summed over the link classes' ``per_node_pair``
    ("i->j" keys): the diagonal is intra-node, the rest inter-node. A pair with no bytes is 0."""
    pairs: dict[tuple[int, int], int] = {}
    for link in bytes_by_class.values():
        for key, nbytes in (link.get("per_node_pair") or {}).items():
            src, dst = (int(part) for part in key.split("->"))
            pairs[(src, dst)] = pairs.get((src, dst), 0) + int(nbytes)
    nodes = max((max(p) for p in pairs), default=-1) + 1
    matrix = np.zeros((nodes, nodes))
    for (src, dst), nbytes in pairs.items():
        matrix[src, dst] = nbytes
    return matrix


def _bytes_label(nbytes: float) -> str:
    for unit, size in (("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if nbytes >= size:
            return f"{nbytes / size:.3g} {unit}"
    return f"{nbytes:.0f} B"


def node_pairs_svg(matrix: np.ndarray, simulated: bool, max_nodes: int = 32) -> str:
    """One coloured cell per (source node, destination node) pair, its bytes per launch in a <title> (exact) and as
    text in the cell (rounded, while the cells are big enough); a note that the time per pair was not measured."""
    n = matrix.shape[0]
    if not n or n > max_nodes:
        return ""
    cell = max(18.0, min(64.0, 360.0 / n))
    left, top = 70.0, 46.0
    width, height = max(left + n * cell + 24, 600), top + n * cell + 70
    title = "Bytes per launch, node to node" + (" (simulated)" if simulated else "")
    parts = _svg_open(width, height, title)
    rgb = colours(matrix, 0.0, float(matrix.max()) if matrix.max() > 0 else 1.0)
    for i in range(n):
        parts.append(f'<text x="{left - 6:.1f}" y="{top + (i + 0.5) * cell + 4:.1f}" text-anchor="end">node {i}</text>')
        parts.append(f'<text x="{left + (i + 0.5) * cell:.1f}" y="{top - 6:.1f}" text-anchor="middle">{i}</text>')
        for j in range(n):
            r, g, b = (int(c) for c in rgb[i, j])
            x, y, value = left + j * cell, top + i * cell, matrix[i, j]
            parts.append(
                f'<rect class="pair" x="{x:.1f}" y="{y:.1f}" width="{cell:.1f}" '
                f'height="{cell:.1f}" fill="rgb({r},{g},{b})" stroke="white">'
                f"<title>node {i} -&gt; node {j}: {value:,.0f} B per launch</title></rect>"
            )
            if cell >= 40:  # the value in the cell, dark on the light (yellow) end of the map
                ink = "#000" if 0.299 * r + 0.587 * g + 0.114 * b > 140 else "#fff"
                parts.append(
                    f'<text x="{x + cell / 2:.1f}" y="{y + cell / 2 + 4:.1f}" text-anchor="middle" '
                    f'fill="{ink}" font-size="{FONT - 1}">{_bytes_label(value)}</text>'
                )
    parts.append(f'<text x="{left + n * cell / 2:.1f}" y="{top - 20:.1f}" text-anchor="middle">destination node</text>')
    parts.append(
        f'<text transform="translate({FONT + 2},{top + n * cell / 2:.1f}) '
        'rotate(-90)" text-anchor="middle">source node</text>'
    )
    foot = top + n * cell + 18
    parts.append(
        f'<text x="4" y="{foot:.1f}">colour: bytes per launch (B), 0 (dark) '
        f"to {matrix.max():,.0f} B (yellow); the diagonal is intra-node</text>"
    )
    parts.append(f'<text x="4" y="{foot + 16:.1f}">{html.escape(PAIR_TIME_MISSING)}</text>')
    parts.append("</svg>")
    return "".join(parts)


def _us(value: float) -> str:
    return f"{value:,.0f}" if value >= 100 else f"{value:.3g}"


def bound_bars_svg(
    bandwidth: Mapping[str, Any], measured: Mapping[str, Any] | None, simulated: bool, width: int = 640
) -> str:
    """Horizontal bars on one µs axis: the measured kernel time (median per-iteration max over ranks, whisker at its
    95% CI), then each link class's bound (time its busiest rank's bytes need at the class's peak); the class that
    sets the bound is marked. A class without a bound (peak not configured) is named, without a bar."""
    links = bandwidth.get("links") or {}
    rows: list[tuple[str, float | None, str]] = []
    if measured and measured.get("median") is not None:
        rows.append(("measured kernel time", float(measured["median"]), MEASURED))
    sets = bandwidth.get("sets_bound")
    for name, link in links.items():
        colour = SETS if name == sets else BOUND
        rows.append(
            (
                f"{name.replace('_', '-')} bound" + (" (sets the bound)" if name == sets else ""),
                link.get("bound_us"),
                colour,
            )
        )
    if not rows:
        return ""
    ci = (measured or {}).get("median_ci95") or []
    left, right, top, bar, gap = 190, 70, 40, 18, 10
    height = top + len(rows) * (bar + gap) + 44
    high = max([v for _, v, _ in rows if v is not None] + [v for v in ci if v is not None] + [1e-9])
    scale = (width - left - right) / high
    title = "Kernel time against the links' bound (us per launch)" + (" (simulated)" if simulated else "")
    parts = _svg_open(width, height, title)
    for i, (label, value, colour) in enumerate(rows):
        y = top + i * (bar + gap)
        weight = ' font-weight="bold"' if colour == SETS else ""
        parts.append(
            f'<text x="{left - 6}" y="{y + bar / 2 + 4:.1f}" text-anchor="end"{weight}>{html.escape(label)}</text>'
        )
        if value is None:
            parts.append(
                f'<text x="{left + 4}" y="{y + bar / 2 + 4:.1f}" fill="#57606a">no bound: peak not configured</text>'
            )
            continue
        parts.append(
            f'<rect class="bar" data-us="{value:.6g}" x="{left}" y="{y}" width="{value * scale:.2f}" '
            f'height="{bar}" fill="{colour}"><title>{html.escape(label)}: {value:.2f} us</title></rect>'
        )
        if colour == MEASURED and len(ci) == 2 and None not in ci:
            mid = y + bar / 2
            parts.append(
                f'<line x1="{left + ci[0] * scale:.1f}" x2="{left + ci[1] * scale:.1f}" '
                f'y1="{mid:.1f}" y2="{mid:.1f}" stroke="#24292f" stroke-width="1.5">'
                f"<title>95% CI {ci[0]:.2f}-{ci[1]:.2f} us</title></line>"
            )
        label_x = (
            left + max(value, ci[1] if colour == MEASURED and len(ci) == 2 and ci[1] is not None else 0.0) * scale + 4
        )
        parts.append(f'<text x="{label_x:.1f}" y="{y + bar / 2 + 4:.1f}" font-size="{FONT - 1}">{_us(value)} us</text>')
    axis_y = height - 34
    parts.append(f'<line x1="{left}" x2="{width - right}" y1="{axis_y}" y2="{axis_y}" stroke="#57606a"/>')
    for k in range(5):
        v = high * k / 4
        parts.append(f'<text x="{left + v * scale:.1f}" y="{axis_y + 14}" text-anchor="middle">{_us(v)}</text>')
    parts.append(
        f'<text x="{left + (width - left - right) / 2:.1f}" y="{axis_y + 28}" '
        'text-anchor="middle">time per launch (us); whisker: 95% CI of the median</text>'
    )
    parts.append("</svg>")
    return "".join(parts)
