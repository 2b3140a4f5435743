"""One cluster, one collective at a time (shell/cluster_lock.py): what is locked, who holds it, how long a second
run waits, and that a lock dies with the process that holds it."""

from __future__ import annotations

import fcntl
import os
import signal
import socket
import stat
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conftest import ROOT, stage_run
from dispatchprof.shell import cluster_lock
from dispatchprof.shell.status import retryable
from dispatchprof.tools import collective, toolchain

SCRIPTS = ROOT / "workflow" / "scripts"
# Another run: a process that takes the lock as a job does, says so, and holds it until it is ended.
HOLDER = """
import sys, time
sys.path.insert(0, sys.argv[1])
from pathlib import Path
from dispatchprof.shell import cluster_lock
scope = cluster_lock.Scope(Path(sys.argv[2]), tuple(sys.argv[4:]), "a test")
cluster_lock.take(scope, cluster_lock.Holder.here(sys.argv[3], "timeline/collect"), 30, print)
print("held", flush=True)
time.sleep(600)
"""


def hold_elsewhere(directory: Path, experiment: str, *names: str) -> subprocess.Popen:
    proc = subprocess.Popen(
        [sys.executable, "-c", HOLDER, str(SCRIPTS), str(directory), experiment, *names],
        stdout=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None and proc.stdout.readline().strip() == "held"
    return proc


def config_of(toolchain_name: str = "sim", launcher: str = "local", **sections) -> dict:
    cfg = {
        "toolchain": toolchain_name,
        "launcher": launcher,
        "cluster_lock": {"dir": "auto", "wait": 0},
        "cluster": {"hosts": ["h2", "h1"]},
        "slurm": {"exclusive": True},
    }
    for key, value in sections.items():
        cfg[key].update(value)
    return cfg


def test_the_simulated_cluster_is_the_working_directorys_own(tmp_path):
    where = cluster_lock.scope(config_of(), tmp_path)
    assert where.paths() == [tmp_path / cluster_lock.SIM_DIR / "simulated-cluster.lock"]
    shared = cluster_lock.scope(config_of(cluster_lock={"dir": str(tmp_path / "shared")}), tmp_path / "clone")
    assert shared.paths() == [tmp_path / "shared" / "simulated-cluster.lock"]


def test_real_npus_are_locked_per_host_in_sorted_order_and_slurm_relies_on_its_allocation(tmp_path):
    local = cluster_lock.scope(config_of("cann"), tmp_path)
    assert local.paths() == [cluster_lock.HOST_DIR / f"{socket.gethostname()}.lock"]
    ssh = cluster_lock.scope(config_of("cann", "ssh"), tmp_path)
    assert ssh.paths() == [cluster_lock.HOST_DIR / "h1.lock", cluster_lock.HOST_DIR / "h2.lock"]
    slurm = cluster_lock.scope(config_of("cann", "slurm"), tmp_path)
    assert slurm.paths() == [] and "--exclusive" in slurm.describe()
    shared = cluster_lock.scope(config_of("cann", "slurm", slurm={"exclusive": False}), tmp_path)
    assert "may place other jobs" in shared.describe()


def test_a_held_cluster_names_its_holder_and_a_zero_wait_fails_at_once(tmp_path):
    other = hold_elsewhere(tmp_path, "cc1", "simulated-cluster")
    try:
        scope = cluster_lock.Scope(tmp_path, ("simulated-cluster",), "a test")
        started = time.monotonic()
        with pytest.raises(cluster_lock.Busy) as busy:
            cluster_lock.take(scope, cluster_lock.Holder.here("cc2", "pmu/collect"), 0, print)
        assert time.monotonic() - started < 2
        said = str(busy.value)
        assert "experiment cc1 (stage timeline/collect)" in said and f"pid {other.pid}" in said, said
        assert "no measurement was made" in said and "tries again" not in said  # RETRY_NOTE says it
        assert cluster_lock.held() is None  # nothing is left half-taken
    finally:
        other.kill()
        other.wait()


def test_a_second_run_waits_saying_whom_for_and_takes_the_cluster_when_it_is_let_go(tmp_path):
    other = hold_elsewhere(tmp_path, "cc1", "simulated-cluster")
    said: list[str] = []
    try:
        scope = cluster_lock.Scope(tmp_path, ("simulated-cluster",), "a test")
        subprocess.Popen(["sh", "-c", f"sleep 1.5; kill {other.pid}"])
        held = cluster_lock.take(scope, cluster_lock.Holder.here("cc2", "pmu/collect"), 30, said.append)
    finally:
        other.kill()
        other.wait()
    assert 1.0 <= held.waited_s < 10, held.waited_s
    assert said and "held by experiment cc1" in said[0] and "cluster_lock.wait" in said[0]
    assert cluster_lock.read_holder(tmp_path / "simulated-cluster.lock").experiment == "cc2"


def test_a_lock_dies_with_its_holder_even_by_sigkill(tmp_path):
    other = hold_elsewhere(tmp_path, "cc1", "simulated-cluster")
    os.kill(other.pid, signal.SIGKILL)
    other.wait()
    scope = cluster_lock.Scope(tmp_path, ("simulated-cluster",), "a test")
    held = cluster_lock.take(scope, cluster_lock.Holder.here("cc2", "baseline/collect"), 0, print)
    assert held.waited_s < 1


def probe(path: Path) -> str:
    """Whether a lock file is held by anyone (another open file description: flock tells even within a process)."""
    fd = os.open(path, os.O_RDONLY)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        return "free"
    except BlockingIOError:
        return "held"
    finally:
        os.close(fd)


def test_locks_are_taken_in_sorted_order_so_runs_sharing_hosts_never_wait_in_a_circle(tmp_path):
    # The other run holds h2 only; this one (given h2, h1) takes h1 first, then waits for h2 holding h1.
    other = hold_elsewhere(tmp_path, "other", "h2")
    seen_while_waiting: list[str] = []
    try:
        scope = cluster_lock.Scope(tmp_path, ("h2", "h1"), "a test")
        holder = cluster_lock.Holder.here("mine", "pmu/collect")
        with pytest.raises(cluster_lock.Busy) as busy:
            cluster_lock.take(scope, holder, 0.5, lambda _: seen_while_waiting.append(probe(tmp_path / "h1.lock")))
        assert busy.value.path == tmp_path / "h2.lock"
    finally:
        other.kill()
        other.wait()
    assert seen_while_waiting[:1] == ["held"]
    assert probe(tmp_path / "h1.lock") == "free"  # what it took before it gave up is let go


def test_a_lock_file_in_a_directory_every_user_writes_to_is_writable_by_every_user(tmp_path):
    shared = tmp_path / "shared"
    shared.mkdir()
    shared.chmod(0o1777)
    cluster_lock.take(cluster_lock.Scope(shared, ("host",), "a test"), cluster_lock.Holder.here("e", "s"), 0, print)
    assert stat.S_IMODE((shared / "host.lock").stat().st_mode) == 0o666
    private = tmp_path / "private"
    cluster_lock.take(cluster_lock.Scope(private, ("host",), "a test"), cluster_lock.Holder.here("e", "s"), 0, print)
    assert stat.S_IMODE((private / "host.lock").stat().st_mode) & 0o022 == 0


def test_a_collective_stage_that_finds_the_cluster_busy_fails_naming_the_holder_and_is_retried(tmp_path):
    overlay = {"cluster_lock": {"dir": str(tmp_path / "locks"), "wait": 0}}
    run = stage_run(tmp_path, "correctness", outputs={"ranks": "ranks.parquet"}, overlay=overlay)
    other = hold_elsewhere(tmp_path / "locks", "cc1", "simulated-cluster")
    try:
        busy = run.hold_cluster()
    finally:
        other.kill()
        other.wait()
    assert busy is not None and busy.state == "failed"
    assert "held by experiment cc1" in busy.reason and busy.details["cause"] == "cluster_busy"
    assert retryable(busy)


def test_the_wait_is_no_part_of_the_stage_and_the_status_records_the_lock(tmp_path):
    overlay = {"cluster_lock": {"dir": str(tmp_path / "locks"), "wait": 30}}
    run = stage_run(tmp_path, "correctness", outputs={"ranks": "ranks.parquet"}, overlay=overlay, started="then")
    other = hold_elsewhere(tmp_path / "locks", "cc1", "simulated-cluster")
    subprocess.Popen(["sh", "-c", f"sleep 1.2; kill {other.pid}"])
    try:
        assert run.hold_cluster() is None
    finally:
        other.wait()
    status = run.status("ok", "measured")
    assert status.started != "then"  # when the cluster became the job's, not when the job began
    record = status.details["cluster_lock"]
    assert record["waited_s"] >= 1 and record["locks"] == [str(tmp_path / "locks" / "simulated-cluster.lock")]


def test_no_collective_runs_without_the_cluster_lock(tmp_path):
    import yaml

    from dispatchprof.shell.config import deep_merge, fill_defaults, load_schema, run_config
    from dispatchprof.shell.stage import SCHEMA_PATH

    config = deep_merge(yaml.safe_load((ROOT / "config" / "config.yaml").read_text()), {})
    fill_defaults(config, load_schema(SCHEMA_PATH))
    config = run_config(config, config["experiment"])
    with pytest.raises(RuntimeError, match="without the cluster lock"):
        collective.run_test(config, toolchain.resolve(config, ROOT), tmp_path / "run", "x", timeout_s=5)
    assert not (tmp_path / "run").exists()  # refused before anything started
