"""A rank x column heat map as one SVG, drawn without matplotlib (its import and drawing were ~1 s of every report
job). The cells are ONE embedded PNG, one pixel per cell, stretched and kept crisp by the browser: the SVG grows with
the labels and role bands, never with one element per cell. Axes, tick labels, title, colour bar and role bands are
SVG elements, so the report stays one self-contained file."""

from __future__ import annotations

import html
import re
import struct
import zlib
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from dispatchprof.report.html import png_data_uri

# 17 anchors of matplotlib's viridis: _viridis_data in matplotlib/_cm_listed.py (matplotlib 3.11.2), entries
# round(k * 255 / 16) for k = 0..16, times 255 and rounded. Linear interpolation between them stays within a few
# levels of the 256-entry table.
VIRIDIS_ANCHORS = np.array(
    [
        (68, 1, 84),
        (72, 24, 106),
        (71, 45, 123),
        (66, 64, 134),
        (59, 82, 139),
        (51, 99, 141),
        (44, 114, 142),
        (38, 130, 142),
        (33, 145, 140),
        (31, 159, 136),
        (39, 173, 129),
        (61, 188, 116),
        (92, 200, 99),
        (129, 211, 77),
        (170, 220, 50),
        (213, 226, 26),
        (253, 231, 37),
    ],
    dtype=float,
)
# A cell without a finite value: a neutral grey that viridis (blue to green to yellow) never reaches.
NO_VALUE_GREY = (189, 189, 189)
NO_VALUE_NOTE = "no value"

FONT = 11  # px; text widths below are estimated as 0.6 em per character (no font metrics without a renderer)
MAX_ROW_LABELS, MAX_COLUMN_LABELS = 32, 25
_XML_INVALID = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f]")


def colours(values: np.ndarray, low: float, high: float) -> np.ndarray:
    """RGB (uint8, shape + (3,)) of each value on the anchors, low → first anchor, high → last; non-finite → grey."""
    values = np.asarray(values, dtype=float)
    finite = np.isfinite(values)
    with np.errstate(invalid="ignore", over="ignore"):
        # Halved before subtracting: high - low of two finite floats can overflow to inf, their halves cannot. Halves
        # of subnormals can underflow to 0 instead (5e-324 / 2): then the span is tiny and its plain form is exact.
        span = high / 2 - low / 2
        if span > 0:
            share = np.where(finite, (values / 2 - low / 2) / span, 0.0)
        elif high > low:
            share = np.where(finite, (values - low) / (high - low), 0.0)
        else:
            share = np.zeros(values.shape)
    position = np.clip(np.nan_to_num(share), 0.0, 1.0) * (len(VIRIDIS_ANCHORS) - 1)
    below = np.minimum(position.astype(int), len(VIRIDIS_ANCHORS) - 2)
    frac = (position - below)[..., None]
    rgb = VIRIDIS_ANCHORS[below] + (VIRIDIS_ANCHORS[below + 1] - VIRIDIS_ANCHORS[below]) * frac
    out = np.rint(rgb).astype(np.uint8)
    out[~finite] = NO_VALUE_GREY
    return out


def png(rgb: np.ndarray) -> bytes:
    """An 8-bit RGB PNG of an (height, width, 3) uint8 array (both at least 1): no filtering, one zlib stream."""
    height, width, _ = rgb.shape

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    scanlines = np.concatenate([np.zeros((height, 1), np.uint8), rgb.reshape(height, width * 3)], axis=1)  # filter 0
    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)  # bit depth 8, colour type 2 (RGB), no interlace
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", header)
        + chunk(b"IDAT", zlib.compress(scanlines.tobytes(), 6))
        + chunk(b"IEND", b"")
    )


def _between(start: float, stop: float, shares: np.ndarray) -> np.ndarray:
    """start + share * (stop - start), as linspace would, except that stop - start may overflow here and this cannot."""
    return start * (1 - shares) + stop * shares


def _text(text: str) -> str:
    """Text as SVG content: escaped, without the control characters XML does not allow (labels come from config)."""
    return html.escape(_XML_INVALID.sub("", text))


def _text_width(text: str, size: float = FONT) -> float:
    return 0.6 * size * len(text)


def _tick_label(value: float) -> str:
    return f"{value:.4g}"


def _colour_bar(
    finite: np.ndarray,
    low: float,
    high: float,
    unit: str,
    colourbar_x: float,
    top: float,
    bar_h: float,
    legend_w: float,
) -> list[str]:
    """The colour bar beside the map, its ticks and unit, and the swatch of cells without a value."""
    parts: list[str] = []
    # Colour bar: the same colour map on a 1 x 64 strip, top = high; smooth scaling is right here (a continuous scale).
    strip = (
        colours(_between(high, low, np.linspace(0, 1, 64))[:, None], low, high)
        if finite.any()
        else np.full((1, 1, 3), NO_VALUE_GREY, np.uint8)
    )
    parts.append(
        f'<image x="{colourbar_x:.1f}" y="{top:.1f}" width="14" height="{bar_h:.1f}" preserveAspectRatio="none" '
        f'href="{png_data_uri(png(strip))}"/><rect x="{colourbar_x:.1f}" '
        f'y="{top:.1f}" width="14" height="{bar_h:.1f}" fill="none" stroke="#333"/>'
    )
    shares = (np.linspace(0, 1, 5) if high > low else np.array([0.0])) if finite.any() else np.array([])
    ticks = _between(low, high, shares)
    for k, value in enumerate(ticks):
        y = top + bar_h * (1 - (k / (len(ticks) - 1) if len(ticks) > 1 else 0.5))
        parts.append(
            f'<text x="{colourbar_x + 20:.1f}" y="{y:.1f}" '
            f'dominant-baseline="middle">{_text(_tick_label(float(value)))}</text>'
        )
    parts.append(
        f'<text transform="translate({colourbar_x + 20 + legend_w + FONT:.1f},{top + bar_h / 2:.1f}) '
        f'rotate(-90)" text-anchor="middle">{_text(unit)}</text>'
    )
    if not finite.all():
        y = top + bar_h + 14
        parts.append(
            f'<rect x="{colourbar_x:.1f}" y="{y:.1f}" width="14" height="10" fill="rgb{NO_VALUE_GREY}" stroke="#333"/>'
            f'<text x="{colourbar_x + 20:.1f}" y="{y + 5:.1f}" '
            f'dominant-baseline="middle" font-size="{FONT - 1}">{NO_VALUE_NOTE}</text>'
        )
    return parts


def heatmap_svg(
    grid: Mapping[str, Any], title: str, xlabel: str, bands: Sequence[Mapping[str, Any]] | None = None
) -> str:
    """The heat map of a binned grid (analysis.waits.binned_grid: rows, columns, values with None, aggregation) as SVG
    text. Colours run from the finite min to max as matplotlib's imshow did; role bands ({role, first, last} column
    positions) are named above the columns and separated by white lines."""
    rows, columns = [str(r) for r in grid["rows"]], [str(c) for c in grid["columns"]]
    values = np.array(grid["values"], dtype=float).reshape(len(rows), len(columns))  # None → NaN
    finite = np.isfinite(values)
    low, high = (float(values[finite].min()), float(values[finite].max())) if finite.any() else (0.0, 0.0)
    unit = str(grid.get("unit", "us"))
    ylabel = "rank" + (" (binned: max)" if grid.get("aggregation", "none") != "none" else "")
    bands = [b for b in bands or [] if b["last"] >= 0 and b["first"] < len(columns)]

    row_step, column_step = max(1, len(rows) // MAX_ROW_LABELS), max(1, len(columns) // MAX_COLUMN_LABELS)
    row_ticks, column_ticks = range(0, len(rows), row_step), range(0, len(columns), column_step)
    plot_w = min(1000.0, max(360.0, 10.0 * len(columns)))
    plot_h = min(800.0, max(160.0, 14.0 * len(rows)))
    left = 2 * FONT + 8 + max((_text_width(rows[i]) for i in row_ticks), default=0) + 6
    top = 2 * FONT + 10 + (FONT + 8 if bands else 0)
    bottom_labels = max((_text_width(columns[j]) for j in column_ticks), default=0)
    colourbar_x = left + plot_w + 16
    legend_w = max(_text_width(_tick_label(low)), _text_width(_tick_label(high)), _text_width(NO_VALUE_NOTE, FONT - 1))
    title_x = max(left + plot_w / 2, _text_width(title, FONT + 2) / 2 + 4)  # centred on the plot unless that cuts it
    width = max(colourbar_x + 14 + 6 + legend_w + FONT + 16, title_x + _text_width(title, FONT + 2) / 2 + 4)
    height = top + plot_h + 6 + bottom_labels + 8 + FONT + 8
    cell_w, cell_h = plot_w / max(len(columns), 1), plot_h / max(len(rows), 1)

    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width:.0f}" height="{height:.0f}" viewBox="0 0 {width:.0f} '
        f'{height:.0f}" role="img" font-family="sans-serif" font-size="{FONT}" style="max-width:100%;height:auto">',
        f"<title>{_text(title)}</title>",
        f'<text x="{title_x:.1f}" y="{FONT + 6}" text-anchor="middle" font-size="{FONT + 2}">{_text(title)}</text>',
    ]
    if not values.size:
        parts.append(
            f'<text x="{left:.1f}" y="{top + FONT:.1f}">no cells to draw '
            f"({len(rows)} rows, {len(columns)} columns)</text></svg>"
        )
        return "".join(parts)

    parts.append(
        f'<image x="{left:.1f}" y="{top:.1f}" width="{plot_w:.1f}" height="{plot_h:.1f}" preserveAspectRatio="none" '
        'image-rendering="optimizeSpeed" style="image-rendering:pixelated" '
        f'href="{png_data_uri(png(colours(values, low, high)))}"/>'
    )
    parts.append(
        f'<rect x="{left:.1f}" y="{top:.1f}" width="{plot_w:.1f}" height="{plot_h:.1f}" fill="none" stroke="#333"/>'
    )
    for i in row_ticks:
        y = top + (i + 0.5) * cell_h
        parts.append(
            f'<text x="{left - 6:.1f}" y="{y:.1f}" text-anchor="end" dominant-baseline="middle">{_text(rows[i])}</text>'
        )
    for j in column_ticks:
        x = left + (j + 0.5) * cell_w
        parts.append(
            f'<text transform="translate({x:.1f},{top + plot_h + 6:.1f}) rotate(-90)" '
            f'text-anchor="end" dominant-baseline="middle">{_text(columns[j])}</text>'
        )
    parts.append(
        f'<text transform="translate({FONT + 2},{top + plot_h / 2:.1f}) rotate(-90)" '
        f'text-anchor="middle">{_text(ylabel)}</text><text x="{left + plot_w / 2:.1f}" '
        f'y="{height - 8:.1f}" text-anchor="middle">{_text(xlabel)}</text>'
    )
    for band in bands:
        first, last = max(0, int(band["first"])), min(len(columns) - 1, int(band["last"]))
        if last < len(columns) - 1:  # a white line after the band, as axvline drew it
            x = left + (last + 1) * cell_w
            parts.append(
                f'<line x1="{x:.1f}" y1="{top:.1f}" x2="{x:.1f}" '
                f'y2="{top + plot_h:.1f}" stroke="white" stroke-width="1"/>'
            )
        middle = left + (first + last + 1) / 2 * cell_w
        parts.append(
            f'<text x="{middle:.1f}" y="{top - 5:.1f}" text-anchor="middle" '
            f'font-size="{FONT - 1}">{_text(str(band["role"]))}</text>'
        )

    parts += _colour_bar(finite, low, high, unit, colourbar_x, top, min(plot_h, 240.0), legend_w)
    parts.append("</svg>")
    return "".join(parts)
