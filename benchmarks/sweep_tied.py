"""Sweep A/A benchmark (issue 61): a sweep whose points are identical configurations but for their noise seed
(``sim.noise_seed``), ranked, for each of N seeds; a verdict ``best`` is a false winner. Acceptance: ``tied`` in at
least 19 of 20 seeds (Holm over the k - 1 comparisons of the best at 0.05).

A small shape (64 tokens on the default 2 x 8 cluster), 3 points per sweep, baseline 20 calls (4 warm-up), the
workflow run to ``--until sweep`` in one copy of the repository; each seed is one snakemake run of its own sweep.

    python benchmarks/sweep_tied.py              # 20 seeds
    python benchmarks/sweep_tied.py --seeds 3
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))

from _common import workflow_copy, write_results  # noqa: E402

POINTS = 3


def overlay(seed: int) -> dict:
    seeds = [POINTS * seed + i for i in range(POINTS)]
    return {
        "sweep": {f"aa{seed}": {"axes": {"sim.noise_seed": seeds}}},
        "shape": {"num_tokens": 64, "num_max_tokens_per_rank": 64},
        "baseline": {"iterations": 20, "warmup": 4},
        "cluster": {"ready_timeout": 30, "fail_grace": 3},
    }


def one_seed(wf: Path, seed: int) -> dict:
    (wf / "aa.yaml").write_text(yaml.safe_dump(overlay(seed)))
    cmd = [sys.executable, "-m", "snakemake", "--cores", "2", "--until", "sweep"]
    cmd += ["--configfile", "config/config.yaml", "aa.yaml"]
    proc = subprocess.run(cmd, cwd=wf, capture_output=True, text=True)
    if proc.returncode != 0:
        raise RuntimeError(f"seed {seed}: snakemake failed:\n{proc.stderr[-2000:]}")
    data = json.loads((wf / f"results/sweep/aa{seed}/sweep.json").read_text())
    return {
        "seed": seed,
        "verdict": data["verdict"],
        "best": data["best"],
        "tied_with": data["tied_with"],
        "difference_ci95": data["difference_ci95"],
        "p": [c["p"] for c in data["comparisons"]],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=20)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="sweep_tied_") as tmp:
        wf = workflow_copy(Path(tmp) / "wf")
        runs = []
        for seed in range(args.seeds):
            runs.append(one_seed(wf, seed))
            print(f"seed {seed}: {runs[-1]['verdict']}", flush=True)
    tied = sum(r["verdict"] == "tied" for r in runs)
    lines = [
        f"# Sweep A/A: {tied} of {len(runs)} seeds tied ({POINTS} points identical but their noise seed; "
        "acceptance: at least 95%)",
        "",
        "| seed | verdict | best | tied with | runner-up - best, 95% CI (us) | p (Holm family) |",
        "|---|---|---|---|---|---|",
    ]
    for r in runs:
        ci = r["difference_ci95"]
        lines.append(
            f"| {r['seed']} | {r['verdict']} | {r['best']} | {', '.join(r['tied_with']) or 'none'} | "
            f"{ci[0]:+.2f} .. {ci[1]:+.2f} | {', '.join(f'{p:.3f}' for p in r['p'])} |"
        )
    write_results(ROOT / "benchmarks" / "sweep_tied_results", lines, {"runs": runs, "tied": tied})


if __name__ == "__main__":
    main()
