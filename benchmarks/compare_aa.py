"""A/A benchmark of the comparison (issue 59): two experiments identical but their noise seed (``sim.noise_seed``),
compared in every layer, for each of N seeds; a row `improved`, `regressed`, `changed`, `appeared` or `gone` is a
false alarm. Acceptance: no false alarm in at least 19 of 20 seeds (Holm's correction over the rows at 0.05).

A small shape (64 tokens on the default 2 x 8 cluster), pmu launch_count 4, the workflow run to ``--until
compare`` in one copy of the repository; each seed is one snakemake run of its own pair.

    python benchmarks/compare_aa.py              # 20 seeds (about a minute each on 2 cores)
    python benchmarks/compare_aa.py --seeds 3
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from collections import Counter
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))

from _common import workflow_copy, write_results  # noqa: E402

FLAGGED = ("improved", "regressed", "changed", "appeared", "gone")


def overlay(seed: int) -> dict:
    return {
        "experiments": {"a": {"sim": {"noise_seed": 2 * seed}}, "b": {"sim": {"noise_seed": 2 * seed + 1}}},
        "compare": [["a", "b"]],
        "shape": {"num_tokens": 64, "num_max_tokens_per_rank": 64},
        "pmu": {"launch_count": 4, "iterations": 6},
        "baseline": {"iterations": 20, "warmup": 4},
        "timeline": {"iterations": 9, "warmup": 2, "crosscheck": "off"},
        "cluster": {"ready_timeout": 30, "fail_grace": 3},
    }


def one_seed(wf: Path, seed: int) -> dict:
    (wf / "aa.yaml").write_text(yaml.safe_dump(overlay(seed)))
    cmd = [sys.executable, "-m", "snakemake", "--cores", "2", "--until", "compare"]
    cmd += ["--configfile", "config/config.yaml", "aa.yaml"]
    proc = subprocess.run(cmd, cwd=wf, capture_output=True, text=True)
    if proc.returncode != 0:
        raise RuntimeError(f"seed {seed}: snakemake failed:\n{proc.stderr[-2000:]}")
    data = json.loads((wf / "results/compare/a_vs_b/comparison.json").read_text())
    verdicts = Counter(r["verdict"] for r in data["rows"])
    alarms = [r["key"] for r in data["rows"] if r["verdict"] in FLAGGED]
    return {"seed": seed, "rows": len(data["rows"]), "verdicts": dict(verdicts), "alarms": alarms}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=20)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="compare_aa_") as tmp:
        wf = workflow_copy(Path(tmp) / "wf")
        runs = [one_seed(wf, seed) for seed in range(args.seeds)]
    clean = sum(not r["alarms"] for r in runs)
    lines = [
        f"# A/A comparison: {clean} of {len(runs)} seeds without a false alarm (acceptance: at least 95%)",
        "",
        "| seed | rows | improved/regressed/changed/appeared/gone | unchanged | inconclusive | not comparable |",
        "|---|---|---|---|---|---|",
    ]
    for r in runs:
        v = r["verdicts"]
        lines.append(
            f"| {r['seed']} | {r['rows']} | {', '.join(r['alarms']) or 'none'} | {v.get('unchanged', 0)} | "
            f"{v.get('inconclusive', 0)} | {v.get('not comparable', 0)} |"
        )
    write_results(ROOT / "benchmarks" / "compare_aa_results", lines, {"runs": runs, "clean": clean})


if __name__ == "__main__":
    main()
