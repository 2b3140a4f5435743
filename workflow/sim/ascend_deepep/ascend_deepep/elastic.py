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
import tempfile
import time
from array import array
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator

from ascend_deepep._latency_model import core_metrics, kernel_us
from ascend_deepep._store import StoreClient

DTYPE_BYTES = {"bf16": 2, "fp8": 1}

PAYLOAD_VALUES = 4


@dataclass
class RankInputs:
    x: list[list[float]]  # [num_tokens][PAYLOAD_VALUES]
    topk_idx: list[list[int]]  # [num_tokens][num_topk] global expert ids
    topk_weights: list[list[float]]


def make_inputs(seed: int, rank: int, num_tokens: int, num_topk: int, num_experts: int, world: int, route: str) -> RankInputs:
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


def expected_receive(inputs_by_rank: dict[int, RankInputs], dst: int, experts_per_rank: int) -> list[tuple[int, int, list[float], list[int]]]:
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


def _pack(src: int, tokens: list[int], x: list[list[float]], topk_idx: list[list[int]], weights: list[list[float]]) -> dict[str, Any]:
    return {
        "src": src,
        "tokens": _b64("i", tokens),
        "x": _b64("d", [v for t in tokens for v in x[t]]),
        "experts": _b64("i", [e for t in tokens for e in topk_idx[t]]),
        "weights": _b64("d", [w for t in tokens for w in weights[t]]),
    }


def _unpack(blob: dict[str, Any], k: int) -> list[list[Any]]:
    tokens = _unb64("i", blob["tokens"])
    x, experts, weights = _unb64("d", blob["x"]), _unb64("i", blob["experts"]), _unb64("d", blob["weights"])
    p = PAYLOAD_VALUES
    return [[blob["src"], t, x[i * p : (i + 1) * p], experts[i * k : (i + 1) * k], weights[i * k : (i + 1) * k]] for i, t in enumerate(tokens)]


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
        self._trace = _DeviceTrace(rank, ranks_per_node)
        self._op_profiler = _OpProfiler(rank, ranks_per_node, num_aiv, num_experts)
        self._warmup = 0
        self._sessions_used = 0
        fail_rank = os.environ.get("DEEPEP_SIM_PRECISION_FAIL_RANK", "")
        self._corrupt = fail_rank != "" and int(fail_rank) == rank

    def dispatch(self, x: list[list[float]], topk_idx: list[list[int]], topk_weights: list[list[float]], **_: Any) -> tuple[Any, ...]:
        call = self._calls
        self._calls += 1
        outgoing: dict[int, list[int]] = {dst: [] for dst in range(self.world)}
        for t, experts in enumerate(topk_idx):
            for dst in sorted({e // self.experts_per_rank for e in experts}):
                outgoing[dst].append(t)
        row_bytes = self.hidden * self.dtype_bytes
        remote_bytes = sum(len(tokens) for dst, tokens in outgoing.items() if dst != self.rank) * row_bytes
        if self._session is not None:
            self._op_profiler.launch("cached_notify_combine", remote_bytes, len(outgoing[self.rank]) * row_bytes)
        corrupt_by_replay = self._op_profiler.launch("elastic_dispatch_kernel", remote_bytes, len(outgoing[self.rank]) * row_bytes)
        # Rows travel packed (token ids, payloads, expert ids, weights as flat arrays): the data really moves,
        # without per-value JSON cost.
        k = len(topk_idx[0]) if topk_idx else 0
        self.store.mset({f"dispatch/{call}/{self.rank}->{dst}": _pack(self.rank, tokens, x, topk_idx, topk_weights) for dst, tokens in outgoing.items()})
        received = []
        for blob in self.store.mget([f"dispatch/{call}/{src}->{self.rank}" for src in range(self.world)]):
            received.extend(_unpack(blob, k))
        self.store.barrier(f"dispatch/{call}", self.world)
        if self._session is not None:
            remote = sum(len(tokens) for dst, tokens in outgoing.items() if dst != self.rank)
            local = len(outgoing[self.rank])
            row_bytes = self.hidden * self.dtype_bytes
            us = kernel_us(self.rank, len(self._session), self._warmup, remote * row_bytes, local * row_bytes, self.num_experts)
            self._session.append(us)
            self._trace.record(us, len(topk_idx), len(topk_idx[0]) if topk_idx else 0, self.hidden)
        # A replay that corrupted the buffer's state corrupts every later result too.
        self._corrupt = self._corrupt or corrupt_by_replay
        if self._corrupt and received:
            # Fault knob sim.precision_fail_rank: this rank's kernel writes one wrong value.
            received[0][2] = [v + 1.0 for v in received[0][2]]
        recv_x = [row[2] for row in received]
        recv_topk_idx = [row[3] for row in received]
        recv_topk_weights = [row[4] for row in received]
        handle = [(row[0], row[1]) for row in received]
        return recv_x, recv_topk_idx, recv_topk_weights, handle, None

    @contextlib.contextmanager
    def profile_dispatch_latency(
        self, output_dir: str | None = None, warmup: int = 0, synchronize_start: bool = True, metadata: dict[str, str] | None = None
    ) -> Iterator[None]:
        """Time every dispatch in the block; rank 0 writes dispatch_latency.csv (shared/formats/deepep.md §1).

        Kernel-mode measurement: per call the simulated max-over-AIV kernel time, outer barriers excluded.
        """
        if self._sessions_used:
            raise RuntimeError("one profiling session per process")
        self._sessions_used += 1
        self._session, self._warmup = [], int(warmup)
        metadata = metadata or {"measurement": "kernel", "clock_hz": "1000000000"}
        env = os.environ
        out = Path(env.get("AKL_LATENCY_OUTPUT_DIR") or output_dir or env.get("DISPATCH_RESULTS_DIR") or env.get("DISPATCH_CLOCK_DIR") or "./clock_results")
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
        self.store.barrier("latency/written", self.world)


class _OpProfiler:
    """Kernel replay as msopprof does it, when the msopprof stand-in runs this process
    (DEEPEP_SIM_OPPROF_DIR): launches are counted per process, the ones matching --kernel-name after
    --launch-skip-before-match are "replayed" and their per-core PMU view is recorded. sim.replay may
    make the replay hang or corrupt the result, as a cross-rank kernel's replay might."""

    def __init__(self, rank: int, ranks_per_node: int, num_aiv: int, num_experts: int):
        env = os.environ
        self.directory = env.get("DEEPEP_SIM_OPPROF_DIR")
        self.rank, self.local = rank, rank % ranks_per_node
        self.num_aiv, self.num_experts = num_aiv, num_experts
        pattern = env.get("DEEPEP_SIM_OPPROF_KERNEL", "")
        self.regex = re.compile("".join(".*" if c == "*" else re.escape(c) for c in pattern)) if pattern else None
        self.count = int(env.get("DEEPEP_SIM_OPPROF_COUNT", "1"))
        self.skip = int(env.get("DEEPEP_SIM_OPPROF_SKIP", "0"))
        self.metrics = env.get("DEEPEP_SIM_OPPROF_METRICS", "PipeUtilization").split(",")
        self.seen = 0
        self.profiled = 0

    def launch(self, name: str, remote_bytes: int, local_bytes: int) -> bool:
        """Returns True when the replay corrupted this launch's result."""
        if not self.directory:
            return False
        index = self.seen
        self.seen += 1
        matched = self.regex.match(name) if self.regex else self.profiled == 0 and index == 0
        if not matched or index < self.skip or self.profiled >= self.count:
            return False
        replay = os.environ.get("DEEPEP_SIM_REPLAY", "ok")
        if replay == "hang":
            while True:  # the replayed launch waits for peers that never re-launch
                time.sleep(3600)
        record = {
            "pid": os.getpid(),
            "rank": self.rank,
            "device_id": self.local,
            "rank_id": os.environ.get("RANK_ID"),
            "kernel": name,
            "n": self.profiled,
            "cores": core_metrics(self.rank, self.num_aiv, remote_bytes, local_bytes, self.num_experts),
            "simt": simt_code() if any(m.lower() == "pcsampling" for m in self.metrics) else None,
        }
        self.profiled += 1
        path = Path(self.directory) / f"rec_{os.getpid()}_{record['n']}.json"
        path.write_text(json.dumps(record))
        return replay == "corrupt"


def simt_code() -> dict[str, Any]:
    """What the kernel binary tells a PC sampler: where its SIMT source is and whether it has debug lines (-g)."""
    repo = Path(__file__).resolve().parents[1]
    flags = repo / "build" / "device_compile_flags.txt"
    return {"repo": str(repo), "source": "kernels/elastic_dispatch.cpp", "has_debug_line": flags.is_file() and "-g" in flags.read_text().split()}


class _DeviceTrace:
    """What the device would show a system profiler: each timed dispatch is a synchronize_start barrier
    kernel, then the dispatch kernel, on one stream. Written for the msprof stand-in when it profiles this
    process (DEEPEP_SIM_PROFILER_DIR); timestamps use this node's (skewed) clock, as real hosts do."""

    STREAM = 1332
    OVERHEAD_US = 2.0  # what the profiler adds to each kernel (simulated)

    def __init__(self, rank: int, ranks_per_node: int):
        self.rank, self.ranks_per_node = rank, ranks_per_node
        self.events: list[dict[str, Any]] = []
        self.node = int(os.environ.get("RANK", "0"))
        self.skew_ns = self.node * 1_700_000 + 123_456 * self.node  # hosts' clocks disagree by milliseconds
        self.rng = random.Random(f"trace/{rank}")

    def record(self, kernel_us: float, tokens: int, topk: int, hidden: int) -> None:
        if not os.environ.get("DEEPEP_SIM_PROFILER_DIR"):
            return
        t0 = time.time_ns() + self.skew_ns
        task = len(self.events) + 1
        barrier_ns = int((6.0 + self.rng.expovariate(1 / 4.0)) * 1000)
        self.events.append(
            {
                "name": "cached_notify_combine",
                "task_type": "AI_VECTOR_CORE",
                "stream": self.STREAM,
                "task_id": task,
                "start_ns": t0 + 25_000,
                "dur_ns": barrier_ns,
                "block_dim": 1,
            }
        )
        start = t0 + 25_000 + barrier_ns + 1_500
        dur = int(round((kernel_us * 1.005 + self.OVERHEAD_US) * 1000))
        self.events.append(
            {
                "name": "elastic_dispatch_kernel",
                "task_type": "AI_VECTOR_CORE",
                "stream": self.STREAM,
                "task_id": task + 1,
                "start_ns": start,
                "dur_ns": dur,
                "block_dim": 56,
                "input_shapes": f"{tokens},{hidden};{tokens},{topk}",
            }
        )
        self.events.append(
            {"name": "N/A", "task_type": "MEMCPY_ASYNC", "stream": self.STREAM, "task_id": task + 2, "start_ns": start + dur + 3_000, "dur_ns": 2_100}
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
    path.parent.mkdir(parents=True, exist_ok=True)
    header = ["rank", "iteration", "elapsed_ms", "elapsed_us", "is_warmup", "in_average", *metadata]
    lines = [",".join(header)]
    for i in range(len(samples[0])):
        for rank, per_rank in enumerate(samples):
            ms = per_rank[i] / 1000.0
            lines.append(",".join([str(rank), str(i), f"{ms:.9f}", f"{ms * 1000:.9f}", str(int(i < warmup)), str(int(i >= warmup)), *metadata.values()]))
    with tempfile.NamedTemporaryFile("w", dir=path.parent, delete=False, suffix=".tmp") as handle:
        handle.write("\n".join(lines) + "\n")
    os.replace(handle.name, path)
