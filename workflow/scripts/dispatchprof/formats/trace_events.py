"""Intervals of a Chrome trace event list: complete events (``ph:"X"``, ts + dur) and duration events (``ph:"B"`` /
``ph:"E"``), which the Chrome trace event format matches per thread (pid, tid) as a stack: an E ends the latest open B
of its thread, so pairs may nest. The simulator's summary trace writes its SET_FLAG/WAIT_FLAG as B/E pairs
(docs/formats.md §2), and the trace.json of the first real run held most of its VECTOR time in pairs: a reader that kept
only X events reported 0.013 µs of VECTOR without a word.

A B that no E ends, or an E with no open B, is not an interval: it is counted and named in ``Spans.unmatched``
(never dropped silently) for the caller to put in its warnings.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class Span:
    index: int  # the X event's index in traceEvents, or the B event's
    event: dict  # the X event, or the B event with its E's args merged over its own (the format's rule)
    ts: float  # µs
    dur: float  # µs, >= 0


@dataclass
class Spans:
    spans: list[Span] = field(default_factory=list)
    unmatched: list[str] = field(default_factory=list)  # one line per B never ended / E never begun
    pairs: int = 0  # B/E pairs read as intervals


def _number(where: str, name: str, value: Any, error: type[Exception]) -> float:
    """A finite ts, or a finite dur >= 0 (a reader that needs ts >= 0 checks Span.ts itself)."""
    if (
        isinstance(value, bool)
        or not isinstance(value, int | float)
        or not math.isfinite(value)
        or (name == "dur" and value < 0)
    ):
        expected = "a duration >= 0" if name == "dur" else "a finite number"
        raise error(f"{where}: field '{name}' is {value!r:.40}, expected {expected} (µs)")
    return float(value)


def _thread(event: dict) -> tuple[str, str]:
    return (repr(event.get("pid")), repr(event.get("tid")))


def _label(i: int, event: dict) -> str:
    return (
        f"traceEvents[{i}] {event.get('ph')} {event.get('name')!r:.60} on pid "
        f"{event.get('pid')!r:.40} tid {event.get('tid')!r:.40} at ts {event.get('ts')!r:.20}"
    )


def _pair(b: tuple[int, dict, float], e: tuple[int, dict, float]) -> Span:
    """A B and the E that ends it (matched in ts order, so the E's ts is never earlier)."""
    (bi, begin, bts), (_, end, ets) = b, e
    first, last = begin.get("args", {}), end.get("args", {})
    if not isinstance(first, dict) or not isinstance(last, dict):
        return Span(bi, begin, bts, ets - bts)  # the reader reports the B's args if they are not an object
    return Span(bi, {**begin, "args": {**first, **last}}, bts, ets - bts)


def interval_spans(events: list[dict], where: str, error: type[Exception]) -> Spans:
    """The X events and matched B/E pairs of ``events`` (already checked to be objects), in the order of the X or B
    event in the file. Each thread's B/E events are matched in ts order (the file order breaks ties), as a viewer
    does: an E earlier than every open B of its thread is unmatched."""
    out = Spans()
    threads: dict[tuple[str, str], list[tuple[int, dict, float]]] = {}
    for i, event in enumerate(events):
        phase = event.get("ph")
        if phase == "X":
            ts = _number(f"{where}: traceEvents[{i}]", "ts", event.get("ts"), error)
            out.spans.append(Span(i, event, ts, _number(f"{where}: traceEvents[{i}]", "dur", event.get("dur"), error)))
        elif phase in ("B", "E"):
            ts = _number(f"{where}: traceEvents[{i}]", "ts", event.get("ts"), error)
            threads.setdefault(_thread(event), []).append((i, event, ts))
    for marks in threads.values():
        stack: list[tuple[int, dict, float]] = []
        for mark in sorted(marks, key=lambda m: m[2]):  # stable: equal ts keep the file order
            if mark[1].get("ph") == "B":
                stack.append(mark)
            elif stack:
                out.spans.append(_pair(stack.pop(), mark))
                out.pairs += 1
            else:
                out.unmatched.append(f"{_label(mark[0], mark[1])}: an E with no open B on its thread")
        out.unmatched += [f"{_label(i, e)}: a B that no E ends" for i, e, _ in stack]
    out.spans.sort(key=lambda s: s.index)
    return out


def unmatched_warning(source: str, unmatched: list[str], shown: int = 3) -> str | None:
    """One sentence for a status or log: how many B/E events matched nothing, and the first few of them."""
    if not unmatched:
        return None
    more = f" (and {len(unmatched) - shown} more)" if len(unmatched) > shown else ""
    return (
        f"{source}: {len(unmatched)} unmatched B/E events left out of the intervals: "
        + "; ".join(unmatched[:shown])
        + more
    )
