"""What the benchmarks on the simulator's event model share: the shape of a process group and the bytes each rank
sends each other rank. localisation.py, pmu_gate.py and debugclock_gate.py import it, so that none of them imports
another's module for it (they did: an import cycle, tests/benchmarks/test_imports.py).
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT / "workflow" / "sim" / "ascend_deepep") not in sys.path:
    sys.path.insert(0, str(ROOT / "workflow" / "sim" / "ascend_deepep"))

from ascend_deepep._collective import Cluster  # noqa: E402
from ascend_deepep.elastic import make_inputs  # noqa: E402


@dataclass(frozen=True)
class Shape:
    nodes: int
    ranks_per_node: int
    num_aiv: int = 12
    num_experts: int = 96
    num_tokens: int = 64
    hidden: int = 7168
    topk: int = 6

    @property
    def world(self) -> int:
        return self.nodes * self.ranks_per_node

    @property
    def label(self) -> str:
        return f"{self.nodes}x{self.ranks_per_node}"

    def cluster(self) -> Cluster:
        """The event model's cluster of this shape."""
        return Cluster(self.world, self.ranks_per_node, self.num_aiv, self.num_experts)


def sends_of(shape: Shape, seed: int) -> list[list[int]]:
    """Bytes rank src sends rank dst, routed as the stand-in routes with the default config (balanced top-k, bf16
    rows)."""
    per_rank = shape.num_experts // shape.world
    out = []
    for src in range(shape.world):
        inputs = make_inputs(seed, src, shape.num_tokens, shape.topk, shape.num_experts, shape.world, "balanced")
        row = [0] * shape.world
        for experts in inputs.topk_idx:
            for dst in {e // per_rank for e in experts}:
                row[dst] += shape.hidden * 2
        out.append(row)
    return out
