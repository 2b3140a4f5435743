"""One cluster, one collective at a time, whatever started them: two runs in one directory with different
experiments, two clones on one (shared) simulated cluster. Truth comes from the jobs' own records: each collective
status's started/finished, and which jobs held the cluster lock (details.cluster_lock)."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import yaml

from conftest import assert_ended_by_fail_on, base_overlay, copy_workflow, without_slurm_probe


def collective_intervals(root: Path, experiment: str) -> list[tuple[str, str, str]]:
    """(started, finished, job) of every job of ``experiment`` that held the cluster."""
    found = []
    for path in sorted((root / "results" / experiment).glob("**/status.json")):
        status = json.loads(path.read_text())
        if "cluster_lock" in status.get("details", {}):
            found.append((status["started"], status["finished"], str(path.relative_to(root))))
    return found


def assert_never_together(first: list[tuple[str, str, str]], second: list[tuple[str, str, str]]) -> None:
    for a_start, a_end, a_job in first:
        for b_start, b_end, b_job in second:
            assert a_end <= b_start or b_end <= a_start, f"{a_job} {a_start}-{a_end} overlaps {b_job} {b_start}-{b_end}"


def snakemake_command(root: Path, overlay: dict, *args: str) -> list[str]:
    (root / "overlay.yaml").write_text(yaml.safe_dump(overlay))
    return [
        sys.executable,
        "-m",
        "snakemake",
        "--cores",
        "2",
        *args,
        "--configfile",
        "config/config.yaml",
        "overlay.yaml",
    ]


def run_two(first: tuple[Path, list[str]], second: tuple[Path, list[str]]) -> tuple[str, str]:
    """Start ``first``, and ``second`` once ``first`` holds the cluster (its correctness job has the lock)."""
    env = without_slurm_probe()
    a = subprocess.Popen(first[1], cwd=first[0], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env)
    lock_dirs = [first[0] / ".snakemake" / "dispatchprof-cluster", first[0] / "shared-locks"]
    deadline = time.monotonic() + 120
    while not any(d.is_dir() and any(d.iterdir()) for d in lock_dirs) and time.monotonic() < deadline:
        time.sleep(0.2)
    b = subprocess.run(second[1], cwd=second[0], capture_output=True, text=True, env=env, timeout=900)
    out_a, _ = a.communicate(timeout=900)
    assert a.returncode == 0 and b.returncode == 0, (out_a[-2000:], b.stderr[-2000:])
    return out_a, b.stdout + b.stderr


def test_two_experiments_in_one_directory_never_hold_the_cluster_together(workflow_copy):
    root = workflow_copy.root
    overlay = base_overlay()
    out_a, out_b = run_two(
        (root, snakemake_command(root, overlay, "--config", "experiment=cc1")),
        (root, snakemake_command(root, overlay, "--config", "experiment=cc2")),
    )
    first, second = collective_intervals(root, "cc1"), collective_intervals(root, "cc2")
    assert len(first) >= 5 and len(second) >= 5, (first, second)  # correctness, baseline, timeline, PMU, ...
    assert_never_together(first, second)
    said = out_a + out_b
    assert "waiting for the cluster" in said and "is held by experiment cc" in said, said[-3000:]
    waited = [json.loads((root / job).read_text())["details"]["cluster_lock"]["waited_s"] for *_, job in second]
    assert max(waited) > 0  # the second run did wait: the check above is no accident of timing


def test_two_clones_on_one_shared_simulated_cluster_never_hold_it_together(tmp_path):
    one, two = copy_workflow(tmp_path / "one"), copy_workflow(tmp_path / "two")
    shared = tmp_path / "one" / "shared-locks"
    overlay = base_overlay(cluster_lock={"dir": str(shared)})
    target = "results/baseline/baseline/status.json"  # env capture, build, correctness and the baseline
    run_two(
        (one.root, snakemake_command(one.root, overlay, target)),
        (two.root, snakemake_command(two.root, overlay, target)),
    )
    first, second = collective_intervals(one.root, "baseline"), collective_intervals(two.root, "baseline")
    assert len(first) == 2 and len(second) == 2, (first, second)
    assert_never_together(first, second)


def test_a_busy_cluster_fails_naming_its_holder_and_the_next_plain_run_tries_again(workflow_copy):
    from dispatchprof.shell import cluster_lock

    locks = workflow_copy.root / "locks"
    overlay = base_overlay(cluster_lock={"dir": str(locks), "wait": 0})
    target = "results/baseline/correctness/status.json"
    held = cluster_lock.take(
        cluster_lock.Scope(locks, (cluster_lock.SIM_HOST,), "a test"),
        cluster_lock.Holder.here("somebody_else", "timeline/collect"),
        5,
        print,
    )
    result = workflow_copy.snakemake(target, overlay=overlay)
    status = workflow_copy.status("correctness")
    assert status["state"] == "failed" and "held by experiment somebody_else" in status["reason"], status
    assert status["retry"] and "the next plain snakemake runs it again" in status["reason"]
    assert_ended_by_fail_on(result, "baseline/correctness is failed")
    held.release()
    result = workflow_copy.snakemake(target, overlay=overlay)
    assert result.returncode == 0, result.stderr[-3000:]
    assert "Runs again: results/baseline/correctness/status.json" in result.stderr
    assert workflow_copy.status("correctness")["state"] == "ok"
