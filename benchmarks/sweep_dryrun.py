"""A 100-point sweep's dry run against a one-experiment dry run (issue 61 item 5: at most 3x), in a copy of the
workflow: each `snakemake -n` timed --repeat times, the medians and their ratio printed, and that every point's
baseline collection is in the plan. No timed test asserts it (the machine is shared). The one experiment plans every
stage; a sweep point only the stages its sweep measures (benchmarks/README.md).

    python benchmarks/sweep_dryrun.py [--points 100] [--repeat 3]
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]


def timed(cwd: Path, *configs: str) -> tuple[float, str]:
    started = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-m", "snakemake", "-n", "--cores", "2", "--configfile", "config/config.yaml", *configs],
        cwd=cwd,
        capture_output=True,
        text=True,
    )
    elapsed = time.perf_counter() - started
    if done.returncode:
        raise SystemExit(done.stderr[-2000:])
    return elapsed, done.stdout + done.stderr


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--points", type=int, default=100)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        wf = Path(tmp) / "wf"
        ignore = shutil.ignore_patterns("results", ".snakemake", ".git", "__pycache__", ".venv", "build")
        shutil.copytree(ROOT, wf, ignore=ignore)
        values = [round(0.5 + 0.01 * i, 2) for i in range(args.points)]
        sweep = {"sweep": {"big": {"axes": {"sim.role_speedup.URMASendToken": values}}}}
        (wf / "big.yaml").write_text(yaml.safe_dump(sweep))
        one, big = [], []
        for _ in range(args.repeat):
            one.append(timed(wf)[0])
            elapsed, out = timed(wf, "big.yaml")
            big.append(elapsed)
        listed = sum(f"results/sweep_big_{n}/baseline/collect/status.json" in out for n in range(1, args.points + 1))
    a, b = statistics.median(one), statistics.median(big)
    print(f"one experiment: {a:.2f} s; {args.points}-point sweep: {b:.2f} s; ratio {b / a:.2f} (goal: at most 3)")
    print(f"points listed in the sweep's plan: {listed} of {args.points}")


if __name__ == "__main__":
    main()
