"""System-timeline analysis: which rank each PROF_ holds (rule in
rank_identity), the target kernel's launches, stragglers, gaps.

Cross-node timestamps are not comparable (each host's clock), so ranks are aligned by launch index of
the target kernel, never by absolute time across nodes. Gaps (start minus previous end) and intervals
are computed per rank on its own clock.
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterable, Iterator, Mapping, Sequence

import numpy as np

from dispatchprof.analysis.order_stats import sorted_median, sorted_percentile
from dispatchprof.analysis.rank_identity import RankAssignment, RankSource, why_unmapped
from dispatchprof.formats.msprof import ProfInfo, TargetKernels
from dispatchprof.analysis.trace_causes import MAX_FLOWS, TraceCause, cause_events
from dispatchprof.analysis.trace_counters import COUNTERS, COUNTERS_PID, counter_events

if TYPE_CHECKING:
    import pyarrow as pa  # the merge job's tables; nothing here imports pyarrow or pandas at run time


def kernel_regex(pattern: str) -> re.Pattern[str]:
    """msopprof --kernel-name semantics: a symbol matches when it starts with the name; '*' is a wildcard."""
    return re.compile("".join(".*" if c == "*" else re.escape(c) for c in pattern))


def prof_sources(
    node: int, infos: Mapping[Path, ProfInfo], rank_map: Mapping[Path, int] | None = None
) -> list[RankSource]:
    """One source per device of each data directory (a process that drove several devices wrote them all into one
    PROF_), with the rank it records and where; ``rank_map`` (analyze.rank_map, resolved) names a directory's rank
    outright."""
    sources = []
    for path, info in infos.items():
        for device in info.devices or [None]:
            if rank_map and path in rank_map:
                rank, where = rank_map[path], "analyze.rank_map"
            else:
                rank = info.device_rank_ids.get(device) if device is not None else info.rank_id
                where = info.rank_from if rank is not None else None
            sources.append(RankSource(path, node, device, info.pid, rank, where))
    return sources


def coverage_rows(
    nodes: range,
    ranks_per_node: int,
    assignments: Sequence[RankAssignment],
    infos: Mapping[Path, ProfInfo],
    infer: str = "device_id",
    refused: Mapping[int, Sequence[str]] | None = None,
) -> list[dict[str, Any]]:
    """One row per expected rank of these nodes: its PROF_, device, pid, how it was mapped, and found / missing with
    why. A rank has data when its PROF_ holds a db or an export; what its read then tells (an msprof session that
    never ended, no launch of the kernel) is read_state's. A missing rank of a node whose PROF_ maps to no rank says
    which device that PROF_ holds and why it maps to none. ``refused``: per node, the PROF_ directories that could not
    be read (each named, with why); a rank of that node without a PROF_ is ``refused``, with them as its reason."""
    by_rank = {a.rank: a for a in assignments if a.rank is not None}
    rows = []
    for node in nodes:
        unmapped = [
            why_unmapped(a, ranks_per_node, infer) for a in assignments if a.rank is None and a.source.node == node
        ]
        unreadable = list((refused or {}).get(node, []))
        for local in range(ranks_per_node):
            rank = node * ranks_per_node + local
            a = by_rank.get(rank)
            info = infos[a.source.path] if a else None
            if a is None and unreadable:
                state, why = (
                    "refused",
                    "no readable PROF_ directory maps to this rank; refused: " + "; ".join(unreadable + unmapped),
                )
            elif a is None:
                state, why = (
                    "missing",
                    ("no PROF_ directory maps to this rank: " + "; ".join(unmapped))
                    if unmapped
                    else "no PROF_ directory for this rank",
                )
            elif not info.has_kernel_tables and info.missing_why:
                state, why = "missing", info.missing_why
            elif not info.has_kernel_tables and not info.devices:
                # docs/formats.md §1: an empty device side means disk space or permissions; check the plog
                state, why = (
                    "missing",
                    "PROF_ has no device data (no device_<id>/, db or export): the device side was not collected",
                )
            elif not info.has_kernel_tables:
                state, why = (
                    "missing",
                    "PROF_ has device data but neither a db nor "
                    "mindstudio_profiler_output/ (run msprof --export=on on it)",
                )
            else:
                state, why = "found", f"mapped by {a.how}"
            rows.append(
                {
                    "node": node,
                    "local_rank": local,
                    "global_rank": rank,
                    "device": a.source.device if a else None,
                    "pid": a.source.pid if a else None,
                    "prof_dir": str(a.source.path) if a else None,
                    "mapping": a.how if a else None,
                    "state": state,
                    "detail": why,
                }
            )
    return rows


def read_state(kernels: TargetKernels, pattern: str) -> tuple[str, str] | None:
    """What reading a found rank tells against analysing it, as a coverage (state, detail): incomplete when its msprof
    session never ended (the process exited abnormally: read with skip_unended, its launches were not read), no_kernel
    when no launch matches kernel.name ``pattern``. None: analyse it."""
    if kernels.session_ended is False:
        return (
            "incomplete",
            "msprof session never ended (SESSION_TIME_INFO.endTimeNs is null): the process exited abnormally",
        )
    if not len(kernels.name):
        return "no_kernel", f"no launch of a kernel matching kernel.name {pattern!r}"
    return None


HCCL_NAME = re.compile(r"^(hcom_|hccl|allreduce|allgather|reducescatter|alltoall)", re.IGNORECASE)


def communication_note(pattern: str, communication_ops: int, db: Path | None) -> str:
    """What a no_kernel detail adds when kernel.name names a communication op (HCCL: hcom_*, HcclAllReduce, ...) or
    matches the db's COMMUNICATION_OP rows: the timeline stage reads compute tasks only."""
    if not communication_ops and not HCCL_NAME.match(pattern):
        return ""
    held = (
        f"; {db} holds {communication_ops} communication ops (COMMUNICATION_OP) matching it"
        if communication_ops
        else ""
    )
    return (
        "; communication tasks (HCCL ops) are not part of the timeline stage, which reads compute tasks "
        f"(COMPUTE_TASK_INFO, op_summary): set kernel.name to a compute kernel{held}"
    )


def launch_columns(kernels: TargetKernels, skip: int) -> dict[str, np.ndarray]:
    """One rank's launch table: launch index in start order, whether it is used (the first ``skip`` are not),
    and for used launches the gap (start minus previous used end) and interval (start minus previous start),
    on this rank's own clock. NaN where there is no previous used launch."""
    n = len(kernels.start_ns)
    launch = np.arange(n, dtype=np.int64)
    used = launch >= skip
    gap = np.full(n, np.nan)
    interval = np.full(n, np.nan)
    idx = np.flatnonzero(used)
    if len(idx) > 1:
        prev, cur = idx[:-1], idx[1:]
        gap[cur] = kernels.start_ns[cur] - (kernels.start_ns[prev] + kernels.dur_ns[prev])
        interval[cur] = kernels.start_ns[cur] - kernels.start_ns[prev]
    barrier_start, barrier_dur = barrier_before(kernels)
    api_start, api_dur = host_call_columns(kernels)
    return {
        "launch": launch,
        "start_ns": kernels.start_ns,
        "dur_ns": kernels.dur_ns,
        "gap_ns": gap,
        "interval_ns": interval,
        "stream": kernels.stream,
        "task_id": kernels.task_id,
        "used": used,
        "barrier_start_ns": barrier_start,
        "barrier_dur_ns": barrier_dur,
        "api_start_ns": api_start,
        "api_dur_ns": api_dur,
    }


def host_call_columns(kernels: TargetKernels) -> tuple[np.ndarray, np.ndarray]:
    """Per target launch the start and duration of the host API call that launched it (TargetKernels.host), -1 where
    there is none or the source records none (a text export, a db without CANN_API)."""
    if kernels.host is None:
        none = np.full(len(kernels.start_ns), -1, dtype=np.int64)
        return none, none.copy()
    return kernels.host.start_ns, kernels.host.dur_ns


def host_api_record(kernels: TargetKernels) -> dict[str, Any]:
    """What a rank's record says of its host calls: the table read (None: the source has none), the API names of
    the launches that have one (sorted, comma-joined; None when none has), and how many launches have one."""
    host = kernels.host
    if host is None:
        return {"host_api_table": None, "host_api": None, "host_api_launches": 0}
    names = sorted({str(n) for n in host.name.tolist() if n})
    record = {"host_api_table": host.table, "host_api": ",".join(names) or None, "host_api_launches": host.found}
    return {**record, "host_api_refused": host.refused} if host.refused else record


def barrier_before(kernels: TargetKernels) -> tuple[np.ndarray, np.ndarray]:
    """For each target launch, the barrier kernel launch that ran just before it (after the previous target launch
    ended): its start and duration, -1 where there is none."""
    n = len(kernels.start_ns)
    start, dur = np.full(n, -1, dtype=np.int64), np.full(n, -1, dtype=np.int64)
    barriers = kernels.barrier_start_ns
    if not len(barriers) or not n:
        return start, dur
    index = np.searchsorted(barriers, kernels.start_ns, side="right") - 1
    previous_end = np.concatenate([[np.iinfo(np.int64).min], kernels.start_ns[:-1] + kernels.dur_ns[:-1]])
    found = index >= 0
    found[found] &= barriers[index[found]] >= previous_end[found]
    start[found] = barriers[index[found]]
    dur[found] = kernels.barrier_dur_ns[index[found]]
    return start, dur


def launch_summary(columns: Mapping[str, np.ndarray]) -> dict[str, Any]:
    """Per-rank statistics of the used launches (linear-interpolation P95, as everywhere in this project)."""
    used = columns["used"]
    dur_us = np.sort(columns["dur_ns"][used]) / 1000  # integers sorted, then divided: the same order
    gaps = columns["gap_ns"][used]
    gaps = np.sort(gaps[~np.isnan(gaps)]) / 1000
    return {
        "launches_total": int(len(used)),
        "skipped": int((~used).sum()),
        "launches": int(len(dur_us)),
        "median_us": sorted_median(dur_us) if len(dur_us) else None,
        "p95_us": sorted_percentile(dur_us, 95) if len(dur_us) else None,
        "gap_median_us": sorted_median(gaps) if len(gaps) else None,
    }


def calls_between(kernels: TargetKernels) -> list[dict[str, Any]]:
    """Other kernels between consecutive target launches in the call-chain window: count per iteration and
    median duration per name. A kernel counts when it starts after one launch ends and before the next starts."""
    intervals = kernels.context_intervals
    if intervals < 1 or len(kernels.other_start_ns) == 0:
        return []
    starts = kernels.start_ns[: intervals + 1]
    ends = starts + kernels.dur_ns[: intervals + 1]
    o = kernels.other_start_ns
    before = np.searchsorted(starts, o, side="right") - 1  # the launch each kernel follows
    inside = (before >= 0) & (before < intervals)
    inside[inside] &= o[inside] >= ends[before[inside]]
    codes: dict[
        str, int
    ] = {}  # a name's number, in order of appearance (a dict: np.unique of strings sorts them, 4x slower)
    which = np.array(
        [codes.setdefault(str(name), len(codes)) for name in kernels.other_name[inside].tolist()], dtype=np.intp
    )
    durations = kernels.other_dur_ns[inside]
    # One sort by (name, duration): each name's durations are then an ascending slice, its median read off the middle.
    durations = durations[np.lexsort((durations, which))]
    ends_of = np.cumsum(np.bincount(which, minlength=len(codes))).tolist()
    result = [
        {
            "name": name,
            "per_iteration": (end - begin) / intervals,
            "median_us": sorted_median(durations[begin:end]) / 1000,
        }
        for name, begin, end in zip(codes, [0, *ends_of[:-1]], ends_of)
    ]
    return sorted(result, key=lambda r: (-r["median_us"], r["name"]))


def longest_duration(ranks: Sequence[int], durations_us: np.ndarray) -> dict[str, Any]:
    """Ranks aligned by launch index: ``durations_us[launch, j]`` is rank ``ranks[j]``'s duration of its used launch
    ``launch`` (NaN where it has none; such launches are left out). Per launch the longest rank; consistently
    (>= half of the launches) vs occasionally longest. In a coupled collective the longest rank is one that waits
    longest, not the one the group waits for (analysis.waits names that).

    Ties are shared as the baseline shares them (analysis.latency.rank_statistics): a launch where k ranks tie for
    longest credits 1/k to each. When several ranks share the top fraction, ``ranks`` names them all and ``rank`` is
    None (as analysis.waits does for a group): no rank is picked by its number."""
    values = np.asarray(durations_us, dtype=float).reshape(-1, len(ranks))
    complete = values[~np.isnan(values).any(axis=1)]
    if not len(complete):
        return {
            "rank": None,
            "ranks": [],
            "fraction": None,
            "launches_compared": 0,
            "per_rank_fraction": {},
            "per_launch_max_us": [],
        }
    top = complete == complete.max(axis=1, keepdims=True)  # every rank equal to the launch's max
    credit = (top / top.sum(axis=1, keepdims=True)).sum(axis=0) / len(complete)
    ids = np.asarray(ranks)
    order = np.lexsort((ids, -credit))  # most often longest first, then by rank (for a stable listing only)
    fractions = {int(ids[i]): float(credit[i]) for i in order if credit[i] > 0}
    best = max(fractions.values())
    # 1/k credits summed in different orders can differ in the last bits: compare with a tolerance
    tied = [r for r, f in fractions.items() if np.isclose(f, best, rtol=0, atol=1e-12)]
    often = "consistently longest" if best >= 0.5 else "occasionally longest: no rank is longest in half the launches"
    kind = (
        often if len(tied) == 1 else f"{often}; tied: ranks {', '.join(map(str, sorted(tied)))} share the top fraction"
    )
    return {
        "rank": tied[0] if len(tied) == 1 else None,
        "ranks": sorted(tied),
        "fraction": best,
        "kind": kind,
        "launches_compared": int(len(complete)),
        "per_rank_fraction": {str(r): f for r, f in fractions.items()},
        "per_launch_max_us": complete.max(axis=1).tolist(),
    }


UNIDENTIFIED = (
    "unidentified: its name is not in timeline.known_kernels (the repository's "
    "layout/notify/epilogue kernel names are not public); its share is not guessed"
)


def merged_call_chain(ranks: Iterable[Mapping[str, Any]], known: Mapping[str, str]) -> list[dict[str, Any]]:
    """The other kernels between target launches over all ranks: per name the median over ranks of the per-iteration
    count and of the median duration, with its known role or 'unidentified'."""
    chain: dict[str, dict[str, Any]] = {}
    for rank in ranks:
        for call in rank.get("calls_between") or []:
            entry = chain.setdefault(call["name"], {"per_iteration": [], "median_us": []})
            entry["per_iteration"].append(call["per_iteration"])
            entry["median_us"].append(call["median_us"])
    return [
        {
            "name": name,
            "per_iteration": float(np.median(c["per_iteration"])),
            "median_us": float(np.median(c["median_us"])),
            "role": known.get(name) or UNIDENTIFIED,
        }
        for name, c in chain.items()
    ]


def timeline_minus_kernel(
    ranks: Mapping[int, Mapping[str, Any]], baseline_per_rank: Mapping[str, Mapping[str, Any]]
) -> dict[str, float]:
    """Per rank: the timeline's median duration minus the baseline's kernel-scope median (where both exist)."""
    return {
        str(r): d["median_us"] - baseline_per_rank[str(r)]["median_us"]
        for r, d in ranks.items()
        if d["median_us"] is not None and str(r) in baseline_per_rank
    }


LAUNCH_STARTS = ("start_ns", "barrier_start_ns")  # ns on the node's clock: shifted by since_first_start
# Shifted with them (the origin is the earliest start): the host call starts before its task, so it is shifted by the
# same constant without moving the origin, which the device times alone set as before (it may then be negative).
LAUNCH_TIMES = (*LAUNCH_STARTS, "previous_end_ns", "api_start_ns")


def int64_column(column: pa.ChunkedArray) -> tuple[np.ndarray, np.ndarray]:
    """An Arrow int64 column as numpy values and a validity mask, read from its buffers (0 under a null).
    ``to_numpy`` would give a column with nulls as float64, and an epoch-sized ns time (~1.8e18) keeps only 256 ns
    steps in a float64; Arrow's compute functions would cost this job their import (~50 ms)."""
    values, valid = [], []
    for chunk in column.chunks:
        if chunk.type != "int64":
            raise TypeError(f"expected an int64 column, found {chunk.type}")
        validity, data = chunk.buffers()
        n, offset = len(chunk), chunk.offset
        part = np.frombuffer(data, dtype=np.int64, count=n, offset=offset * 8) if n else np.zeros(0, np.int64)
        if chunk.null_count:
            first_byte = offset // 8  # unpack only the bytes that hold this slice's bits
            bytes_ = np.frombuffer(validity, dtype=np.uint8)[first_byte : (offset + n + 7) // 8]
            bits = np.unpackbits(bytes_, bitorder="little")[offset % 8 : offset % 8 + n].astype(bool)
            values.append(np.where(bits, part, 0))
            valid.append(bits)
        else:
            values.append(part)
            valid.append(np.ones(n, dtype=bool))
    if not values:
        return np.zeros(0, np.int64), np.zeros(0, bool)
    return np.concatenate(values), np.concatenate(valid)


def used_launches(tables: Iterable[pa.Table]) -> dict[str, np.ndarray]:
    """The used launches of the parse jobs' launch tables (int64 columns and the bool ``used``) as one set of numpy
    columns, ``used`` itself dropped. Start times become ns after the earliest start (since_first_start) while they
    are integers; a column that holds a null is then float64 with NaN there, the others stay int64."""
    parts: list[dict[str, tuple[np.ndarray, np.ndarray]]] = []
    for table in tables:
        used = table.column("used").to_numpy()
        read = {name: int64_column(table.column(name)) for name in table.column_names if name != "used"}
        if {"rank", "launch", "start_ns", "dur_ns"} <= set(read):
            read["previous_end_ns"] = previous_ends(read)
        parts.append({name: (values[used], valid[used]) for name, (values, valid) in read.items()})
    if not parts:
        return {}
    columns = {
        name: (np.concatenate([p[name][0] for p in parts]), np.concatenate([p[name][1] for p in parts]))
        for name in parts[0]
    }
    columns = since_first_start(columns)
    return {
        name: values if valid.all() else np.where(valid, values, np.nan) for name, (values, valid) in columns.items()
    }


def previous_ends(read: Mapping[str, tuple[np.ndarray, np.ndarray]]) -> tuple[np.ndarray, np.ndarray]:
    """Per row of one launch table (its columns as int64_column reads them, every row, used or not), the end (start +
    duration, ns) of the same rank's launch before it, and whether it is known: the launch before a used one may be a
    left-out warm-up launch, and its end still starts the used launch's host gap."""
    (rank, _), (launch, _) = read["rank"], read["launch"]
    (start, start_ok), (dur, dur_ok) = read["start_ns"], read["dur_ns"]
    order = np.lexsort((launch, rank))
    before, after = order[:-1], order[1:]
    follows = (rank[after] == rank[before]) & (launch[after] == launch[before] + 1)
    values, valid = np.zeros(len(rank), np.int64), np.zeros(len(rank), bool)
    values[after] = np.where(follows, start[before] + dur[before], 0)
    valid[after] = follows & start_ok[before] & dur_ok[before]
    return values, valid


def since_first_start(columns: Mapping[str, tuple[np.ndarray, np.ndarray]]) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """Start times (``LAUNCH_STARTS``: int64 values and validity) as ns after the earliest valid start of any rank,
    target or barrier kernel, still integers. Everything downstream takes differences of a few µs, in floats; a
    float64 holds an epoch-sized ns time only to 256 ns, so the times must be made small while they are integers.
    Every rank is shifted by the same constant: waits, offsets and the trace are unchanged but for that rounding.
    No valid start: nothing to shift. A shift that does not fit in int64 is refused, never wrapped."""
    present = [values[valid] for name, (values, valid) in columns.items() if name in LAUNCH_STARTS and valid.any()]
    if not present:
        return dict(columns)
    origin = min(int(v.min()) for v in present)
    highest = max(int(v.max()) for v in present)
    if highest - origin > np.iinfo(np.int64).max:
        raise OverflowError(f"launch start times span {highest - origin} ns, more than an int64 holds")
    shifted = dict(columns)
    for name in LAUNCH_TIMES:
        if name in columns:
            values, valid = columns[name]
            shifted[name] = (np.where(valid, values - np.int64(origin), 0), valid)
    return shifted


HOST_TID = 2  # a rank's host thread in the merged trace: after the device's target kernel (0) and barrier (1)


@dataclass
class RankTrack:
    """One rank's row of the merged trace (µs on the trace's clock): its target launches as complete events on thread
    0, and on thread 1 the barrier kernel the timeline read before each (its duration is the rank's wait there, the
    launch's arrival its start: an instant event "arrival"), where the table has it."""

    rank: int
    label: str
    kernel: str
    ts_us: list[float]
    dur_us: list[float]
    launch: list[int]
    gap_us: list[float | None]
    node: int = 0
    barrier: str | None = None  # the barrier kernel's name (timeline.barrier_kernel); None: no barrier drawn
    barrier_ts_us: list[float | None] | None = None  # per drawn launch, None where that launch has no barrier
    barrier_dur_us: list[float | None] | None = None
    host_api: str | None = None  # the host API's name (CANN_API); None: no host thread drawn
    host_ts_us: list[float | None] | None = None  # per drawn launch, None where that launch has no host call
    host_dur_us: list[float | None] | None = None

    def metadata_events(self) -> list[dict[str, Any]]:
        events = [
            {"name": "process_name", "ph": "M", "pid": self.rank, "tid": 0, "args": {"name": self.label}},
            {"name": "process_sort_index", "ph": "M", "pid": self.rank, "tid": 0, "args": {"sort_index": self.rank}},
            {"name": "thread_name", "ph": "M", "pid": self.rank, "tid": 0, "args": {"name": "device: target kernel"}},
        ]
        if self.barriers():
            events.append(
                {
                    "name": "thread_name",
                    "ph": "M",
                    "pid": self.rank,
                    "tid": 1,
                    "args": {"name": f"device: {self.barrier} (barrier wait; start = arrival)"},
                }
            )
        if self.host_calls():
            events.append(
                {
                    "name": "thread_name",
                    "ph": "M",
                    "pid": self.rank,
                    "tid": HOST_TID,
                    "args": {"name": f"host: {self.host_api} (launch call)"},
                }
            )
        return events

    def launch_events(self) -> Iterator[dict[str, Any]]:
        for ts, dur, launch, gap in zip(self.ts_us, self.dur_us, self.launch, self.gap_us):
            yield {
                "name": self.kernel,
                "ph": "X",
                "pid": self.rank,
                "tid": 0,
                "ts": ts,
                "dur": dur,
                "args": {"launch": launch, "gap_us": gap},
            }

    def barriers(self) -> list[tuple[float, float, int]]:
        """(ts, dur, launch) of each drawn launch's barrier kernel."""
        return self.spans(self.barrier, self.barrier_ts_us, self.barrier_dur_us)

    def host_calls(self) -> list[tuple[float, float, int]]:
        """(ts, dur, launch) of each drawn launch's host API call."""
        return self.spans(self.host_api, self.host_ts_us, self.host_dur_us)

    def spans(
        self, name: str | None, ts_us: list[float | None] | None, dur_us: list[float | None] | None
    ) -> list[tuple[float, float, int]]:
        """(ts, dur, launch) of the drawn launches that have this span; none where the span is not drawn."""
        if name is None or ts_us is None or dur_us is None:
            return []
        return [
            (ts, dur, launch)
            for ts, dur, launch in zip(ts_us, dur_us, self.launch)
            if ts is not None and dur is not None
        ]

    def host_events(self) -> Iterator[dict[str, Any]]:
        for ts, dur, launch in self.host_calls():
            yield {
                "name": self.host_api,
                "ph": "X",
                "pid": self.rank,
                "tid": HOST_TID,
                "ts": ts,
                "dur": dur,
                "args": {"launch": launch},
            }

    def barrier_events(self) -> Iterator[dict[str, Any]]:
        for ts, dur, launch in self.barriers():
            yield {
                "name": self.barrier,
                "ph": "X",
                "pid": self.rank,
                "tid": 1,
                "ts": ts,
                "dur": dur,
                "args": {"launch": launch, "wait_us": dur},
            }
            yield {
                "name": "arrival",
                "ph": "i",
                "s": "t",
                "pid": self.rank,
                "tid": 1,
                "ts": ts,
                "args": {"launch": launch},
            }


@dataclass
class ChromeTrace:
    """A Chrome trace (Perfetto, chrome://tracing): a track per rank, the causes track and its flows (``extra``), and
    how the tracks were aligned."""

    tracks: list[RankTrack]
    metadata: dict[str, Any]
    extra: list[dict[str, Any]] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        events = [
            e
            for t in self.tracks
            for e in (*t.metadata_events(), *t.launch_events(), *t.barrier_events(), *t.host_events())
        ] + self.extra
        return {"displayTimeUnit": "ns", "traceEvents": events, "metadata": self.metadata}

    def json_text(self) -> str:
        """``json.dumps(self.as_dict())``, the same text, written a launch at a time from one template: 256 ranks x
        200 launches are ~51,000 events, whose dicts and their encoding cost the merge job ~0.4 s."""
        parts = []
        for track in self.tracks:
            parts.extend(json.dumps(e) for e in track.metadata_events())
            head = f'{{"name": {json.dumps(track.kernel)}, "ph": "X", "pid": {track.rank}, "tid": 0, "ts": '
            parts.extend(
                f'{head}{ts}, "dur": {dur}, "args": {{"launch": {launch}, "gap_us": {gap}}}}}'
                for ts, dur, launch, gap in zip(
                    _json_numbers(track.ts_us), _json_numbers(track.dur_us), track.launch, _json_numbers(track.gap_us)
                )
            )
            drawn = track.barriers()
            if drawn:
                ts_text, dur_text = _json_numbers([b[0] for b in drawn]), _json_numbers([b[1] for b in drawn])
                head = f'{{"name": {json.dumps(track.barrier)}, "ph": "X", "pid": {track.rank}, "tid": 1, "ts": '
                mark = f'{{"name": "arrival", "ph": "i", "s": "t", "pid": {track.rank}, "tid": 1, "ts": '
                parts.extend(
                    f'{head}{ts}, "dur": {dur}, "args": {{"launch": {b[2]}, "wait_us": {dur}}}}}, '
                    f'{mark}{ts}, "args": {{"launch": {b[2]}}}}}'
                    for ts, dur, b in zip(ts_text, dur_text, drawn)
                )
            parts.extend(_host_texts(track))
        parts.extend(json.dumps(e) for e in self.extra)
        return (
            f'{{"displayTimeUnit": "ns", "traceEvents": [{", ".join(parts)}], "metadata": {json.dumps(self.metadata)}}}'
        )


def _host_texts(track: RankTrack) -> list[str]:
    """The track's host call events as json.dumps writes them (RankTrack.host_events), from one template."""
    drawn = track.host_calls()
    if not drawn:
        return []
    ts_text, dur_text = _json_numbers([h[0] for h in drawn]), _json_numbers([h[1] for h in drawn])
    head = f'{{"name": {json.dumps(track.host_api)}, "ph": "X", "pid": {track.rank}, "tid": {HOST_TID}, "ts": '
    return [f'{head}{ts}, "dur": {dur}, "args": {{"launch": {h[2]}}}}}' for ts, dur, h in zip(ts_text, dur_text, drawn)]


def _json_numbers(values: list[float | None]) -> list[str]:
    """Floats as json.dumps writes them: their repr, null for None, NaN and Infinity as json spells them. The common
    case (every value a finite float) is one C-level pass; otherwise each value is spelled alone, json only for the
    few it spells otherwise (a rank's first launch has no gap: every gap list has a None)."""
    if None not in values and all(map(math.isfinite, values)):
        return list(map(repr, values))
    if all(math.isfinite(v) for v in values if v is not None):
        return ["null" if v is None else repr(v) for v in values]
    return [json.dumps(v) for v in values]


def merged_trace(
    used: Mapping[str, np.ndarray],
    ranks: Mapping[int, Mapping[str, Any]],
    align_launch: int,
    max_launches: int,
    node_offset_us: Mapping[int, float] | None = None,
    *,
    toolchain: str,
    node_drift_ppm: Mapping[int, float] | None = None,
    drift_reference_us: float = 0.0,
    barrier_kernel: str | None = None,
    causes: Sequence[TraceCause] = (),
    marked: Mapping[str, int | None] | None = None,
    metadata: Mapping[str, Any] | None = None,
    max_bytes: float | None = None,
    links_bound_us: float | None = None,
) -> ChromeTrace:
    """The merged trace of the used launches (numpy columns rank, launch, start_ns, dur_ns, gap_ns; NaN gap where
    there is no previous used launch; barrier_start_ns and barrier_dur_ns, NaN where missing, draw the barrier kernel
    ``barrier_kernel`` read before each launch). Without ``node_offset_us`` each rank is shifted so that its used launch
    ``align_launch`` ends at t=0: ranks on different hosts become comparable by launch, not by clock. With the
    estimated node clock offsets (analysis.waits), every rank's clock is corrected instead and one zero is shared
    (the earliest end of launch ``align_launch``): ranks that wait for a late peer then show the wait as a later
    start or a longer launch. Only the first ``max_launches`` used launches of each rank are drawn (0 = all); the
    statistics use all. ``toolchain`` goes into the metadata: the trace is opened in a viewer, apart from the report
    that says whether its numbers are simulated. ``node_drift_ppm`` (with the offsets; a drift the fit left unresolved
    is left out) corrects each node's clock rate as well: a node's clock is then off by offset + drift x (t -
    ``drift_reference_us``), t in µs after the first start. ``causes``: the cost account's named causes, each drawn on
    the causes track in the drawn launches it struck, with flows to the ranks that waited for it (trace_causes);
    ``marked``: launches to mark there (the report's picture: typical, costliest); ``metadata``: more of it (the clock
    correction, the workflow's commit). ``max_bytes``: fewer launches per rank where ``max_launches`` of every rank
    would write more JSON than that (launches_within). ``links_bound_us``: the links' bound, drawn as a counter beside
    each launch's group kernel time (trace_counters)."""
    order = np.lexsort((used["launch"], used["rank"]))  # by rank, then launch
    new_rank = np.flatnonzero(np.diff(np.asarray(used["rank"])[order])) + 1
    groups = [
        (int(used["rank"][rows[0]]), rows) for rows in np.split(order, new_rank) if len(rows)
    ]  # (rank, its rows in launch order)
    clock = TraceClock.of(used, ranks, groups, align_launch, node_offset_us, node_drift_ppm, drift_reference_us)
    has_barrier = barrier_kernel is not None and "barrier_start_ns" in used and "barrier_dur_ns" in used
    asked = max_launches
    if max_bytes is not None:
        per_launch = launch_bytes(len(groups), has_barrier, "api_start_ns" in used, len(causes))
        most = max((len(rows) for _, rows in groups), default=0)
        max_launches = launches_within(max_bytes, len(groups), per_launch, max_launches, most)
    launch = np.asarray(used["launch"])
    selection = DrawnSelection.of(launch, max_launches, causes, marked or {})
    shown = [(rank, selection.rows(rows, launch)) for rank, rows in groups]
    tracks = [rank_track(used, ranks.get(rank, {}), rank, rows, clock) for rank, rows in shown]
    if has_barrier:
        for track, (rank, rows) in zip(tracks, shown):
            track.barrier = barrier_kernel
            track.barrier_ts_us, track.barrier_dur_us = barrier_times(used, rows, rank, clock)
    host_tables = draw_host_calls(tracks, shown, used, ranks, clock)
    scope = selection.said(max_launches)
    if max_launches != asked:
        scope += (
            f", not {asked or 'all'}: {len(groups)} ranks x {asked or 'all'} launches would pass "
            f"timeline.trace_max_mb ({max_bytes / 1e6:g} MB of JSON; a viewer tab holds about 256 MB)"
        )
    aligned = (
        f"node clocks corrected by the estimated offsets{' and drifts' if any(clock.drifts.values()) else ''} "
        f"(timeline.node_clock); the earliest end of used launch {align_launch} = 0 us"
        if node_offset_us is not None
        else f"end of used launch {align_launch} of every rank = 0 us"
    )
    aligned += " (used launches follow the timeline.skip_launches left out; args.launch counts every launch)"
    extra, said = cause_events(tracks, causes, marked or {})
    meta: dict[str, Any] = {
        "toolchain": toolchain,
        "aligned_on": aligned,
        "launches_drawn": scope,
        "host_spans": host_spans_metadata(host_tables),
        "counters": {"pid": COUNTERS_PID, "links_bound_us": links_bound_us, "what": COUNTERS},
    }
    meta.update({**(metadata or {}), **said})
    return ChromeTrace(tracks, meta, counter_events(tracks, links_bound_us) + extra)


# The JSON a drawn launch costs, measured on a 32 x 8 trace (2026-12-08, json.dumps of each event plus its ", "): the
# target's slice 146 bytes, the barrier's 142 and its arrival 105, the host call 108; a rank's process and thread
# names ~350; a cause's slice in a launch 249 and each of its arrows ~200 (both ends), at most MAX_FLOWS per launch.
TARGET_BYTES, BARRIER_BYTES, HOST_BYTES, RANK_BYTES = 150, 250, 110, 400
CAUSE_LAUNCH_BYTES = 250 + MAX_FLOWS * 200
METADATA_BYTES = 100_000  # the metadata (per node clocks, per cause counts) and the causes process's names


def launch_bytes(world: int, barrier: bool, host: bool, causes: int) -> int:
    """What one more drawn launch of every rank adds to the trace, at most."""
    per_rank = TARGET_BYTES + (BARRIER_BYTES if barrier else 0) + (HOST_BYTES if host else 0)
    return world * per_rank + causes * CAUSE_LAUNCH_BYTES


def launches_within(max_bytes: float, world: int, per_launch: int, asked: int, most: int) -> int:
    """The launches per rank a trace of ``max_bytes`` holds: ``asked`` (0 = all ``most``) where they fit, else as many
    as fit, at least 1 (a trace that shows nothing is of no use)."""
    fit = max(1, int((max_bytes - METADATA_BYTES - world * RANK_BYTES) // max(per_launch, 1)))
    return asked if fit >= (most if asked <= 0 else min(asked, most)) else fit


@dataclass(frozen=True)
class DrawnSelection:
    """Which used launches the trace draws: the first ones, and the launches a named cause struck after them (the
    costliest first) or the report's picture shows, so that every cause is on the picture however late it strikes.
    Half of ``max_launches`` is kept for those where there are; 0 draws every launch."""

    keep: np.ndarray | None  # the launch indices drawn, ascending; None: every launch
    first: int  # how many of them are the first used launches
    later: int  # ... and how many a cause struck (or the picture shows) after those

    @staticmethod
    def of(
        launches: np.ndarray, max_launches: int, causes: Sequence[TraceCause], marked: Mapping[str, int | None]
    ) -> DrawnSelection:
        if max_launches <= 0:
            return DrawnSelection(None, 0, 0)
        every = np.unique(launches)
        wanted = [k for k in marked.values() if k is not None] + [
            k for c in causes for _, k in sorted(zip(c.period_us, c.launches), key=lambda x: -x[0])
        ]  # the picture's first, then each cause's launches by their saving
        head, known = set(every[:max_launches].tolist()), set(every.tolist())
        beyond = list(dict.fromkeys(k for k in wanted if k not in head and k in known))
        later = beyond[: max_launches // 2]
        first = every[: max_launches - len(later)]
        return DrawnSelection(np.union1d(first, np.asarray(later, dtype=every.dtype)), len(first), len(later))

    def rows(self, rows: np.ndarray, launch: np.ndarray) -> np.ndarray:
        """A rank's rows (in launch order) that are drawn."""
        return rows if self.keep is None else rows[np.isin(launch[rows], self.keep)]

    def said(self, max_launches: int) -> str:
        if self.keep is None:
            return "every used launch"
        text = f"at most the first {self.first} used launches of each rank (timeline.trace_launches {max_launches})"
        if self.later:
            text += f" and {self.later} later launches a named cause struck or the report's picture shows"
        return text


@dataclass
class TraceClock:
    """Each rank's zero (ns on its node clock) and drift correction on the merged trace's clock."""

    zero: dict[int, int]
    shift: dict[int, int]
    rate: dict[int, float]
    drifts: Mapping[int, float]
    reference_ns: float

    def drift_ns(self, rank: int, t_ns: np.ndarray) -> np.ndarray:
        """What the node's clock rate has added by these times of its clock (ns, rounded): 0 without a drift."""
        if not self.rate[rank]:
            return np.zeros(len(t_ns), dtype=np.int64)
        return np.round(self.rate[rank] * (t_ns.astype(float) - self.shift[rank] - self.reference_ns)).astype(np.int64)

    def us(self, rank: int, t_ns: np.ndarray) -> list[float]:
        """Integer ns minus the zero, then one division: exact up to the float's rounding of the quotient. In numpy where
        every difference is below 2**53 ns (104 days: a float holds it exactly, so the quotient is the same float)."""
        zero = self.zero[rank]
        if len(t_ns) and int(np.abs(t_ns).max()) < 2**62 and abs(zero) < 2**62:
            ns = t_ns.astype(np.int64) - np.int64(zero) - self.drift_ns(rank, t_ns)
            if int(np.abs(ns).max()) < 2**53:
                return (ns / 1000).tolist()
        return [(int(s) - zero - int(d)) / 1000 for s, d in zip(t_ns.tolist(), self.drift_ns(rank, t_ns).tolist())]

    @staticmethod
    def of(
        used: Mapping[str, np.ndarray],
        ranks: Mapping[int, Mapping[str, Any]],
        groups: list[tuple[int, np.ndarray]],
        align_launch: int,
        node_offset_us: Mapping[int, float] | None,
        node_drift_ppm: Mapping[int, float] | None,
        drift_reference_us: float,
    ) -> TraceClock:
        offsets, drifts = node_offset_us or {}, node_drift_ppm or {}
        node = {r: int(ranks.get(r, {}).get("node") or 0) for r, _ in groups}
        shift = {r: int(round(1000 * offsets.get(node[r], 0.0))) for r, _ in groups}
        rate = {r: drifts.get(node[r], 0.0) * 1e-6 for r, _ in groups}
        clock = TraceClock({}, shift, rate, drifts, drift_reference_us * 1000.0)
        start_ns, dur_ns = np.asarray(used["start_ns"]), np.asarray(used["dur_ns"])

        def end_of_anchor(rows: np.ndarray, rank: int) -> int:
            anchor = rows[min(align_launch, len(rows) - 1)]
            drift = int(clock.drift_ns(rank, start_ns[anchor : anchor + 1])[0])
            return int(start_ns[anchor]) + int(dur_ns[anchor]) - drift

        if node_offset_us is not None:
            common = min((end_of_anchor(rows, r) - shift[r] for r, rows in groups), default=0)
            clock.zero = {r: common + shift[r] for r, _ in groups}
        else:
            clock.zero = {r: end_of_anchor(rows, r) for r, rows in groups}
        return clock


def rank_track(
    used: Mapping[str, np.ndarray], info: Mapping[str, Any], rank: int, shown: np.ndarray, clock: TraceClock
) -> RankTrack:
    """One rank's drawn target launches; its process named by node first, so that a viewer groups the nodes."""
    start_ns, dur_ns = np.asarray(used["start_ns"]), np.asarray(used["dur_ns"])
    gap_us = np.asarray(used["gap_ns"])[shown].astype(float) / 1000
    host = f"host pid {info['pid']}" if info.get("pid") is not None else "host"
    return RankTrack(
        rank=rank,
        label=f"node {info.get('node')} / rank {rank} ({host}, device {info.get('device')})",
        kernel=info.get("symbol") or "target kernel",
        ts_us=clock.us(rank, start_ns[shown]),
        dur_us=[int(d) / 1000 for d in dur_ns[shown].tolist()],
        launch=np.asarray(used["launch"])[shown].tolist(),
        gap_us=[None if g != g else g for g in gap_us.tolist()],
        node=int(info.get("node") or 0),
    )


def draw_host_calls(
    tracks: Sequence[RankTrack],
    groups: Sequence[tuple[int, np.ndarray]],
    used: Mapping[str, np.ndarray],
    ranks: Mapping[int, Mapping[str, Any]],
    clock: TraceClock,
) -> set[str]:
    """Each rank's host API calls (api_start_ns, api_dur_ns) onto its track (``groups``: each rank's drawn rows), where
    its record names the API (host_api) and a drawn launch has one; the tables they came from. Host and device times
    of a node are one clock in msprof's data (the device counter is anchored to the host's monotonic clock, then both
    become the host's wall time: docs/formats.md §1.5), so a host call takes its rank's correction (TraceClock) as its
    device slices do."""
    if "api_start_ns" not in used or "api_dur_ns" not in used:
        return set()
    tables = set()
    for track, (rank, shown) in zip(tracks, groups):
        info = ranks.get(rank, {})
        if not info.get("host_api"):
            continue
        track.host_api = str(info["host_api"])
        track.host_ts_us, track.host_dur_us = span_times(used, "api_start_ns", "api_dur_ns", shown, rank, clock)
        if track.host_calls():
            tables.add(str(info.get("host_api_table") or "CANN_API"))
    return tables


def host_spans_metadata(tables: set[str]) -> dict[str, Any]:
    """What the trace says of its host threads: whether any was drawn, from which table, on which clock."""
    return {
        "drawn": bool(tables),
        "table": ",".join(sorted(tables)) or None,
        "thread": f"tid {HOST_TID} of each rank's process: the host API call (CANN_API row with the task's "
        "connectionId) that launched each drawn target launch",
        "clock": "the rank's device clock correction, assuming a node's host and device times are one clock in "
        "msprof's data (ns since the epoch; the device counter is anchored to the host clock, docs/formats.md §1.5), "
        "to within that anchoring: in a real torch_npu db 2 of 18 launch calls start ~15 us after their task"
        if tables
        else None,
    }


def barrier_times(
    used: Mapping[str, np.ndarray], shown: np.ndarray, rank: int, clock: TraceClock
) -> tuple[list[float | None], list[float | None]]:
    """The barrier kernel's start and duration (µs on the trace's clock) of each drawn launch; None where missing."""
    return span_times(used, "barrier_start_ns", "barrier_dur_ns", shown, rank, clock)


def span_times(
    used: Mapping[str, np.ndarray], start_column: str, dur_column: str, shown: np.ndarray, rank: int, clock: TraceClock
) -> tuple[list[float | None], list[float | None]]:
    """A span's start and duration columns (µs on the trace's clock) of each drawn launch; None where missing."""
    start = np.asarray(used[start_column])[shown].astype(float)
    dur = np.asarray(used[dur_column])[shown].astype(float)
    ok = np.isfinite(start) & np.isfinite(dur)
    ts = clock.us(rank, np.where(ok, start, 0).astype(np.int64))
    return (
        [t if k else None for t, k in zip(ts, ok.tolist())],
        [int(d) / 1000 if k else None for d, k in zip(np.where(ok, dur, 0).astype(np.int64).tolist(), ok.tolist())],
    )
