"""Stand-in for ascend_deepep's ElasticBuffer (V2 elastic dispatch), without NPU, CANN or PyTorch.

Tokens really move between rank processes through node 0's store: each rank sends every token to
the ranks that own its top-k experts (one copy per destination rank, as the kernel does), and
receives the tokens routed to its own experts. Payloads carry the first PAYLOAD_VALUES hidden
values of each token so the exchange stays light; the precision check compares them exactly.
"""

from __future__ import annotations

import base64
import contextlib
import json
import os
import random
import re
import socket
import sys
import tempfile
import time
from array import array
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator

from ascend_deepep._account import (
    Call,
    Summary,
    account,
    attach_costs,
    knobs_json,
    msprof_host_calls,
    msprof_tasks,
    summarise,
    truth_launch,
)
from ascend_deepep._collective import (
    Cluster,
    CollectiveModel,
    Knobs,
    Launch,
    RankLaunch,
    pmu_cores,
    rank_launch_from_wire,
    rank_launch_to_wire,
    replay_truth,
    simt_function_us,
    timeline_phases,
)
from ascend_deepep._debugclock import EXPORT_US, DebugClockWriter
from ascend_deepep._store import StoreClient

DTYPE_BYTES = {"bf16": 2, "fp8": 1}
LATENCY_MODES = ("kernel", "event")  # AKL_LATENCY_MODE (docs/formats.md §3); kernel when unset
TRUTH_SCHEMA = "dispatchprof.sim_truth/2"
# The simulated device's cycle counter (Ascend 950). Kernel-mode latency is ticks / AKL_LATENCY_CLOCK_HZ, so a wrong
# AKL_LATENCY_CLOCK_HZ scales every kernel-mode sample, as it would on the device.
DEVICE_CLOCK_HZ = 1_000_000_000


class _HostClock:
    """This rank process's modelled host clock (µs on the model's true clock). The simulated cluster points the perf
    driver's DISPATCHPROF_HOST_CLOCK at host_clock(), so the full-API scope is the model's host path (tens of µs above
    the kernel) rather than the stand-in store's TCP round trips."""

    now_us = 0.0


def host_clock() -> float:
    """Seconds on the modelled host clock of this process (a stand-in for time.perf_counter)."""
    return _HostClock.now_us / 1e6


PAYLOAD_VALUES = 4


@dataclass
class RankInputs:
    x: list[list[float]]  # [num_tokens][PAYLOAD_VALUES]
    topk_idx: list[list[int]]  # [num_tokens][num_topk] global expert ids
    topk_weights: list[list[float]]


def make_inputs(
    seed: int, rank: int, num_tokens: int, num_topk: int, num_experts: int, world: int, route: str
) -> RankInputs:
    """Deterministic inputs of one rank: every rank can rebuild any other rank's inputs for its reference."""
    rng = random.Random(seed * 1_000_003 + rank)
    x = [[round(rng.uniform(-1, 1), 3) for _ in range(PAYLOAD_VALUES)] for _ in range(num_tokens)]
    experts_per_rank = num_experts // world
    topk_idx = []
    for t in range(num_tokens):
        if route == "balanced":
            # Spread tokens over experts round-robin: every rank receives the same load.
            start = (rank * num_tokens + t) * num_topk
            chosen = [(start + k * experts_per_rank + k) % num_experts for k in range(num_topk)]
            chosen = list(dict.fromkeys(chosen))
            while len(chosen) < num_topk:
                chosen.append(next(e for e in range(num_experts) if e not in chosen))
        elif route == "skewed":
            # Half the tokens prefer the experts of rank 0: a hot destination.
            pool = range(experts_per_rank) if t % 2 == 0 and experts_per_rank >= num_topk else range(num_experts)
            chosen = rng.sample(list(pool), num_topk)
        else:  # random
            chosen = rng.sample(range(num_experts), num_topk)
        topk_idx.append(chosen)
    weights = [[round(rng.random(), 3) for _ in range(num_topk)] for _ in range(num_tokens)]
    return RankInputs(x=x, topk_idx=topk_idx, topk_weights=weights)


def destinations(topk_idx: list[list[int]], experts_per_rank: int, world: int) -> dict[int, list[int]]:
    """Per destination rank, the tokens this rank sends it: each token once per rank that holds one of its experts
    (what the event model's byte matrix counts: tokens x hidden x dtype bytes per destination)."""
    outgoing: dict[int, list[int]] = {dst: [] for dst in range(world)}
    for t, experts in enumerate(topk_idx):
        for dst in sorted({e // experts_per_rank for e in experts}):
            outgoing[dst].append(t)
    return outgoing


def expected_receive(
    inputs_by_rank: dict[int, RankInputs], dst: int, experts_per_rank: int
) -> list[tuple[int, int, list[float], list[int]]]:
    """What rank ``dst`` must receive: (src rank, token index, payload, top-k ids) for each routed token."""
    out = []
    for src in sorted(inputs_by_rank):
        inp = inputs_by_rank[src]
        for t, experts in enumerate(inp.topk_idx):
            if any(e // experts_per_rank == dst for e in experts):
                out.append((src, t, inp.x[t], experts))
    return out


def _b64(kind: str, values: list) -> str:
    return base64.b64encode(array(kind, values).tobytes()).decode()


def _unb64(kind: str, text: str) -> list:
    out = array(kind)
    out.frombytes(base64.b64decode(text))
    return out.tolist()


def _pack(
    src: int, tokens: list[int], x: list[list[float]], topk_idx: list[list[int]], weights: list[list[float]]
) -> dict[str, Any]:
    return {
        "src": src,
        "tokens": _b64("i", tokens),
        "x": _b64("d", [v for t in tokens for v in x[t]]),
        "experts": _b64("i", [e for t in tokens for e in topk_idx[t]]),
        "weights": _b64("d", [w for t in tokens for w in weights[t]]),
    }


def _rows(values: list[Any], n: int, width: int) -> list[list[Any]]:
    return [values[i * width : (i + 1) * width] for i in range(n)]


def _unpack(
    blob: dict[str, Any], k: int
) -> tuple[list[tuple[int, int]], list[list[float]], list[list[int]], list[list[float]]]:
    """One sender's rows as the columns dispatch() returns (handle, payloads, expert ids, weights): no per-row lists."""
    tokens = _unb64("i", blob["tokens"])
    n, src = len(tokens), blob["src"]
    x, experts, weights = _unb64("d", blob["x"]), _unb64("i", blob["experts"]), _unb64("d", blob["weights"])
    return [(src, t) for t in tokens], _rows(x, n, PAYLOAD_VALUES), _rows(experts, n, k), _rows(weights, n, k)


@dataclass(frozen=True)
class RankView:
    """What one rank process uses of a launch. Rank 0 computes the event model once per call for every rank and sends
    each rank its view through the store: the times its artifacts show, its host clock after the call, and the full
    per-core launch only where the rank writes per-core artifacts (DebugClock build; the replay msopprof profiles)."""

    arrival: float
    barrier_end: float | None
    kernel_start: float
    kernel_end: float
    block_dim: int
    kernel_mode_us: float
    event_mode_us: float
    host_now_us: float
    launch: RankLaunch | None = None
    replay: RankLaunch | None = None
    pre_tasks: list[list[Any]] | None = None  # sim.pre_kernels: [name, start, end] before the barrier kernel
    # The launch's host path (msprof_host_calls): dispatch() entered, the knobs' lateness, the launch reaching the device
    host_call: float = 0.0
    late_us: float = 0.0
    host_arrival: float | None = None

    @classmethod
    def of(cls, rl: RankLaunch, host_now_us: float, cores: bool, replay: RankLaunch | None) -> RankView:
        times = (
            rl.arrival,
            rl.barrier_end,
            rl.kernel_start,
            rl.kernel_end,
            len(rl.cores),
            rl.kernel_mode_us,
            rl.event_mode_us,
        )
        host = {"host_call": rl.host_call, "late_us": rl.late_us, "host_arrival": rl.host_arrival}
        return cls(*times, host_now_us, rl if cores else None, replay, rl.pre_tasks, **host)

    def to_wire(self) -> dict[str, Any]:
        data = dict(vars(self))
        for key in ("launch", "replay"):
            data[key] = None if data[key] is None else rank_launch_to_wire(data[key])
        return data

    @classmethod
    def from_wire(cls, data: dict[str, Any]) -> RankView:
        full = {key: None if data[key] is None else rank_launch_from_wire(data[key]) for key in ("launch", "replay")}
        return cls(**{**data, **full})


class ElasticBuffer:
    """Dispatch through node 0's store. One instance per rank process."""

    def __init__(
        self,
        store: StoreClient,
        rank: int,
        world: int,
        num_experts: int,
        num_max_tokens_per_rank: int,
        hidden: int,
        dtype: str = "bf16",
        ranks_per_node: int = 8,
        num_aiv: int = 56,
    ):
        self.store = store
        self.rank = rank
        self.world = world
        self.num_experts = num_experts
        self.experts_per_rank = num_experts // world
        self.num_max_tokens_per_rank = num_max_tokens_per_rank
        self.hidden = hidden
        self.dtype_bytes = DTYPE_BYTES.get(dtype, 2)
        self.ranks_per_node = ranks_per_node
        self._calls = 0
        self._session: list[float] | None = None
        self._sync_start = True
        self._mode = "kernel"
        self._knobs = Knobs.from_env()
        self._model = CollectiveModel(Cluster(world, ranks_per_node, num_aiv, num_experts), self._knobs)
        _HostClock.now_us = self._model.host_now[rank]
        self._epoch_ns: int | None = None
        self._truth: list[dict[str, Any]] = []  # rank 0: every launch of the session, for sim_truth.json
        self._calls_seen: list[Call] = []  # rank 0: every call since the start, to replay them without a cause
        self._summaries: list[Summary] = []  # rank 0: what the cost account needs of each of those launches
        self._replays: list[dict[str, Any]] = []
        self._trace = _DeviceTrace(rank, ranks_per_node, self._model)
        self._op_profiler = _OpProfiler(rank, ranks_per_node, self._knobs)
        self._debugclock = DebugClockWriter(
            rank, Path(__file__).resolve().parents[1]
        )  # active in a DEBUG_CLOCK_ON build
        self._warmup = 0
        self._sessions_used = 0
        self._tick_scale = 1.0
        fail_rank = os.environ.get("DEEPEP_SIM_PRECISION_FAIL_RANK", "")
        self._corrupt = fail_rank != "" and int(fail_rank) == rank
        # Fault knob sim.die_rank: that global rank's process exits (code 1) at its dispatch call number
        # sim.die_after_launches (counted from 0 over the process), as a rank that crashes mid-run.
        die_rank = os.environ.get("DEEPEP_SIM_DIE_RANK", "")
        self._die_at = (
            int(os.environ.get("DEEPEP_SIM_DIE_AFTER_LAUNCHES", "0") or 0)
            if die_rank != "" and int(die_rank) == rank
            else None
        )

    def dispatch(
        self, x: list[list[float]], topk_idx: list[list[int]], topk_weights: list[list[float]], **_: Any
    ) -> tuple[Any, ...]:
        call = self._calls
        if self._die_at is not None and call >= self._die_at:
            print(f"[rank {self.rank}] [sim] exits with code 1 after {call} dispatch calls (sim.die_rank)", flush=True)
            sys.exit(1)
        self._calls += 1
        outgoing = destinations(topk_idx, self.experts_per_rank, self.world)
        row_bytes = self.hidden * self.dtype_bytes
        in_session = self._session is not None
        sync_start = in_session and self._sync_start
        # msopprof counts this process's launches before the exchange, so that rank 0 learns who profiles a replay.
        barrier_profiled = sync_start and self._op_profiler.select("cached_notify_combine")
        kernel_profiled = self._op_profiler.select("elastic_dispatch_kernel")
        if self.rank == 0 and self._epoch_ns is None:
            self._epoch_ns = time.time_ns()
        # Rows travel packed (token ids, payloads, expert ids, weights as flat arrays): the data really moves, without
        # per-value JSON cost. Every rank also publishes its send bytes per destination (what CalCumSum exchanges) and
        # whether it needs per-core phases (DebugClock build) or the replayed launch (profiled by msopprof): rank 0
        # computes the event model of this launch once for every rank and publishes each rank's view.
        k = len(topk_idx[0]) if topk_idx else 0
        counts = {
            "sends": [len(outgoing[dst]) * row_bytes for dst in range(self.world)],
            "cores": self._debugclock.on,
            "replay": kernel_profiled,
        }
        items = {
            f"dispatch/{call}/{self.rank}->{dst}": _pack(self.rank, tokens, x, topk_idx, topk_weights)
            for dst, tokens in outgoing.items()
        }
        self.store.mset({**items, f"counts/{call}/{self.rank}": counts})
        inbox = [f"dispatch/{call}/{src}->{self.rank}" for src in range(self.world)]
        launch: Launch | None = None
        replay: Launch | None = None
        if self.rank == 0:
            blobs = self.store.mget(inbox + [f"counts/{call}/{src}" for src in range(self.world)])
            launch, replay, mine = self._model_launch(call, blobs[self.world :], sync_start)
        else:
            # Waits on rank 0 as the exchange already does (a dead rank 0 ends it at the store's op timeout).
            blobs = self.store.mget([*inbox, f"view/{call}/{self.rank}"])
            view = blobs[self.world]
            epoch_ns = view.pop("epoch_ns")
            self._epoch_ns = int(epoch_ns) if self._epoch_ns is None else self._epoch_ns
            mine = RankView.from_wire(view)
        handle: list[tuple[int, int]] = []
        recv_x: list[list[float]] = []
        recv_topk_idx: list[list[int]] = []
        recv_topk_weights: list[list[float]] = []
        for blob in blobs[: self.world]:
            src_handle, src_x, src_topk_idx, src_weights = _unpack(blob, k)
            handle += src_handle
            recv_x += src_x
            recv_topk_idx += src_topk_idx
            recv_topk_weights += src_weights
        if mine.launch is not None:
            self._debugclock.record(mine.launch)
        _HostClock.now_us = mine.host_now_us
        corrupt_by_replay = False
        if barrier_profiled:
            self._op_profiler.record("cached_notify_combine", None)  # the model has no events for the barrier kernel
        if kernel_profiled:
            corrupt_by_replay = self._op_profiler.record("elastic_dispatch_kernel", mine.replay)
            if replay is not None:
                self._replays.append(replay_truth(replay, self._knobs.poll_pipe_share))
        self.store.barrier(f"dispatch/{call}", self.world)
        if in_session:
            assert self._session is not None
            self._session.append(
                (mine.kernel_mode_us + self._debugclock.marker_overhead_us) * self._tick_scale
                if self._mode == "kernel"
                else mine.event_mode_us
            )
            assert self._epoch_ns is not None
            self._trace.record(mine, self._epoch_ns, len(topk_idx), k, self.hidden)
            if launch is not None:
                prev_end = self._summaries[-2].last_end if len(self._summaries) > 1 else None
                self._truth.append(truth_launch(launch, prev_end))
        # A replay that corrupted the buffer's state corrupts every later result too. sim.debugclock: overwrite = the
        # legacy DEBUG build writes its clocks over tpSendCountsOut (docs/formats.md §3): every rank's result is wrong.
        self._corrupt = self._corrupt or corrupt_by_replay or self._debugclock.overwrites_results
        if self._corrupt and recv_x:
            # Fault knob sim.precision_fail_rank: this rank's kernel writes one wrong value.
            recv_x[0] = [v + 1.0 for v in recv_x[0]]
        return recv_x, recv_topk_idx, recv_topk_weights, handle, None

    def _model_launch(
        self, call: int, peers: list[dict[str, Any]], sync_start: bool
    ) -> tuple[Launch, Launch | None, RankView]:
        """Rank 0: the event model of launch ``call`` for every rank (and its replay when a rank profiles it), computed
        once; publishes every other rank's view and returns the live launch, the replay and rank 0's own view."""
        sends = [peer["sends"] for peer in peers]
        if self._calls_seen and self._calls_seen[-1].sends == sends:
            sends = self._calls_seen[-1].sends  # the same matrix once, however many calls use it
        # A DebugClock build flushes and exports every launch's clock buffer after the kernel's end tick: the API scope
        # pays it on every rank (all ranks run the same build).
        extra = EXPORT_US if self._debugclock.on else 0.0
        before = tuple(self._model.host_now)
        launch = self._model.launch(call, sends, sync_start, extra)
        self._calls_seen.append(Call(call, sync_start, sends, extra))
        self._summaries.append(summarise(launch, before, self._model.host_now))
        replay = self._model.replay(call, sends) if any(peer["replay"] for peer in peers) else None
        views = [
            RankView.of(
                rl,
                self._model.host_now[r],
                peers[r]["cores"],
                replay.ranks[r] if replay and peers[r]["replay"] else None,
            )
            for r, rl in enumerate(launch.ranks)
        ]
        self.store.mset(
            {f"view/{call}/{r}": {**views[r].to_wire(), "epoch_ns": self._epoch_ns} for r in range(1, self.world)}
        )
        return launch, replay if peers[0]["replay"] else None, views[0]

    @contextlib.contextmanager
    def profile_dispatch_latency(
        self,
        output_dir: str | None = None,
        warmup: int = 0,
        synchronize_start: bool = True,
        metadata: dict[str, str] | None = None,
    ) -> Iterator[None]:
        """Time every dispatch in the block; rank 0 writes dispatch_latency.csv (docs/formats.md §3).

        AKL_LATENCY_MODE picks the measurement: kernel (default; per call the max over AIV cores after the entry
        barrier) or event (the whole launch, entry barrier included). Rank 0 also writes sim_truth.json beside the
        CSV: the event model's ground truth, for tests only.
        """
        if self._sessions_used:
            raise RuntimeError("one profiling session per process")
        mode = os.environ.get("AKL_LATENCY_MODE") or "kernel"
        if mode not in LATENCY_MODES:
            raise RuntimeError(f"AKL_LATENCY_MODE={mode!r}: expected one of {', '.join(LATENCY_MODES)}")
        self._sessions_used += 1
        self._session, self._warmup, self._mode, self._sync_start = [], int(warmup), mode, bool(synchronize_start)
        first_call = self._calls
        clock_hz = os.environ.get("AKL_LATENCY_CLOCK_HZ", "")
        if mode == "kernel" and not (clock_hz.isdigit() and int(clock_hz) > 0):
            # As the real build: mandatory for kernel mode, and an invalid value is a collective error before launch.
            raise RuntimeError(
                f"AKL_LATENCY_CLOCK_HZ={clock_hz!r}: kernel-mode latency "
                "needs the device clock in Hz (Ascend950: 1000000000)"
            )
        metadata = metadata or {"measurement": mode, "clock_hz": clock_hz or str(DEVICE_CLOCK_HZ)}
        self._tick_scale = DEVICE_CLOCK_HZ / int(clock_hz) if mode == "kernel" else 1.0
        env = os.environ
        out = Path(
            env.get("AKL_LATENCY_OUTPUT_DIR")
            or output_dir
            or env.get("DISPATCH_RESULTS_DIR")
            or env.get("DISPATCH_CLOCK_DIR")
            or "./clock_results"
        )
        try:
            yield
        finally:
            samples, self._session = self._session, None
            self._trace.flush()
        self.store.set(f"latency/{self.rank}", {"samples": samples, "warmup": self._warmup, "metadata": metadata})
        gathered = [self.store.get(f"latency/{r}") for r in range(self.world)]
        counts = {len(g["samples"]) for g in gathered}
        if len(counts) != 1 or counts.pop() <= self._warmup:
            raise RuntimeError("need equal call counts exceeding warmup")
        if any(g["warmup"] != self._warmup or g["metadata"] != metadata for g in gathered):
            raise RuntimeError("all ranks must use identical profiling settings")
        if self.rank == 0:
            _write_latency_csv(out / "dispatch_latency.csv", [g["samples"] for g in gathered], self._warmup, metadata)
            self._write_truth(out / "sim_truth.json", list(range(first_call, self._calls)), metadata)
        self.store.barrier("latency/written", self.world)

    def _write_truth(self, path: Path, calls: list[int], metadata: dict[str, str]) -> None:
        """sim_truth.json (schema in workflow/sim/README.md): the model's launches of this session, the replayed
        launch under msopprof, the true node clocks and the root causes the knobs created. Tests read it; the
        workflow's analysis never does."""
        cl, kn = self._model.cluster, self._knobs
        nodes = (cl.world + cl.ranks_per_node - 1) // cl.ranks_per_node
        index = {c.call: i for i, c in enumerate(self._calls_seen)}
        measured = [index[c] for c in calls[self._warmup :] if c in index]
        acc = account(cl, kn, self._calls_seen, self._summaries, measured)
        attach_costs(self._truth, acc, index)
        truth = {
            "schema": TRUTH_SCHEMA,
            "toolchain": "sim",
            "note": "ground truth of the simulated cluster, for tests only: never an input of the analysis",
            "run": {
                "world": cl.world,
                "ranks_per_node": cl.ranks_per_node,
                "nodes": nodes,
                "num_aiv": cl.num_aiv,
                "tiling": self._model.tiling,
                "synchronize_start": self._sync_start,
                "measurement": metadata.get("measurement"),
                "warmup": self._warmup,
                "kernel_work": self._model.work,  # per role, what the loaded library's WORK_<role> constants say
                "epoch_ns": self._epoch_ns,
                "time_unit": "us since the first call on the true clock (node clocks are in 'clocks')",
            },
            "knobs": knobs_json(kn),
            "clocks": {str(n): {"offset_us": kn.offset_us(n), "drift_ppm": kn.drift_ppm(n)} for n in range(nodes)},
            "causes": acc["causes"],
            "root_causes": acc["root_causes"],
            "measured_calls": acc["measured_calls"],
            "launches": self._truth,
            "replays": self._replays,
        }
        _write_atomic(path, json.dumps(truth, separators=(",", ":")))


def _write_atomic(path: Path, text: str) -> None:
    """``text`` into ``path`` through a temporary file beside it, with the mode a plain open() would give (0666 less
    the umask): tempfile's 0600 would lock a lead out of the run on a shared filesystem."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.NamedTemporaryFile("w", dir=path.parent, delete=False, suffix=".tmp") as handle:
        handle.write(text)
    os.chmod(handle.name, 0o666 & ~_umask())
    os.replace(handle.name, path)


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


class _OpProfiler:
    """Kernel replay as msopprof does it, when the msopprof stand-in runs this process (DEEPEP_SIM_OPPROF_DIR):
    launches are counted per process, the ones matching --kernel-name after --launch-skip-before-match are replayed
    (the event model's replay of that launch) and their per-core PMU view is recorded. sim.replay may make the
    replay hang or corrupt the result, as a cross-rank kernel's replay might."""

    def __init__(self, rank: int, ranks_per_node: int, knobs: Knobs):
        env = os.environ
        self.directory = env.get("DEEPEP_SIM_OPPROF_DIR")
        self.rank, self.local = rank, rank % ranks_per_node
        self.knobs = knobs
        pattern = env.get("DEEPEP_SIM_OPPROF_KERNEL", "")
        self.regex = re.compile("".join(".*" if c == "*" else re.escape(c) for c in pattern)) if pattern else None
        self.count = int(env.get("DEEPEP_SIM_OPPROF_COUNT", "1"))
        self.skip = int(env.get("DEEPEP_SIM_OPPROF_SKIP", "0"))
        self.metrics = env.get("DEEPEP_SIM_OPPROF_METRICS", "PipeUtilization").split(",")
        self.seen = 0
        self.profiled = 0

    def select(self, name: str) -> bool:
        """Counts a launch of this process: whether it is one the tool profiles."""
        if not self.directory:
            return False
        index = self.seen
        self.seen += 1
        matched = self.regex.match(name) if self.regex else self.profiled == 0 and index == 0
        return bool(matched) and index >= self.skip and self.profiled < self.count

    def record(self, name: str, mine: RankLaunch | None) -> bool:
        """Profiles a selected launch (``mine``: this rank's part of its replay; None for a kernel the model has no
        events for, which records nothing): whether the replay corrupted the result."""
        mode = os.environ.get("DEEPEP_SIM_REPLAY", "ok")
        if mode == "hang":
            while True:  # the replayed launch waits for peers that never re-launch
                time.sleep(3600)
        if mine is None:
            return False
        rng = random.Random(f"pmu/{self.knobs.seed}/{self.rank}/{self.profiled}")
        simt = None
        if any(m.lower() == "pcsampling" for m in self.metrics):
            simt = {**simt_code(), "function_us": simt_function_us(mine)}
        record = {
            "pid": os.getpid(),
            "rank": self.rank,
            "device_id": self.local,
            "rank_id": os.environ.get("RANK_ID"),
            "kernel": name,
            "n": self.profiled,
            "cores": pmu_cores(mine, self.knobs, rng),
            "simt": simt,
        }
        if any(m.lower() in ("pipetimeline", "instrtimeline") for m in self.metrics):
            record["phases"] = timeline_phases(mine, self.knobs.poll_pipe_share)
        self.profiled += 1
        path = Path(self.directory) / f"rec_{os.getpid()}_{record['n']}.json"
        path.write_text(json.dumps(record))
        return mode == "corrupt"


def simt_code() -> dict[str, Any]:
    """What the kernel binary tells a PC sampler: where its SIMT source is and whether it has debug lines (-g)."""
    repo = Path(__file__).resolve().parents[1]
    flags = repo / "build" / "device_compile_flags.txt"
    return {
        "repo": str(repo),
        "source": "kernels/elastic_dispatch.cpp",
        "has_debug_line": flags.is_file() and "-g" in flags.read_text().split(),
    }


class _DeviceTrace:
    """What the device would show a system profiler: each timed dispatch is the synchronize_start barrier kernel
    (when set), then the dispatch kernel, then a copy, on one stream. Written for the msprof stand-in when it
    profiles this process (DEEPEP_SIM_PROFILER_DIR); times are the event model's, read on this node's clock
    (offset and drift), as real hosts' clocks disagree."""

    STREAM = 1332

    def __init__(self, rank: int, ranks_per_node: int, model: CollectiveModel):
        self.rank, self.ranks_per_node, self.model = rank, ranks_per_node, model
        self.events: list[dict[str, Any]] = []
        self.node = int(os.environ.get("RANK", "0"))

    def record(self, mine: RankView, epoch_ns: int, tokens: int, topk: int, hidden: int) -> None:
        if not os.environ.get("DEEPEP_SIM_PROFILER_DIR"):
            return

        pre = len(mine.pre_tasks or ())
        task = len(self.events) + 1 + pre  # the barrier kernel's id; sim.pre_kernels' stand-ins take the ids before it
        end = 0
        knobs = self.model.knobs
        calls = msprof_host_calls(mine, knobs, self.node, epoch_ns)
        for i, ((name, start, dur), (api_start, api_end)) in enumerate(
            zip(msprof_tasks(mine, knobs, self.node, epoch_ns), calls)
        ):  # as msprof_view
            event = {
                "name": name,
                "task_type": "AI_VECTOR_CORE",
                "stream": self.STREAM,
                "task_id": task,
                "start_ns": start,
                "dur_ns": dur,
                "block_dim": 1,
                "api_start_ns": api_start,  # the host call that launched it (CANN_API)
                "api_end_ns": api_end,
            }
            if i < pre:
                event["task_id"] = task - pre + i
            if name == "elastic_dispatch_kernel":
                event.update(
                    task_id=task + 1, block_dim=mine.block_dim, input_shapes=f"{tokens},{hidden};{tokens},{topk}"
                )
                end = start + dur
            self.events.append(event)
        self.events.append(
            {
                "name": "N/A",
                "task_type": "MEMCPY_ASYNC",
                "stream": self.STREAM,
                "task_id": task + 2,
                "start_ns": end + 3_000,
                "dur_ns": 2_100,
            }
        )

    def flush(self) -> None:
        directory = os.environ.get("DEEPEP_SIM_PROFILER_DIR")
        if not directory or not self.events:
            return
        local = self.rank % self.ranks_per_node
        proc = {
            "pid": os.getpid(),
            "hostname": socket.gethostname(),
            "node": self.node,
            "local_rank": local,
            "device_id": local,
            "rank_id": os.environ.get("RANK_ID"),
        }
        path = Path(directory) / f"raw_{os.getpid()}.json"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps({"proc": proc, "events": self.events}))


def _write_latency_csv(path: Path, samples: list[list[float]], warmup: int, metadata: dict[str, str]) -> None:
    """Iteration-major rows (for i: for rank), written atomically as LatencyProfile does."""
    header = ["rank", "iteration", "elapsed_ms", "elapsed_us", "is_warmup", "in_average", *metadata]
    lines = [",".join(header)]
    for i in range(len(samples[0])):
        for rank, per_rank in enumerate(samples):
            ms = per_rank[i] / 1000.0
            lines.append(
                ",".join(
                    [
                        str(rank),
                        str(i),
                        f"{ms:.9f}",
                        f"{ms * 1000:.9f}",
                        str(int(i < warmup)),
                        str(int(i >= warmup)),
                        *metadata.values(),
                    ]
                )
            )
    _write_atomic(path, "\n".join(lines) + "\n")
