"""Counters on the merged trace: per drawn launch the group's kernel time (the first target start to the last end over
the ranks) beside the links' bound (baseline.bandwidth.bound_us: the time the dispatch's bytes take on its links at
their peak), so that a viewer plots how far each launch is from what the links allow, and where it strays."""

from __future__ import annotations

from typing import Any, Protocol, Sequence

import numpy as np

COUNTERS_PID = 999_998  # after the ranks, before the causes process (999_999)
COUNTERS = (
    "per drawn launch, at its first target start: the group's kernel time (first target start to last end over the "
    "ranks) and the links' bound (baseline.bandwidth.bound_us: the dispatch's bytes on its links at their peak)"
)


class Track(Protocol):
    ts_us: list[float]
    dur_us: list[float]
    launch: list[int]


def group_spans(tracks: Sequence[Track]) -> dict[int, tuple[float, float]]:
    """launch -> (first target start, last target end) over the ranks that drew it (one pass in numpy: 51,000 slices
    took 60 ms one by one)."""
    launch = np.concatenate([np.asarray(t.launch, dtype=np.int64) for t in tracks] or [np.zeros(0, np.int64)])
    if not len(launch):
        return {}
    start = np.concatenate([np.asarray(t.ts_us, dtype=float) for t in tracks])
    end = start + np.concatenate([np.asarray(t.dur_us, dtype=float) for t in tracks])
    keys, at = np.unique(launch, return_inverse=True)
    first, last = np.full(len(keys), np.inf), np.full(len(keys), -np.inf)
    np.minimum.at(first, at, start)
    np.maximum.at(last, at, end)
    return dict(zip(keys.tolist(), zip(first.tolist(), last.tolist())))


def counter_events(tracks: Sequence[Track], bound_us: float | None) -> list[dict[str, Any]]:
    """The counters process: "group kernel time (us)" at each drawn launch's first start, and "links' bound (us)"
    beside it where the baseline has one. Nothing without a drawn launch."""
    spans = group_spans(tracks)
    if not spans:
        return []
    events: list[dict[str, Any]] = [
        {"name": "process_name", "ph": "M", "pid": COUNTERS_PID, "tid": 0, "args": {"name": "counters per launch"}},
        {"name": "process_sort_index", "ph": "M", "pid": COUNTERS_PID, "tid": 0, "args": {"sort_index": -2}},
    ]
    for launch in sorted(spans):
        first, last = spans[launch]
        events.append(
            {
                "name": "group kernel time (us)",
                "ph": "C",
                "pid": COUNTERS_PID,
                "ts": first,
                "args": {"us": last - first},
            }
        )
        if bound_us is not None:
            events.append(
                {"name": "links' bound (us)", "ph": "C", "pid": COUNTERS_PID, "ts": first, "args": {"us": bound_us}}
            )
    return events
