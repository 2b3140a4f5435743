"""The baseline stage's numbers do not depend on how its statistics are computed (issue 58 part 4: numpy arrays in
place of DataFrame copies, freed memory): stats.json is byte for byte what the code before the change wrote, on
small CSVs with ties, mixed warm-up labels, incomplete iterations, work columns and routing.

The expected hashes are those of main at b23bfe5 (before the change), computed with
``python tests/stages/test_baseline_same_numbers.py <checkout>/workflow/scripts``."""

from __future__ import annotations

import hashlib
import json
import random
import sys
import tempfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
HEADER = "rank,iteration,elapsed_ms,elapsed_us,is_warmup,in_average,measurement,clock_hz"
WORK = ",processed_bytes,sent_bytes"
EXPECTED = {
    "plain": "14967a3fcfca48dff62bc38ac0ca61b8823f03177f94ae3992be61c355626133",
    "ties": "d19f2925e71d98308652d4a1b893cc45b30690a7161ea0620d644f5a3400434c",
    "mixed": "09d3a4b5ca0cfa0f27b662f4424e9b41d322ea2ac1b8c6f071d68676bf3c16d2",
    "incomplete": "92b9140ea20241780d73d303078db0e3b4fe8d1f2d7a05875df2fb57caa012f8",
    "work": "1613bcd65f231b64aa599ac04d4e42f90a44c2bdf1297f7aa49ea00786018994",
}


def write_case(path: Path, case: str) -> dict:
    """A CSV of 2 x 4 ranks (the overlay returned beside it) drawn from seed 7."""
    rng = random.Random(7)
    ranks, iterations, warmup = 8, 60, 3
    work = case == "work"
    lines = [HEADER + (WORK if work else "")]
    for i in range(iterations):
        for r in range(ranks):
            us = round(rng.lognormvariate(3.0, 0.4), 3) + (15.0 if r == 5 and case != "ties" else 0.0)
            if case == "ties":
                us = float(rng.choice((20, 21, 22)))
            warm = int(i < warmup or (case == "mixed" and i == 10 and r == 2))
            measured = int(not warm and not (case == "incomplete" and i in (20, 41) and r == 3))
            row = f"{r},{i},{us / 1000:.9f},{us:.9f},{warm},{measured},kernel,50000000"
            if work:
                sent = 1000 * (r + 1)
                row += f",{2 * sent},{sent}"
            lines.append(row)
    path.write_text("\n".join(lines) + "\n")
    overlay = {"mode": "analyze", "cluster": {"nodes": 2, "ranks_per_node": 4}, "analyze": {"latency_csv": str(path)}}
    if case == "work":
        overlay["stats"] = {"akl_last_n": 0}  # every measured sample in the ascend-kernel-lab figures
    return overlay


CASES = ("plain", "ties", "mixed", "incomplete", "work")


def stats_hash(case: str, tmp: Path) -> str:
    """sha256 of the stage's stats.json with the CSV's (temporary) path blanked."""
    import yaml

    from dispatchprof.shell.config import deep_merge, fill_defaults, load_schema, run_config
    from dispatchprof.shell.stage import SCHEMA_PATH, StageRun
    from dispatchprof.stages.baseline import baseline

    csv = tmp / f"{case}.csv"
    overlay = write_case(csv, case)
    config = deep_merge(yaml.safe_load((ROOT / "config" / "config.yaml").read_text()), overlay)
    fill_defaults(config, load_schema(SCHEMA_PATH))
    config = run_config(config, config["experiment"])
    out = tmp / case
    (out / "plots").mkdir(parents=True)
    outputs = {"latency": out / "latency.parquet", "stats": out / "stats.json", "plots": out / "plots"}
    run = StageRun(
        stage="baseline",
        experiment=config["experiment"],
        toolchain="none",
        status_path=out / "status.json",
        outputs=outputs,
        inputs={},
        config=config,
        params={"run_dir": None},
        source="import",
    )
    status = baseline(run, {})
    assert status.state == "ok", status.reason
    text = (out / "stats.json").read_text().replace(str(csv), "<csv>")
    return hashlib.sha256(text.encode()).hexdigest()


@pytest.mark.parametrize("case", CASES)
def test_stats_json_is_the_one_before_the_change(case, tmp_path):
    assert stats_hash(case, tmp_path) == EXPECTED[case]


if __name__ == "__main__":  # the expected hashes of another checkout's library
    sys.path.insert(0, sys.argv[1])
    with tempfile.TemporaryDirectory() as tmp:
        print(json.dumps({case: stats_hash(case, Path(tmp)) for case in CASES}, indent=4))
