"""The merged trace's size per 1,000 launches x 256 ranks (issue 63), synthetic: every launch drawn
(timeline.trace_launches 0), the barrier kernel and an arrival per launch, one late-arrival cause striking every launch
(the most arrows: 32 per launch). Prints bytes, MB and the time json_text takes.

    python benchmarks/trace_size.py [--launches 1000] [--ranks 256]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "workflow" / "scripts"))

from dispatchprof.analysis.timeline import merged_trace  # noqa: E402
from dispatchprof.analysis.trace_causes import TraceCause  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--launches", type=int, default=1000)
    parser.add_argument("--ranks", type=int, default=256)
    args = parser.parse_args()
    n, world, per_node = args.launches, args.ranks, 8
    rng = np.random.default_rng(0)
    rank = np.repeat(np.arange(world)[None, :], n, axis=0).ravel()
    launch = np.repeat(np.arange(n)[:, None], world, axis=1).ravel()
    period = 1_400_000
    arrival = launch * period + rng.integers(0, 40_000, len(rank)) + np.where(rank == 5, 50_000, 0)
    release = launch * period + 100_000
    used = {
        "rank": rank,
        "launch": launch,
        "start_ns": release + 2_000,
        "dur_ns": rng.integers(90_000, 110_000, len(rank)),
        "gap_ns": rng.normal(900_000, 10_000, len(rank)),
        "barrier_start_ns": arrival.astype(float),
        "barrier_dur_ns": (release - arrival).astype(float),
    }
    details = {r: {"node": r // per_node, "device": r % per_node, "pid": 1000 + r, "symbol": "k"} for r in range(world)}
    cause = TraceCause("late arrival, rank 5", "late_arrival", [5], 40.0, list(range(n)), [40.0] * n, [0.0] * n)
    began = time.perf_counter()
    trace = merged_trace(
        used,
        details,
        0,
        0,
        {k: 0.0 for k in range(world // per_node)},
        toolchain="sim",
        barrier_kernel="cached_notify_combine",
        causes=[cause],
        marked={"typical": 0, "costliest": 1},
    )
    text = trace.json_text()
    took = time.perf_counter() - began
    print(f"{n} launches x {world} ranks: {len(text):,} bytes ({len(text) / 1e6:.1f} MB), built in {took:.1f} s")


if __name__ == "__main__":
    main()
