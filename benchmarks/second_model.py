"""A second, independent collective model that writes plain msprof PROF_ directories: data the timeline analysis was
never tuned on.

It shares no code with workflow/sim or with the workflow's library (tests/benchmarks/test_second_model.py checks its
imports), and it assumes nothing that msprof does not show: each rank's kernels on its node's clock. Its shape, per
launch and rank (times in us, on the true clock):

- host: the rank's previous end plus a host gap of 850 us, jitter 0-6 us, and in 1% of launches an OS hiccup of
  10-60 us (plus the late-host faults);
- a layout kernel of 8 us (its name is a stand-in: the real one is not known), then the barrier kernel
  ``cached_notify_combine``, which starts when the layout ends (the arrival) and releases 2 us after the last
  arrival (each rank sees the release 0-0.5 us apart);
- the target ``elastic_dispatch_kernel`` starts 1-3 us after its barrier ends; coupled, its entry barrier releases
  1 us after the last start; every rank's own work is one common W per launch (118 us, 2% launch to launch) plus
  0.3 us of noise per rank, plus the own-work faults; a rank "with tied peers" holds every other rank's end until its
  own work is done (they wait for its data: 0-0.5 us after it). Uncoupled, a rank's kernel is its own work alone.
- Lateness carries into the next launch through the end (the host gap starts there).
- Node k's clock reads the true time + 1.7 ms x k; node 2's runs 15 ppm fast.

Truth: every draw is made before the run, so the run recomputed without a fault (or one part of it, or one rank's OS
hiccups) uses the same draws. The group time is the last end of the last launch; a cause's cost is (group time with
it - without it) / launches: the mean over launches of what it adds to the group's end-to-end time per launch.

    python benchmarks/second_model.py OUT --case late_rank_50_90pct --seed 1     # one tree (OUT/node<k>/PROF_*) and its truth
"""

from __future__ import annotations

import argparse
import csv
import json
import sqlite3
import sys
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np

TARGET = "elastic_dispatch_kernel"
BARRIER = "cached_notify_combine"
LAYOUT = "moe_layout_kernel"  # a stand-in name: the real layout kernel's name is not known
EPOCH_NS = 1_780_000_000_000_000_000  # the runs' wall clock at t = 0 (2026-05-28): epoch ns, as msprof writes
STAMP = "20260528081320"  # the export's timestamp in file names (msprof_<14 digits>.db)


@dataclass(frozen=True)
class Params:
    """The model's numbers (us). Every one is named in the module's docstring."""

    host_gap: float = 850.0
    host_jitter: float = 6.0
    hiccup_prob: float = 0.01
    hiccup: tuple[float, float] = (10.0, 60.0)
    layout: float = 8.0
    release: float = 2.0
    release_skew: float = 0.5
    start_delay: tuple[float, float] = (1.0, 3.0)
    entry: float = 1.0
    work: float = 118.0
    work_cv: float = 0.02
    noise: float = 0.3
    tie_delay: float = 0.5
    node_offset: float = 1700.0
    drift_node: int = 2
    drift_ppm: float = 15.0


@dataclass(frozen=True)
class Fault:
    """One cause. ``kind``: ``host`` (the hosts of ``ranks`` late by ``extra`` us in a ``prob`` share of launches, one
    draw per launch for all of them: a node's hosts are late together); ``work`` (own work of ``ranks[0]`` longer by
    ``extra`` us in a ``prob`` share of launches, its peers held ``tied`` or not); ``spikes`` (own work longer by
    ``spike`` = (low, high) us, drawn uniformly, in a ``prob`` share); ``factor`` (own work x ``factor``)."""

    name: str
    kind: str
    ranks: tuple[int, ...]
    extra: float = 0.0
    prob: float = 1.0
    tied: bool = False
    spike: tuple[float, float] = (0.0, 0.0)
    factor: float = 1.0


@dataclass(frozen=True)
class Shape:
    nodes: int
    ranks_per_node: int

    @property
    def world(self) -> int:
        return self.nodes * self.ranks_per_node

    @property
    def label(self) -> str:
        return f"{self.nodes}x{self.ranks_per_node}"

    def node_of(self, rank: int) -> int:
        return rank // self.ranks_per_node


@dataclass
class Draws:
    """Every random number of a run, drawn before it: arrays of (launches, world), or (launches,) where one value
    serves all ranks. A fault's draws are its own (``fault``: per fault name a uniform for whether it strikes and
    one for its size), so that removing one changes no other."""

    jitter: np.ndarray
    hiccup: np.ndarray  # 0 where no hiccup
    skew: np.ndarray
    delay: np.ndarray
    common: np.ndarray  # (launches,) W of each launch
    noise: np.ndarray
    tie: np.ndarray
    fault: dict[str, tuple[np.ndarray, np.ndarray]] = field(default_factory=dict)


def draw(shape: Shape, launches: int, seed: int, faults: list[Fault], p: Params = Params()) -> Draws:
    rng = np.random.default_rng(seed)
    size = (launches, shape.world)
    hits = rng.random(size) < p.hiccup_prob
    draws = Draws(
        jitter=rng.uniform(0.0, p.host_jitter, size),
        hiccup=np.where(hits, rng.uniform(*p.hiccup, size), 0.0),
        skew=rng.uniform(0.0, p.release_skew, size),
        delay=rng.uniform(*p.start_delay, size),
        common=p.work * (1.0 + p.work_cv * rng.standard_normal(launches)),
        noise=p.noise * rng.standard_normal(size),
        tie=rng.uniform(0.0, p.tie_delay, size),
    )
    for i, fault in enumerate(faults):  # each fault its own stream, keyed by the run's seed and its position
        own = np.random.default_rng([seed, 1000 + i])
        draws.fault[fault.name] = (own.random(launches), own.random(launches))
    return draws


@dataclass
class Events:
    """A run's kernels on the true clock (us), arrays of (launches, world)."""

    layout_start: np.ndarray
    barrier_start: np.ndarray
    barrier_end: np.ndarray
    start: np.ndarray
    end: np.ndarray

    @property
    def group_time(self) -> float:
        return float(self.end[-1].max())


def host_extra(faults: list[Fault], draws: Draws, i: int, world: int) -> np.ndarray:
    extra = np.zeros(world)
    for f in faults:
        if f.kind == "host" and draws.fault[f.name][0][i] < f.prob:
            extra[list(f.ranks)] += f.extra
    return extra


def work_of(faults: list[Fault], draws: Draws, i: int, base: np.ndarray) -> np.ndarray:
    work = base.copy()
    for f in faults:
        strikes, size = draws.fault[f.name][0][i] < f.prob, draws.fault[f.name][1][i]
        if f.kind == "work" and strikes:
            work[list(f.ranks)] += f.extra
        elif f.kind == "spikes" and strikes:
            work[list(f.ranks)] += f.spike[0] + size * (f.spike[1] - f.spike[0])
        elif f.kind == "factor":
            work[list(f.ranks)] *= f.factor
    return work


def simulate(
    shape: Shape,
    draws: Draws,
    faults: list[Fault],
    coupled: bool = True,
    p: Params = Params(),
    quiet: tuple[int, ...] = (),
) -> Events:
    """The run with ``faults`` (a subset of those drawn for), the OS hiccups of ``quiet`` ranks removed."""
    launches, world = draws.jitter.shape
    hiccup = draws.hiccup.copy()
    hiccup[:, list(quiet)] = 0.0
    out = {k: np.zeros((launches, world)) for k in ("layout_start", "barrier_start", "barrier_end", "start", "end")}
    previous_end = np.zeros(world)
    tied = [f for f in faults if f.kind in ("work", "spikes") and f.tied]
    for i in range(launches):
        layout = previous_end + p.host_gap + draws.jitter[i] + hiccup[i] + host_extra(faults, draws, i, world)
        arrival = layout + p.layout
        barrier_end = arrival.max() + p.release + draws.skew[i]
        start = barrier_end + draws.delay[i]
        begin = np.full(world, start.max() + p.entry) if coupled else start
        own_end = begin + work_of(faults, draws, i, draws.common[i] + draws.noise[i])
        end = own_end.copy()
        for f in tied if coupled else []:  # the peers wait for its data
            held = own_end[list(f.ranks)].max() + draws.tie[i]
            peers = np.ones(world, bool)
            peers[list(f.ranks)] = False
            end[peers] = np.maximum(end[peers], held[peers])
        for key, value in zip(out, (layout, arrival, barrier_end, start, end)):
            out[key][i] = value
        previous_end = end
    return Events(**out)


def cost(with_: Events, without: Events) -> dict[str, float]:
    """What a cause adds per launch: to the group's end-to-end time (period), and to the per-launch maximum of the
    target's duration (timed: the baseline's per-iteration max)."""
    launches = len(with_.end)
    timed = (with_.end - with_.start).max(axis=1) - (without.end - without.start).max(axis=1)
    return {"period": (with_.group_time - without.group_time) / launches, "timed": float(timed.mean())}


def removed(fault: Fault) -> Fault:
    """The fault taken away: no extra time, never striking, factor 1. Its peers stay tied to the rank (they wait for
    its data in every launch: the kernel's coupling, not the fault)."""
    return replace(fault, extra=0.0, prob=0.0, factor=1.0)


def truth(
    shape: Shape, draws: Draws, faults: list[Fault], coupled: bool = True, p: Params = Params()
) -> dict[str, Any]:
    """The counterfactual costs: every fault removed (the case's cost), each fault removed alone, and each rank's OS
    hiccups removed alone (built-in causes, as a rank's spikes are)."""
    full = simulate(shape, draws, faults, coupled, p)
    causes = []
    for f in faults:
        rest = [removed(g) if g is f else g for g in faults]
        causes.append(
            {
                "fault": f.name,
                "kind": f.kind,
                "ranks": list(f.ranks),
                **cost(full, simulate(shape, draws, rest, coupled, p)),
            }
        )
    for rank in range(shape.world):
        if draws.hiccup[:, rank].any():
            causes.append(
                {
                    "fault": "os_hiccups",
                    "kind": "host",
                    "ranks": [rank],
                    **cost(full, simulate(shape, draws, faults, coupled, p, quiet=(rank,))),
                }
            )
    return {"total": cost(full, simulate(shape, draws, [removed(f) for f in faults], coupled, p)), "causes": causes}


# ---- what msprof writes ----


def clock_ns(shape: Shape, node: int, true_us: np.ndarray, p: Params = Params()) -> np.ndarray:
    """The node's clock reading of true times, as epoch ns (integers, as msprof's TASK table holds them)."""
    reading = true_us + p.node_offset * node + (p.drift_ppm * 1e-6 * true_us if node == p.drift_node else 0.0)
    return EPOCH_NS + np.round(reading * 1000.0).astype(np.int64)


@dataclass(frozen=True)
class Task:
    name: str
    start_ns: int
    end_ns: int
    task_id: int


def rank_tasks(shape: Shape, events: Events, rank: int, p: Params = Params()) -> list[Task]:
    """One rank's kernels in start order: layout, barrier, target per launch (task ids count up per stream)."""
    node = shape.node_of(rank)
    columns = [
        (LAYOUT, events.layout_start[:, rank], events.barrier_start[:, rank]),
        (BARRIER, events.barrier_start[:, rank], events.barrier_end[:, rank]),
        (TARGET, events.start[:, rank], events.end[:, rank]),
    ]
    stamped = [(name, clock_ns(shape, node, s, p), clock_ns(shape, node, e, p)) for name, s, e in columns]
    tasks = []
    for i in range(len(events.start)):
        for name, starts, ends in stamped:
            tasks.append(Task(name, int(starts[i]), int(ends[i]), len(tasks) % 65536))
    return tasks


def prof_name(seed: int, node: int, device: int, first_ns: int) -> str:
    """PROF_<6 digits>_<17 digits: collection start, ms>_<16
    capitals> (shared by msprof and msprof-analyze's regexes)."""
    letters = "".join(chr(ord("A") + (seed * 7 + node * 3 + device + k * 5) % 26) for k in range(16))
    stamp = (
        np.datetime64(first_ns // 1_000_000, "ms")
        .astype(str)
        .replace("-", "")
        .replace("T", "")
        .replace(":", "")
        .replace(".", "")
    )
    return f"PROF_{1 + device:06d}_{stamp[:17]}_{letters}"


def info_json(node: int, device: int, pid: int) -> dict[str, Any]:
    """info.json as plain msprof writes it: rank_id -1 (it records none), the host's pid as a string."""
    return {
        "pid": str(pid),
        "pid_name": "python3",
        "hostname": f"node{node}",
        "hostUid": str(1000 + node),
        "rank_id": -1,
        "platform_version": "5",
        "cannVersion": "8.5.0",
        "drvVersion": "25.2.0",
        "DeviceInfo": [{"id": device, "hwts_frequency": "1000", "aic_frequency": "1800", "ai_core_num": 28}],
    }


def write_rank(prof: Path, node: int, device: int, pid: int, tasks: list[Task]) -> None:
    """One PROF_ of one process on one device: identity files, the db, the text export, a clean parser log."""
    for sub in ("host", f"device_{device}", "mindstudio_profiler_output", "mindstudio_profiler_log"):
        (prof / sub).mkdir(parents=True, exist_ok=True)
    info = info_json(node, device, pid)
    (prof / "host" / "info.json").write_text(json.dumps(info))
    (prof / f"device_{device}" / f"info.json.{device}").write_text(json.dumps(info))
    begin_us = tasks[0].start_ns // 1000 - 1000
    start_info = {
        "collectionTimeBegin": str(begin_us),
        "clockMonotonicRaw": str(begin_us * 1000 % 10**13),
        "collectionDateBegin": STAMP,
    }
    (prof / "host" / "start_info").write_text(json.dumps(start_info))
    (prof / f"device_{device}" / f"start_info.{device}").write_text(json.dumps(start_info))
    write_db(prof / f"msprof_{STAMP}.db", device, pid, tasks)
    write_op_summary(prof / "mindstudio_profiler_output" / f"op_summary_{STAMP}.csv", device, tasks)
    write_trace(prof / "mindstudio_profiler_output" / f"msprof_{STAMP}.json", device, pid, tasks)
    (prof / "mindstudio_profiler_log" / f"msprof_analysis_{pid}.log").write_text(
        f"[INFO] Export all data in {prof.name}. done.\n"
    )


STREAM = 2
DB_TABLES = {
    "STRING_IDS": "id INTEGER PRIMARY KEY, value TEXT",
    "META_DATA": "name TEXT, value TEXT",
    "SESSION_TIME_INFO": "startTimeNs INTEGER, endTimeNs INTEGER",
    "NPU_INFO": "id INTEGER, name TEXT",
    "HOST_INFO": "hostUid TEXT, hostName TEXT",
    "RANK_DEVICE_MAP": "rankId INTEGER, deviceId INTEGER",
    "TASK": (
        "startNs INTEGER, endNs INTEGER, deviceId INTEGER, connectionId INTEGER, globalTaskId INTEGER, globalPid "
        "INTEGER, taskType INTEGER, contextId INTEGER, streamId INTEGER, taskId INTEGER, modelId INTEGER"
    ),
    "COMPUTE_TASK_INFO": (
        "name INTEGER, globalTaskId INTEGER, blockNum INTEGER, mixBlockNum INTEGER, taskType INTEGER, opType INTEGER, "
        "inputFormats INTEGER, inputDataTypes INTEGER, inputShapes INTEGER, outputFormats INTEGER, outputDataTypes "
        "INTEGER, outputShapes INTEGER, attrInfo INTEGER, opState "
        "INTEGER, hf32Eligible INTEGER, gridDim INTEGER, blockDim INTEGER"
    ),
}


def write_db(path: Path, device: int, pid: int, tasks: list[Task]) -> None:
    """msprof_<ts>.db, schema 1.2.0 (docs/formats.md §1): text as STRING_IDS ids, times as integer ns."""
    strings = {v: i for i, v in enumerate([TARGET, BARRIER, LAYOUT, "AI_VECTOR_CORE", "N/A", "dynamic", "NO"])}
    na = strings["N/A"]
    path.unlink(missing_ok=True)
    with sqlite3.connect(path) as conn:
        conn.execute("PRAGMA synchronous = OFF")  # generated data: no fsync per statement
        conn.execute("PRAGMA journal_mode = OFF")
        for table, columns in DB_TABLES.items():
            conn.execute(f"CREATE TABLE {table} ({columns})")
        conn.executemany("INSERT INTO STRING_IDS VALUES (?, ?)", [(i, v) for v, i in strings.items()])
        conn.execute("INSERT INTO META_DATA VALUES ('SCHEMA_VERSION', '1.2.0')")
        conn.execute(
            "INSERT INTO SESSION_TIME_INFO VALUES (?, ?)", (tasks[0].start_ns - 1_000_000, tasks[-1].end_ns + 1_000_000)
        )
        conn.execute("INSERT INTO NPU_INFO VALUES (?, 'Ascend950PR')", (device,))
        conn.execute("INSERT INTO RANK_DEVICE_MAP VALUES (-1, ?)", (device,))
        kind = strings["AI_VECTOR_CORE"]
        conn.executemany(
            "INSERT INTO TASK VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            [
                (t.start_ns, t.end_ns, device, g, g, pid, kind, 0, STREAM, t.task_id, 4294967295)
                for g, t in enumerate(tasks)
            ],
        )
        conn.executemany(
            "INSERT INTO COMPUTE_TASK_INFO VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            [
                (
                    strings[t.name],
                    g,
                    48,
                    0,
                    kind,
                    strings[t.name],
                    na,
                    na,
                    na,
                    na,
                    na,
                    na,
                    na,
                    strings["dynamic"],
                    strings["NO"],
                    0,
                    48,
                )
                for g, t in enumerate(tasks)
            ],
        )


def us_text(ns: int) -> str:
    """Epoch us with 3 decimals and msprof's trailing TAB."""
    return f"{ns // 1000}.{ns % 1000:03d}\t"


def write_op_summary(path: Path, device: int, tasks: list[Task]) -> None:
    """op_summary_<ts>.csv with the real export's base columns (Block Dim, as CANN data of May 2026 names it)."""
    header = [
        "Device_id", "Model ID", "Task ID", "Stream ID", "Op Name", "OP Type", "OP State", "Task Type", "Task Start Time(us)",
        "Task "
        "Duration(us)", "Task Wait "
                             "Time(us)", "Block Dim", "Mix Block "
                                                      "Dim", "HF32 Eligible", "Input Shapes", "Input Data Types",
        "Input Formats", "Output Shapes", "Output Data Types", "Output Formats", "Context ID",
    ]  # fmt: skip
    with open(path, "w", newline="") as handle:
        out = csv.writer(handle)
        out.writerow(header)
        previous_end = None
        for t in tasks:
            wait = 0 if previous_end is None else max(0, t.start_ns - previous_end)
            row = [
                device,
                4294967295,
                t.task_id,
                STREAM,
                t.name,
                t.name,
                "dynamic",
                "AI_VECTOR_CORE",
                us_text(t.start_ns),
            ]
            out.writerow(
                row
                + [
                    f"{(t.end_ns - t.start_ns) / 1000:.3f}",
                    f"{wait / 1000:.3f}",
                    48,
                    0,
                    "NO",
                    "N/A",
                    "N/A",
                    "N/A",
                    "N/A",
                    "N/A",
                    "N/A",
                    "N/A",
                ]
            )
            previous_end = t.end_ns


def write_trace(path: Path, device: int, pid: int, tasks: list[Task]) -> None:
    """msprof_<ts>.json: the Ascend Hardware track, pid = (os pid << 10) | (sort index << 5) | device."""
    track = (pid << 10) | (13 << 5) | device
    events: list[dict[str, Any]] = [
        {"name": "process_name", "pid": track, "tid": 0, "ph": "M", "args": {"name": "Ascend Hardware"}},
        {"name": "process_labels", "pid": track, "tid": 0, "ph": "M", "args": {"labels": f"NPU {device}"}},
        {"name": "thread_name", "pid": track, "tid": STREAM, "ph": "M", "args": {"name": f"Stream {STREAM}"}},
    ]
    for g, t in enumerate(tasks):
        args = {
            "Model Id": 4294967295,
            "Task Type": "AI_VECTOR_CORE",
            "Physic Stream Id": STREAM,
            "Task Id": t.task_id,
            "Batch Id": 0,
            "connection_id": g,
        }
        ts = us_text(t.start_ns).strip()
        events.append(
            {
                "name": t.name,
                "pid": track,
                "tid": STREAM,
                "ts": ts,
                "dur": (t.end_ns - t.start_ns) / 1000,
                "ph": "X",
                "args": args,
            }
        )
    path.write_text(json.dumps(events))


def write_tree(root: Path, shape: Shape, events: Events, seed: int, p: Params = Params()) -> list[Path]:
    """``root``/node<k>/PROF_* for every rank (one process per device, device id = local rank), as the workflow's
    analyze mode reads them (analyze.timeline_dir). Returns the PROF_ directories."""
    profs = []
    for rank in range(shape.world):
        node, device = shape.node_of(rank), rank % shape.ranks_per_node
        tasks = rank_tasks(shape, events, rank, p)
        prof = root / f"node{node}" / prof_name(seed, node, device, tasks[0].start_ns)
        write_rank(prof, node, device, 40000 + 100 * node + device, tasks)
        profs.append(prof)
    return profs


# ---- the cases ----


@dataclass(frozen=True)
class Case:
    name: str
    faults: tuple[Fault, ...]
    coupled: bool = True


def cases(shape: Shape) -> list[Case]:
    """The reviewer's fault list. Ranks: a = 5, b = world - 3 (on the last node), node 1 late."""
    a, b = 5, shape.world - 3
    node1 = tuple(range(shape.ranks_per_node, 2 * shape.ranks_per_node))
    return [
        Case("no_fault", ()),
        Case("slow_rank_8_tied", (Fault("slow", "work", (a,), extra=8.0, tied=True),)),
        Case("slow_rank_40_tied", (Fault("slow", "work", (a,), extra=40.0, tied=True),)),
        # beside the brief's list: the same slowdown with nobody waiting for its data (it ends late alone)
        Case("slow_rank_40_untied", (Fault("slow", "work", (a,), extra=40.0),)),
        # the review's own shape: the others end together, the slow rank alone after them (no peer waits for its data)
        Case("slow_rank_8_untied", (Fault("slow", "work", (a,), extra=8.0),)),
        Case("two_slow_ranks_40_15", (Fault("slow40", "work", (a,), extra=40.0, tied=True), Fault("slow15", "work", (b,), extra=15.0, tied=True))),
        Case("two_slow_ranks_40_15_untied", (Fault("slow40", "work", (a,), extra=40.0), Fault("slow15", "work", (b,), extra=15.0))),
        Case("late_rank_50_90pct", (Fault("late", "host", (a,), extra=50.0, prob=0.9),)),
        Case("late_node1_50", (Fault("late_node", "host", node1, extra=50.0),)),
        Case("spiky_rank", (Fault("spiky", "spikes", (b,), prob=0.03, spike=(100.0, 300.0)),)),
        Case("uncoupled_rank_15pct", (Fault("longer", "factor", (a,), factor=1.15),), coupled=False),
        Case("mix_late_rank_and_slow_rank", (Fault("late", "host", (a,), extra=30.0, prob=0.5), Fault("slow", "work", (b,), extra=20.0, tied=True))),
        Case("mix_late_node_and_spiky_rank", (Fault("late_node", "host", node1, extra=50.0, prob=0.3), Fault("spiky", "spikes", (a,), prob=0.05, spike=(60.0, 240.0)))),
    ]  # fmt: skip


def generate(root: Path, shape: Shape, case: Case, seed: int, launches: int = 300) -> dict[str, Any]:
    """The case's tree under ``root`` and its truth (also written
    as ``root``/truth.json, beside the node directories)."""
    faults = list(case.faults)
    draws = draw(shape, launches, seed, faults)
    events = simulate(shape, draws, faults, case.coupled)
    write_tree(root, shape, events, seed)
    found = {
        "shape": shape.label,
        "case": case.name,
        "seed": seed,
        "launches": launches,
        "coupled": case.coupled,
        **truth(shape, draws, faults, case.coupled),
    }
    (root / "truth.json").write_text(json.dumps(found, indent=1) + "\n")
    return found


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("out", type=Path)
    parser.add_argument("--shape", default="2x8")
    parser.add_argument("--case", default="no_fault")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--launches", type=int, default=300)
    args = parser.parse_args(argv)
    shape = Shape(*map(int, args.shape.split("x")))
    case = {c.name: c for c in cases(shape)}[args.case]
    found = generate(args.out, shape, case, args.seed, args.launches)
    print(
        json.dumps(
            {"shape": found["shape"], "seed": found["seed"], "cost": found["total"], "causes": found["causes"]},
            indent=1,
        )
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
