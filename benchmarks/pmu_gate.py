"""PMU gate benchmark: how often the pmu stage's ``busiest`` names a (rank, role), with and without a device-side
fault, scored against the event model's truth.

No workflow and no processes: the event model (workflow/sim/ascend_deepep, CollectiveModel) runs a few launches and
the replay msopprof profiles; each rank's replayed cores are written as the stand-in msopprof writes
PipeUtilization.csv (simprof.opprof_writer), read back with the workflow's parser (formats.msopprof) and gated as
the pmu stage gates them (analysis.roles.busiest, at ``pmu.busiest_alpha``). The truth of a run is what happened in
the replay: the knob's rank, and any rank whose work the model's built-in spikes raised in that launch (a spike is a
real excess, not a false alarm).

- false alarm: a named rank that is neither the knob's rank nor spiked in the replay;
- detected: the knob's rank is named (``role right``: with the knob's role, or LocalWindowCopy/every role for a slow
  rank).

    python benchmarks/pmu_gate.py              # the matrix (about a minute)
    python benchmarks/pmu_gate.py --seeds 20   # fewer seeds
"""

from __future__ import annotations

import argparse
import random
import sys
import tempfile
from pathlib import Path
from typing import Any

import pandas as pd

ROOT = Path(__file__).resolve().parents[1]
for extra in ("workflow/scripts", "workflow/sim", "workflow/sim/ascend_deepep", "benchmarks"):
    sys.path.insert(0, str(ROOT / extra))

from _common import gate_rows, write_results  # noqa: E402
from _defaults import schema_default  # noqa: E402
from _event_model import Shape, sends_of  # noqa: E402
from ascend_deepep._collective import CollectiveModel, Knobs, pmu_cores, stand_in_tiling  # noqa: E402
from simprof.opprof_writer import PIPE_950, csv_text, pipe_rows  # noqa: E402

from dispatchprof.analysis.roles import busiest, per_core  # noqa: E402
from dispatchprof.formats.msopprof import read_metric_csv  # noqa: E402

ALPHA = schema_default("pmu", "busiest_alpha")  # the pmu stage's gate at the schema's default
LIVE_LAUNCHES = 20  # launches before the profiled one: the model's warm-up is behind it
SHAPES = {
    "2x8, 12 AIV": Shape(2, 8),
    "3x4, 12 AIV": Shape(3, 4),
    "2x8, 56 AIV (workflow default)": Shape(2, 8, num_aiv=56, num_experts=384, num_tokens=256),
}
FAULTS: dict[str, dict[str, Any]] = {
    "no_fault": {},
    "CalCumSum x1.3": {"slow_role": (6, "CalCumSum", 1.3)},
    "CalCumSum x1.15": {"slow_role": (6, "CalCumSum", 1.15)},
    "SelfCopyToken x1.3": {"slow_role": (6, "SelfCopyToken", 1.3)},
    "TokenCopyToBuffer x1.15": {"slow_role": (6, "TokenCopyToBuffer", 1.15)},
    "URMASendToken x1.15": {"slow_role": (6, "URMASendToken", 1.15)},
    "LocalWindowCopy x3": {"slow_role": (6, "LocalWindowCopy", 3.0)},
    "slow_rank x1.15": {"slow_rank": 6, "slow_factor": 1.15},
}


def replay_cores(shape: Shape, knobs: Knobs) -> tuple[pd.DataFrame, set[int]]:
    """The pmu stage's per-core table of one profiled (replayed) launch, through the stand-in's CSV writer and the
    workflow's parser, and the ranks whose work a built-in spike raised in that replay (event truth)."""
    model = CollectiveModel(shape.cluster(), knobs)
    sends = sends_of(shape, knobs.seed)
    for call in range(LIVE_LAUNCHES):
        model.launch(call, sends, True)
    replay = model.replay(LIVE_LAUNCHES, sends)
    tiling = stand_in_tiling(shape.num_aiv)
    roles = [{"name": name, "count": tiling.count(name)} for name in dict.fromkeys(tiling)]
    frames = []
    with tempfile.TemporaryDirectory() as tmp:
        for rl in replay.ranks:
            path = Path(tmp) / f"PipeUtilization_{rl.rank}.csv"
            path.write_text(
                csv_text(PIPE_950, pipe_rows(pmu_cores(rl, knobs, random.Random(f"pmu/{knobs.seed}/{rl.rank}/0"))))
            )
            _, long = read_metric_csv(path)
            frames.append(
                long.assign(rank=rl.rank, node=rl.rank // shape.ranks_per_node, device=rl.rank % shape.ranks_per_node)
            )
    spiked = {rl.rank for rl in replay.ranks if rl.work_factor != 1.0 and rl.rank != knobs.slow_rank}
    return per_core(pd.concat(frames, ignore_index=True), roles), spiked


def gated(shape: Shape, knobs: Knobs, alpha: float = ALPHA) -> tuple[dict[str, Any] | None, set[int]]:
    """What the pmu stage names for these knobs (roles.busiest on the replayed launch, pmu.busiest_min_excess 0), and
    the ranks a built-in spike raised in that replay."""
    cores, spiked = replay_cores(shape, knobs)
    return busiest(cores, 0.0, alpha), spiked


def score(shape: Shape, fault: dict[str, Any], seed: int, alpha: float = ALPHA) -> dict[str, Any]:
    knobs = Knobs(seed=seed, **fault)
    top, spiked = gated(shape, knobs, alpha)
    culprit = fault["slow_role"][0] if "slow_role" in fault else fault.get("slow_rank")
    role = fault["slow_role"][1] if "slow_role" in fault else None
    named = None if top is None else (int(top["rank"]), str(top["role"]))
    role_right = named is not None and named[0] == culprit and (named[1] == role if role else True)
    return {
        "seed": seed,
        "named": named,
        "spiked": sorted(spiked),
        "false_alarm": named is not None and named[0] != culprit and named[0] not in spiked,
        "detected": named is not None and named[0] == culprit,
        "role_right": role_right,
        "ratio": None if top is None else round(float(top["ranked_excess_ratio"]), 4),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seeds", type=int, default=100)
    parser.add_argument("--alpha", type=float, default=ALPHA)
    parser.add_argument("--out", default=str(ROOT / "benchmarks" / "pmu_gate_results"))
    args = parser.parse_args(argv)

    def row_of(shape: Shape, fault: dict[str, Any]) -> dict[str, Any]:
        runs = [score(shape, fault, seed, args.alpha) for seed in range(1, args.seeds + 1)]
        return {
            "runs": len(runs),
            "named": sum(r["named"] is not None for r in runs),
            "detected": sum(r["detected"] for r in runs) if fault else None,
            "role_right": sum(r["role_right"] for r in runs) if fault else None,
            "false_alarms": sum(r["false_alarm"] for r in runs),
            "spike_runs": sum(bool(r["spiked"]) for r in runs),
            "false_alarm_seeds": [r["seed"] for r in runs if r["false_alarm"]],
        }

    rows = gate_rows(SHAPES, FAULTS, row_of)
    lines = [
        "# PMU gate benchmark (benchmarks/pmu_gate.py)",
        "",
        f"pmu.busiest_alpha = {args.alpha}; {args.seeds} seeds per "
        "row; one replayed launch per run, as msopprof profiles it.",
        "A false alarm is a named rank that is neither the knob's rank nor spiked in the replay (event truth).",
        "",
        "| shape | fault | runs | named | knob's rank named | with its role | false alarms | runs with a spike |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        det = "-" if r["detected"] is None else str(r["detected"])
        role = "-" if r["role_right"] is None else str(r["role_right"])
        lines.append(
            f"| {r['shape']} | {r['fault']} | {r['runs']} | {r['named']} "
            f"| {det} | {role} | {r['false_alarms']} | {r['spike_runs']} |"
        )
    total_runs = sum(r["runs"] for r in rows)
    total_fa = sum(r["false_alarms"] for r in rows)
    lines += [
        "",
        f"False alarms: {total_fa} in {total_runs} runs ({100 * total_fa / total_runs:.2f}%; "
        f"the gate's design rate is alpha = {args.alpha}).",
    ]
    write_results(Path(args.out), lines, {"alpha": args.alpha, "seeds": args.seeds, "rows": rows})
    return 0


if __name__ == "__main__":
    sys.exit(main())
