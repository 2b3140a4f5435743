"""The cost account on the merged trace: a process "causes" with a thread per named cause and one slice per drawn
launch the cause struck (its saving there in the args), flow arrows from the cause's rank to the ranks that waited
for it in that launch (by the drawn events), and the launches the report's picture shows, marked.

Who waited, by the events of the launch: for a late arrival (the barrier kernel drawn), every other rank whose barrier
wait is longer than the cause's (it was there before the cause arrived); without the barrier, every other rank that
started the target before it (it waited at the kernel's entry). For a cause that ends late (own work, a late-ending
rank or node), every other rank that was in the target while the cause ran and ended no earlier than it. None for the
group waiting inside the kernel: every rank ends late, and whose data they wait for is not in the timeline. At most
``max_flows`` arrows per launch, the longest waits first; the metadata says how many were left out."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping, Protocol, Sequence


class RankTrack(Protocol):
    """A rank's drawn launches, as analysis.timeline.RankTrack holds them."""

    rank: int
    ts_us: list[float]
    dur_us: list[float]
    launch: list[int]

    def barriers(self) -> list[tuple[float, float, int]]: ...


CAUSES_PID = 999_999  # the causes process: above any rank's pid, drawn first (sort_index -1)
PICTURE_TID = 0  # the causes process's thread of the report's picture marks; cause i is thread i + 1
EPSILON_US = 0.001  # a flow's end sits this far inside its slice (a viewer binds it to the slice that encloses it)
MAX_FLOWS = 32
# the group waiting inside the kernel: every rank ends late, and the timeline cannot tell whose data they wait for
# (DebugClock's phases or the PMU's per-rank busy time can): no arrow would be true
UNKNOWN_SOURCE = {"in_kernel"}

WAITED_FOR = (
    "flows (cat cause): from the cause's rank to each rank that waited for it in that launch, by the drawn events: a "
    "late arrival's barrier start to the barrier end of every rank whose barrier wait is longer (without the barrier "
    "kernel, to every rank that started the target earlier); a late end's target end to the target end of every rank "
    "that ran the target while it did and ended no earlier; none for the group waiting inside the kernel, whose "
    "source the timeline cannot tell (DebugClock's phases or the PMU's per-rank busy time can)"
)


@dataclass
class TraceCause:
    """A named cause of the cost account as the trace draws it: where it struck, launch by launch."""

    label: str  # "late arrival, rank 5"
    evidence: str
    ranks: list[int]
    cost_us_per_launch: float
    launches: list[int]  # the launches it struck (its replay's rows where it acted or saved time)
    period_us: list[float]  # per launch: the launch period's saving without it (the replay's, before the background)
    timed_us: list[float]  # ... the timed scope's

    @property
    def arrives_late(self) -> bool:
        return self.evidence == "late_arrival"


@dataclass
class Drawn:
    """One rank's drawn launch: the target's slice and, where drawn, the barrier's."""

    ts: float
    dur: float
    barrier_ts: float | None
    barrier_dur: float | None

    @property
    def first(self) -> float:
        return self.barrier_ts if self.barrier_ts is not None else self.ts

    @property
    def end(self) -> float:
        return self.ts + self.dur


def drawn_launches(tracks: Sequence[RankTrack], wanted: set[int]) -> dict[int, dict[int, Drawn]]:
    """launch -> rank -> its drawn slices, for the ``wanted`` launches only (those a cause struck or a mark shows)."""
    out: dict[int, dict[int, Drawn]] = {}
    for t in tracks:
        barrier = {launch: (ts, dur) for ts, dur, launch in t.barriers() if launch in wanted}
        for ts, dur, launch in zip(t.ts_us, t.dur_us, t.launch):
            if launch in wanted:
                bts, bdur = barrier.get(launch, (None, None))
                out.setdefault(launch, {})[t.rank] = Drawn(ts, dur, bts, bdur)
    return out


def waiters(cause: TraceCause, launch: Mapping[int, Drawn]) -> tuple[int | None, list[int]]:
    """The cause's rank in this launch (its latest arrival, or its latest end) and the ranks that waited for it,
    longest wait first (see the module)."""
    mine = [r for r in cause.ranks if r in launch]
    if not mine or cause.evidence in UNKNOWN_SOURCE:
        return None, []
    others = [r for r in launch if r not in cause.ranks]
    if cause.arrives_late and all(launch[r].barrier_dur is not None for r in mine):
        source = min(mine, key=lambda r: launch[r].barrier_dur or 0.0)
        own = launch[source].barrier_dur or 0.0
        waited = [(r, (launch[r].barrier_dur or 0.0) - own) for r in others if launch[r].barrier_dur is not None]
    elif cause.arrives_late:
        source = max(mine, key=lambda r: launch[r].ts)
        waited = [(r, launch[source].ts - launch[r].ts) for r in others]
    else:
        source = max(mine, key=lambda r: launch[r].end)
        s = launch[source]
        waited = [(r, launch[r].end - s.end + s.dur) for r in others if launch[r].ts < s.end <= launch[r].end]
    return source, [r for r, w in sorted(waited, key=lambda x: (-x[1], x[0])) if w > 0]


def flow_pair(
    flow_id: int, cause: TraceCause, source: Drawn, src: int, waiter: Drawn, dst: int
) -> list[dict[str, Any]]:
    """The two ends of one arrow: from the cause's arrival (or end) to the waiting rank's release (or end)."""
    if cause.arrives_late and source.barrier_ts is not None and waiter.barrier_ts is not None:
        tid, at = 1, source.barrier_ts
        until = waiter.barrier_ts + (waiter.barrier_dur or 0.0)
        inside = min(EPSILON_US, (waiter.barrier_dur or 0.0) / 2)
    else:
        tid, at = 0, (source.ts if cause.arrives_late else source.end - min(EPSILON_US, source.dur / 2))
        until, inside = waiter.end, min(EPSILON_US, waiter.dur / 2)
    common = {"name": "waited for", "cat": "cause", "id": flow_id}
    return [
        {**common, "ph": "s", "pid": src, "tid": tid, "ts": at},
        {**common, "ph": "f", "bp": "e", "pid": dst, "tid": tid, "ts": until - inside},
    ]


def cause_events(
    tracks: Sequence[RankTrack],
    causes: Sequence[TraceCause],
    marked: Mapping[str, int | None],
    max_flows: int = MAX_FLOWS,
) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """The causes process's events (metadata, slices, marks) and the flows; and what the metadata says of them."""
    if not causes and not any(v is not None for v in marked.values()):
        return [], {}
    wanted = {k for c in causes for k in c.launches} | {k for k in marked.values() if k is not None}
    drawn = drawn_launches(tracks, wanted)
    events: list[dict[str, Any]] = [
        {"name": "process_name", "ph": "M", "pid": CAUSES_PID, "tid": 0, "args": {"name": "causes (cost account)"}},
        {"name": "process_sort_index", "ph": "M", "pid": CAUSES_PID, "tid": 0, "args": {"sort_index": -1}},
        {"name": "thread_name", "ph": "M", "pid": CAUSES_PID, "tid": PICTURE_TID, "args": {"name": "report's picture"}},
    ]
    for which, launch in marked.items():
        if launch is not None and launch in drawn:
            at = min(d.first for d in drawn[launch].values())
            events.append(
                {
                    "name": f"{which} launch (the report's picture)",
                    "ph": "i",
                    "s": "p",
                    "pid": CAUSES_PID,
                    "tid": PICTURE_TID,
                    "ts": at,
                    "args": {"launch": launch},
                }
            )
    flows: list[dict[str, Any]] = []
    said = []
    for i, cause in enumerate(causes):
        tid = i + 1
        name = f"cause {tid}: {cause.label} ({cause.cost_us_per_launch:.2f} us per launch)"
        events.append({"name": "thread_name", "ph": "M", "pid": CAUSES_PID, "tid": tid, "args": {"name": name}})
        shown = arrows = left_out = 0
        for launch, period, timed in zip(cause.launches, cause.period_us, cause.timed_us):
            here = drawn.get(launch)
            if not here:
                continue
            shown += 1
            first, last = min(d.first for d in here.values()), max(d.end for d in here.values())
            args = {"launch": launch, "cost_us": period, "cost_timed_us": timed, "ranks": cause.ranks}
            events.append(
                {
                    "name": cause.label,
                    "ph": "X",
                    "pid": CAUSES_PID,
                    "tid": tid,
                    "ts": first,
                    "dur": last - first,
                    "args": {**args, "cost_us_per_launch": cause.cost_us_per_launch, "evidence": cause.evidence},
                }
            )
            source, waited = waiters(cause, here)
            left_out += max(0, len(waited) - max_flows)
            for dst in waited[:max_flows]:
                flows += flow_pair(len(flows) // 2 + 1, cause, here[source], source, here[dst], dst)  # type: ignore[index]
                arrows += 1
        said.append(
            {
                "label": cause.label,
                "ranks": cause.ranks,
                "cost_us_per_launch": cause.cost_us_per_launch,
                "launches_struck": len(cause.launches),
                "launches_drawn": shown,
                "flows": arrows,
                "flows_left_out": left_out,
            }
        )
    meta = {
        "causes_track": {
            "pid": CAUSES_PID,
            "causes": said,
            "slices": "one per drawn launch the cause struck: args.cost_us is the launch period's saving without it "
            "there (the cost account's replay, before the background), args.cost_timed_us the timed scope's",
            "flows": WAITED_FOR + f"; at most {max_flows} per launch, the longest waits first",
        }
    }
    return events + flows, meta
