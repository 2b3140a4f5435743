"""DebugClock node gate benchmark: how often ``debugclock.busiest_node`` names a node, with and without a fault, and
how close its excess comes to the event model's counterfactual cost.

No workflow and no processes: the event model (workflow/sim/ascend_deepep, CollectiveModel) runs the live launches
of a DEBUG_CLOCK_ON run; each rank's per-core phases go through the stand-in's own DebugClock writer (AKL traces,
_debugclock.DebugClockWriter) and are read back with the workflow's parser (formats.debugclock.load_tree) and
analysis (analysis.debugclock: akl_segments, slowest_core_table, busiest_node at the schema's defaults).

- false alarm: a node named without a knob that slows a node's work or links (slow_link);
- detected: the slow link's source node named, its URMASendToken send phase; its excess is compared with the
  truth (the group time per launch the knob's removal gives back, same draws: _account.simulate).

    python benchmarks/debugclock_gate.py              # the matrix (a few minutes)
    python benchmarks/debugclock_gate.py --seeds 5    # fewer seeds
"""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
import tempfile
from pathlib import Path
from typing import Any, Iterator

ROOT = Path(__file__).resolve().parents[1]
for extra in ("workflow/scripts", "workflow/sim", "workflow/sim/ascend_deepep", "benchmarks"):
    sys.path.insert(0, str(ROOT / extra))

from _common import gate_rows, write_results  # noqa: E402
from _defaults import schema_default  # noqa: E402
from _event_model import Shape, sends_of  # noqa: E402
from ascend_deepep import _debugclock as writer  # noqa: E402
from ascend_deepep._collective import CollectiveModel, Knobs  # noqa: E402

from dispatchprof.analysis import debugclock  # noqa: E402
from dispatchprof.formats.debugclock import load_tree  # noqa: E402

LAUNCHES = 12  # calls of the DEBUG run (debugclock.iterations is 20; fewer keep the benchmark short)
WARMUP = 4  # debugclock.warmup: the model's first calls are slower (cold caches)
SHAPES = {
    "2x8": Shape(2, 8),
    "3x4": Shape(3, 4),
    "2x8, 56 AIV (workflow default)": Shape(2, 8, num_aiv=56, num_experts=384, num_tokens=256),
}
FAULTS: dict[str, dict[str, Any]] = {
    "no_fault": {},
    "slow_link x2": {"slow_link": (0, 1, 2.0)},
    "slow_link x1.3": {"slow_link": (0, 1, 1.3)},
    "slow_rank x1.15": {"slow_rank": 6, "slow_factor": 1.15},
    "URMASendToken x1.5": {"slow_role": (6, "URMASendToken", 1.5)},
    "LocalWindowCopy x3": {"slow_role": (6, "LocalWindowCopy", 3.0)},
    "late_node": {"late_node": 1, "late_us": 50.0},
}


def settings() -> dict[str, Any]:
    """The debugclock section as the workflow runs it: the schema's defaults."""
    return schema_default("debugclock")


@contextlib.contextmanager
def environment(**values: str) -> Iterator[None]:
    """The stand-in's writer reads its output place and format from the environment, as the real build does."""
    old = {k: os.environ.get(k) for k in values}
    os.environ.update(values)
    try:
        yield
    finally:
        for k, v in old.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def write_traces(shape: Shape, knobs: Knobs, root: Path, launches: int = LAUNCHES) -> None:
    """The AKL traces of a DEBUG_CLOCK_ON run of these knobs, laid out as analyze.debugclock_dir reads them:
    ``root/node<k>/rank<R>-pid<P>-launch<L>/`` and the build's event map."""
    model = CollectiveModel(shape.cluster(), knobs)
    sends = sends_of(shape, knobs.seed)
    with environment(AKL_TRACE_DIR=str(root), DEEPEP_SIM_DEBUGCLOCK_FORMAT="akl", DEEPEP_SIM_DEBUGCLOCK="ok"):
        writer.write_event_map(root / "node0" / "ascend_deepep" / "lib" / "event_map.json")
        writers = [writer.DebugClockWriter(rank, root) for rank in range(shape.world)]
        for w in writers:
            w.on = True  # a DEBUG_CLOCK_ON build (its build flags are not written here)
            w.akl_dir = root / f"node{w.rank // shape.ranks_per_node}"
        for call in range(launches):
            for rl in model.launch(call, sends, True).ranks:
                writers[rl.rank].record(rl)


def node_gate(shape: Shape, knobs: Knobs, launches: int = LAUNCHES, warmup: int = WARMUP) -> dict[str, Any] | None:
    """What the debugclock stage names as busiest_node for these knobs (AKL traces of ``launches`` live launches)."""
    dc = settings()
    with tempfile.TemporaryDirectory() as tmp:
        write_traces(shape, knobs, Path(tmp), launches)
        loaded = load_tree(tmp)
    seg, _ = debugclock.akl_segments(loaded.captures, dc["phase_names"], 1e9, warmup)
    table = debugclock.slowest_core_table(seg, "akl_trace")
    return debugclock.busiest_node(
        table, "akl_trace", dc["busiest_min_excess"], dc["busiest_node_alpha"], dc["wait_slots"]
    )


def score(shape: Shape, fault: dict[str, Any], seed: int) -> dict[str, Any]:
    best = node_gate(shape, Knobs(seed=seed, **fault))
    link = fault.get("slow_link")
    named = None if best is None else (best["node"], best["role"], best["phase"])
    return {
        "seed": seed,
        "named": named,
        "excess_us": None if best is None else round(best["excess_us"], 2),
        "false_alarm": best is not None and (link is None or best["node"] != link[0]),
        "detected": link is not None
        and best is not None
        and best["node"] == link[0]
        and best["role"] == "URMASendToken",
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seeds", type=int, default=20)
    parser.add_argument("--out", default=str(ROOT / "benchmarks" / "debugclock_gate_results"))
    args = parser.parse_args(argv)

    def row_of(shape: Shape, fault: dict[str, Any]) -> dict[str, Any]:
        runs = [score(shape, fault, seed) for seed in range(1, args.seeds + 1)]
        excess = [r["excess_us"] for r in runs if r["detected"]]
        return {
            "runs": len(runs),
            "named": sum(r["named"] is not None for r in runs),
            "detected": sum(r["detected"] for r in runs) if "slow_link" in fault else None,
            "excess_us_range": [min(excess), max(excess)] if excess else None,
            "false_alarms": sum(r["false_alarm"] for r in runs),
        }

    rows = gate_rows(SHAPES, FAULTS, row_of)
    lines = [
        "# DebugClock node gate benchmark (benchmarks/debugclock_gate.py)",
        "",
        f"debugclock.busiest_node at the schema's defaults; {args.seeds} seeds "
        f"per row; AKL traces of {LAUNCHES} live launches ({WARMUP} left out).",
        "A false alarm is a node named without a slow link out of it.",
        "",
        "| shape | fault | runs | named | slow link's node named "
        "(URMASendToken) | its excess, us per launch | false alarms |",
        "|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        det = "-" if r["detected"] is None else str(r["detected"])
        rng = "-" if not r["excess_us_range"] else f"{r['excess_us_range'][0]:.0f} to {r['excess_us_range'][1]:.0f}"
        lines.append(
            f"| {r['shape']} | {r['fault']} | {r['runs']} | {r['named']} | {det} | {rng} | {r['false_alarms']} |"
        )
    total = sum(r["runs"] for r in rows)
    fas = sum(r["false_alarms"] for r in rows)
    lines += ["", f"False alarms: {fas} in {total} runs."]
    write_results(Path(args.out), lines, {"seeds": args.seeds, "rows": rows})
    return 0


if __name__ == "__main__":
    sys.exit(main())
