"""The ssh launcher against an sshd on 127.0.0.1 (Debian openssh-server, key made by the test). Needs root and
apt (or an installed sshd); skipped otherwise, except with CI=true, where a missing prerequisite fails."""

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from datetime import datetime

import pytest

from conftest import assert_ended_by_fail_on, base_overlay, free_port, without_slurm_probe
from workflow.test_end_to_end import processes_mentioning


@pytest.fixture(scope="module")
def sshd(tmp_path_factory):
    if not os.path.exists("/usr/sbin/sshd"):
        if os.geteuid() == 0 and shutil.which("apt-get"):
            subprocess.run(["apt-get", "update", "-qq"], check=True, capture_output=True)
            subprocess.run(
                ["apt-get", "install", "-y", "-qq", "openssh-server"],
                check=True,
                capture_output=True,
                env={**os.environ, "DEBIAN_FRONTEND": "noninteractive"},
            )
        elif os.environ.get("CI") == "true":
            pytest.fail("CI=true but openssh-server is missing and cannot be installed (needs root and apt-get)")
        else:
            pytest.skip("no sshd and no root/apt-get to install openssh-server")
    if os.geteuid() != 0:
        pytest.skip("the sshd test logs in as root with a key made by the test")
    d = tmp_path_factory.mktemp("sshd")
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(d / "host_key")], check=True)
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(d / "client_key")], check=True)
    shutil.copy(d / "client_key.pub", d / "authorized_keys")
    port = free_port()
    (d / "sshd_config").write_text(
        f"Port {port}\nListenAddress 127.0.0.1\nHostKey {d / 'host_key'}\nAuthorizedKeysFile {d / 'authorized_keys'}\n"
        f"PidFile {d / 'sshd.pid'}\nPermitRootLogin "
        "prohibit-password\nPasswordAuthentication no\nUsePAM no\nStrictModes no\n"
    )
    os.makedirs("/run/sshd", exist_ok=True)
    proc = subprocess.Popen(
        ["/usr/sbin/sshd", "-D", "-e", "-f", str(d / "sshd_config")], stderr=subprocess.DEVNULL, start_new_session=True
    )
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
            break
        except OSError:
            time.sleep(0.2)
    yield {"port": port, "key": str(d / "client_key"), "known_hosts": str(d / "known_hosts")}
    proc.terminate()
    proc.wait(timeout=10)


def ssh_overlay(sshd, **extra):
    return base_overlay(
        fixed_ports=True,
        launcher="ssh",
        cluster={"hosts": ["127.0.0.1", "localhost"]},
        ssh={
            "port": sshd["port"],
            "user": "root",
            "identity_file": sshd["key"],
            "options": ["StrictHostKeyChecking=no", f"UserKnownHostsFile={sshd['known_hosts']}"],
        },
        **extra,
    )


def test_correctness_runs_over_ssh_node_0_first(sshd, workflow_copy):
    result = workflow_copy.snakemake("--until", "correctness", overlay=ssh_overlay(sshd))
    assert result.returncode == 0, result.stderr[-3000:]
    status = workflow_copy.status("correctness")
    assert status["state"] == "ok", status
    run = workflow_copy.root / "results/baseline/correctness/run"
    exits = [json.loads((run / f"node{n}.exit.json").read_text()) for n in (0, 1)]
    assert [(e["node"], e["exit_code"]) for e in exits] == [(0, 0), (1, 0)] and exits[0]["started"] <= exits[1][
        "started"
    ]
    assert (run / "node0.ssh.log").is_file()
    assert "[rank 2]" in (run / "node0.log").read_text() and "[rank 10]" in (run / "node1.log").read_text()
    # Preflight ran over ssh on each node's host: the shared results/ check read back the launching host's token.
    for node in (0, 1):
        env = json.loads((workflow_copy.root / f"results/baseline/env_capture/node{node}/env.json").read_text())
        checks = {f["check"]: f["ok"] for f in env["preflight"]}
        assert checks["results/ on a shared filesystem"] and checks["deepep.test_args flags in the test's --help"], (
            checks
        )
        assert any(c.startswith("port ") for c in checks) == (node == 0)


def test_a_hung_node_over_ssh_is_ended_by_its_remote_process_group(sshd, workflow_copy):
    result = workflow_copy.snakemake(
        "--until", "correctness", overlay=ssh_overlay(sshd, sim={"dead_node": 1}, timeouts={"correctness": 8})
    )
    assert_ended_by_fail_on(result, "baseline/correctness is timeout")
    status = workflow_copy.status("correctness")
    assert status["state"] == "timeout", status
    time.sleep(2)
    assert processes_mentioning(str(workflow_copy.root)) == []


def test_a_rank_that_dies_over_ssh_ends_the_collective_in_seconds_and_is_named(sshd, workflow_copy):
    # Budget 300 s: without the spawn ending its siblings the collective would wait for it.
    overlay = ssh_overlay(sshd, sim={"die_rank": 9}, timeouts={"correctness": 300})
    started = time.monotonic()
    result = workflow_copy.snakemake("--until", "correctness", overlay=overlay)
    assert_ended_by_fail_on(result, "baseline/correctness is failed")
    status = workflow_copy.status("correctness")
    assert status["state"] == "failed" and status["reason"].startswith(
        "rank 9 (node 1, local rank 1) died first: exit code 1"
    ), status
    assert "(sim.die_rank)" in status["reason"] and status["details"]["cause"] == "crash", status
    run_s = (datetime.fromisoformat(status["finished"]) - datetime.fromisoformat(status["started"])).total_seconds()
    assert run_s < 30 and time.monotonic() - started < 120, run_s
    time.sleep(2)
    assert processes_mentioning(str(workflow_copy.root)) == []


def test_kill_9_of_snakemakes_group_over_ssh_ends_every_remote_node(sshd, workflow_copy):
    """SIGKILL to Snakemake and its job: nothing of the job runs to end the ssh clients or the remote groups. The
    job's reaper ends the ssh clients; each remote node_wrapper.py sees its stdin end and ends its node."""
    overlay = workflow_copy.overlay(ssh_overlay(sshd, sim={"dead_node": 1}, timeouts={"correctness": 300}))
    cmd = [
        sys.executable,
        "-m",
        "snakemake",
        "--cores",
        "2",
        "--until",
        "correctness",
        "--configfile",
        "config/config.yaml",
        str(overlay),
    ]
    proc = subprocess.Popen(
        cmd,
        cwd=workflow_copy.root,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
        env=without_slurm_probe(),
    )
    run = workflow_copy.root / "results/baseline/correctness/run"
    try:
        deadline = time.monotonic() + 120
        while not all((run / f"node{n}.exit.json").is_file() for n in (0, 1)):
            assert proc.poll() is None and time.monotonic() < deadline, "the nodes did not start"
            time.sleep(0.2)
        time.sleep(1)
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=30)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    deadline = time.monotonic() + 15
    while processes_mentioning(str(workflow_copy.root)) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert processes_mentioning(str(workflow_copy.root)) == []
