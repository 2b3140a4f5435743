"""The run without its top cause, as a trace of its own (ByteDance's "ideal" timeline beside the real one): the
cost account's replay (waits.costing.Replay) drawn on the merged trace's tracks. Open both: the replay's launches come
earlier and earlier, by what each launch before saved, and each struck launch is drawn as it would have run.

The replay knows, per launch, each of the cause's ranks' shifts (lateness off its arrival, delay off its end) and
what they save: the last arrival (the release) comes ``arrival_saving`` earlier, the last end ``end_saving`` earlier
after the release, and a delay of every rank's end (``group_delay``) goes. The launch period's saving of a launch is
``arrival_saving + group_delay`` (an end delay counts in the next launch's arrival, where the host returns late), the
timed scope's ``end_saving + group_delay``. Drawn:

- every launch earlier by the launch period's savings of the launches before it (the run replayed, not one launch);
- in a launch the cause struck, a cause's rank arrives earlier by its arrival shift (its barrier slice starts
  earlier); the barrier releases every rank ``arrival_saving`` earlier, and every target slice starts that much
  earlier (without the barrier kernel, the target's start is the arrival: the cause's ranks start earlier by their
  shift, the others as before, and only their ends move);
- every end there comes ``arrival_saving + group_delay`` earlier, a cause's rank's by its end shift too, and no rank
  ends after the replay's last end (the others waited for the cause's data, and now wait for the next last).

So a launch's group end comes earlier by the savings before it plus ``arrival_saving + end_saving + group_delay``,
and from one launch to the next the group end moves by that launch's period saving (up to the end savings, which
count once: in the launch they struck and in the next one's arrival). Each host call moves with its launch, a cause's
rank's by its arrival shift too (its host was late). Savings are the replay's, before the cost account takes off the
background (what jitter gives every rank now and then)."""

from __future__ import annotations

from bisect import bisect_left
from dataclasses import dataclass, replace
from functools import cached_property
from typing import Any, Mapping, Protocol, Sequence, TypeVar

import numpy as np

from dispatchprof.analysis.trace_counters import group_spans


class Track(Protocol):
    """A rank's drawn launches (analysis.timeline.RankTrack)."""

    rank: int
    ts_us: list[float]
    dur_us: list[float]
    launch: list[int]
    barrier_ts_us: list[float | None] | None
    barrier_dur_us: list[float | None] | None
    host_ts_us: list[float | None] | None


T = TypeVar("T", bound=Track)

HOW = (
    "the cost account's replay without the cause, drawn: every launch earlier by the launch period's savings of the "
    "launches before it; in a launch it struck, its ranks arrive earlier by their lateness, the barrier releases and "
    "every target starts earlier by the last arrival's saving, every end earlier by that and by a delay of the whole "
    "group, its ranks' ends by their own delay too, and nobody ends after the replay's last end; each host call moves "
    "with its launch, a late rank's by its lateness too. Savings before the background the cost account takes off"
)


@dataclass(frozen=True)
class LaunchReplay:
    """One launch of the replay: the three savings (µs) and the cause's ranks' shifts there."""

    arrival_saving: float
    end_saving: float
    group_delay: float
    arrival_shift: Mapping[int, float]  # rank -> µs off its arrival
    end_shift: Mapping[int, float]  # rank -> µs off its end

    @property
    def group_end_saving(self) -> float:
        return self.arrival_saving + self.end_saving + self.group_delay


@dataclass(frozen=True)
class ReplayedCause:
    """The cause the replay removes, and where it acted."""

    label: str
    cost_us_per_launch: float
    cost_ci_us: Sequence[float]
    launches: Mapping[int, LaunchReplay]  # launch index -> its replay (launches it struck, or saved time in)
    row_launches: Sequence[int]  # every replayed launch (the cost account's rows), ascending
    saved_through: Sequence[float]  # ... and the launch period's savings (arrival_saving + group_delay) up to it

    @cached_property
    def shifted_ranks(self) -> frozenset[int]:
        """The ranks with a shift of their own in some launch (the cause's)."""
        return frozenset(r for x in self.launches.values() for r in (*x.arrival_shift, *x.end_shift))

    def saved_before(self, launch: int) -> float:
        """The launch period's savings of the replayed launches before this one: how much earlier it starts."""
        k = bisect_left(self.row_launches, launch)
        return float(self.saved_through[k - 1]) if k else 0.0


@dataclass(frozen=True)
class DrawnLaunches:
    """The replay's numbers of every drawn launch, as columns by launch (``keys`` ascending), so that a rank's track
    is replayed in a few array operations: 256 ranks x 200 launches took 0.24 s launch by launch."""

    keys: np.ndarray
    before: np.ndarray  # the launch period's savings of the launches before it
    arrival_saving: np.ndarray  # 0 where the cause did not strike
    end_delay: np.ndarray  # arrival_saving + group_delay: what every end loses
    cap: np.ndarray  # the replay's last end (inf where the cause did not strike)

    @staticmethod
    def of(cause: ReplayedCause, last_end: Mapping[int, float]) -> DrawnLaunches:
        keys = sorted(last_end)
        hit = [cause.launches.get(k) for k in keys]
        before = np.array([cause.saved_before(k) for k in keys])
        arrival = np.array([r.arrival_saving if r else 0.0 for r in hit])
        end_delay = arrival + np.array([r.group_delay if r else 0.0 for r in hit])
        cap = np.array([last_end[k] - b - r.group_end_saving if r else np.inf for k, b, r in zip(keys, before, hit)])
        return DrawnLaunches(np.array(keys, dtype=np.int64), before, arrival, end_delay, cap)


def own_shifts(track: Track, cause: ReplayedCause) -> tuple[np.ndarray, np.ndarray]:
    """The rank's own arrival and end shifts in each drawn launch (zeros for a rank the cause is not)."""
    if track.rank not in cause.shifted_ranks:
        return np.zeros(len(track.launch)), np.zeros(len(track.launch))
    rows = [cause.launches.get(k) for k in track.launch]
    arrival = [r.arrival_shift.get(track.rank, 0.0) if r else 0.0 for r in rows]
    end = [r.end_shift.get(track.rank, 0.0) if r else 0.0 for r in rows]
    return np.array(arrival), np.array(end)


def replay_track(track: T, cause: ReplayedCause, drawn: DrawnLaunches) -> T:
    """One rank's drawn launches as the replay has them (see the module)."""
    at = np.searchsorted(drawn.keys, np.asarray(track.launch, dtype=np.int64))
    before, saving, end_delay, cap = drawn.before[at], drawn.arrival_saving[at], drawn.end_delay[at], drawn.cap[at]
    own_arrival, own_end = own_shifts(track, cause)
    ts, dur = np.asarray(track.ts_us, float) - before, np.asarray(track.dur_us, float)
    end = np.minimum(ts + dur - end_delay - own_end, cap)
    if track.barrier_ts_us is not None and track.barrier_dur_us is not None:
        bts = nans(track.barrier_ts_us) - before
        release = bts + nans(track.barrier_dur_us) - saving
        has = np.isfinite(release)
        start = np.where(has, ts - saving, ts - own_arrival)
        bts = bts - own_arrival
        barrier = (nones(bts), nones(np.maximum(0.0, release - bts)))
    else:
        start, barrier = ts - own_arrival, (None, None)
    host = None
    if track.host_ts_us is not None:  # the host call moves with its launch, and a late host's by its lateness too
        host = nones(nans(track.host_ts_us) - before - own_arrival)
    return replace(
        track,
        ts_us=start.tolist(),
        dur_us=np.maximum(0.0, end - start).tolist(),
        barrier_ts_us=barrier[0],
        barrier_dur_us=barrier[1],
        host_ts_us=host,
    )


def nans(values: Sequence[float | None]) -> np.ndarray:
    """A drawn span's list as floats, None (a launch without that span) as NaN."""
    return np.array([np.nan if x is None else x for x in values], float)


def nones(values: np.ndarray) -> list[float | None]:
    """NaN back to None (a launch without its barrier slice)."""
    return [None if v != v else v for v in values.tolist()]


def replayed_tracks(tracks: Sequence[T], cause: ReplayedCause) -> tuple[list[T], dict[str, Any]]:
    """The tracks without the cause, and what the replay's metadata says of it."""
    last_end = {launch: last for launch, (_, last) in group_spans(tracks).items()}  # the latest end over the ranks
    drawn = sorted(last_end)
    meta = {
        "replay": {
            "without": cause.label,
            "cost_us_per_launch": cause.cost_us_per_launch,
            "cost_ci_us": list(cause.cost_ci_us),
            "launches_struck": len(cause.launches),
            "launches_struck_drawn": sum(k in cause.launches for k in drawn),
            "saved_by_the_last_drawn_launch_us": round(cause.saved_before(drawn[-1] + 1), 3) if drawn else 0.0,
            "how": HOW,
        }
    }
    table = DrawnLaunches.of(cause, last_end)
    return [replay_track(t, cause, table) for t in tracks], meta
