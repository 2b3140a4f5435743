"""Launch tables written by hand for the timeline analysis's property tests (independent of workflow/sim): a cluster's
used launches as the stage hands them to analysis.waits (long int-like ns columns per rank and launch), with the
events they were drawn from, so that a test can replay the same draws without a cause (its event truth)."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

COLUMNS = ("start_ns", "dur_ns", "barrier_start_ns", "barrier_dur_ns")


@dataclass(frozen=True)
class Shape:
    """What a generated cluster does. Times in µs. ``own_extra``: rank -> µs of own work added in every launch (a slow
    rank); ``host_late``: rank -> µs its host arrives late in every launch; ``coupled``: ranks wait for the last
    arrival at the barrier and at the kernel's entry (else each rank runs on its own, its duration its own work)."""

    nodes: int = 3
    ranks_per_node: int = 8
    launches: int = 300
    coupled: bool = True
    barrier: bool = True  # the synchronize_start barrier kernel (cached_notify_combine) before each launch
    work_us: float = 260.0
    common_sd_us: float = 6.0  # the kernel's time varies from launch to launch alike for every rank
    end_jitter_us: float = 0.5  # each rank's own end jitter (0: ends tied to the nanosecond)
    own_extra: dict[int, float] = field(default_factory=dict)
    own_factor: dict[int, float] = field(default_factory=dict)  # rank -> its own work x this (uncoupled slow rank)
    group_extra: dict[int, float] = field(default_factory=dict)  # launch -> µs more for every rank (contention)
    spike_extra: dict[tuple[int, int], float] = field(default_factory=dict)  # (rank, launch) -> µs of its own work
    rank_work_sd_us: float = 0.0  # uncoupled: each rank's own work varies this much per launch
    host_late: dict[int, float] = field(default_factory=dict)
    clock_offset_us: tuple[float, ...] = ()  # per node, added to its clock (seconds are 1e6)
    missing_ranks: tuple[int, ...] = ()
    missing_launches: tuple[int, ...] = ()
    nan_cells: int = 0  # cells whose start (or barrier start) is NaN
    seed: int = 0


@dataclass
class Events:
    """Per launch and rank the true start and end (µs, one clock)
    and each rank's kernel duration: what the truth reads."""

    start: np.ndarray
    end: np.ndarray
    duration: np.ndarray

    def period_us(self, other: Events) -> float:
        """What the other run's events save per launch in the launch period: its last end of the last launch earlier."""
        return float(self.end[-1].max() - other.end[-1].max()) / len(self.end)

    def timed_us(self, other: Events) -> float:
        """What they save per launch in the timed scope: the group's time from its last start to its last end."""
        kernel = lambda e: e.end.max(axis=1) - e.start.max(axis=1)  # noqa: E731
        return float((kernel(self) - kernel(other)).mean())

    def longest_us(self, other: Events) -> float:
        """What they save per launch in the longest duration of each launch (ranks that do not wait for each other)."""
        return float((self.duration.max(axis=1) - other.duration.max(axis=1)).mean())


def simulate(shape: Shape) -> tuple[dict[str, np.ndarray], Events]:
    """The long columns (rank, launch and COLUMNS in ns) of every rank's used launches, and the true events."""
    rng = np.random.default_rng(shape.seed)
    world = shape.nodes * shape.ranks_per_node
    node = np.arange(world) // shape.ranks_per_node
    extra = np.array([shape.own_extra.get(r, 0.0) for r in range(world)])
    factor = np.array([shape.own_factor.get(r, 1.0) for r in range(world)])
    late = np.array([shape.host_late.get(r, 0.0) for r in range(world)])
    offsets = np.array([(shape.clock_offset_us + (0.0,) * shape.nodes)[k] for k in range(shape.nodes)])[node]
    prev_end = np.zeros(world)
    starts, ends, durations = [], [], []
    cols: dict[str, list[np.ndarray]] = {k: [] for k in ("rank", "launch", *COLUMNS)}
    for i in range(shape.launches):
        gap = 25.0 + rng.uniform(0, 4, world)
        common = shape.common_sd_us * rng.standard_normal()
        own = (shape.work_us + common + shape.rank_work_sd_us * rng.standard_normal(world)) * factor + extra
        own = own + shape.group_extra.get(i, 0.0) + [shape.spike_extra.get((r, i), 0.0) for r in range(world)]
        jitter = shape.end_jitter_us * rng.uniform(0, 1, world)
        arrive = prev_end + gap + late
        if shape.coupled:
            release = arrive.max() + 3.0
            start = release + 1.5 + rng.uniform(0, 0.2, world) if shape.barrier else arrive
            end = start.max() + 2.0 + own + jitter
        else:
            release = arrive + 3.0
            start = release + 1.5 if shape.barrier else arrive
            end = start + own + jitter
        clock = (offsets + 0.0) * 1000.0
        cols["rank"].append(np.arange(world))
        cols["launch"].append(np.full(world, i))
        cols["start_ns"].append(np.round(start * 1000.0 + clock))
        cols["dur_ns"].append(np.round((end - start) * 1000.0))
        cols["barrier_start_ns"].append(np.round(arrive * 1000.0 + clock) if shape.barrier else np.full(world, np.nan))
        cols["barrier_dur_ns"].append(
            np.round((release - arrive) * 1000.0) if shape.barrier else np.full(world, np.nan)
        )
        starts.append(start)
        ends.append(end)
        durations.append(end - start)
        prev_end = end + 8.0
    columns = {k: np.concatenate(v) for k, v in cols.items()}
    keep = ~np.isin(columns["rank"], shape.missing_ranks) & ~np.isin(columns["launch"], shape.missing_launches)
    columns = {k: v[keep] for k, v in columns.items()}
    if shape.nan_cells and len(columns["rank"]):
        cells = rng.choice(len(columns["rank"]), size=min(shape.nan_cells, len(columns["rank"])), replace=False)
        which = "barrier_start_ns" if shape.barrier and rng.random() < 0.5 else "start_ns"
        columns[which] = columns[which].astype(float)
        columns[which][cells] = np.nan
    return columns, Events(np.array(starts), np.array(ends), np.array(durations))
