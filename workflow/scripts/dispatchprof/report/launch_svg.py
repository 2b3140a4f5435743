"""The picture of the launch, drawn as SVG without matplotlib from the timeline's ``launch_picture``: per rank, a
typical launch and the costliest one on one time axis (µs after the launch's first arrival), each rank a row: its wait
at the barrier (arrival to release) and its time in the kernel, the cause's ranks in their own colour, dashed lines at
the last arrival and the last end. A reader sees who waits for whom: the late rank's short barrier wait against everyone
else's long one, or the one bar that ends after the rest. The kernel's body, where every rank is inside the kernel, is
cut out of the axis when it would take most of the width (a marked break with its length): the waiting happens at the
arrivals and at the ends. Without established clocks every row starts at 0 (durations only), and the picture says so."""

from __future__ import annotations

import html
import math
import textwrap
from dataclasses import dataclass
from collections.abc import Mapping, Sequence
from typing import Any

FONT = 12
WAIT, KERNEL, CAUSE, MARK = "#9ecbff", "#8c959f", "#cf222e", "#24292f"
LEFT, RIGHT, ROW, HEAD, AXIS = 170, 120, 15, 34, 30
GAP = 40  # px of the break where the kernel's body is cut out of the axis
WRAP = 165  # characters of a note line at 11 px in 1000 px


def nice_step(high: float) -> float:
    """A tick step of 1, 2 or 5 x 10^k giving four to ten ticks up to ``high``."""
    raw = max(high, 1e-9) / 5
    power = 10 ** math.floor(math.log10(raw))
    return next(m * power for m in (1, 2, 5, 10) if m * power >= raw)


def who(cause: Mapping[str, Any] | None) -> str:
    """The cause in a few words: "rank 3 (late arrival)", "node 1 (late ending node)", "the whole group (in kernel)"."""
    if not cause:
        return "no cause named"
    if cause.get("rank") is not None:
        name = f"rank {cause['rank']}"
    elif cause.get("node") is not None:
        name = f"node {cause['node']}"
    elif cause.get("ranks"):
        ranks = list(cause["ranks"])
        name = f"ranks {', '.join(map(str, ranks[:4]))}{', ...' if len(ranks) > 4 else ''}"
    else:
        name = "the whole group"
    return f"{name} ({str(cause.get('evidence', '')).replace('_', ' ')})"


def shown_ranks(picture: Mapping[str, Any], max_ranks: int) -> list[int]:
    """The ranks to draw: all of them up to ``max_ranks``; above, the ranks that matter in either launch (the cause's,
    the last to arrive and to end, the first to arrive, who waits longest) and a few typical ones (ends nearest the
    median), in rank order."""
    launches = [picture["typical"], picture["costliest"]]
    every = [r["rank"] for r in launches[0]["ranks"]]
    if len(every) <= max_ranks:
        return every
    cause = list((picture.get("cause") or {}).get("ranks") or [])
    keep: list[int] = cause[: max(1, max_ranks // 2)]
    for launch in launches:
        keep += [r for r in (launch.get("last_arrival_rank"), launch.get("last_end_rank")) if r is not None]
        rows = launch["ranks"]
        key = "arrival_us" if rows[0].get("arrival_us") is not None else "kernel_us"
        keep.append(min(rows, key=lambda r: r[key])["rank"])
        ends = sorted(rows, key=lambda r: r["end_us"] if r.get("end_us") is not None else r["kernel_us"])
        keep += [r["rank"] for r in ends[len(ends) // 2 - 1 : len(ends) // 2 + 2]]
    unique = list(dict.fromkeys(keep))[:max_ranks]
    return sorted(unique)


def bars(row: Mapping[str, Any], placed: bool) -> tuple[float, float, float, float]:
    """A rank's arrival, release, kernel start and end (µs);
    durations only: from 0, the barrier wait then the kernel."""
    if placed:
        release = row["barrier_release_us"] if row.get("barrier_release_us") is not None else row["arrival_us"]
        return row["arrival_us"], release, row["kernel_start_us"], row["end_us"]
    wait = row.get("barrier_wait_us") or 0.0
    return 0.0, wait, wait, wait + row["kernel_us"]


def panel(
    title: str, launch: Mapping[str, Any], ranks: Sequence[int], cause: set[int], placed: bool, y0: float, x: TimeAxis
) -> list[str]:
    """One launch: its heading, a row per shown rank (label, barrier wait, kernel bar, who is last), the dashed last
    arrival and last end."""
    rows = {r["rank"]: r for r in launch["ranks"]}
    parts = [f'<text x="4" y="{y0 + 14}" font-weight="bold">{html.escape(title)}</text>']
    top = y0 + HEAD
    bottom = top + len(ranks) * ROW
    if placed:
        for value, label in (
            (max(r["arrival_us"] for r in rows.values()), "last arrival"),
            (max(r["end_us"] for r in rows.values()), "last end"),
        ):
            parts.append(
                f'<line class="{label.replace(" ", "-")}" x1="{x(value):.1f}" x2="{x(value):.1f}" '
                f'y1="{top - 4}" y2="{bottom}" stroke="{MARK}" stroke-dasharray="4,3"/>'
            )
            parts.append(f'<text x="{x(value) + 3:.1f}" y="{top - 6}" font-size="10">{label}</text>')
    for i, rank in enumerate(ranks):
        row = rows[rank]
        arrival, release, start, end = bars(row, placed)
        y = top + i * ROW
        mine = rank in cause
        colour, weight = (CAUSE, ' font-weight="bold"') if mine else (KERNEL, "")
        label = f"rank {rank} (node {row['node']})" + (" cause" if mine else "")
        notes = [
            n
            for n, r in (("arrives last", launch.get("last_arrival_rank")), ("ends last", launch.get("last_end_rank")))
            if r == rank
        ]
        tip = f"rank {rank}: barrier wait {release - arrival:.1f} us, in the kernel {end - start:.1f} us"
        parts += [
            f'<g class="rank" data-rank="{rank}" data-cause="{str(mine).lower()}"><title>{html.escape(tip)}</title>',
            f'<text x="{LEFT - 6}" y="{y + 11}" text-anchor="end"{weight}>{html.escape(label)}</text>',
            f'<rect class="barrier" x="{x(arrival):.1f}" y="{y + 4}" '
            f'width="{max(0.5, x(release) - x(arrival)):.1f}" height="6" fill="{WAIT}"/>',
            f'<rect class="kernel" x="{x(start):.1f}" y="{y + 2}" '
            f'width="{max(0.5, x(end) - x(start)):.1f}" height="10" fill="{colour}"/>',
        ]
        if placed:
            parts.append(
                f'<line class="arrival" x1="{x(arrival):.1f}" x2="{x(arrival):.1f}" '
                f'y1="{y + 1}" y2="{y + 13}" stroke="{MARK}" stroke-width="1.5"/>'
            )
        if notes:
            parts.append(
                f'<text x="{x(end) + 4:.1f}" y="{y + 11}" font-size="10" '
                f'fill="{CAUSE if mine else MARK}">{", ".join(notes)}</text>'
            )
        parts.append("</g>")
    return parts


@dataclass
class TimeAxis:
    """µs to x: one scale for the whole picture. Where every rank is inside the kernel from well before the first end
    to the last start (the kernel's body, most of a launch), that stretch is cut out of the axis (a break of ``GAP``
    px), so that the arrivals and the ends, where ranks wait for each other, get the width."""

    high: float
    scale: float
    cut: tuple[float, float] | None = None

    def __call__(self, v: float) -> float:
        v = max(0.0, v)
        if self.cut is None or v <= self.cut[0]:
            return LEFT + v * self.scale
        before = LEFT + self.cut[0] * self.scale
        return before + GAP + max(0.0, v - self.cut[1]) * self.scale if v >= self.cut[1] else before + GAP / 2

    def segments(self) -> list[tuple[float, float]]:
        return [(0.0, self.high)] if self.cut is None else [(0.0, self.cut[0]), (self.cut[1], self.high)]


def time_axis(launches: Sequence[Mapping[str, Any]], placed: bool, width: int) -> TimeAxis:
    """The picture's axis: up to the latest bar's end; with clocks, the kernel's body cut out where it would take more
    than half the width (between the last kernel start and the first end, less a margin either side)."""
    rows = [r for launch in launches for r in launch["ranks"]]
    high = max(max(bars(r, placed)[3] for r in rows), 1e-6) * 1.02
    plot = width - LEFT - RIGHT
    if placed:
        first_part = max(r["kernel_start_us"] for r in rows)
        last_part = min(r["end_us"] for r in rows)
        shown = first_part + (high - last_part)
        pad = 0.1 * shown + 1.0
        if last_part - first_part > 2 * pad and last_part - first_part - 2 * pad > 0.5 * high:
            cut = (first_part + pad, last_part - pad)
            return TimeAxis(high, (plot - GAP) / (high - (cut[1] - cut[0])), cut)
    return TimeAxis(high, plot / high)


def axis(y: float, x: TimeAxis, right_x: float) -> list[str]:
    """The µs axis under a panel: ticks of a 1-2-5 step; a cut-out kernel body is a break marked with its length."""
    visible = sum(b - a for a, b in x.segments())
    step = nice_step(visible)
    parts = []
    for a, b in x.segments():
        parts.append(f'<line x1="{x(a):.1f}" x2="{x(b):.1f}" y1="{y}" y2="{y}" stroke="#57606a"/>')
        for k in range(math.ceil(a / step), math.floor(b / step) + 1):
            v = k * step
            parts.append(f'<line x1="{x(v):.1f}" x2="{x(v):.1f}" y1="{y}" y2="{y + 4}" stroke="#57606a"/>')
            parts.append(f'<text x="{x(v):.1f}" y="{y + 16}" text-anchor="middle">{v:g}</text>')
    if x.cut:
        mid = x(x.cut[0]) + GAP / 2
        parts.append(
            f'<text class="cut" x="{mid:.1f}" y="{y + 16}" text-anchor="middle" '
            f'font-size="10">// {x.cut[1] - x.cut[0]:.0f} us</text>'
        )
    parts.append(f'<text x="{right_x + 24}" y="{y + 16}">us</text>')  # clear of a last tick's label
    return parts


def breaks(x: TimeAxis, top: float, bottom: float) -> list[str]:
    """Where the kernel's body is cut out, a white band with slanted edges across every row."""
    if not x.cut:
        return []
    a = x(x.cut[0]) + 4
    b = a + GAP - 8
    return [
        f'<polygon class="break" points="{a},{top} {b},{top - 4} {b},{bottom} {a},{bottom + 4}" fill="#ffffff"/>',
        f'<line x1="{a}" x2="{a}" y1="{top}" y2="{bottom + 4}" stroke="#57606a" stroke-dasharray="2,2"/>',
        f'<line x1="{b}" x2="{b}" y1="{top - 4}" y2="{bottom}" stroke="#57606a" stroke-dasharray="2,2"/>',
    ]


def legend(y: float, placed: bool, barrier: bool) -> list[str]:
    """What each mark means: the arrival (placed only), the barrier wait (with the barrier kernel), the kernel bars."""
    items = [
        (f'<line x1="9" x2="9" y1="-11" y2="1" stroke="{MARK}" stroke-width="1.5"/>', "arrival", placed),
        (f'<rect x="0" y="-8" width="18" height="6" fill="{WAIT}"/>', "waiting at the barrier", barrier),
        (
            f'<rect x="0" y="-10" width="18" height="10" fill="{KERNEL}"/>',
            "in the kernel (own work + waiting for peers' tokens)",
            True,
        ),
        (f'<rect x="0" y="-10" width="18" height="10" fill="{CAUSE}"/>', "the cause's ranks", True),
    ]
    parts, xx = [], 4.0
    for mark, text, shown in items:
        if shown:
            parts.append(
                f'<g class="legend" transform="translate({xx:.0f},{y})">{mark}<text '
                f'x="22" y="0">{html.escape(text)}</text></g>'
            )
            xx += 36 + 6.2 * len(text)
    return parts


def note_lines(text: str, y: float, colour: str = "#57606a", kind: str = "note") -> tuple[list[str], float]:
    """A note wrapped to the picture's width: its text lines and the y below them."""
    parts = []
    for line in textwrap.wrap(text, WRAP):
        parts.append(
            f'<text class="{kind}" x="4" y="{y + 10}" font-size="11" fill="{colour}">{html.escape(line)}</text>'
        )
        y += 15
    return parts, y


def headings(picture: Mapping[str, Any], placed: bool) -> list[tuple[str, Mapping[str, Any]]]:
    """Each launch to draw with its heading: the typical launch's group time, the costliest's cause and what it costs
    there at most; one panel when both are the same launch."""
    typical, costliest = picture["typical"], picture["costliest"]
    group = "from the first arrival to the last end" if placed else "the longest barrier wait plus kernel"
    cost = (
        f"{who(picture.get('cause'))} costs up to {costliest['cost_us']:.1f} us here"
        if picture.get("cause")
        else f"excess {costliest['cost_us']:.1f} us"
    )
    if typical["launch"] == costliest["launch"]:
        return [(f"Typical and costliest launch {typical['launch']} (the same): {cost}", typical)]
    return [
        (f"Typical launch {typical['launch']}: {typical['group_us']:.1f} us ({group})", typical),
        (f"Costliest launch {costliest['launch']}: {cost}", costliest),
    ]


def launch_svg(picture: Mapping[str, Any] | None, width: int = 1000, max_ranks: int = 32) -> str:
    """The typical and the costliest launch, one row per rank (see the module); "" without a launch to draw."""
    if not picture or not picture.get("typical") or not picture.get("costliest"):
        return ""
    placed = picture.get("clocks") == "corrected"
    launches = headings(picture, placed)
    ranks = shown_ranks(picture, max_ranks)
    world = len(picture["typical"]["ranks"])
    cause_ranks = set((picture.get("cause") or {}).get("ranks") or [])
    barrier = any(r.get("barrier_wait_us") is not None for r in picture["typical"]["ranks"])
    x = time_axis([launch for _, launch in launches], placed, width)
    what = (
        "us after the launch's first arrival, corrected node clocks"
        if placed
        else "durations only: each rank's bars start at 0"
    )
    title = f"The launch per rank ({what})"
    parts = [
        f'<text x="4" y="16" font-weight="bold" font-size="13">{html.escape(title)}</text>',
        *legend(36, placed, barrier),
    ]
    y = 44.0
    if not placed:
        lines, y = note_lines("Clocks not established: " + str(picture.get("why", "")), y, CAUSE, "durations-only")
        parts += lines
    for heading, launch in launches:
        parts += panel(heading, launch, ranks, cause_ranks, placed, y, x)
        parts += breaks(x, y + HEAD, y + HEAD + len(ranks) * ROW)
        y += HEAD + len(ranks) * ROW + 4
        parts += axis(y, x, width - RIGHT)
        y += AXIS
    notes = [str(picture.get("time_in_kernel") or "")]
    if len(ranks) < world:
        notes.insert(
            0,
            f"{len(ranks)} of {world} ranks shown (the cause's, who arrives or ends "
            f"last, who arrives first, a few typical); {world - len(ranks)} left out",
        )
    for note in notes:
        lines, y = note_lines(note, y)
        parts += lines
    height = int(y + 6)
    head = (
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" viewBox="0 0 {width} '
        f'{height}" role="img" font-size="{FONT}" font-family="sans-serif"><title>{html.escape(title)}</title>'
    )
    return head + "".join(parts) + "</svg>"
