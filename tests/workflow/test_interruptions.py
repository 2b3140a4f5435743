"""Runs a user may break: the demo in a path with a space and non-ASCII characters, interrupted with Ctrl-C
and rerun with a plain `snakemake`; a results directory that becomes read-only mid-run. Each on the smallest
cluster that still runs every stage (1 node x 2 ranks, short calls: ~12 s a whole run on 2 cores)."""

import json
import os
import signal
import subprocess
import sys
import time

from conftest import base_overlay, copy_workflow, without_slurm_probe
from workflow.test_end_to_end import processes_mentioning

TINY = base_overlay(cluster={"nodes": 1, "ranks_per_node": 2})


def start(wf, env):
    """snakemake in its own process group (as a terminal runs it: Ctrl-C reaches the whole group)."""
    cmd = [sys.executable, "-m", "snakemake", "--cores", "2", "--configfile", "config/config.yaml", str(wf.overlay(TINY))]
    return subprocess.Popen(cmd, cwd=wf.root, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, start_new_session=True, env=env)


def wait_for(path, proc, timeout_s=120.0):
    deadline = time.monotonic() + timeout_s
    while not path.exists():
        assert proc.poll() is None, f"snakemake ended before {path} appeared"
        assert time.monotonic() < deadline, f"{path} did not appear in {timeout_s} s"
        time.sleep(0.05)


def without_pids(value):
    """A stats file without the process ids of the ranks (each run's own)."""
    if isinstance(value, dict):
        return {k: without_pids(v) for k, v in value.items() if k != "pid"}
    return [without_pids(v) for v in value] if isinstance(value, list) else value


def results_of(wf):
    root = wf.root / "results" / "baseline"
    return {name: without_pids(json.loads((root / name).read_text())) for name in ("report/summary.json", "baseline/stats.json", "timeline/stats.json")}


def test_ctrl_c_in_a_spaced_non_ascii_path_then_plain_snakemake_gives_the_uninterrupted_results(tmp_path):
    spaced = copy_workflow(tmp_path / "my runs" / "é測" / "wf")
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    env = without_slurm_probe({**os.environ, "TMPDIR": str(tmp)})  # the stand-in msprof's simprof_ directories land here
    proc = start(spaced, env)
    try:
        # timeline_collect's msprof run has started: the probe script whose path once had to be free of spaces
        wait_for(spaced.root / "results" / "baseline" / "timeline" / "run" / "node0.log", proc)
        os.killpg(proc.pid, signal.SIGINT)
        out, _ = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    assert proc.returncode != 0
    assert "Traceback" not in out and "KeyboardInterrupt" not in out, out[-3000:]
    assert "timeline/collect: interrupted (Ctrl-C); the next snakemake reruns this job" in out, out[-3000:]
    assert not (spaced.root / "results" / "baseline" / "timeline" / "collect" / "status.json").exists()
    deadline = time.monotonic() + 15
    while processes_mentioning(str(spaced.root)) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not processes_mentioning(str(spaced.root)), "the interrupted run left processes behind"
    assert not list(tmp.glob("simprof_*")), "the stand-in msprof left its temporary directory"

    rerun = spaced.snakemake(overlay=TINY, env=env)  # plain: profiles/default reruns the incomplete job
    assert rerun.returncode == 0, rerun.stderr[-3000:]
    assert "IncompleteFilesException" not in rerun.stderr and "Traceback" not in rerun.stderr
    summary = json.loads((spaced.root / "results" / "baseline" / "report" / "summary.json").read_text())
    assert {s["state"] for s in summary["stages"].values()} <= {"ok", "disabled"}, summary["stages"]
    assert (spaced.root / "results" / "baseline" / "report" / "report.html").is_file()

    plain = copy_workflow(tmp_path / "plain" / "wf")
    uninterrupted = plain.snakemake(overlay=TINY)
    assert uninterrupted.returncode == 0, uninterrupted.stderr[-3000:]
    assert results_of(spaced) == results_of(plain)  # the simulated numbers, every stage's state and reason
