"""The simulated pipeline through a real SLURM (tests/slurm/start_slurm.sh: 2 nodes on this machine), with the
test profile derived from profiles/slurm. Needs root and apt (or a running test cluster); skipped otherwise,
except with CI=true, where a missing prerequisite fails."""

import json
import os
import shutil
import subprocess
import sys
import time
from datetime import datetime
from pathlib import Path

import pytest

from conftest import ROOT, assert_ended_by_fail_on, base_overlay
from workflow.test_dryrun import NPU_JOBS
from workflow.test_end_to_end import processes_mentioning

START = ROOT / "tests" / "slurm" / "start_slurm.sh"
PROFILE = ROOT / "tests" / "slurm" / "profile"
CAPPED_POLLING = ROOT / "tests" / "slurm" / "snakemake_capped_polling.py"


def slurm_running() -> bool:
    if not shutil.which("sinfo"):
        return False
    out = subprocess.run(["sinfo", "-h", "-N", "-o", "%T"], capture_output=True, text=True)
    return out.returncode == 0 and out.stdout.count("idle") + out.stdout.count("alloc") + out.stdout.count("mix") >= 2


# What start_slurm.sh starts, by pid file: the fixture stops what it started, by pid (never by name).
DAEMON_PID_FILES = ("/run/slurmd-n0.pid", "/run/slurmd-n1.pid", "/run/slurmctld.pid", "/run/munge/munged.pid")


def stop_daemons(pid_files=DAEMON_PID_FILES, timeout_s: float = 15.0) -> None:
    import signal
    import time

    pids = []
    for pid_file in pid_files:
        try:
            pids.append(int(Path(pid_file).read_text().split()[0]))
        except (OSError, ValueError, IndexError):
            continue
    for pid in pids:
        try:
            os.kill(pid, signal.SIGTERM)
        except ProcessLookupError:
            pass
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline and any(Path(f"/proc/{pid}").exists() for pid in pids):
        time.sleep(0.2)


@pytest.fixture(scope="module")
def slurm_cluster():
    started = False
    if not slurm_running():
        can_start = os.geteuid() == 0 and shutil.which("apt-get")
        if not can_start:
            if os.environ.get("CI") == "true":
                pytest.fail("CI=true but the SLURM test cluster cannot be started here (needs root and apt-get)")
            pytest.skip("no SLURM test cluster and no root/apt-get to start one (tests/slurm/start_slurm.sh)")
        result = subprocess.run(["bash", str(START)], capture_output=True, text=True, timeout=900)
        assert result.returncode == 0, result.stdout + result.stderr
        started = True
    try:
        import snakemake_executor_plugin_slurm  # noqa: F401
    except ImportError:
        if started:
            stop_daemons()
        if os.environ.get("CI") == "true":
            pytest.fail("snakemake-executor-plugin-slurm is not installed (requirements-dev.txt)")
        pytest.skip("snakemake-executor-plugin-slurm is not installed")
    yield True
    if started:  # a cluster that was already running (a developer's) is left as it was
        stop_daemons()
        assert not slurm_running(), "the SLURM daemons this test started are still answering"


def run_profile(workflow_copy, overlay, *args, env=None):
    shutil.copytree(PROFILE, workflow_copy.root / "slurm_profile", dirs_exist_ok=True)
    # snakemake with the plugin's status-check back-off capped at the
    # profile's interval (tests/slurm/snakemake_capped_polling.py)
    cmd = [
        sys.executable,
        str(CAPPED_POLLING),
        "--profile",
        "slurm_profile",
        "--configfile",
        "config/config.yaml",
        str(workflow_copy.overlay(overlay)),
        *args,
    ]
    return subprocess.run(cmd, cwd=workflow_copy.root, capture_output=True, text=True, timeout=1500, env=env)


def test_the_pipeline_runs_through_sbatch_and_srun_on_two_nodes(slurm_cluster, workflow_copy, capsys):
    result = run_profile(workflow_copy, base_overlay(fixed_ports=True))
    assert result.returncode == 0, (result.stdout + result.stderr)[-4000:]
    run = workflow_copy.root / "results/baseline/correctness/run"
    exits = [json.loads((run / f"node{n}.exit.json").read_text()) for n in (0, 1)]
    assert [e["slurm_nodeid"] for e in exits] == ["0", "1"] and all(e["exit_code"] == 0 for e in exits)
    assert "[rank 3]" in (run / "node0.log").read_text() and "[rank 12]" in (run / "node1.log").read_text()
    summary = json.loads((workflow_copy.root / "results/baseline/report/summary.json").read_text())
    # debugclock (a fallback: PMU is ok) and probe (off by default) are disabled by design; every other stage is ok
    assert {k: v["state"] for k, v in summary["stages"].items() if v["state"] != "ok"} == {
        "debugclock": "disabled",
        "probe": "disabled",
    }, summary["stages"]
    # Which jobs went through sbatch: the plugin keeps one log directory per submitted rule (rule_<name>). Only the
    # NPU jobs may be there; parse, analysis and report jobs ran in the Snakemake process (localrules).
    submitted = sorted(d.name.removeprefix("rule_") for d in (workflow_copy.root / "results/slurm_logs").glob("rule_*"))
    # The probe (off by default) only writes "disabled": it runs here, not in a queue for CANN nodes. Where an enabled
    # probe goes (slurm.cann_partition) is checked on the dry run's plan (test_dryrun.py), not through sbatch
    assert set(submitted) == NPU_JOBS, submitted
    assert (
        "Placement: submitted to the NPU nodes: " in result.stderr and "needing CANN but no NPU (none)" in result.stderr
    )
    with capsys.disabled():
        print(
            "\n[slurm] pipeline through sbatch/srun: correctness nodes "
            f"{[(e['node'], e['slurm_nodeid'], e['host']) for e in exits]}; submitted through sbatch: "
            f"{', '.join(submitted)}; report {workflow_copy.root / 'results/baseline/report/report.html'}"
        )


def test_one_node_runs_with_overlap(slurm_cluster, workflow_copy):
    result = run_profile(workflow_copy, base_overlay(fixed_ports=True, cluster={"nodes": 1}), "--until", "correctness")
    assert result.returncode == 0, (result.stdout + result.stderr)[-4000:]
    status = workflow_copy.status("correctness")
    assert status["state"] == "ok", status
    launched = (workflow_copy.root / "results/baseline/correctness/logs/correctness.log").read_text()
    assert "srun --nodes=1 --ntasks=1 --ntasks-per-node=1 --kill-on-bad-exit=1 --overlap" in launched
    assert (
        json.loads((workflow_copy.root / "results/baseline/correctness/run/node0.exit.json").read_text())["exit_code"]
        == 0
    )


def test_a_rank_that_dies_under_slurm_ends_the_collective_in_seconds_and_is_named(slurm_cluster, workflow_copy):
    """Issue 34 under launcher slurm: rank 9 (node 1) exits early; its node's spawn ends its siblings, srun's
    --kill-on-bad-exit=1 ends node 0, and the stage names the rank that died first. Budget 300 s: without either,
    the collective would wait for it."""
    started = time.monotonic()
    result = run_profile(
        workflow_copy,
        base_overlay(fixed_ports=True, sim={"die_rank": 9}, timeouts={"correctness": 300}),
        "--until",
        "correctness",
    )
    assert_ended_by_fail_on(result, "baseline/correctness is failed")
    status = workflow_copy.status("correctness")
    assert status["state"] == "failed" and status["reason"].startswith(
        "rank 9 (node 1, local rank 1) died first: exit code 1"
    ), status
    assert "(sim.die_rank)" in status["reason"] and status["details"]["cause"] == "crash", status
    run_s = (datetime.fromisoformat(status["finished"]) - datetime.fromisoformat(status["started"])).total_seconds()
    assert run_s < 30 and time.monotonic() - started < 240, run_s
    assert processes_mentioning(str(workflow_copy.root)) == []


def test_a_stage_over_budget_under_slurm_ends_in_timeout_before_slurm_kills_it(slurm_cluster, workflow_copy):
    result = run_profile(
        workflow_copy,
        base_overlay(fixed_ports=True, sim={"dead_node": 1}, timeouts={"correctness": 15}),
        "--until",
        "correctness",
    )
    assert_ended_by_fail_on(result, "baseline/correctness is timeout")
    status = workflow_copy.status("correctness")
    assert status["state"] == "timeout" and "15 s budget" in status["reason"], status
    assert processes_mentioning(str(workflow_copy.root)) == []


def test_no_secret_of_the_caller_is_written_and_the_ranks_see_the_tuning_under_slurm(slurm_cluster, workflow_copy):
    """Issue 29 under launcher slurm: srun passes the caller's environment to the nodes, so the tuning reaches the
    ranks; the spec file holds only what the workflow sets (tests/workflow/test_no_secrets.py for local and ssh)."""
    from workflow.test_no_secrets import files_holding, planted, tuning_lines

    secret_values = planted()
    env = {**os.environ, **secret_values, "TASK_QUEUE_ENABLE": "2"}
    result = run_profile(workflow_copy, base_overlay(fixed_ports=True), "--until", "correctness", env=env)
    assert result.returncode == 0, (result.stdout + result.stderr)[-4000:]
    assert workflow_copy.status("correctness")["state"] == "ok", workflow_copy.status("correctness")
    assert files_holding(workflow_copy.root, secret_values) == []
    assert tuning_lines(workflow_copy.root) == {rank: "TASK_QUEUE_ENABLE=2" for rank in range(16)}
    specs = json.loads((workflow_copy.root / "results/baseline/correctness/run/node_specs.json").read_text())
    assert [s["env"]["RANK"] for s in specs] == ["0", "1"] and all(
        "forwarded_on_stdin" not in s and "HOME" not in s["env"] for s in specs
    )
