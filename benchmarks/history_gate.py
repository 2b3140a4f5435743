"""The history gate at scale: 1,000 runs of a 32x8 cluster in one store, then the newest run gated (the read of the
store and the gate, what rule history does after writing its record). Prints the store's size, the bytes per run
and the seconds of each part against the 2 s goal (issue 60); no timed test asserts it.

    python benchmarks/history_gate.py [--runs 1000] [--ranks 256] [--samples 2000]
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

from dispatchprof.analysis.history import GateSettings, gate  # noqa: E402
from dispatchprof.formats.history_store import read_store  # noqa: E402
from dispatchprof.stages.history import write_record  # noqa: E402

ROLES = ("TokenCopyToBuffer", "URMASendToken", "SelfCopyToken", "CalCumSum")


def one_run(i: int, ranks: int, samples: int, rng: np.random.Generator) -> pd.DataFrame:
    rows = [
        ("metric", f"latency.{s}.{q}", 1250 + rng.normal(0, 3), "lower")
        for s in ("kernel", "api")
        for q in ("median", "p95")
    ]
    rows += [("metric", "links.efficiency", 0.78 + rng.normal(0, 0.002), "higher")]
    rows += [("cause", "cause.late_arrival.rank5", 40 + rng.normal(0, 1), "lower")]
    rows += [("layer", f"latency.rank{r}.median", 1245 + rng.normal(0, 2), "") for r in range(ranks)]
    rows += [
        ("layer", f"pmu.rank{r}.{role}.busy_us", 200 + rng.normal(0, 2), "") for r in range(ranks) for role in ROLES
    ]
    rows += [("sample", "latency.kernel.max_us", v, "") for v in 1250 + rng.normal(0, 5, samples)]
    frame = pd.DataFrame(rows, columns=["kind", "metric", "value", "better"])
    return frame.assign(
        run_id=f"run{i:05d}",
        series="bench",
        recorded_at=f"2026-{1 + i // 600:02d}-{1 + (i // 24) % 25:02d}T{i % 24:02d}:00:{i % 60:02d}",
        toolchain="bench",
        comparable=json.dumps({"ranks": ranks}),
        identity="{}",
        ci_low=None,
        ci_high=None,
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=1000)
    parser.add_argument("--ranks", type=int, default=256)
    parser.add_argument("--samples", type=int, default=2000)
    args = parser.parse_args()
    rng = np.random.default_rng(0)
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        start = time.perf_counter()
        for i in range(args.runs):
            write_record(root, "bench", f"run{i:05d}", one_run(i, args.ranks, args.samples, rng))
        wrote = time.perf_counter() - start
        size = sum(p.stat().st_size for p in (root / "bench").iterdir())
        start = time.perf_counter()
        store = read_store(root, "bench", last=3 * GateSettings().window)  # as rule history reads it
        read = time.perf_counter() - start
        start = time.perf_counter()
        result = gate(store.rows, f"run{args.runs - 1:05d}", GateSettings())
        gated = time.perf_counter() - start
    print(
        f"{args.runs} runs of {args.ranks} ranks, {args.samples} samples each: store {size / 1e6:.1f} MB, "
        f"{size / args.runs / 1e3:.1f} KB per run (written in {wrote:.1f} s)"
    )
    print(
        f"read {read:.2f} s + gate {gated:.2f} s = {read + gated:.2f} s (goal 2 s: ratio {(read + gated) / 2:.2f}); "
        f"verdict {result['verdict']} against {result['compared_runs']} runs"
    )


if __name__ == "__main__":
    main()
