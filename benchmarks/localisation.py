"""Localisation benchmark: the cost account (analysis.waits) scored against the event model's counterfactual truth.

No workflow: the simulator's event model (workflow/sim/ascend_deepep, CollectiveModel) computes every launch of a
process group; the msprof view of it (per rank and launch: the barrier kernel's and the target's start and duration
on the rank's node clock) goes straight into the analysis library. The truth of a cause is what its removal gives
back: the same seed (the same random draws), the knob taken away, the group's time compared:
- launch period: the last kernel end of the last analysed launch, minus that of the launch before the first, per
  analysed launch;
- timed kernel scope: per launch the max over ranks of the kernel-mode latency (the baseline's per-iteration max).
The built-in spikes of the model are causes too: their removal on one rank is measured the same way.

Per case (fault x shape x synchronize_start x seed) it records: whether the top cause is right, the cost error
|estimate - truth| / max(truth, min_cost_us), victims blamed (a named rank whose removal gives back less than
min_cost_us while the group waited for someone else), false alarms (a named cause whose true cost is below
min_cost_us). Writes benchmarks/localisation_results.json and .md.

    python benchmarks/localisation.py                 # the full matrix (minutes)
    python benchmarks/localisation.py --quick         # a few cases
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "workflow" / "scripts"))
sys.path.insert(0, str(ROOT / "workflow" / "sim" / "ascend_deepep"))

from ascend_deepep import _collective as model_module  # noqa: E402
from ascend_deepep._collective import Cluster, CollectiveModel, Knobs  # noqa: E402
from ascend_deepep.elastic import make_inputs  # noqa: E402

from dispatchprof.analysis import waits  # noqa: E402

SETTINGS = {"alpha": 0.001, "late_min_us": 20.0, "own_work_min_us": 5.0, "in_kernel_min_fraction": 0.1, "min_cost_us": 1.0}
BOOT = {"resamples": 400, "seed": 0}
OWN_ROLES = ("LocalWindowCopy", "TokenCopyToBuffer", "SelfCopyToken")  # roles whose slowness is the rank's own work
SKIP = 15  # warm-up launches left out (timeline.skip_launches): the model's first calls are slower (cold caches)


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


def sends_of(shape: Shape, seed: int) -> list[list[int]]:
    """Bytes rank src sends rank dst, routed as the stand-in routes with the default config (balanced top-k, bf16 rows)."""
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


class NoSpikes(CollectiveModel):
    """The model with the built-in spikes removed on some ranks (the same draws: only their effect is taken away)."""

    def __init__(self, cluster: Cluster, knobs: Knobs, ranks: frozenset[int]):
        super().__init__(cluster, knobs)
        self.quiet = ranks

    def _work_factors(self, call, rng, replay):  # type: ignore[no-untyped-def]
        saved = model_module.SPIKE_PROB
        out = []
        # draw exactly as the model does, rank by rank, and undo a built-in spike on a quiet rank
        warm = 1.0 if replay else 1.0 + model_module.WARM_EXTRA * np.exp(-call / model_module.WARM_DECAY_CALLS)
        for rank in range(self.cluster.world):
            f = warm
            spike, spiky = rng.random(), rng.random()
            spike_size, spiky_size = rng.uniform(*model_module.SPIKE_RANGE), rng.uniform(*model_module.SPIKY_RANGE)
            if spike < saved and rank not in self.quiet:
                f *= spike_size
            if rank == self.knobs.spiky_rank and spiky < model_module.SPIKY_PROB:
                f *= spiky_size
            if rank == self.knobs.slow_rank:
                f *= self.knobs.slow_factor
            out.append(float(f))
        return out


def run(shape: Shape, knobs: Knobs, launches: int, sync: bool, quiet: frozenset[int] = frozenset()) -> list[Any]:
    cluster = Cluster(shape.world, shape.ranks_per_node, shape.num_aiv, shape.num_experts)
    model = NoSpikes(cluster, knobs, quiet) if quiet else CollectiveModel(cluster, knobs)
    sends = sends_of(shape, knobs.seed)
    return [model.launch(call, sends, sync) for call in range(launches)], model


def msprof_view(launches: list[Any], model: CollectiveModel, shape: Shape) -> waits.LaunchGrid:
    """What msprof shows of the launches, per rank: the barrier's and the target's start and duration on its node clock."""
    rank, launch, cols = [], [], {k: [] for k in ("start_ns", "dur_ns", "barrier_start_ns", "barrier_dur_ns")}
    for i, lc in enumerate(launches[SKIP:], start=SKIP):
        for rl in lc.ranks:

            def clock(us: float, node: int = rl.node) -> int:
                return model.node_clock_ns(node, us, 0)

            rank.append(rl.rank)
            launch.append(i)
            cols["start_ns"].append(clock(rl.kernel_start))
            cols["dur_ns"].append(clock(rl.kernel_end) - clock(rl.kernel_start))
            if rl.barrier_end is not None:
                cols["barrier_start_ns"].append(clock(rl.arrival))
                cols["barrier_dur_ns"].append(clock(rl.barrier_end) - clock(rl.arrival))
            else:
                cols["barrier_start_ns"].append(np.nan)
                cols["barrier_dur_ns"].append(np.nan)
    return waits.grid(np.array(rank), np.array(launch), {k: np.array(v, dtype=float) for k, v in cols.items()}, shape.ranks_per_node)


def group_time(launches: list[Any]) -> tuple[float, float]:
    """(launch-period span of the analysed launches, mean timed per-iteration max) of one run."""
    last_end = [max(r.kernel_end for r in lc.ranks) for lc in launches]
    period = last_end[-1] - last_end[SKIP - 1]
    timed = statistics.fmean(max(r.kernel_mode_us for r in lc.ranks) for lc in launches[SKIP:])
    return period, timed


_COUNTERFACTUALS: dict[Any, Any] = {}


def counterfactual(shape: Shape, knobs: Knobs, n: int, sync: bool, base: tuple[float, float], **removed: Any) -> dict[str, float]:
    """The cost of a cause: the group time it adds over the same draws without it (per analysed launch)."""
    case, key = (shape, knobs, n, sync), tuple(sorted(removed.items()))
    if _COUNTERFACTUALS.get("case") != case:
        _COUNTERFACTUALS.clear()  # one case at a time
        _COUNTERFACTUALS["case"] = case
    if key not in _COUNTERFACTUALS:
        _COUNTERFACTUALS[key] = _counterfactual(shape, knobs, n, sync, base, **removed)
    return _COUNTERFACTUALS[key]


def _counterfactual(shape: Shape, knobs: Knobs, n: int, sync: bool, base: tuple[float, float], **removed: Any) -> dict[str, float]:
    quiet = removed.pop("quiet", frozenset())
    launches, _ = run(shape, replace(knobs, **removed), n, sync, quiet)
    period, timed = group_time(launches)
    return {"period": (base[0] - period) / (n - SKIP), "timed": base[1] - timed}


@dataclass
class Case:
    name: str
    knobs: dict[str, Any]
    # the true cause(s): (key, evidence, ranks-or-node, what removes it)
    truth: list[tuple[str, dict[str, Any]]]


def cases(shape: Shape) -> list[Case]:
    w = shape.world
    r1, r2, last_node = 5 % w, (w - 2), shape.nodes - 1
    out = [
        Case("no_fault", {}, []),
        Case("late_rank_100", {"late_rank": r1, "late_us": 50.0, "late_prob": 1.0}, [("late_arrival", {"rank": r1, "late_rank": None})]),
        Case("late_rank_30", {"late_rank": r1, "late_us": 50.0, "late_prob": 0.3}, [("late_arrival", {"rank": r1, "late_rank": None})]),
        Case("late_rank_10", {"late_rank": r1, "late_us": 50.0, "late_prob": 0.1}, [("late_arrival", {"rank": r1, "late_rank": None})]),
        Case("late_node", {"late_node": last_node, "late_us": 50.0}, [("late_arrival_node", {"node": last_node, "late_node": None})]),
        Case("slow_rank", {"slow_rank": r2, "slow_factor": 1.15}, [("own_work", {"rank": r2, "slow_rank": None})]),
        Case("spiky_rank", {"spiky_rank": r2}, [("own_work", {"rank": r2, "spiky_rank": None})]),
        Case("slow_link", {"slow_link": (0, 1, 2.0)}, [("late_ending_node", {"node": 1, "slow_link": None})]),
    ]
    for role in ("TokenCopyToBuffer", "URMASendToken", "SelfCopyToken", "CalCumSum", "LocalWindowCopy"):
        out.append(
            Case(f"slow_role_{role}", {"slow_role": (6 % w, role, 1.5 if role != "LocalWindowCopy" else 10.0)}, [("role", {"rank": 6 % w, "slow_role": None})])
        )
    # two causes of different cost and frequency: a rank 8 us late in 90% of launches, and a rank whose own work is
    # 2-3x slower in 8% (the model has one late_rank knob: the acceptance case of two late ranks is a unit test on a
    # hand-built grid, tests/analysis/test_waits.py)
    out.append(Case("two_causes", {"late_rank": 1, "late_us": 8.0, "late_prob": 0.9, "spiky_rank": r2}, []))
    return out


def score_case(shape: Shape, case: Case, seed: int, sync: bool, n: int) -> dict[str, Any]:
    knobs = Knobs(seed=seed, **case.knobs)
    launches, model = run(shape, knobs, n, sync)
    base = group_time(launches)
    grid = msprof_view(launches, model, shape)
    t0 = time.perf_counter()
    result = waits.analyse(grid, SETTINGS, [], BOOT)
    elapsed = time.perf_counter() - t0
    strag = result["straggler"]
    named = strag["causes"]
    truth_cache: dict[tuple, dict[str, float]] = {}

    def truth_of(evidence: str, rank: int | None, node: int | None, group: frozenset[int] = frozenset()) -> dict[str, float]:
        """The true cost of what the analysis named: remove what could make that rank, node or group late there."""
        key = (evidence, rank, node, group)
        if key in truth_cache:
            return truth_cache[key]
        removed: dict[str, Any] = {}
        if group:
            ranks = set(group)
        else:
            ranks = {rank} if rank is not None else {r for r in range(shape.world) if r // shape.ranks_per_node == node}
        if evidence == "late_arrival":
            if knobs.late_rank in ranks:
                removed["late_rank"] = None
            if knobs.late_node is not None and knobs.late_node == node:
                removed["late_node"] = None
        else:  # own work, a late-ending node, in-kernel: the ranks' own extra work, or a slow link into the node
            removed["quiet"] = frozenset(ranks)
            if knobs.spiky_rank in ranks:
                removed["spiky_rank"] = None
            if knobs.slow_rank in ranks:
                removed["slow_rank"] = None
            if knobs.slow_role and knobs.slow_role[0] in ranks:
                removed["slow_role"] = None
            if knobs.slow_link and node is not None and node in knobs.slow_link[:2]:  # the link out of it, or into it
                removed["slow_link"] = None
        value = counterfactual(shape, knobs, n, sync, base, **removed) if removed else {"period": 0.0, "timed": 0.0}
        truth_cache[key] = value
        return value

    def in_kernel_truth() -> dict[str, float]:
        """What an in-kernel cause (no rank named) stands for: every rank's own extra work and slow roles, removed."""
        return counterfactual(shape, knobs, n, sync, base, quiet=frozenset(range(shape.world)), spiky_rank=None, slow_rank=None, slow_role=None)

    # The true causes and their costs, each knob removed alone (the same draws): a late host (a rank, a node), a slow
    # link, a rank's own work (slow_rank, spiky_rank, a slow role), and the built-in spikes of each rank that the
    # analysis names (they are true causes where they cost; they never set the top cause of a fault run).
    true_causes = []
    if knobs.late_rank is not None:
        c = counterfactual(shape, knobs, n, sync, base, late_rank=None)
        true_causes.append({"evidence": "late_arrival", "rank": knobs.late_rank, "node": None, "knob": "late_rank", **c})
    if knobs.late_node is not None:
        c = counterfactual(shape, knobs, n, sync, base, late_node=None)
        true_causes.append({"evidence": "late_arrival", "rank": None, "node": knobs.late_node, "knob": "late_node", **c})
    if knobs.slow_link:
        c = counterfactual(shape, knobs, n, sync, base, slow_link=None)
        true_causes.append({"evidence": "late_ending_node", "rank": None, "node": late_ending_node(launches[SKIP:], shape), "knob": "slow_link", **c})
    for attr in ("slow_rank", "spiky_rank"):
        if getattr(knobs, attr) is not None:
            c = counterfactual(shape, knobs, n, sync, base, **{attr: None})
            true_causes.append({"evidence": "own_work", "rank": getattr(knobs, attr), "node": None, "knob": attr, **c})
    if knobs.slow_role is not None:
        c = counterfactual(shape, knobs, n, sync, base, slow_role=None)
        evidence = "own_work" if knobs.slow_role[1] in OWN_ROLES else "in_kernel"
        true_causes.append({"evidence": evidence, "rank": knobs.slow_role[0], "node": None, "knob": f"slow_role {knobs.slow_role[1]}", **c})
    # a named rank's built-in spikes are a true cause where they cost more than min_cost_us
    knob_ranks = {c["rank"] for c in true_causes if c["evidence"] == "own_work"}
    for cause in named:
        if cause["evidence"] == "own_work" and cause["rank"] not in knob_ranks:
            c = counterfactual(shape, knobs, n, sync, base, quiet=frozenset({cause["rank"]}))
            if max(c["period"], c["timed"]) >= SETTINGS["min_cost_us"]:
                true_causes.append({"evidence": "own_work", "rank": cause["rank"], "node": None, "knob": "spikes", **c})
    true_causes.sort(key=lambda c: -max(c["period"], 0.0))
    min_cost = SETTINGS["min_cost_us"]
    real = [c for c in true_causes if max(c["period"], c["timed"]) >= min_cost]  # the knobs' causes that cost
    top_truth = real[0] if real else None
    top = named[0] if named else None
    if top_truth is None:
        right = top is None
    elif top is None:
        right = False
    else:
        right = matches(top, top_truth, shape)
    errors = []
    if top is not None and top_truth is not None and right:
        errors.append(abs(top["cost_us_per_launch"] - top_truth["period"]) / max(top_truth["period"], min_cost))
    false_alarms, victims = [], []
    culprit_ranks = {r for c in real for r in culprit_of(c, shape)}
    for cause in named:
        if cause.get("late_ending_ranks"):
            t = truth_of("in_kernel", None, None, frozenset(cause["late_ending_ranks"]))
        elif cause["evidence"] == "in_kernel":
            t = in_kernel_truth()
        else:
            t = truth_of(cause["evidence"], cause["rank"], cause["node"])
        if max(t["period"], t["timed"]) < min_cost and (cause["evidence"] != "in_kernel" or cause.get("late_ending_ranks")):
            false_alarms.append(label(cause))
            if cause["evidence"] in ("late_arrival", "own_work") and not set(cause["ranks"]) & culprit_ranks and real:
                victims.append(label(cause))
    return {
        "case": case.name,
        "shape": shape.label,
        "sync": sync,
        "seed": seed,
        "launches": n - SKIP,
        "truth": [{**c, "period": round(c["period"], 3), "timed": round(c["timed"], 3)} for c in true_causes],
        "named": [
            {
                "cause": label(c),
                "cost": round(c["cost_us_per_launch"], 3),
                "timed": round(c["cost_timed_us_per_launch"], 3),
                "ci": [round(x, 3) for x in c["cost_ci_us"]],
            }
            for c in named
        ],
        "top_right": right,
        "cost_error": errors[0] if errors else None,
        "false_alarms": false_alarms,
        "victims_blamed": victims,
        "analysis_s": round(elapsed, 3),
    }


def late_ending_node(launches: list[Any], shape: Shape) -> int:
    """From the events: the node whose rank ends last most often."""
    nodes = [max(lc.ranks, key=lambda r: r.kernel_end).node for lc in launches]
    return max(set(nodes), key=nodes.count)


def culprit_of(cause: dict[str, Any], shape: Shape) -> set[int]:
    if cause["rank"] is not None:
        return {cause["rank"]}
    if cause.get("knob") == "slow_link":  # the senders, and the node that ends late
        return {r for r in range(shape.world) if r // shape.ranks_per_node in (0, cause["node"])}
    return {r for r in range(shape.world) if r // shape.ranks_per_node == cause["node"]}


def label(cause: dict[str, Any]) -> str:
    if cause.get("late_ending_ranks"):
        return f"{cause['evidence']} late-ending ranks {','.join(map(str, cause['late_ending_ranks']))}"
    who = f"rank {cause['rank']}" if cause.get("rank") is not None else f"node {cause['node']}" if cause.get("node") is not None else "group"
    return f"{cause['evidence']} {who}"


def matches(named: dict[str, Any], truth: dict[str, Any], shape: Shape) -> bool:
    """The analysis's top cause is the true top cause: the same evidence and rank or node. A slow sender or counting
    role shows as the receivers' late ends: a late-ending node or an in-kernel wait, without blame, is right there."""
    if truth["evidence"] == "in_kernel":  # a slow sender or counting role: the receivers wait, the timeline blames nobody
        return named["evidence"] in ("in_kernel", "late_ending_node")
    if truth["evidence"] == "own_work" and named.get("late_ending_ranks"):  # localised to late-ending ranks, no blame
        return truth["rank"] in named["late_ending_ranks"]
    if truth["evidence"] == "late_ending_node":
        return named["evidence"] == "late_ending_node" and named["node"] == truth["node"]
    return named["evidence"] == truth["evidence"] and named["rank"] == truth["rank"] and named["node"] == truth["node"]


def summarise(rows: list[dict[str, Any]]) -> dict[str, Any]:
    faults = [r for r in rows if any(max(t["period"], t["timed"]) >= SETTINGS["min_cost_us"] and t["knob"] != "spikes" for t in r["truth"])]
    errors = [r["cost_error"] for r in rows if r["cost_error"] is not None]
    return {
        "runs": len(rows),
        "fault_runs": len(faults),
        "top_right_fault_runs": sum(r["top_right"] for r in faults) / max(1, len(faults)),
        "top_right_all_runs": sum(r["top_right"] for r in rows) / max(1, len(rows)),
        "cost_error_median": statistics.median(errors) if errors else None,
        "cost_error_max": max(errors) if errors else None,
        "victims_blamed": sum(len(r["victims_blamed"]) for r in rows),
        "false_alarms": sum(len(r["false_alarms"]) for r in rows),
    }


def table(rows: list[dict[str, Any]]) -> str:
    lines = [
        "| case | shape | sync | seed | top right | cost error | named (cost, timed; us/launch) | true causes (period, timed) | false alarms | victims |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        named = "; ".join(f"{c['cause']} ({c['cost']:.2f}, {c['timed']:.2f})" for c in r["named"]) or "none"
        truth = (
            "; ".join(
                f"{t['evidence']} {'rank ' + str(t['rank']) if t['rank'] is not None else 'node ' + str(t['node'])} ({t['period']:.2f}, {t['timed']:.2f})"
                for t in r["truth"]
            )
            or "none"
        )
        err = f"{100 * r['cost_error']:.0f}%" if r["cost_error"] is not None else "-"
        lines.append(
            f"| {r['case']} | {r['shape']} | {r['sync']} | {r['seed']} | {'yes' if r['top_right'] else 'NO'} | {err} | {named} | {truth} | {', '.join(r['false_alarms']) or '-'} | {', '.join(r['victims_blamed']) or '-'} |"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seeds", type=int, default=5)
    parser.add_argument("--launches", type=int, default=200 + SKIP, help="launches per run, the warm-up SKIP included")
    parser.add_argument("--quick", action="store_true", help="one seed, 2x8 only, synchronize_start on")
    parser.add_argument("--cases", default="", help="comma-separated case names (default: all)")
    parser.add_argument("--shapes", default="2x8,3x4", help="comma-separated NODESxRANKS_PER_NODE")
    parser.add_argument("--merge", nargs="*", default=[], help="no runs: write the table of these .jsonl files (runs split over processes)")
    parser.add_argument("--out", default=str(ROOT / "benchmarks" / "localisation_results"))
    args = parser.parse_args(argv)
    shapes = [Shape(2, 8)] if args.quick else [Shape(*map(int, shape.split("x"))) for shape in args.shapes.split(",")]
    syncs = [True] if args.quick else [True, False]
    seeds = range(1, 2) if args.quick else range(1, args.seeds + 1)
    wanted = set(filter(None, args.cases.split(",")))
    rows: list[dict[str, Any]] = []
    out = Path(args.out)
    if args.merge:
        rows = [json.loads(line) for path in args.merge for line in Path(path).read_text().splitlines() if line.strip()]
        return write(out, rows)
    partial = out.with_suffix(".jsonl")  # each row as it is scored: a long run can be read before it ends
    partial.write_text("")
    for shape in shapes:
        for case in cases(shape):
            if wanted and case.name not in wanted:
                continue
            for sync in syncs:
                for seed in seeds:
                    row = score_case(shape, case, seed, sync, args.launches)
                    rows.append(row)
                    with partial.open("a") as handle:
                        handle.write(json.dumps(row) + "\n")
                    print(
                        f"{row['case']:28s} {row['shape']} sync={sync!s:5s} seed={seed} top={'ok' if row['top_right'] else 'NO'} err={row['cost_error']} fa={row['false_alarms']} named={row['named'][:2]} truth={[(t['evidence'], t['rank'], t['node'], t['period'], t['timed']) for t in row['truth']][:3]}",
                        flush=True,
                    )
    partial.unlink()
    return write(out, rows)


def write(out: Path, rows: list[dict[str, Any]]) -> int:
    summary = summarise(rows)
    print(json.dumps(summary, indent=1))
    out.with_suffix(".json").write_text(json.dumps({"settings": SETTINGS, "summary": summary, "rows": rows}, indent=1) + "\n")
    out.with_suffix(".md").write_text("# Localisation benchmark\n\n```\n" + json.dumps(summary, indent=1) + "\n```\n\n" + table(rows) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
