"""Benchmarks (not timed tests): our timeline analysis vs msprof-analyze on the same synthetic collection.

For each scale NODESxRANKSxLAUNCHES it generates a collection (benchmarks/generate.py, cached under --work),
then times and measures peak memory of the whole process tree, median of --repeat runs, of:
  (a) library: benchmarks/analyze_library.py (node groups in 2 processes, as the workflow's two parse jobs);
  (b) end to end: `snakemake --cores 2` in analyze mode on a copy of the workflow, report included;
  (c) msprof-analyze cluster -m compute_op_sum, when msprof-analyze is installed;
and prints the ratios. It also times `snakemake -n` for a large cluster, and re-analysis: after the analyze run at
--reanalysis-scale and after a complete run of the demo, one report, pmu and timeline.waits key changed in turn (the
jobs planned, the run's time against the first run's). Each run appends one JSON line to
benchmarks/results.jsonl (diffable over time).

    python benchmarks/run.py --scales 2x8x1000,8x8x1000 --repeat 3
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import PY, ROOT, measure, scontrol_stub_env, workflow_copy  # noqa: E402


def median_of(runs: list[dict]) -> dict:
    return {
        "wall_s": statistics.median(r["wall_s"] for r in runs),
        "peak_rss_mib": statistics.median(r["peak_rss_mib"] for r in runs),
        "runs": len(runs),
    }


def bench_scale(
    scale: str,
    work: Path,
    repeat: int,
    msprof_analyze: str | None,
    env: dict,
    keep_data: bool = True,
    reanalysis: bool = False,
) -> dict:
    nodes, rpn, launches = (int(x) for x in scale.split("x"))
    data = work / "data" / scale
    if not data.exists():
        subprocess.run(
            [
                PY,
                str(ROOT / "benchmarks" / "generate.py"),
                "--nodes",
                str(nodes),
                "--ranks-per-node",
                str(rpn),
                "--launches",
                str(launches),
                "--out",
                str(data),
            ],
            check=True,
        )
    size = sum(p.stat().st_size for p in data.rglob("*") if p.is_file())
    result = {"scale": scale, "input_mb": round(size / 1e6, 1)}
    overlay = {
        "mode": "analyze",
        "cluster": {"nodes": nodes, "ranks_per_node": rpn},
        "shape": {"num_experts": nodes * rpn * 8},
        "analyze": {"timeline_dir": str(data)},
        # (b) must not include (c): the optional cross-check runs msprof-analyze itself.
        "timeline": {"crosscheck": "off"},
    }
    # (a), (b) and (c) alternate within each repeat: this machine's speed drifts by tens of percent over minutes
    # (a shared VM), and a ratio should compare runs made at the same time.
    runs: dict[str, list[dict]] = {"library": [], "end_to_end": [], "msprof_analyze": []}
    for i in range(repeat):
        runs["library"].append(
            measure([PY, str(ROOT / "benchmarks" / "analyze_library.py"), str(data), str(nodes), str(rpn)], env=env)
        )
        wf = workflow_copy(work / "wf")
        (wf / "bench.yaml").write_text(json.dumps(overlay))
        runs["end_to_end"].append(
            measure(
                [PY, "-m", "snakemake", "--cores", "2", "--quiet", "--configfile", "config/config.yaml", "bench.yaml"],
                cwd=wf,
                env=env,
            )
        )
        if reanalysis and i == repeat - 1:
            result["reanalysis"] = bench_reanalysis(wf, overlay, env, runs["end_to_end"][-1])
        if msprof_analyze:
            out = work / "msprof_analyze_out" / f"{scale}_{i}"
            shutil.rmtree(out, ignore_errors=True)
            runs["msprof_analyze"].append(
                measure(
                    [msprof_analyze, "cluster", "-d", str(data), "-m", "compute_op_sum", "-o", str(out), "--force"],
                    env=env,
                )
            )
    result.update({part: median_of(measured) for part, measured in runs.items() if measured})
    if msprof_analyze:
        ref = result["msprof_analyze"]
        result["ratios"] = {
            "library_speedup": ref["wall_s"] / result["library"]["wall_s"],
            "library_memory_fraction": result["library"]["peak_rss_mib"] / ref["peak_rss_mib"],
            "end_to_end_speedup": ref["wall_s"] / result["end_to_end"]["wall_s"],
            "end_to_end_memory_fraction": result["end_to_end"]["peak_rss_mib"] / ref["peak_rss_mib"],
        }
    if not keep_data:  # goal 3's collections are GBs: generated on the fly, deleted after
        shutil.rmtree(data)
    return result


def bench_dry_run(scale: str, work: Path, env: dict) -> dict:
    nodes, rpn = (int(x) for x in scale.split("x"))
    wf = workflow_copy(work / "wf_dry")
    overlay = wf / "dry.yaml"
    overlay.write_text(
        json.dumps(
            {
                "cluster": {"nodes": nodes, "ranks_per_node": rpn},
                "shape": {"num_experts": nodes * rpn * 2, "num_max_tokens_per_rank": 256},
            }
        )
    )
    return {
        "scale": scale,
        **measure(
            [PY, "-m", "snakemake", "-n", "--quiet", "--configfile", "config/config.yaml", str(overlay)],
            cwd=wf,
            env=env,
        ),
    }


# Re-analysis (issue "Analysis changes never re-collect"): one key of each kind changed after a complete run.
REANALYSIS_KEYS = {
    "report": ("report", {"insight_version": "8.1.RC1"}),
    "pmu": ("pmu", {"busiest_min_excess": 0.05}),
    "timeline.waits": ("timeline", {"waits": {"own_work_min_us": 7.5}}),
}
COLLECTION_RULES = ("_collect", "_driver", "_import", "env_capture", "build", "correctness")


def planned_rules(wf: Path, overlay: Path, env: dict) -> list[str]:
    """The rules `snakemake -n` plans (one name per job)."""
    out = subprocess.run(
        [PY, "-m", "snakemake", "-n", "--configfile", "config/config.yaml", str(overlay)],
        cwd=wf,
        env=env,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    return sorted(
        line.split()[1].rstrip(":")
        for line in out.splitlines()
        if line.startswith(("rule ", "localrule ")) and not line.startswith("rule all")
    )


def with_section(overlay: dict, section: str, values: dict) -> dict:
    changed = json.loads(json.dumps(overlay))
    target = changed.setdefault(section, {})
    for key, value in values.items():
        target[key] = {**target.get(key, {}), **value} if isinstance(value, dict) else value
    return changed


def bench_reanalysis(wf: Path, overlay: dict, env: dict, first: dict) -> dict:
    """After a complete run in ``wf`` (``first`` measured it): per kind of key, the jobs `snakemake -n` plans and the
    wall time of the run that follows, against the first run's."""
    out: dict = {"first_wall_s": first["wall_s"]}
    for kind, (section, values) in REANALYSIS_KEYS.items():
        path = wf / f"reanalysis_{kind}.json"
        changed = with_section(overlay, section, values)
        path.write_text(json.dumps(changed))
        rules = planned_rules(wf, path, env)
        run = measure(
            [PY, "-m", "snakemake", "--cores", "2", "--quiet", "--configfile", "config/config.yaml", str(path)],
            cwd=wf,
            env=env,
        )
        out[kind] = {
            "planned": rules,
            "collections_planned": [
                r for r in rules if any(r.endswith(c) or r.startswith(c) for c in COLLECTION_RULES)
            ],
            "wall_s": run["wall_s"],
            "fraction_of_first": run["wall_s"] / first["wall_s"],
        }
        overlay = changed
    return out


def bench_demo_reanalysis(work: Path, env: dict) -> dict:
    """The default demo (collect mode, simulated cluster) after a complete run: an analysis-only change."""
    wf = workflow_copy(work / "wf_demo")
    first = measure([PY, "-m", "snakemake", "--cores", "2", "--quiet"], cwd=wf, env=env)
    return bench_reanalysis(wf, {}, env, first)


def ranks_of(scale: str) -> int:
    nodes, rpn, _ = (int(x) for x in scale.split("x"))
    return nodes * rpn


def growth(results: list[dict], small: int, large: int) -> dict | None:
    """End-to-end time and memory from `small` to `large` ranks at the same launches, against linear growth."""
    by_ranks = {(ranks_of(r["scale"]), r["scale"].split("x")[2]): r for r in results}
    for (ranks, launches), a in by_ranks.items():
        b = by_ranks.get((large, launches))
        if ranks == small and b:
            return {
                "from": a["scale"],
                "to": b["scale"],
                "linear": large / small,
                "time": b["end_to_end"]["wall_s"] / a["end_to_end"]["wall_s"],
                "memory": b["end_to_end"]["peak_rss_mib"] / a["end_to_end"]["peak_rss_mib"],
            }
    return None


def goals(record: dict) -> list[dict]:
    """Every goal of the performance issue with what this run measured (None: the run did not include it)."""
    by_scale = {r["scale"]: r for r in record["scales"]}

    def ratio(scale: str, key: str) -> float | None:
        return by_scale.get(scale, {}).get("ratios", {}).get(key)

    def e2e(scale: str, key: str) -> float | None:
        return by_scale.get(scale, {}).get("end_to_end", {}).get(key)

    def reanalysis(data: dict | None, kind: str, key: str) -> float | None:
        return data[kind][key] if data else None

    grown = growth(record["scales"], 256, 2048)
    fixed = record.get("fixed_cost", {}).get("wall_s")
    dry = record.get("dry_run", {}).get("wall_s")
    rows = [
        ("1", "end to end vs msprof-analyze at 2x8x1000", ratio("2x8x1000", "end_to_end_speedup"), ">=", 0.8, "x"),
        ("1", "end to end vs msprof-analyze at 32x8x2000", ratio("32x8x2000", "end_to_end_speedup"), ">=", 2.0, "x"),
        (
            "1",
            "end-to-end peak memory / msprof-analyze's at 32x8x2000",
            ratio("32x8x2000", "end_to_end_memory_fraction"),
            "<=",
            0.5,
            "",
        ),
        ("1", "fixed cost (analyze run of a tiny collection)", fixed, "<=", 3.0, " s"),
        ("2", "library vs msprof-analyze at 32x8x2000", ratio("32x8x2000", "library_speedup"), ">=", 10.0, "x"),
        ("3", "end to end at 128x16x2000 (2,048 ranks)", e2e("128x16x2000", "wall_s"), "<=", 60.0, " s"),
        ("3", "end-to-end peak memory at 128x16x2000", e2e("128x16x2000", "peak_rss_mib"), "<=", 2048.0, " MiB"),
        ("3", "time growth 256 -> 2,048 ranks (linear = 8)", grown and grown["time"], "<=", 8.0, "x"),
        ("3", "memory growth 256 -> 2,048 ranks (linear = 8)", grown and grown["memory"], "<=", 8.0, "x"),
        ("3", f"snakemake -n at {record.get('dry_run', {}).get('scale', '128x16')}", dry, "<", 10.0, " s"),
        (
            "R",
            "demo re-analysis after a pmu key (2 cores)",
            reanalysis(record.get("demo_reanalysis"), "pmu", "wall_s"),
            "<=",
            15.0,
            " s",
        ),
        (
            "R",
            "32x8x2000 re-analysis after a report key, of the first run",
            reanalysis(by_scale.get("32x8x2000", {}).get("reanalysis"), "report", "fraction_of_first"),
            "<=",
            1 / 3,
            "",
        ),
        (
            "R",
            "32x8x2000 re-analysis after a pmu key, of the first run",
            reanalysis(by_scale.get("32x8x2000", {}).get("reanalysis"), "pmu", "fraction_of_first"),
            "<=",
            0.5,
            "",
        ),
    ]
    out = []
    for goal, what, value, op, target, unit in rows:
        met = (
            None
            if value is None
            else (value >= target if op == ">=" else value <= target if op == "<=" else value < target)
        )
        out.append({"goal": goal, "what": what, "value": value, "op": op, "target": target, "unit": unit, "met": met})
    return out


def doubling_pairs(results: list[dict]) -> list[dict]:
    """Scale pairs where ranks or launches double and the other stays: how time and memory grew (goal: <= 2.2x)."""

    def dims(r: dict) -> tuple[int, int]:
        nodes, rpn, launches = (int(x) for x in r["scale"].split("x"))
        return nodes * rpn, launches

    pairs = []
    for a in results:
        for b in results:
            (ra, la), (rb, lb) = dims(a), dims(b)
            doubled = "ranks" if (rb == 2 * ra and lb == la) else "launches" if (lb == 2 * la and rb == ra) else None
            if doubled:
                pairs.append(
                    {
                        "from": a["scale"],
                        "to": b["scale"],
                        "doubled": doubled,
                        **{
                            f"{part}_{what}": b[part][key] / a[part][key]
                            for part in ("library", "end_to_end")
                            for what, key in (("time", "wall_s"), ("memory", "peak_rss_mib"))
                        },
                    }
                )
    return pairs


def python_defaults(env: dict) -> tuple[dict, str | None]:
    """The timed runs get Python's default bytecode caching. This sandbox sets PYTHONDONTWRITEBYTECODE=1, under which
    every process compiles our modules from source again (~3% of (a) at 32x8x2000), while msprof-analyze runs from
    the bytecode pip wrote at its install: a cost no user's run has after its first. Without the variable, the first
    run writes __pycache__ (under workflow/scripts here, in the fresh workflow copy for (b)) as Python always does."""
    if not env.get("PYTHONDONTWRITEBYTECODE"):
        return env, None
    env = {k: v for k, v in env.items() if k != "PYTHONDONTWRITEBYTECODE"}
    return (
        env,
        "note: PYTHONDONTWRITEBYTECODE is set here; the timed runs go "
        "without it (Python's default: compiled modules are cached).",
    )


def main() -> int:
    p = argparse.ArgumentParser(description="dispatchprof benchmarks")
    p.add_argument("--scales", default="2x8x1000,8x8x1000")
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--work", type=Path, default=Path("/tmp/dispatchprof-bench"))
    p.add_argument("--dry-run-scale", default="128x16")
    p.add_argument("--results", type=Path, default=ROOT / "benchmarks" / "results.jsonl")
    p.add_argument(
        "--reference-max-ranks",
        type=int,
        default=256,
        help="run msprof-analyze only up to this many ranks (it is the slow side)",
    )
    p.add_argument(
        "--keep-data-max-ranks",
        type=int,
        default=256,
        help="delete generated collections above this many ranks after measuring",
    )
    p.add_argument(
        "--no-fixed-cost", action="store_true", help="skip the fixed-cost profile (benchmarks/fixed_cost.py)"
    )
    p.add_argument(
        "--reanalysis-scale",
        default="32x8x2000",
        help="the scale (of --scales) whose analyze run is followed by the re-analysis runs; '' = none",
    )
    p.add_argument(
        "--no-demo-reanalysis",
        action="store_true",
        help="skip the demo's re-analysis (a complete simulated run first, ~50 s)",
    )
    args = p.parse_args()
    args.work.mkdir(parents=True, exist_ok=True)
    msprof_analyze = shutil.which("msprof-analyze")
    env, stub_note = scontrol_stub_env(args.work)
    env, bytecode_note = python_defaults(env)
    for note in (stub_note, bytecode_note):
        if note:
            print(note, flush=True)
    record = {
        "when": time.strftime("%Y-%m-%dT%H:%M:%S"),
        "machine": {
            "cpus": os.cpu_count(),
            "python": platform.python_version(),
            "scontrol_stubbed": stub_note is not None,
            "bytecode_cache_restored": bytecode_note is not None,
        },
        "msprof_analyze": bool(msprof_analyze),
        "scales": [],
    }
    for scale in args.scales.split(","):
        big = ranks_of(scale)
        reference = msprof_analyze if big <= args.reference_max_ranks else None
        r = bench_scale(
            scale,
            args.work,
            args.repeat if big <= 256 else 1,
            reference,
            env,
            keep_data=big <= args.keep_data_max_ranks,
            reanalysis=scale == args.reanalysis_scale,
        )
        record["scales"].append(r)
        line = (
            f"{scale:>12}  input {r['input_mb']:7.1f} MB  library {r['library']['wall_s']:6.2f} s "
            f"{r['library']['peak_rss_mib']:7.0f} MiB  end-to-end "
            f"{r['end_to_end']['wall_s']:6.2f} s {r['end_to_end']['peak_rss_mib']:7.0f} MiB"
        )
        if "msprof_analyze" in r:
            m, q = r["msprof_analyze"], r["ratios"]
            line += (
                f"  msprof-analyze {m['wall_s']:6.2f} s {m['peak_rss_mib']:7.0f} MiB  speedup lib "
                f"{q['library_speedup']:.1f}x e2e {q['end_to_end_speedup']:.2f}x, "
                f"lib memory {q['library_memory_fraction']:.2f} of theirs"
            )
        print(line, flush=True)
    record["doubling"] = doubling_pairs(record["scales"])
    for pair in record["doubling"]:
        print(
            f"doubling {pair['doubled']:>8} {pair['from']} -> {pair['to']}: library time x{pair['library_time']:.2f} "
            f"memory x{pair['library_memory']:.2f}, end to end time "
            f"x{pair['end_to_end_time']:.2f} memory x{pair['end_to_end_memory']:.2f}",
            flush=True,
        )
    if args.dry_run_scale:
        d = bench_dry_run(args.dry_run_scale, args.work, env)
        record["dry_run"] = d
        print(f"snakemake -n for {d['scale']}: {d['wall_s']:.2f} s", flush=True)
    if not args.no_fixed_cost:
        from fixed_cost import profile_fixed_cost

        record["fixed_cost"] = profile_fixed_cost(args.work, args.repeat, env)
        print(
            f"fixed cost (analyze run, tiny collection): {record['fixed_cost']['wall_s']:.2f} "
            "s; see benchmarks/fixed_cost.py for the per-job profile",
            flush=True,
        )
    if not args.no_demo_reanalysis:
        record["demo_reanalysis"] = bench_demo_reanalysis(args.work, env)
    for where, data in [("demo", record.get("demo_reanalysis"))] + [
        (r["scale"], r.get("reanalysis")) for r in record["scales"]
    ]:
        for kind in REANALYSIS_KEYS:
            if data:
                k = data[kind]
                print(
                    f"re-analysis {where} after a {kind} key: {k['wall_s']:.2f} s ({k['fraction_of_first']:.2f} of the "
                    f"first run's {data['first_wall_s']:.2f} s), planned {len(k['planned'])} jobs "
                    f"({', '.join(sorted(set(k['planned'])))}), "
                    f"collections/imports {k['collections_planned'] or 'none'}",
                    flush=True,
                )
    record["goals"] = goals(record)
    print("\ngoals (issue 'Performance at the scale users outgrow'):", flush=True)
    for g in record["goals"]:
        shown = "not measured in this run" if g["value"] is None else f"{g['value']:.2f}{g['unit']}"
        verdict = "" if g["met"] is None else ("met" if g["met"] else "NOT met")
        print(
            f"  goal {g['goal']}: {g['what']}: {shown} (goal {g['op']} {g['target']:g}{g['unit']}) {verdict}",
            flush=True,
        )
    with open(args.results, "a") as handle:
        handle.write(json.dumps(record) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
