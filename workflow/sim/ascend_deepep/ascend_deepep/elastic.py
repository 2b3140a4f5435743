"""Stand-in for ascend_deepep's ElasticBuffer (V2 elastic dispatch), without NPU, CANN or PyTorch.

Tokens really move between rank processes through node 0's store: each rank sends every token to
the ranks that own its top-k experts (one copy per destination rank, as the kernel does), and
receives the tokens routed to its own experts. Payloads carry the first PAYLOAD_VALUES hidden
values of each token so the exchange stays light; the precision check compares them exactly.
"""

from __future__ import annotations

import os
import random
from dataclasses import dataclass
from typing import Any

from ascend_deepep._store import StoreClient

PAYLOAD_VALUES = 16


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


class ElasticBuffer:
    """Dispatch through node 0's store. One instance per rank process."""

    def __init__(self, store: StoreClient, rank: int, world: int, num_experts: int, num_max_tokens_per_rank: int, hidden: int):
        self.store = store
        self.rank = rank
        self.world = world
        self.num_experts = num_experts
        self.experts_per_rank = num_experts // world
        self.num_max_tokens_per_rank = num_max_tokens_per_rank
        self.hidden = hidden
        self._calls = 0
        fail_rank = os.environ.get("DEEPEP_SIM_PRECISION_FAIL_RANK", "")
        self._corrupt = fail_rank != "" and int(fail_rank) == rank

    def dispatch(self, x: list[list[float]], topk_idx: list[list[int]], topk_weights: list[list[float]], **_: Any) -> tuple[Any, ...]:
        call = self._calls
        self._calls += 1
        outgoing: dict[int, list[Any]] = {dst: [] for dst in range(self.world)}
        for t, experts in enumerate(topk_idx):
            for dst in sorted({e // self.experts_per_rank for e in experts}):
                outgoing[dst].append([self.rank, t, x[t], experts, topk_weights[t]])
        for dst, rows in outgoing.items():
            self.store.set(f"dispatch/{call}/{self.rank}->{dst}", rows)
        received = []
        for src in range(self.world):
            received.extend(self.store.get(f"dispatch/{call}/{src}->{self.rank}"))
        self.store.barrier(f"dispatch/{call}", self.world)
        if self._corrupt and received:
            # Fault knob sim.precision_fail_rank: this rank's kernel writes one wrong value.
            received[0][2] = [v + 1.0 for v in received[0][2]]
        recv_x = [row[2] for row in received]
        recv_topk_idx = [row[3] for row in received]
        recv_topk_weights = [row[4] for row in received]
        handle = [(row[0], row[1]) for row in received]
        return recv_x, recv_topk_idx, recv_topk_weights, handle, None
