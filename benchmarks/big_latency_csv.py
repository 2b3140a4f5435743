"""A big dispatch_latency.csv: how long ``parse_latency_csv`` (``--job parse``) or the whole baseline stage
(``--job baseline``: parse, statistics with their bootstrap CIs, the tidy table, the plots) takes on one, and its peak
memory against the file's size.

Generates the file the perf driver / ascend_deepep test writes (LatencyProfile's full form: rank, iteration,
elapsed_ms, elapsed_us, is_warmup, in_average, measurement, clock_hz; iteration-major, 16 ranks) in a temporary
directory, then parses it (or runs the baseline stage's library function on it, analyze mode, 2 x 8 ranks, the default
config) in a fresh interpreter per run, so that the child's peak RSS (``os.wait4``'s rusage of that child) is the
job's alone plus the imports. Printed per run: the job's seconds and CPU seconds (measured in the child, imports
excluded: on a loaded machine the wall time is mostly waiting for a core, the CPU time is not), the child's peak RSS,
and peak RSS / file size; for the baseline job also the kernel scope's CIs and the sha256 of its stats.json. With
``--reference <checkout>`` the same job runs on another checkout's library too (e.g. a ``git worktree`` of the commit
before a change), alternating with this one, and the ratios of the medians are printed (for the baseline job: whether
the CIs and stats.json are identical): the machine
is shared and noisy, so only numbers from one run compare.

    python benchmarks/big_latency_csv.py                          # 5,000,000 rows (~290 MB), 1 run
    python benchmarks/big_latency_csv.py --rows 500000 --repeats 3
    python benchmarks/big_latency_csv.py --reference /tmp/before  # before/after on the same file
    python benchmarks/big_latency_csv.py --job baseline --reference /tmp/before  # the baseline job, before/after
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
RANKS = 16
WARMUP = 10  # iterations marked warm-up, as the test's default

CHILD = """
import json, resource, sys, time
sys.path.insert(0, sys.argv[1])
from dispatchprof.formats.latency_csv import parse_latency_csv
imported = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
started, cpu = time.perf_counter(), time.process_time()
table = parse_latency_csv(sys.argv[2])
seconds, cpu = time.perf_counter() - started, time.process_time() - cpu
print(json.dumps({"seconds": seconds, "cpu_seconds": cpu, "rows": len(table.frame), "imports_rss_kib": imported}))
"""

# The baseline stage as its entry script runs it (StageRun from the default config, analyze mode), outputs in a
# temporary directory; the kernel CIs are printed so that a before/after pair shows they are the same numbers.
BASELINE_CHILD = """
import json, resource, sys, tempfile, time
from pathlib import Path
import yaml
sys.path.insert(0, sys.argv[1])
from dispatchprof.shell.config import deep_merge, fill_defaults, load_schema, run_config
from dispatchprof.shell.stage import SCHEMA_PATH, StageRun
from dispatchprof.stages.baseline import baseline
root = Path(sys.argv[1]).parents[1]
overlay = {"mode": "analyze", "cluster": {"nodes": 2, "ranks_per_node": 8}, "analyze": {"latency_csv": sys.argv[2]}}
config = deep_merge(yaml.safe_load((root / "config" / "config.yaml").read_text()), overlay)
fill_defaults(config, load_schema(SCHEMA_PATH))
config = run_config(config, config["experiment"])
out = Path(tempfile.mkdtemp())
(out / "plots").mkdir()
run = StageRun(stage="baseline", experiment=config["experiment"], toolchain="none", status_path=out / "status.json",
               outputs={"latency": out / "latency.parquet", "stats": out / "stats.json", "plots": out / "plots"},
               inputs={}, config=config, params={"run_dir": None}, source="import")
imported = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
started, cpu = time.perf_counter(), time.process_time()
status = baseline(run, {})
seconds, cpu = time.perf_counter() - started, time.process_time() - cpu
import hashlib
text = (out / "stats.json").read_bytes()
kernel = json.loads(text)["scopes"]["kernel"]["per_iteration_max_us"]
print(json.dumps({"seconds": seconds, "cpu_seconds": cpu, "iterations": kernel["n"], "imports_rss_kib": imported,
                  "state": status.state, "cis": [kernel["median_ci95"], kernel["p95_ci95"]],
                  "stats_sha256": hashlib.sha256(text).hexdigest()}))
"""
CHILDREN = {"parse": CHILD, "baseline": BASELINE_CHILD}


def write_csv(path: Path, rows: int, seed: int = 1) -> None:
    """``rows`` rows as LatencyProfile writes them (iteration-major, every rank per iteration, 9 decimals)."""
    rng = random.Random(seed)
    header = "rank,iteration,elapsed_ms,elapsed_us,is_warmup,in_average,measurement,clock_hz\n"
    with open(path, "w") as handle:
        handle.write(header)
        lines = []
        for n in range(rows):
            iteration, rank = divmod(n, RANKS)
            ms = rng.lognormvariate(-2.0, 0.3)
            warm = int(iteration < WARMUP)
            lines.append(f"{rank},{iteration},{ms:.9f},{ms * 1000:.9f},{warm},{1 - warm},kernel,50000000\n")
            if len(lines) == 100_000:
                handle.write("".join(lines))
                lines.clear()
        handle.write("".join(lines))


def parse_once(scripts: Path, csv: Path, job: str = "parse") -> dict:
    """One job in a fresh interpreter: its seconds (the job only) and the child's own peak RSS in bytes (``os.wait4``'s
    rusage of that child: ``getrusage(RUSAGE_CHILDREN)`` keeps
    the largest child so far and would hide a smaller one)."""
    proc = subprocess.Popen(
        [sys.executable, "-c", CHILDREN[job], str(scripts), str(csv)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    out, err = proc.stdout.read(), proc.stderr.read()
    _, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode != 0:
        raise RuntimeError(f"{job} failed ({scripts}):\n{err[-2000:]}")
    result = json.loads(out)
    return {
        **{k: result[k] for k in ("state", "cis", "iterations", "stats_sha256") if k in result},
        "seconds": result["seconds"],
        "cpu_seconds": result["cpu_seconds"],
        "peak_rss_bytes": usage.ru_maxrss * 1024,
        "imports_rss_bytes": result["imports_rss_kib"] * 1024,
        "rows": result.get("rows"),
    }


def _summary(runs: list[dict], size: int) -> dict:
    """Medians of the times (the machine is shared: one slow run is the machine's), the largest peak."""
    return {
        "seconds": statistics.median(r["seconds"] for r in runs),
        "cpu_seconds": statistics.median(r["cpu_seconds"] for r in runs),
        "peak_rss_mib": max(r["peak_rss_bytes"] for r in runs) / 2**20,
        "peak_per_file": max(r["peak_rss_bytes"] for r in runs) / size,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rows", type=int, default=5_000_000)
    parser.add_argument("--repeats", type=int, default=1)
    parser.add_argument("--job", choices=sorted(CHILDREN), default="parse", help="what is timed (module doc)")
    parser.add_argument(
        "--reference", type=Path, help="another checkout whose workflow/scripts parse the same file (the 'before')"
    )
    args = parser.parse_args(argv)
    codes = {"this checkout": ROOT / "workflow" / "scripts"}
    if args.reference:
        codes = {"reference": args.reference / "workflow" / "scripts", **codes}
    with tempfile.TemporaryDirectory() as tmp:
        csv = Path(tmp) / "dispatch_latency.csv"
        write_csv(csv, args.rows)
        size = csv.stat().st_size
        print(f"{args.rows:,} rows, {size / 1e6:.1f} MB ({csv})", flush=True)
        runs: dict[str, list[dict]] = {name: [] for name in codes}
        for _ in range(args.repeats):
            for name, scripts in codes.items():
                runs[name].append(parse_once(scripts, csv, args.job))
                r = runs[name][-1]
                print(
                    f"{name}: {r['seconds']:.2f} s ({r['cpu_seconds']:.2f} s of CPU), peak RSS "
                    f"{r['peak_rss_bytes'] / 2**20:.0f} MiB (imports alone "
                    f"{r['imports_rss_bytes'] / 2**20:.0f} MiB), peak / file {r['peak_rss_bytes'] / size:.2f}"
                    + (f", kernel CIs {r['cis']}" if "cis" in r else ""),
                    flush=True,
                )
    summary = {name: _summary(rs, size) for name, rs in runs.items()}
    print(json.dumps({"job": args.job, "rows": args.rows, "file_bytes": size, "runs": runs, "summary": summary}))
    if args.reference:
        ref, new = summary["reference"], summary["this checkout"]
        print(
            f"speed-up {ref['seconds'] / new['seconds']:.1f}x (CPU {ref['cpu_seconds'] / new['cpu_seconds']:.1f}x); "
            f"peak memory {new['peak_per_file'] / ref['peak_per_file']:.2f} of the reference's"
        )
        if args.job == "baseline":
            same = all(r["cis"] == runs["reference"][0]["cis"] for rs in runs.values() for r in rs)
            print("kernel CIs identical to the reference's" if same else "kernel CIs DIFFER from the reference's")
            hashes = {r.get("stats_sha256") for rs in runs.values() for r in rs}
            if None not in hashes:  # a reference from before the hash was printed has none
                print("stats.json identical to the reference's" if len(hashes) == 1 else "stats.json DIFFERS")
    return 0


if __name__ == "__main__":
    sys.exit(main())
