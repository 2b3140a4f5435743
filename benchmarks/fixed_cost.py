"""Where the fixed cost of an analyze-mode run goes (goal: <= 3 s end to end on a tiny collection).

Runs `snakemake --cores 2` in analyze mode on a tiny collection (1 node x 2 ranks x 10 launches: the data cost
nothing, so what remains is fixed cost), then reads Snakemake's own per-job records (.snakemake/metadata: start
and end of every job, float seconds) and prints a timeline: Snakemake's start until the first job, every job's
span, the scheduler's gaps between jobs, and the tail after the last job. Median of --repeat runs.

    python benchmarks/fixed_cost.py --repeat 3
"""

from __future__ import annotations

import argparse
import json
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


def profile_once(data: Path, work: Path, env: dict) -> dict:
    wf = workflow_copy(work / "wf_fixed")
    overlay = wf / "fixed.yaml"
    overlay.write_text(
        json.dumps(
            {
                "mode": "analyze",
                "cluster": {"nodes": 1, "ranks_per_node": 2},
                "shape": {"num_experts": 16},
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


def profile_fixed_cost(work: Path, repeat: int, env: dict) -> dict:
    """The median run of `repeat` (by wall time), with its per-job profile."""
    runs = [profile_once(tiny_collection(work), work, env) for _ in range(repeat)]
    return sorted(runs, key=lambda r: r["wall_s"])[len(runs) // 2]


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--work", type=Path, default=Path("/tmp/dispatchprof-bench"))
    args = p.parse_args()
    env, note = scontrol_stub_env(args.work)
    if note:
        print(note, flush=True)
    typical = profile_fixed_cost(args.work, args.repeat, env)
    print(f"analyze mode, tiny collection: wall {typical['wall_s']:.2f} s (median of {args.repeat}), goal <= 3 s")
    print(f"  Snakemake start until the first job: {typical['start_to_first_job_s']:.2f} s")
    for job in typical["jobs"]:
        print(f"  {job['offset_s']:6.2f} s  +{job['span_s']:5.2f} s  {job['rule']}")
    print(
        f"  {len(typical['jobs'])} jobs, {typical['job_seconds']:.2f} job-seconds; "
        f"last job end until exit: {typical['last_job_to_exit_s']:.2f} s"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
