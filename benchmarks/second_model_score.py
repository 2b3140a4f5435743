"""The timeline's cost account scored on data it was never tuned on: benchmarks/second_model.py's PROF_ trees.

Per case (shape x fault x seed) the model writes a plain msprof tree (node<k>/PROF_*, rank_id -1, no identity
sidecar), which is read as the timeline stage reads an import (analyze mode): the stage's own functions find the
PROF_ directories, number the ranks (cluster.infer_rank device_id), read every rank's target and barrier launches
from its db, build the launch table (timeline.skip_launches null = 0 for imported data) and the grid; the analysis is
waits.analyse with benchmarks/localisation.py's settings and bootstrap. It is scored by the rules localisation.py
scores by, benchmarks/scoring.py (which imports nothing of workflow/sim): the top cause right (the true top cause, or
one within TIE of its cost), the cost error |estimate - truth| / max(truth, min_cost_us), victims blamed, false alarms
(a named cause whose true cost is below min_cost_us). An analysis that raises is recorded with its error.

    python benchmarks/second_model_score.py                      # 3x8 and 2x8, every case, seeds 1-2
    python benchmarks/second_model_score.py --seeds 1 --cases late_rank_50_90pct --shapes 2x8
    python benchmarks/second_model_score.py --workflow late_rank_50_90pct   # also one analyze-mode Snakemake run
    python benchmarks/second_model_score.py --holdout     # the frozen hold-out (benchmarks/holdout.yaml), apart

The hold-out (--holdout) is scored only when an issue that changes the analysis is closed, never to tune: its seeds,
shapes and launches are benchmarks/holdout.yaml's (none of them tuned on), its tables
benchmarks/second_model_holdout_results.md and .json, and its record (set: holdout, with the commit and the command)
is appended to benchmarks/results.jsonl, apart from the tuned figures.
"""

from __future__ import annotations

import argparse
import datetime
import json
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import traceback
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "workflow" / "scripts"))
sys.path.insert(0, str(ROOT / "benchmarks"))

import scoring  # noqa: E402
import second_model as model  # noqa: E402
from _defaults import schema_default, timeline_settings  # noqa: E402

from dispatchprof.analysis import waits  # noqa: E402
from dispatchprof.analysis.rank_identity import assign_ranks  # noqa: E402
from dispatchprof.analysis.timeline import coverage_rows, kernel_regex, launch_columns, prof_sources, used_launches  # noqa: E402
from dispatchprof.formats.msprof import discover, read_prof_info  # noqa: E402
from dispatchprof.formats.target_kernels import read_target_kernels  # noqa: E402
from dispatchprof.report.cause_text import in_words  # noqa: E402
from dispatchprof.stages.timeline_parse import launch_columns_of  # noqa: E402

# the schema's defaults, as benchmarks/localisation.py analyses with them (tests/benchmarks/test_second_model.py holds
# them equal), so that the scores compare
SETTINGS, BOOT = timeline_settings()
TIE = scoring.TIE
# the schema's defaults, as the timeline parse reads them
CALL_CHAIN_LAUNCHES = schema_default("timeline", "call_chain_launches")
MAX_PLAUSIBLE_US = float(schema_default("stats", "max_plausible_us"))
HOLDOUT = ROOT / "benchmarks" / "holdout.yaml"
# what the hold-out's record in results.jsonl keeps of each run (the tables keep all)
HOLDOUT_COLUMNS = (
    "case",
    "shape",
    "seed",
    "case_cost",
    "fault_run",
    "top_right",
    "top_right_strict",
    "top_right_exact",
    "top_right_knob",
    "cost_error",
    "bound_holds",
    "estimate_error",
    "false_alarms",
    "victims_blamed",
    "error",
)
MERGE_COLUMNS = ["rank", "launch", "start_ns", "dur_ns", "gap_ns", "used", "barrier_start_ns", "barrier_dur_ns"]


def read_tree(root: Path, shape: model.Shape, skip: int = 0) -> tuple[waits.LaunchGrid, list[int]]:
    """The tree as the timeline stage reads an import: parse (stages/timeline_parse.parse_node_range's calls), then the
    merge's used launches and grid (stages/timeline.timeline_stats'). Returns the grid and the ranks without data."""
    target, barrier = kernel_regex(model.TARGET), kernel_regex(model.BARRIER)
    tables, missing = [], []
    for node in range(shape.nodes):
        infos = {p: read_prof_info(p) for p in discover(root / f"node{node}")}
        assignments = assign_ranks(prof_sources(node, infos), shape.ranks_per_node, {}, "device_id")
        for row in coverage_rows(range(node, node + 1), shape.ranks_per_node, assignments, infos, "device_id"):
            if row["state"] != "found":
                missing.append(row["global_rank"])
                continue
            info = infos[Path(row["prof_dir"])]
            kernels = read_target_kernels(
                info,
                lambda name: bool(target.match(name)),
                CALL_CHAIN_LAUNCHES,
                is_barrier=lambda name: bool(barrier.match(name)),
                skip_unended=True,
                max_us=MAX_PLAUSIBLE_US,
            )
            columns = launch_columns(kernels, skip)
            tables.append({**columns, "rank": np.full(len(columns["launch"]), row["global_rank"], dtype=np.int64)})
    used = used_launches([pa.table(launch_columns_of(tables)).select(MERGE_COLUMNS)])
    cols = {c: used[c].astype(float) for c in ("start_ns", "dur_ns", "barrier_start_ns", "barrier_dur_ns")}
    return waits.grid(used["rank"], used["launch"], cols, shape.ranks_per_node), missing


def true_causes(found: dict[str, Any], shape: model.Shape) -> list[dict[str, Any]]:
    """The model's causes in localisation.py's terms: a late host is a late arrival (of a rank, or of a node when it
    is all of a node's ranks), the rest own work; each rank's OS hiccups are its built-in spikes."""
    out = []
    for c in found["causes"]:
        ranks = list(c["ranks"])
        nodes = {shape.node_of(r) for r in ranks}
        whole_node = len(ranks) == shape.ranks_per_node and len(nodes) == 1
        out.append(
            {
                "knob": "spikes" if c["fault"] == "os_hiccups" else c["fault"],
                "evidence": "late_arrival" if c["kind"] == "host" else "own_work",
                "ranks": ranks,
                "rank": ranks[0] if len(ranks) == 1 else None,
                "node": next(iter(nodes)) if whole_node else None,
                "period": float(c["period"]),
                "timed": float(c["timed"]),
            }
        )
    return out


def score(named: list[dict[str, Any]], truths: list[dict[str, Any]], shape: model.Shape) -> dict[str, Any]:
    """The timeline columns localisation.py scores too (benchmarks/scoring.py: top right within TIE and strict, the
    top knob cause, cost error, bound, false alarms, victims), and this benchmark's own beside them: whether the top
    names some true cause that costs and its cost error against that one, whether it names the cause alone (exact),
    the named causes costed below min_cost_us."""
    min_cost = SETTINGS["min_cost_us"]
    scored = scoring.score(named, truths, shape, min_cost, TIE)
    top, matched, costed = scored.top, scored.matched, scored.costed
    # the top names a real cause, not the costliest: its cost is still scored against that cause's truth
    some = next((t for t in scored.real if scoring.matches(top, t)), None) if top is not None else None
    some_error = scoring.cost_error(top["cost_us_per_launch"], some["period"], min_cost) if some and costed else None
    # scoring.matches counts a rank's own work as found when it is among the late-ending ranks of an in-kernel cause,
    # however many ranks that list holds: "exact" asks the top to name the cause itself
    exact = scored.right and (
        top is None or not (top.get("late_ending_ranks") and set(top["late_ending_ranks"]) != set(matched["ranks"]))
    )
    below = [
        scoring.label(c) for c in named if c["cost_us_per_launch"] < min_cost and not c.get("cost_not_established")
    ]
    columns = scored.columns()
    return {
        **{k: columns[k] for k in ("fault_run", "top_right", "top_right_strict")},
        "top_right_exact": bool(exact),
        "top_right_knob": columns["top_right_knob"],
        "top_is_a_true_cause": some is not None,
        "top_cost_error_against_its_cause": some_error,
        **{k: columns[k] for k in ("cost_error", "cost_bound", "bound_holds", "estimate_error")},
        **{k: columns[k] for k in ("false_alarms", "victims_blamed")},
        "named_below_min_cost": below,
        "top_cost_not_established": top is not None and not costed,
    }


def clock_errors(clocks: dict[str, Any]) -> dict[str, Any]:
    """The node clocks the analysis fitted against the model's: offset error per node (us), node 2's drift error
    (ppm) where it was resolved, or its state."""
    p = model.Params()
    offsets = {n: c["offset_us"] - p.node_offset * int(n) for n, c in clocks.items() if c.get("offset_us") is not None}
    drift = clocks.get(str(p.drift_node), {})
    return {
        "offset_error_us_max": max((abs(e) for e in offsets.values()), default=None),
        "drift_error_ppm": drift["drift_ppm"] - p.drift_ppm
        if drift.get("drift_ppm") is not None
        else drift.get("drift_state"),
    }


def raised_in(exc: BaseException) -> str:
    """The deepest frame of the workflow's library (or of this benchmark) the exception passed: where to look."""
    frames = [
        f for f in traceback.extract_tb(exc.__traceback__) if "dispatchprof" in f.filename or "benchmarks" in f.filename
    ]
    return f"{Path(frames[-1].filename).name}:{frames[-1].lineno} {frames[-1].name}" if frames else "?"


def score_case(shape: model.Shape, case: model.Case, seed: int, launches: int, work: Path) -> dict[str, Any]:
    tree = work / f"{shape.label}-{case.name}-{seed}"
    found = model.generate(tree, shape, case, seed, launches)
    truths = true_causes(found, shape)
    row: dict[str, Any] = {
        "case": case.name,
        "shape": shape.label,
        "seed": seed,
        "launches": launches,
        "coupled": case.coupled,
        "case_cost": round(found["total"]["period"], 3),
        "truth": [
            {k: t[k] for k in ("knob", "evidence", "rank", "node", "period", "timed")}
            for t in truths
            if max(t["period"], t["timed"]) >= 0.1
        ],
    }
    t0 = time.perf_counter()
    try:
        grid, missing = read_tree(tree, shape)
        result = in_words(waits.analyse(grid, SETTINGS, missing, BOOT), SETTINGS)  # the explanation, as the stage's
    except Exception as exc:  # the point is to record what fails on data it was not tuned on
        real = [t for t in truths if max(t["period"], t["timed"]) >= SETTINGS["min_cost_us"] and t["knob"] != "spikes"]
        row.update(
            fault_run=bool(real),
            top_right=False,
            top_right_strict=False,
            top_right_exact=False,
            top_right_knob=False,
            cost_error=None,
            bound_holds=None,
            estimate_error=None,
        )
        row.update(
            false_alarms=[],
            victims_blamed=[],
            named_below_min_cost=[],
            top_cost_not_established=False,
            named=[],
            straggler=None,
            coupling=None,
            node_clock=None,
        )
        row.update(top_is_a_true_cause=False, top_cost_error_against_its_cause=None)
        row["error"] = f"{type(exc).__name__}: {exc}"
        row["error_at"] = raised_in(exc)
        shutil.rmtree(tree)
        return row
    row["analysis_s"] = round(time.perf_counter() - t0, 3)
    strag = result["straggler"]
    named = strag["causes"]
    row["coupling"] = result["coupling"]["state"]
    row["node_clock"] = clock_errors(result["node_clock"])
    row["straggler"] = {"evidence": strag.get("evidence"), "explanation": strag.get("explanation")}
    row["named"] = [
        {
            "cause": scoring.label(c),
            "cost": round(c["cost_us_per_launch"], 3),
            "timed": round(c["cost_timed_us_per_launch"], 3),
            "ci": [round(x, 3) for x in c["cost_ci_us"]],
            **({"at_most": round(c["cost_bound_us"][1], 3)} if c.get("cost_bound_us") else {}),
            **({"not_established": True} if c.get("cost_not_established") else {}),
        }
        for c in named
    ]
    row.update(score(named, truths, shape))
    row["error"] = None
    shutil.rmtree(tree)
    return row


def summarise(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """scoring.summarise's figures, with this benchmark's own (exact, a true cause, below min_cost, analysis errors)
    and the node clocks' errors."""
    common = scoring.summarise(rows)
    faults = [r for r in rows if r["fault_run"]]
    clocked = [r for r in rows if r.get("node_clock")]
    drifts = [
        r["node_clock"]["drift_error_ppm"] for r in clocked if isinstance(r["node_clock"]["drift_error_ppm"], float)
    ]
    return {
        **{
            k: common[k] for k in ("runs", "fault_runs", "top_right_fault_runs", "top_is_the_top_knob_cause_fault_runs")
        },
        "top_right_exact_fault_runs": scoring.rate(faults, "top_right_exact"),
        "top_right_all_runs": common["top_right_all_runs"],
        "top_is_a_true_cause_fault_runs": scoring.rate(faults, "top_is_a_true_cause"),
        **{
            k: common[k]
            for k in (
                "cost_error_median",
                "cost_error_max",
                "bounded_fault_runs",
                "bounds_holding",
                "victims_blamed",
                "false_alarms",
            )
        },
        "named_below_min_cost": sum(len(r["named_below_min_cost"]) for r in rows),
        "top_cost_not_established_fault_runs": sum(bool(r.get("top_cost_not_established")) for r in faults),
        "analysis_errors": sum(r["error"] is not None for r in rows),
        # the node clocks fitted from the barrier's ends against the model's (+1.7 ms x node; node 2 15 ppm fast)
        "node_offset_error_us_max": max(
            (
                r["node_clock"]["offset_error_us_max"]
                for r in clocked
                if r["node_clock"]["offset_error_us_max"] is not None
            ),
            default=None,
        ),
        "node2_drift_error_ppm_max": max((abs(e) for e in drifts), default=None),
        "node2_drift_not_resolved_runs": sum(
            1
            for r in clocked
            if int(r["shape"].split("x")[0]) > model.Params().drift_node
            and not isinstance(r["node_clock"]["drift_error_ppm"], float)
        ),
    }


def share(rows: list[dict[str, Any]], key: str) -> str:
    return f"{sum(r[key] for r in rows)}/{len(rows)}" if rows else "-"


def case_table(rows: list[dict[str, Any]]) -> str:
    """Per case and shape: runs, the case's true cost, top cause right, cost errors, false alarms, victims, errors."""
    lines = [
        "| case | shape | runs | true cost of the case (us/launch, mean) | top = top knob cause | top = top true "
        "cause | of which named alone (no late-ending-ranks list) | top = a true cause (its cost error max) | cost "
        "error median | cost error max | cost a bound: truth within | "
        "false alarms | victims | named below min_cost | analysis raised |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for case, shape in dict.fromkeys((r["case"], r["shape"]) for r in rows):
        mine = [r for r in rows if r["case"] == case and r["shape"] == shape]
        faults = [r for r in mine if r["fault_run"]]
        errors = [r["cost_error"] for r in mine if r["cost_error"] is not None]
        bounded = [r for r in faults if r.get("bound_holds") is not None]

        cost = f"{statistics.mean(r['case_cost'] for r in mine):.1f}"
        err = f"{100 * statistics.median(errors):.0f}% | {100 * max(errors):.0f}%" if errors else "- | -"
        within = f"{sum(r['bound_holds'] for r in bounded)}/{len(bounded)}" if bounded else "-"
        counts = " | ".join(
            str(sum(len(r[k]) for r in mine)) for k in ("false_alarms", "victims_blamed", "named_below_min_cost")
        )
        raised = sum(r["error"] is not None for r in mine)
        own = [
            r["top_cost_error_against_its_cause"] for r in faults if r["top_cost_error_against_its_cause"] is not None
        ]
        some = share(faults, "top_is_a_true_cause") + (f" ({100 * max(own):.0f}%)" if own else "")
        lines.append(
            f"| {case} | {shape} | {len(mine)} | {cost} | {share(faults, 'top_right_knob')} | "
            f"{share(faults, 'top_right')} | {share(faults, 'top_right_exact')} "
            f"| {some} | {err} | {within} | {counts} | {raised} |"
        )
    return "\n".join(lines)


def run_table(rows: list[dict[str, Any]]) -> str:
    lines = [
        "| case | shape | seed | coupling read | top right | cost error | named (cost, timed; us/launch) "
        "| true causes >= 0.1 us (period, timed) | false alarms | victims | analysis raised |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        named = "; ".join(
            f"{c['cause']} (cost not established)"
            if c.get("not_established")
            else f"{c['cause']} "
            f"({'at most ' + format(c['at_most'], '.2f') + ', estimate ' if 'at_most' in c else ''}{c['cost']:.2f}, "
            f"{c['timed']:.2f})"
            for c in r["named"]
        )
        truth = "; ".join(
            f"{t['knob']}: {t['evidence']} "
            f"{'rank ' + str(t['rank']) if t['rank'] is not None else 'node ' + str(t['node']) if t['node'] is not None else 'ranks'} "
            f"({t['period']:.2f}, {t['timed']:.2f})"
            for t in r["truth"][:6]
        )
        err = f"{100 * r['cost_error']:.0f}%" if r["cost_error"] is not None else "-"
        if r.get("bound_holds") is not None:
            err = (
                f"at most {r['cost_bound'][1]:.1f}: {'holds' if r['bound_holds'] else 'FAILS'} "
                f"(estimate {100 * r['estimate_error']:.0f}%)"
            )
        raised = f"{r['error']} ({r['error_at']})".replace("|", "/") if r["error"] else "-"
        lines.append(
            f"| {r['case']} | {r['shape']} | {r['seed']} | {r['coupling'] or '-'} | "
            f"{'yes' if r['top_right'] else 'NO'} | {err} | {named or 'none'} | {truth or 'none'} | "
            f"{', '.join(r['false_alarms']) or '-'} | {', '.join(r['victims_blamed']) or '-'} | {raised} |"
        )
    return "\n".join(lines)


def commit() -> str:
    done = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"], capture_output=True, text=True)
    status = subprocess.run(
        ["git", "-C", str(ROOT), "status", "--porcelain", "--untracked-files=no"], capture_output=True, text=True
    ).stdout
    own = ("second_model_results", "second_model_holdout_results", "results.jsonl")
    dirty = [
        line for line in status.splitlines() if not any(o in line for o in own)
    ]  # its own output: no change of code
    return done.stdout.strip() + (" (with uncommitted changes)" if dirty else "")


def write(
    out: Path,
    rows: list[dict[str, Any]],
    seeds: list[int],
    workflow: dict[str, Any] | None,
    holdout: dict[str, Any] | None = None,
) -> tuple[str, str, dict[str, Any]]:
    """The tables (``out``.md, .json); returns when, at which commit, and the summary. A hold-out's say so."""
    summary = summarise(rows)
    when, at = (
        datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC"),
        commit(),
    )  # before this writes its own results
    head = [
        "# Second model benchmark (benchmarks/second_model_score.py): "
        "the timeline's cost account on data it was never tuned on",
        "",
        f"Run {when} at commit {at}; seeds {', '.join(map(str, seeds))}; "
        f"{', '.join(sorted({str(r['launches']) for r in rows}))} launches per run, all analysed "
        "(timeline.skip_launches null: 0 for imported data). Generator: benchmarks/second_model.py (no code of "
        "workflow/sim or of the analysis); reader: the timeline parse's own calls on plain msprof PROF_ trees; "
        f"analysis: waits.analyse with benchmarks/localisation.py's settings {json.dumps(SETTINGS)} and bootstrap "
        f"{json.dumps(BOOT)}. Scored as localisation.py scores: the top cause right when it is the true top cause or "
        f"one within {TIE:.0%} of its cost; cost error = |estimate - truth| / max(truth, min_cost_us); a "
        "false alarm is a named cause whose true cost (its removal, the same draws) is below min_cost_us.",
        "",
    ]
    if holdout:
        head += [
            f"**The frozen hold-out** (benchmarks/holdout.yaml: {json.dumps(holdout)}): scored only when an issue that "
            "changes the analysis is closed, never used to tune; report these figures apart from the tuned ones, with "
            "the commit and the command."
            + (" **Partial** (--cases): not the whole hold-out." if holdout.get("partial") else ""),
            "",
        ]
    head += ["```", json.dumps(summary, indent=1), "```", ""]
    if workflow:
        head += [
            "## One case through the workflow's analyze mode",
            "",
            "```",
            json.dumps(workflow, indent=1),
            "```",
            "",
        ]
    shapes = [model.Shape(*map(int, label.split("x"))) for label in dict.fromkeys(r["shape"] for r in rows)]
    body = legend(shapes) + ["## Per case", "", case_table(rows), "", "## Per run", "", run_table(rows), ""]
    out.with_suffix(".md").write_text("\n".join(head + body))
    payload = {
        **({"set": "holdout", "holdout": holdout} if holdout else {}),
        "run": when,
        "commit": at,
        "settings": SETTINGS,
        "bootstrap": BOOT,
        "seeds": seeds,
        "summary": summary,
        "workflow_run": workflow,
        "rows": rows,
    }
    out.with_suffix(".json").write_text(json.dumps(payload, indent=1) + "\n")
    print("\n".join(head + ["## Per case", "", case_table(rows)]))
    return when, at, summary


def workflow_run(shape: model.Shape, case: model.Case, seed: int, launches: int, work: Path) -> dict[str, Any]:
    """One case through `snakemake --until timeline` in analyze mode (a copy of the workflow, the tree as
    analyze.timeline_dir): its stats.json's causes beside what read_tree + waits.analyse name here. The workflow runs
    the bootstrap with its own config (stats.bootstrap), so CIs may differ; the causes and costs should not."""
    import yaml

    tree = work / f"workflow-{case.name}"
    model.generate(tree, shape, case, seed, launches)
    copy = work / "workflow-copy"
    shutil.copytree(
        ROOT,
        copy,
        ignore=shutil.ignore_patterns("results", ".snakemake", ".git", "__pycache__", "benchmarks", "tests", "build"),
    )
    overlay = {
        "mode": "analyze",
        "cluster": {"nodes": shape.nodes, "ranks_per_node": shape.ranks_per_node},
        "analyze": {"timeline_dir": str(tree)},
        "timeline": {"crosscheck": "off", "waits": {k: v for k, v in SETTINGS.items()}},
    }
    (copy / "overlay.yaml").write_text(yaml.safe_dump(overlay))
    cmd = [
        sys.executable,
        "-m",
        "snakemake",
        "--cores",
        "1",
        "--until",
        "timeline",
        "--configfile",
        "config/config.yaml",
        "overlay.yaml",
    ]
    started = time.perf_counter()
    done = subprocess.run(cmd, cwd=copy, capture_output=True, text=True, timeout=1800)
    stats_path = copy / "results" / "baseline" / "timeline" / "stats.json"
    stats = json.loads(stats_path.read_text()) if stats_path.is_file() else {}
    status_path = copy / "results" / "baseline" / "timeline" / "status.json"
    status = json.loads(status_path.read_text()) if status_path.is_file() else {}
    grid, missing = read_tree(tree, shape)
    here = waits.analyse(grid, SETTINGS, missing, BOOT)["straggler"]["causes"]
    result = {
        "case": case.name,
        "shape": shape.label,
        "seed": seed,
        "snakemake_exit": done.returncode,
        "wall_s": round(time.perf_counter() - started, 1),
        "timeline_state": status.get("state"),
        "timeline_reason": status.get("reason"),
        "workflow_causes": [(scoring.label(c), round(c["cost_us_per_launch"], 2)) for c in stats.get("causes", [])],
        "benchmark_causes": [(scoring.label(c), round(c["cost_us_per_launch"], 2)) for c in here],
    }
    if done.returncode != 0:
        result["stderr_tail"] = done.stderr[-1500:]
    shutil.rmtree(copy)
    shutil.rmtree(tree)
    return result


def load_holdout(path: Path = HOLDOUT) -> dict[str, Any]:
    """benchmarks/holdout.yaml's set: seeds, shapes (NODESxRANKS_PER_NODE), launches and cases ("all" or names of
    second_model.cases). Refused (ValueError) where a key is missing or a case is unknown."""
    import yaml

    found = yaml.safe_load(path.read_text())
    missing = [k for k in ("seeds", "shapes", "launches", "cases") if k not in found]
    if missing:
        raise ValueError(f"{path}: no {', '.join(missing)}")
    shapes = [model.Shape(*map(int, s.split("x"))) for s in found["shapes"]]
    known = {c.name for shape in shapes for c in model.cases(shape)}
    cases = found["cases"]
    if cases != "all" and not set(cases) <= known:
        raise ValueError(f"{path}: unknown cases {sorted(set(cases) - known)}")
    return {
        "seeds": [int(s) for s in found["seeds"]],
        "shapes": [s.label for s in shapes],
        "launches": int(found["launches"]),
        "cases": cases,
    }


def holdout_record(
    when: str, at: str, command: str, holdout: dict[str, Any], summary: dict[str, Any], rows: list[dict[str, Any]]
) -> dict[str, Any]:
    """The hold-out's line of results.jsonl: set holdout, when, the commit and the command, the set, the settings,
    the summary and a row per run (HOLDOUT_COLUMNS)."""
    return {
        "when": when,
        "benchmark": "second_model_score",
        "set": "holdout",
        "commit": at,
        "command": command,
        "holdout": holdout,
        "settings": SETTINGS,
        "bootstrap": BOOT,
        "summary": summary,
        "rows": [{k: r.get(k) for k in HOLDOUT_COLUMNS} for r in rows],
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seeds", default=None, help="comma-separated seeds (default 1,2)")
    parser.add_argument("--launches", type=int, default=None, help="launches per run (default 300)")
    parser.add_argument("--shapes", default=None, help="comma-separated NODESxRANKS_PER_NODE (default 3x8,2x8)")
    parser.add_argument("--cases", default="", help="comma-separated case names (default: all)")
    parser.add_argument(
        "--workflow",
        default="",
        help="also run this case (first shape, first seed) through the workflow's analyze mode",
    )
    parser.add_argument(
        "--holdout",
        action="store_true",
        help="score exactly benchmarks/holdout.yaml's set (no --seeds, --shapes, --launches or --workflow; --cases "
        "only to try it out: the record says partial) and append its record (set: holdout) to --results",
    )
    parser.add_argument("--results", type=Path, default=ROOT / "benchmarks" / "results.jsonl")
    parser.add_argument("--out", default=None, help="tables' path without suffix (default second_model_results, "
                        "second_model_holdout_results with --holdout)")  # fmt: skip
    args = parser.parse_args(argv)
    wanted = set(filter(None, args.cases.split(",")))
    holdout = None
    if args.holdout:
        given = [f"--{k}" for k in ("seeds", "shapes", "launches") if getattr(args, k) is not None]
        if given or args.workflow:
            parser.error(
                f"--holdout scores exactly {HOLDOUT.name}'s set: not with {', '.join(given or ['--workflow'])}"
            )
        holdout = load_holdout()
        args.seeds, args.shapes, args.launches = (
            ",".join(map(str, holdout["seeds"])),
            ",".join(holdout["shapes"]),
            holdout["launches"],
        )
        if wanted:
            holdout["partial"] = sorted(wanted)
    seeds = [int(s) for s in (args.seeds or "1,2").split(",")]
    shapes = [model.Shape(*map(int, s.split("x"))) for s in (args.shapes or "3x8,2x8").split(",")]
    launches = args.launches or 300
    out = Path(
        args.out or ROOT / "benchmarks" / ("second_model_holdout_results" if holdout else "second_model_results")
    )
    rows = []
    with tempfile.TemporaryDirectory(prefix="second_model_") as tmp:
        work = Path(tmp)
        for shape in shapes:
            for case in model.cases(shape):
                if wanted and case.name not in wanted:
                    continue
                for seed in seeds:
                    rows.append(score_case(shape, case, seed, launches, work))
                    r = rows[-1]
                    print(
                        f"{r['case']:30s} {r['shape']} seed={seed} top={'ok' if r['top_right'] else 'NO'} "
                        f"err={r['cost_error']} named={[(c['cause'], c['cost']) for c in r['named'][:2]]} "
                        f"cost={r['case_cost']} raised={r['error']}",
                        flush=True,
                    )
        workflow = None
        if args.workflow:
            case = {c.name: c for c in model.cases(shapes[0])}[args.workflow]
            workflow = workflow_run(shapes[0], case, seeds[0], launches, work)
            print(json.dumps(workflow, indent=1), flush=True)
    when, at, summary = write(out, rows, seeds, workflow, holdout)
    if holdout:
        command = shlex.join(["python", "benchmarks/second_model_score.py", *(sys.argv[1:] if argv is None else argv)])
        with args.results.open("a") as handle:
            handle.write(json.dumps(holdout_record(when, at, command, holdout, summary, rows)) + "\n")
        print(f"hold-out record (set: holdout) appended to {args.results}", flush=True)
    return 0


def legend(shapes: list[model.Shape]) -> list[str]:
    """What each case does, in the model's terms (ranks for each shape)."""
    lines = ["## The cases", "", "| case | shape | coupled | faults (us) |", "|---|---|---|---|"]
    for shape in shapes:
        for case in model.cases(shape):
            faults = (
                "; ".join(describe(f, shape) for f in case.faults)
                or "none (a false-alarm check: only the built-in jitter and OS hiccups)"
            )
            lines.append(
                f"| {case.name} | {shape.label} | "
                f"{'yes' if case.coupled else 'no: ranks do not wait for each other in the kernel'} | {faults} |"
            )
    return lines + [""]


def describe(f: model.Fault, shape: model.Shape) -> str:
    who = (
        f"node {shape.node_of(f.ranks[0])}"
        if len(f.ranks) == shape.ranks_per_node
        else f"rank {', '.join(map(str, f.ranks))}"
    )
    when = "every launch" if f.prob >= 1.0 else f"{f.prob:.0%} of launches"
    if f.kind == "host":
        return f"{f.name}: the host of {who} late by {f.extra:g} in {when}"
    if f.kind == "work":
        return f"{f.name}: own work of {who} +{f.extra:g} in {when}" + (
            ", peers tied (they end with it)" if f.tied else ""
        )
    if f.kind == "spikes":
        return f"{f.name}: own work of {who} +{f.spike[0]:g}-{f.spike[1]:g} in {when}"
    return f"{f.name}: own work of {who} x {f.factor:g}"


if __name__ == "__main__":
    sys.exit(main())
