"""Where the time of an analyze-mode run goes: Snakemake's start and DAG, each job (its process start and imports
apart from its work), the scheduler's gaps, the tail; each with its share of the whole (issue 65's phase breakdown;
goal for the tiny collection: <= 3 s end to end).

Runs `snakemake --cores 2` in analyze mode on a collection (default: a tiny one, 1 node x 2 ranks x 10 launches,
whose data cost nothing: what remains is fixed cost; or --data with its --nodes and --ranks-per-node, e.g. a
benchmarks/generate.py tree of 32 x 8 x 2,000), then reads Snakemake's own per-job records (.snakemake/metadata:
start and end of every job, float seconds). A job's process start and imports are timed apart: a fresh interpreter
importing what the rule's entry script imports (its `dispatchprof.stages` module), median of 3. Median run of
--repeat.

    python benchmarks/fixed_cost.py --repeat 3
    python benchmarks/fixed_cost.py --data /tmp/bench/32x8x2000 --nodes 32 --ranks-per-node 8 --repeat 2
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import PY, ROOT, measure, scontrol_stub_env, workflow_copy  # noqa: E402


def job_spans(wf: Path) -> list[dict]:
    """One entry per job (rule, start, end) from Snakemake's metadata
    records (one record per output file, the same job hash)."""
    jobs: dict[tuple, dict] = {}
    for record in (wf / ".snakemake" / "metadata").iterdir():
        data = json.loads(record.read_text())
        if "starttime" not in data or data.get("starttime") is None:
            continue
        key = (data["rule"], data.get("job_hash"))
        jobs.setdefault(key, {"rule": data["rule"], "start": data["starttime"], "end": data["endtime"]})
    return sorted(jobs.values(), key=lambda j: j["start"])


def profile_once(data: Path, work: Path, env: dict, nodes: int = 1, ranks_per_node: int = 2) -> dict:
    wf = workflow_copy(work / "wf_fixed")
    overlay = wf / "fixed.yaml"
    overlay.write_text(
        json.dumps(
            {
                "mode": "analyze",
                "cluster": {"nodes": nodes, "ranks_per_node": ranks_per_node},
                "shape": {"num_experts": nodes * ranks_per_node * 8},
                "analyze": {"timeline_dir": str(data)},
                "timeline": {"crosscheck": "off"},
            }
        )
    )
    started = time.time()
    result = measure(
        [PY, "-m", "snakemake", "--cores", "2", "--quiet", "--configfile", "config/config.yaml", str(overlay)],
        cwd=wf,
        env=env,
    )
    ended = started + result["wall_s"]
    jobs = job_spans(wf)
    return {
        "wall_s": result["wall_s"],
        "peak_rss_mib": result["peak_rss_mib"],
        "start_to_first_job_s": jobs[0]["start"] - started if jobs else None,
        "jobs": [{"rule": j["rule"], "offset_s": j["start"] - started, "span_s": j["end"] - j["start"]} for j in jobs],
        "job_seconds": sum(j["end"] - j["start"] for j in jobs),
        "last_job_to_exit_s": ended - max(j["end"] for j in jobs) if jobs else None,
    }


def tiny_collection(work: Path) -> Path:
    data = work / "data" / "fixed_1x2x10"
    if not data.exists():
        subprocess.run(
            [
                PY,
                str(ROOT / "benchmarks" / "generate.py"),
                "--nodes",
                "1",
                "--ranks-per-node",
                "2",
                "--launches",
                "10",
                "--out",
                str(data),
            ],
            check=True,
        )
    return data


def rule_scripts() -> dict[str, Path]:
    """Each rule's entry script, from the rule files (a rule and its script may be named apart: timeline_import runs
    import_artifacts.py; a rule made in a loop, not_provided_2, is found by its base name's script)."""
    out: dict[str, Path] = {}
    for smk in (ROOT / "workflow" / "rules").glob("*.smk"):
        rule = None
        for line in smk.read_text().splitlines():
            if found := re.match(r"\s*rule (\w+):", line):
                rule = found.group(1)
            elif found := re.match(r'\s*_name = "(\w+)"', line):  # a rule made in a loop (not_provided)
                rule = found.group(1)
            elif rule and (found := re.search(r'"\.\./scripts/(\w+\.py)"', line)):
                out.setdefault(rule, ROOT / "workflow" / "scripts" / found.group(1))
    return out


def import_seconds(rule: str, env: dict, repeat: int = 3) -> float | None:
    """A fresh interpreter importing what the rule's entry script imports (its dispatchprof.stages module): the
    process start and imports every job of that rule pays before its work. None for a rule without a script."""
    scripts = rule_scripts()
    script = scripts.get(rule) or scripts.get(re.sub(r"_\d+$", "", rule))
    if script is None:
        return None
    modules = re.findall(r"^from (dispatchprof\.stages\.\w+) import", script.read_text(), flags=re.M)
    code = "import sys; sys.path.insert(0, sys.argv[1]); " + "; ".join(f"import {m}" for m in modules or ["os"])
    times = []
    for _ in range(repeat):
        started = time.perf_counter()
        subprocess.run([PY, "-c", code, str(ROOT / "workflow" / "scripts")], check=True, env=env)
        times.append(time.perf_counter() - started)
    return sorted(times)[len(times) // 2]


def phases(run: dict, env: dict) -> list[tuple[str, float]]:
    """The run's phases (name, seconds) in order: the start until the first job, each job's imports and work, the
    tail. Jobs overlap on 2 cores: their spans add up to more than the wall time (the shares say so)."""
    out = [("Snakemake start, DAG, first job's scheduling", run["start_to_first_job_s"] or 0.0)]
    imports: dict[str, float | None] = {}
    for job in run["jobs"]:
        rule = job["rule"]
        if rule not in imports:
            imports[rule] = import_seconds(rule, env)
        start = min(imports[rule] or 0.0, job["span_s"])
        out += [(f"{rule}: process start and imports", start), (f"{rule}: work", job["span_s"] - start)]
    return out + [("last job's end until exit", run["last_job_to_exit_s"] or 0.0)]


def profile_fixed_cost(work: Path, repeat: int, env: dict, data: Path | None = None, shape: tuple = (1, 2)) -> dict:
    """The median run of `repeat` (by wall time), with its per-job profile."""
    runs = [profile_once(data or tiny_collection(work), work, env, *shape) for _ in range(repeat)]
    return sorted(runs, key=lambda r: r["wall_s"])[len(runs) // 2]


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--work", type=Path, default=Path("/tmp/dispatchprof-bench"))
    p.add_argument("--data", type=Path, help="a collection (node<k>/PROF_*); default: a tiny generated one")
    p.add_argument("--nodes", type=int, default=1)
    p.add_argument("--ranks-per-node", type=int, default=2)
    args = p.parse_args()
    env, note = scontrol_stub_env(args.work)
    if note:
        print(note, flush=True)
    typical = profile_fixed_cost(args.work, args.repeat, env, args.data, (args.nodes, args.ranks_per_node))
    what = f"{args.data} ({args.nodes} x {args.ranks_per_node})" if args.data else "tiny collection (goal <= 3 s)"
    print(f"analyze mode, {what}: wall {typical['wall_s']:.2f} s (median of {args.repeat})")
    for name, seconds in phases(typical, env):
        print(f"  {seconds:6.2f} s  {100 * seconds / typical['wall_s']:5.1f}%  {name}")
    print(
        f"  {len(typical['jobs'])} jobs, {typical['job_seconds']:.2f} job-seconds on 2 cores "
        f"(shares of the wall time: jobs that overlap add up to more than 100%)"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
