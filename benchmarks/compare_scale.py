"""The comparison at scale: two recorded runs of a 32x8 cluster with 2000 iterations each (synthetic side directories:
the latency table, 256 ranks x 2000 iterations x 2 scopes, statuses, stats and config.json), compared from their
files as rule compare does (stages/comparison.comparison_record), against the two sides' own analysis. The proxy of
a side's own analysis is the baseline stage's statistics of its latency (analysis/latency.latency_statistics of
both scopes, the config's bootstrap: what analysis/baseline.analyse spends on latency), read from the same parquet;
the report's other stages only add to it, so the ratio printed is an upper bound. Goal (issue 59): the comparison
adds at most 20% to the two sides' own analysis time. No timed test asserts it.

    python benchmarks/compare_scale.py [--nodes 32] [--ranks-per-node 8] [--iterations 2000] [--repeat 3]
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "workflow" / "scripts"))

from dispatchprof.analysis.latency import latency_statistics  # noqa: E402
from dispatchprof.shell.compare_config import recorded_inputs  # noqa: E402
from dispatchprof.shell.status import Status, write_status  # noqa: E402
from dispatchprof.stages.comparison import ComparisonJob, comparison_record  # noqa: E402

BOOTSTRAP = {"resamples": 2000, "seed": 0}  # config/config.yaml's stats.bootstrap
STATS = {"resamples": 2000, "seed": 0, "akl_last_n": 5, "tail_ci_ratio": 0.1}


def latency_table(name: str, nodes: int, rpn: int, iterations: int, centre: float, seed: int) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    ranks, warmup = nodes * rpn, min(10, iterations // 10)
    it = np.tile(np.arange(iterations), ranks)
    rank = np.repeat(np.arange(ranks), iterations)
    frames = []
    for scope, extra in (("kernel", 0.0), ("api", 60.0)):
        us = centre + extra + rng.normal(0, 3, ranks * iterations) + 0.02 * rank
        frames.append(
            pd.DataFrame(
                {
                    "experiment": name,
                    "scope": scope,
                    "rank": rank,
                    "node": rank // rpn,
                    "iteration": it,
                    "warmup": it < warmup,
                    "us": us,
                }
            )
        )
    return pd.concat(frames, ignore_index=True)


def side_dir(root: Path, name: str, args: argparse.Namespace, centre: float, seed: int) -> Path:
    """One run's results directory as rule compare reads it (PMU, PC sampling and DebugClock disabled)."""
    run = root / name
    for stage, state in (
        ("baseline", "ok"),
        ("correctness", "ok"),
        ("timeline", "ok"),
        ("pmu", "disabled"),
        ("pcsampling", "disabled"),
        ("debugclock", "disabled"),
    ):
        (run / stage).mkdir(parents=True)
        write_status(run / stage / "status.json", Status(stage, name, state, "benchmark", toolchain="sim"))
    latency_table(name, args.nodes, args.ranks_per_node, args.iterations, centre, seed).to_parquet(
        run / "baseline/latency.parquet"
    )
    (run / "baseline/stats.json").write_text(json.dumps({"bandwidth": {}}))
    causes = [{"evidence": "late_arrival", "rank": 5, "ranks": [5], "cost_us_per_launch": 9.0, "cost_ci_us": [8, 10]}]
    (run / "timeline/stats.json").write_text(
        json.dumps({"causes": causes, "straggler": {"excess": {"period_us_per_launch": 5.0}}})
    )
    for name_ in ("pmu/cores.parquet", "pcsampling/stalls.json", "debugclock/segments.parquet"):
        (run / name_).write_text("placeholder")
    config = {
        "mode": "collect",
        "toolchain": "sim",
        "cluster": {"nodes": args.nodes, "ranks_per_node": args.ranks_per_node},
        "shape": {"num_tokens": 256},
        "kernel": {"name": "elastic_dispatch_kernel"},
    }
    (run / "config.json").write_text(json.dumps({"config": config}))
    return run


def own_analysis(run: Path) -> float:
    """Seconds of the proxy of one side's own analysis: both scopes' latency statistics (the read of the table is
    left out: the baseline stage parses a CSV instead, slower; the comparison's own reads are counted)."""
    table = pd.read_parquet(run / "baseline/latency.parquet")
    start = time.perf_counter()
    for scope in ("kernel", "api"):
        frame = table[table["scope"] == scope]
        latency_statistics(frame.assign(in_average=~frame["warmup"]), **STATS)  # as compare.maxima reads it
    return time.perf_counter() - start


def comparison(a: Path, b: Path) -> tuple[float, dict]:
    start = time.perf_counter()
    inputs, missing = {}, {}
    for side, run in (("a", a), ("b", b)):
        have, lacks = recorded_inputs(run)
        inputs.update({f"{side}_{name}_{run.name}": path for name, path in have.items()})
        missing[side] = lacks
    job = ComparisonJob(
        names={"a": a.name, "b": b.name},
        runs={"a": [a.name], "b": [b.name]},
        inputs=inputs,
        configs={"a": None, "b": None},
        directories={"a": str(a), "b": str(b)},
        missing=missing,
        bootstrap=BOOTSTRAP,
    )
    result = comparison_record(job)
    return time.perf_counter() - start, result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=32)
    parser.add_argument("--ranks-per-node", type=int, default=8)
    parser.add_argument("--iterations", type=int, default=2000)
    parser.add_argument("--repeat", type=int, default=3, help="timings taken; the median is printed")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        a = side_dir(root, "a", args, 1250.0, 1)
        b = side_dir(root, "b", args, 1245.0, 2)
        owns, compares = [], []
        for _ in range(args.repeat):
            owns.append(own_analysis(a) + own_analysis(b))
            seconds, result = comparison(a, b)
            compares.append(seconds)
    own, cmp_s = float(np.median(owns)), float(np.median(compares))
    rows = len(result["rows"])
    print(
        f"{args.nodes}x{args.ranks_per_node}x{args.iterations}: both sides' own analysis {own:.2f} s (proxy: "
        f"latency statistics of both scopes, reads not counted), comparison {cmp_s:.2f} s ({rows} rows, state {result['state']}); "
        f"ratio {cmp_s / own:.3f} (goal <= 0.20)"
    )


if __name__ == "__main__":
    main()
