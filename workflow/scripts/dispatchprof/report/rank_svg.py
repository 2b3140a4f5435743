"""A small SVG per rank: the target kernel's duration per used launch (an artifact beside the report)."""

from __future__ import annotations

from typing import Sequence

WIDTH, HEIGHT = 360, 90


def launch_svg(rank: int, dur_us: Sequence[float], median_us: float | None, reason: str | None = None) -> str:
    if not len(dur_us):
        return (
            f'<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{HEIGHT}">'
            f'<text x="8" y="45" font-size="12">rank {rank}: no launches ({reason or "none used"})</text></svg>'
        )
    top, bottom = max(dur_us), min(dur_us)
    span = (top - bottom) or 1.0
    # At most one point per pixel column: thousands of launches must not make a megabyte of SVG.
    stride = max(1, len(dur_us) // (WIDTH - 20))
    shown = list(dur_us)[::stride]
    step = (WIDTH - 20) / max(len(shown) - 1, 1)
    points = " ".join(
        f"{10 + i * step:.1f},{HEIGHT - 15 - (v - bottom) / span * (HEIGHT - 30):.1f}" for i, v in enumerate(shown)
    )
    return (
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{HEIGHT}" role="img">'
        f"<title>rank {rank}: kernel duration per used launch ({bottom:.1f}-{top:.1f} us)</title>"
        f'<polyline fill="none" stroke="#0969da" stroke-width="1.5" points="{points}"/>'
        f'<text x="4" y="12" font-size="10">rank {rank}: '
        f"{bottom:.1f}-{top:.1f} us, median {median_us:.1f} us</text></svg>"
    )
