"""Event truth of a sequence of launches: who arrived last and who ended last, the group's times, and every cause's
counterfactual cost (the same launches with the same random draws, the cause removed).

Scopes (µs, on the true clock):
- launch period: from the previous launch's last kernel end (max over ranks) to this launch's last kernel end;
- timed: the kernel-scope group latency, max over ranks of the kernel-mode latency (dispatch_latency.csv,
  AKL_LATENCY_MODE=kernel, before the tick scaling and marker overhead of a DebugClock build).

A cause's saving in a launch is the base run's time minus the counterfactual's, in each scope; its cost per launch is
the mean saving over the measured launches, zero where it did not strike. Its delay cost (Scalasca's, short and long
term) is the waiting of the other ranks (not the cause's own) that disappears with it: per rank, the
cached_notify_combine wait plus the longest waiting of its cores inside the kernel (entry barrier, WaitDispatch,
incoming tokens). Host clocks carry a launch into the next (a rank enters dispatch() when its previous call
returned), so a counterfactual replays the whole sequence from the first launch the cause struck, until the host
clocks of the two runs differ by one common shift after its last strike (the model is shift-invariant: every later
launch is the same, shifted, and saves nothing).

What "removed" means (``CollectiveModel(without=...)``): ``late_rank``/``late_rank2``/``late_node``: that knob's
lateness is 0 (the others' stays: a rank late by two knobs is late by the sum, and by the other's alone without one);
``slow_rank``, ``slow_role``, ``slow_link``: the factor is 1; ``spiky_rank``: no spiky spike;
``spikes/<rank>``: no built-in random spike on that rank. The draws are made as before, so nothing else moves.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass
from typing import Any, Sequence

from ascend_deepep._collective import (
    LWC,
    SPIKE_PROB,
    SPIKY_PROB,
    Cluster,
    CollectiveModel,
    Knobs,
    Launch,
    RankLaunch,
    launch_truth,
    node_clock_ns,
    stand_in_tiling,
)

ROOT_CAUSE_MIN_US = 0.01  # per launch: a cause whose removal saves less group time (launch period) is no root cause
_SHIFT_TOLERANCE_US = 1e-6
_ZERO_US = 1e-6


@dataclass(frozen=True)
class Call:
    """One call of a sequence as the model needs it to replay it."""

    call: int
    sync_start: bool
    sends: Sequence[Sequence[int]]
    host_extra_us: float = 0.0


@dataclass(frozen=True)
class Summary:
    """What the account needs of one launch (per rank)."""

    call: int
    arrival: tuple[float, ...]  # the first collective kernel's start
    kernel_end: tuple[float, ...]
    kernel_mode: tuple[float, ...]
    wait: tuple[float, ...]
    struck: frozenset[str]
    host_before: tuple[float, ...]
    host_after: tuple[float, ...]

    @property
    def last_end(self) -> float:
        return max(self.kernel_end)

    @property
    def timed(self) -> float:
        return max(self.kernel_mode)


def rank_wait_us(rl: RankLaunch) -> float:
    """A rank's waiting on others in one launch: its cached_notify_combine wait plus its longest-waiting core's wait
    inside the kernel (entry barrier, WaitDispatch, incoming tokens)."""
    barrier = 0.0 if rl.barrier_end is None else rl.barrier_end - rl.arrival
    return barrier + max(c.waiting_us() for c in rl.cores)


def summarise(launch: Launch, host_before: Sequence[float], host_after: Sequence[float]) -> Summary:
    return Summary(
        launch.call,
        tuple(launch.arrivals),
        tuple(r.kernel_end for r in launch.ranks),
        tuple(r.kernel_mode_us for r in launch.ranks),
        tuple(rank_wait_us(r) for r in launch.ranks),
        launch.struck,
        tuple(host_before),
        tuple(host_after),
    )


def run_sequence(
    cluster: Cluster, knobs: Knobs, calls: Sequence[Call], keep: bool = True
) -> tuple[list[Launch], list[Summary]]:
    """The base run of a sequence from the model's start (call 0's
    host clocks): its launches (when ``keep``) and summaries."""
    model = CollectiveModel(cluster, knobs)
    launches, summaries = [], []
    for c in calls:
        before = tuple(model.host_now)
        launch = model.launch(c.call, [list(row) for row in c.sends], c.sync_start, c.host_extra_us)
        summaries.append(summarise(launch, before, model.host_now))
        if keep:
            launches.append(launch)
    return launches, summaries


# -- causes ------------------------------------------------------------------------------------------------------
def cause_ranks(cause: str, knobs: Knobs, cluster: Cluster) -> list[int]:
    if cause.startswith("spikes/"):
        return [int(cause.split("/", 1)[1])]
    if cause == "late_rank":
        return [int(knobs.late_rank)] if knobs.late_rank is not None else []
    if cause == "late_rank2":
        return [int(knobs.late_rank2)] if knobs.late_rank2 is not None else []
    if cause == "late_node":
        return [r for r in range(cluster.world) if cluster.node(r) == knobs.late_node]
    if cause == "slow_rank":
        return [int(knobs.slow_rank)] if knobs.slow_rank is not None else []
    if cause == "spiky_rank":
        return [int(knobs.spiky_rank)] if knobs.spiky_rank is not None else []
    if cause == "slow_role" and knobs.slow_role:
        return [knobs.slow_role[0]]
    if cause == "slow_link" and knobs.slow_link:
        return [r for r in range(cluster.world) if cluster.node(r) == knobs.slow_link[0]]
    return []


def describe(cause: str, knobs: Knobs, cluster: Cluster) -> dict[str, Any]:
    """The cause's identity: which knob (null for the built-in spikes), its evidence kind, ranks and parameters."""
    ranks = cause_ranks(cause, knobs, cluster)
    nodes = sorted({cluster.node(r) for r in ranks})
    base: dict[str, Any] = {
        "cause": cause,
        "knob": None if cause.startswith("spikes/") else cause,
        "ranks": ranks,
        "node": nodes[0] if len(nodes) == 1 else None,
    }
    if cause.startswith("spikes/"):
        return {**base, "evidence": "own_work", "probability": SPIKE_PROB}
    if cause in ("late_rank", "late_node"):
        return {
            **base,
            "evidence": "late_arrival",
            "node": knobs.late_node if cause == "late_node" else base["node"],
            "late_us": knobs.late_us,
        }
    if cause == "late_rank2":
        return {**base, "evidence": "late_arrival", "late_us": knobs.late_us2}
    if cause == "slow_rank":
        return {**base, "evidence": "own_work", "factor": knobs.slow_factor}
    if cause == "spiky_rank":
        return {**base, "evidence": "own_work", "probability": SPIKY_PROB}
    if cause == "slow_role" and knobs.slow_role:
        rank, role, factor = knobs.slow_role
        return {**base, "evidence": "own_work" if role == LWC else "in_kernel", "role": role, "factor": factor}
    if cause == "slow_link" and knobs.slow_link:
        src, dst, factor = knobs.slow_link
        return {**base, "evidence": "in_kernel", "src_node": src, "dst_node": dst, "factor": factor}
    return {**base, "evidence": "unknown"}


def candidate_causes(knobs: Knobs, cluster: Cluster, summaries: Sequence[Summary]) -> list[str]:
    """Every knob that is set, and every rank whose built-in spikes struck in the sequence."""
    knobs_set = [
        name
        for name, on in (
            ("late_rank", knobs.late_rank is not None),
            ("late_rank2", knobs.late_rank2 is not None),
            ("late_node", knobs.late_node is not None),
            ("slow_rank", knobs.slow_rank is not None),
            ("slow_role", knobs.slow_role is not None),
            ("slow_link", knobs.slow_link is not None),
            ("spiky_rank", knobs.spiky_rank is not None),
        )
        if on
    ]
    struck = set().union(*(s.struck for s in summaries)) if summaries else set()
    spikes = sorted((c for c in struck if c.startswith("spikes/")), key=lambda c: int(c.split("/")[1]))
    return knobs_set + spikes


def savings(
    cluster: Cluster, knobs: Knobs, calls: Sequence[Call], base: Sequence[Summary], cause: str
) -> dict[int, tuple[float | None, float, float]]:
    """Per sequence index where anything changed: (launch-period saving or None for index 0, timed saving, the
    others' waiting saved), base minus the run without ``cause``."""
    hits = [i for i, s in enumerate(base) if cause in s.struck]
    if not hits:
        return {}
    first, last = hits[0], hits[-1]
    own = set(cause_ranks(cause, knobs, cluster))
    model = CollectiveModel(cluster, knobs, without=frozenset({cause}))
    model.host_now = list(base[first].host_before)
    prev_end = base[first - 1].last_end if first else None
    out: dict[int, tuple[float | None, float, float]] = {}
    for i in range(first, len(calls)):
        c, b = calls[i], base[i]
        launch = model.launch(c.call, [list(row) for row in c.sends], c.sync_start, c.host_extra_us)
        cf = summarise(launch, b.host_before, model.host_now)
        period = None if prev_end is None else (b.last_end - base[i - 1].last_end) - (cf.last_end - prev_end)
        waited = sum(b.wait[r] - cf.wait[r] for r in range(cluster.world) if r not in own)
        out[i] = (period, b.timed - cf.timed, waited)
        prev_end = cf.last_end
        if i >= last:
            shift = [x - y for x, y in zip(model.host_now, b.host_after)]
            if max(shift) - min(shift) < _SHIFT_TOLERANCE_US:
                break
    return out


def _clean(x: float) -> float:
    return 0.0 if abs(x) < _ZERO_US else round(x, 6)


def account(
    cluster: Cluster, knobs: Knobs, calls: Sequence[Call], base: Sequence[Summary], measured: Sequence[int]
) -> dict[str, Any]:
    """Every candidate cause with its costs over the ``measured`` sequence indices, the root causes (a launch-period
    saving of at least ROOT_CAUSE_MIN_US per launch: group time; a cause that only lengthens the timed kernel scope,
    say a spike while the group waits for a late rank anyway, is listed with that cost but is no root cause), and per
    measured index the non-zero savings per cause."""
    measured = list(measured)
    with_period = [i for i in measured if i > 0]
    causes, per_launch = [], {i: {} for i in measured}
    for cause in candidate_causes(knobs, cluster, base):
        saved = savings(cluster, knobs, calls, base, cause)
        zero = (0.0, 0.0, 0.0)
        period = [saved.get(i, zero)[0] or 0.0 for i in with_period]
        timed = [saved.get(i, zero)[1] for i in measured]
        waited = [saved.get(i, zero)[2] for i in measured]
        for i in measured:
            p, t, w = saved.get(i, zero)
            if any(abs(x or 0.0) >= _ZERO_US for x in (p, t, w)):
                per_launch[i][cause] = {
                    "period_us": None if p is None else _clean(p),
                    "timed_us": _clean(t),
                    "wait_caused_us": _clean(w),
                }
        struck = sum(cause in base[i].struck for i in measured)
        costly = sum(max(saved.get(i, zero)[0] or 0.0, saved.get(i, zero)[1]) >= 1e-3 for i in measured)
        causes.append(
            {
                **describe(cause, knobs, cluster),
                "fraction": round(struck / max(1, len(measured)), 4),
                "fraction_saving": round(costly / max(1, len(measured)), 4),
                "cost_us_per_launch": _clean(statistics.fmean(period)) if period else 0.0,
                "cost_timed_us_per_launch": _clean(statistics.fmean(timed)) if timed else 0.0,
                "wait_caused_us_per_launch": _clean(statistics.fmean(waited)) if waited else 0.0,
            }
        )
    causes.sort(key=lambda c: (-c["cost_us_per_launch"], -c["cost_timed_us_per_launch"], c["cause"]))
    roots = [c for c in causes if c["cost_us_per_launch"] >= ROOT_CAUSE_MIN_US]
    return {
        "causes": causes,
        "root_causes": roots,
        "per_launch": per_launch,
        "measured_calls": [calls[i].call for i in measured],
    }


# -- per launch -------------------------------------------------------------------------------------------------
def _lead(values: Sequence[float], order: Sequence[int]) -> float | None:
    return round(values[order[-1]] - values[order[-2]], 3) if len(order) > 1 else None


def launch_events(launch: Launch, prev_last_end: float | None) -> dict[str, Any]:
    """Who arrived last at the first collective kernel and who ended last, with their leads over the next, and the
    group's launch-period and timed times."""
    arrivals = launch.arrivals
    order = sorted(range(len(arrivals)), key=lambda r: (arrivals[r], r))
    ends = [r.kernel_end for r in launch.ranks]
    by_end = sorted(range(len(ends)), key=lambda r: (ends[r], r))
    last_end = ends[by_end[-1]]
    return {
        "last_arrival": {
            "rank": order[-1],
            "kernel": launch.first_collective
            or ("cached_notify_combine" if launch.sync_start else "elastic_dispatch_kernel"),
            "lead_us": _lead(arrivals, order),
        },
        "last_end": {"rank": by_end[-1], "lead_us": _lead(ends, by_end)},
        "period_us": None if prev_last_end is None else round(last_end - prev_last_end, 3),
        "timed_us": round(max(r.kernel_mode_us for r in launch.ranks), 3),
    }


def truth_launch(launch: Launch, prev_last_end: float | None) -> dict[str, Any]:
    """One launch of sim_truth.json /2: launch_truth plus the event fields."""
    return {**launch_truth(launch), **launch_events(launch, prev_last_end)}


def _events_only(launch: Launch, prev_last_end: float | None) -> dict[str, Any]:
    return {
        "call": launch.call,
        "replay": launch.replay,
        "sync_start": launch.sync_start,
        **launch_events(launch, prev_last_end),
    }


def attach_costs(launches: list[dict[str, Any]], acc: dict[str, Any], index_of_call: dict[int, int]) -> None:
    """Per launch dict (by its call) the non-zero savings per cause (``costs``; {} where nothing saved)."""
    for entry in launches:
        i = index_of_call.get(entry["call"])
        entry["costs"] = acc["per_launch"].get(i, {}) if i is not None else {}


# -- what msprof shows --------------------------------------------------------------------------------------------
def msprof_tasks(rl: Any, knobs: Knobs, node: int, epoch_ns: int) -> list[tuple[str, int, int]]:
    """The tasks msprof writes for one rank's launch (a RankLaunch, or anything with its ``pre_tasks, arrival,
    barrier_end, kernel_start, kernel_end``), on its node's clock: (name, start_ns, dur_ns) of the sim.pre_kernels
    stand-ins (sim_layout_kernel, then sim_notify_kernel, when set), cached_notify_combine (with synchronize_start)
    and elastic_dispatch_kernel (durations are differences of clock readings, so drift stretches them)."""
    out = []
    for name, start_us, end_us in rl.pre_tasks or ():
        start = node_clock_ns(knobs, node, start_us, epoch_ns)
        out.append((name, start, node_clock_ns(knobs, node, end_us, epoch_ns) - start))
    if rl.barrier_end is not None:
        start = node_clock_ns(knobs, node, rl.arrival, epoch_ns)
        out.append(("cached_notify_combine", start, node_clock_ns(knobs, node, rl.barrier_end, epoch_ns) - start))
    start = node_clock_ns(knobs, node, rl.kernel_start, epoch_ns)
    out.append(("elastic_dispatch_kernel", start, node_clock_ns(knobs, node, rl.kernel_end, epoch_ns) - start))
    return out


def msprof_host_calls(rl: Any, knobs: Knobs, node: int, epoch_ns: int) -> list[tuple[int, int]]:
    """The host API calls that launched msprof_tasks' tasks, one per task in the same order, on the node's clock (host
    and device read one clock, as in msprof's data): (start_ns, end_ns). The host issues them one after another in the
    launch's host path, from dispatch() entry (``host_call``, after the lateness the knobs added, ``late_us``) to the
    launch reaching the device (``host_arrival``: its first kernel starts), each taking an equal share of it; so every
    call ends by the time its task can start."""
    tasks = len(rl.pre_tasks or ()) + (rl.barrier_end is not None) + 1
    issued = rl.host_call + rl.late_us
    reached = rl.host_arrival if rl.host_arrival is not None else rl.arrival
    share = (reached - issued) / tasks
    return [
        (
            node_clock_ns(knobs, node, issued + i * share, epoch_ns),
            node_clock_ns(knobs, node, issued + (i + 1) * share, epoch_ns),
        )
        for i in range(tasks)
    ]


def msprof_view(launches: Sequence[Launch], knobs: Knobs, cluster: Cluster, epoch_ns: int = 0) -> list[dict[str, Any]]:
    """Per launch and rank what msprof shows on that rank's node clock: ``call, rank, node, start_ns, dur_ns`` (the
    dispatch kernel) and ``barrier_start_ns, barrier_dur_ns`` (cached_notify_combine; None without
    synchronize_start), and ``tasks``: every task of the launch in stream order as ``[name, start_ns, dur_ns]`` (with
    sim.pre_kernels, its stand-in kernels come first)."""
    rows = []
    for launch in launches:
        for rl in launch.ranks:
            listed = msprof_tasks(rl, knobs, cluster.node(rl.rank), epoch_ns)
            tasks = {name: (start, dur) for name, start, dur in listed}
            barrier = tasks.get("cached_notify_combine", (None, None))
            kernel = tasks["elastic_dispatch_kernel"]
            rows.append(
                {
                    "call": launch.call,
                    "rank": rl.rank,
                    "node": cluster.node(rl.rank),
                    "start_ns": kernel[0],
                    "dur_ns": kernel[1],
                    "barrier_start_ns": barrier[0],
                    "barrier_dur_ns": barrier[1],
                    "tasks": [list(t) for t in listed],
                }
            )
    return rows


# -- the whole thing, without processes ---------------------------------------------------------------------------
def simulate(
    cluster: Cluster,
    knobs: Knobs,
    calls: int,
    sync_start: bool | Sequence[bool] = True,
    sends: Sequence[Sequence[int]] | Sequence[Sequence[Sequence[int]]] | None = None,
    *,
    warmup: int = 1,
    host_extra_us: float = 0.0,
    detail: bool = True,
) -> tuple[list[Launch], dict[str, Any]]:
    """Launches 0..calls-1 of one process group and their event truth (the sim_truth.json /2 layout, without
    ``run.epoch_ns``, ``replays`` and the session's metadata), as the stand-in computes them, without processes or a
    store. ``sends``: one byte matrix ``[src][dst]`` for every call, or one per call (default: 96 rows of 7168 bf16
    from every rank to every rank). Costs are averaged over calls ``warmup``..calls-1. ``detail=False`` leaves out each
    launch's ``barrier`` and ``ranks`` (the per-rank and per-role records; most of the time truth takes)."""
    matrices = _per_call_sends(cluster, calls, sends)
    flags = [bool(sync_start)] * calls if isinstance(sync_start, bool) else [bool(x) for x in sync_start]
    seq = [Call(i, flags[i], matrices[i], host_extra_us) for i in range(calls)]
    launches, base = run_sequence(cluster, knobs, seq)
    acc = account(cluster, knobs, seq, base, range(min(warmup, calls), calls))
    entries = [
        (truth_launch if detail else _events_only)(launch, base[i - 1].last_end if i else None)
        for i, launch in enumerate(launches)
    ]
    attach_costs(entries, acc, {c.call: i for i, c in enumerate(seq)})
    nodes = (cluster.world + cluster.ranks_per_node - 1) // cluster.ranks_per_node
    truth = {
        "schema": "dispatchprof.sim_truth/2",
        "toolchain": "sim",
        "run": {
            "world": cluster.world,
            "ranks_per_node": cluster.ranks_per_node,
            "nodes": nodes,
            "num_aiv": cluster.num_aiv,
            "tiling": stand_in_tiling(cluster.num_aiv),
            "synchronize_start": flags[-1] if flags else None,
            "warmup": warmup,
        },
        "knobs": knobs_json(knobs),
        "clocks": {str(n): {"offset_us": knobs.offset_us(n), "drift_ppm": knobs.drift_ppm(n)} for n in range(nodes)},
        "causes": acc["causes"],
        "root_causes": acc["root_causes"],
        "measured_calls": acc["measured_calls"],
        "launches": entries,
    }
    return launches, truth


def knobs_json(knobs: Knobs) -> dict[str, Any]:
    return {
        k: (list(v) if isinstance(v, tuple) else dict(v) if isinstance(v, dict) else v) for k, v in vars(knobs).items()
    }


def _per_call_sends(cluster: Cluster, calls: int, sends: Any) -> list[Sequence[Sequence[int]]]:
    if sends is None:
        row = [96 * 7168 * 2] * cluster.world
        sends = [row for _ in range(cluster.world)]
    if sends and sends[0] and isinstance(sends[0][0], (int, float)):
        return [sends] * calls
    if len(sends) != calls:
        raise ValueError(f"sends: {len(sends)} matrices for {calls} calls")
    return list(sends)
