"""The environment handed to nodes: only what the workflow sets, merged onto the node's own; secrets never written."""

import json
import os
import stat
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conftest import ROOT
from dispatchprof.node.nodeenv import REDACTED, forwardable, looks_secret, merge, redact
from dispatchprof.tools.envinfo import debug_clock_switches, forward_record
from dispatchprof.tools.launch import WRAPPER, LocalLauncher, NodeSpec, write_node_specs
from dispatchprof.tools.toolchain import Toolchain

SIM = ROOT / "workflow" / "sim"
DEFAULT_FORWARD = [
    "ACL_*",
    "RANK_ID",
    "AKL_*",
    "DEEPEP_*",
    "HCCL_*",
    "ASCEND_*",
    "TASK_QUEUE_ENABLE",
    "VIRTUAL_ENV",
    "CONDA_*",
]


@pytest.mark.parametrize(
    "name",
    [
        "MY_API_TOKEN",
        "DB_PASSWORD",
        "GITHUB_TOKEN",
        "AWS_SECRET_ACCESS_KEY",
        "SSH_PASSWD",
        "GOOGLE_CREDENTIALS",
        "OPENAI_API_KEY",
        "my_apikey",
    ],
)
def test_secret_looking_names_are_recognised_case_insensitively(name):
    assert looks_secret(name)


@pytest.mark.parametrize(
    "name",
    [
        "TASK_QUEUE_ENABLE",
        "HCCL_CONNECT_TIMEOUT",
        "ASCEND_RT_VISIBLE_DEVICES",
        "PATH",
        "KEYBOARD",
        "MONKEY_BUSINESS",
        "HOME",
    ],
)
def test_ordinary_names_are_not_secret(name):
    assert not looks_secret(name)


def test_redact_replaces_only_secret_looking_values():
    assert redact({"DB_PASSWORD": "hunter2", "HCCL_BUFFSIZE": "200"}) == {
        "DB_PASSWORD": REDACTED,
        "HCCL_BUFFSIZE": "200",
    }


def test_forwardable_takes_the_matched_names_and_refuses_secret_looking_ones():
    environ = {
        "HCCL_BUFFSIZE": "200",
        "HCCL_AUTH_TOKEN": "t0k",
        "TASK_QUEUE_ENABLE": "2",
        "MY_API_TOKEN": "x",
        "HOME": "/root",
    }
    forwarded, refused = forwardable(environ, DEFAULT_FORWARD)
    assert forwarded == {"HCCL_BUFFSIZE": "200", "TASK_QUEUE_ENABLE": "2"}
    assert refused == ["HCCL_AUTH_TOKEN"]  # matched by HCCL_*, refused; MY_API_TOKEN was never asked for
    assert forward_record(environ, DEFAULT_FORWARD) == {
        "patterns": DEFAULT_FORWARD,
        "set": ["HCCL_BUFFSIZE", "TASK_QUEUE_ENABLE"],
        "refused": ["HCCL_AUTH_TOKEN"],
    }


def test_merge_keeps_the_node_environment_prepends_directories_and_lets_the_workflow_win():
    node = {"PATH": "/usr/bin:/bin", "HOME": "/home/u", "RANK": "stale"}
    merged = merge(
        node, {"RANK": "1"}, {"PATH": ["/wf/bin"], "PYTHONPATH": ["/wf/repo"]}, {"TASK_QUEUE_ENABLE": "2", "RANK": "9"}
    )
    assert merged == {
        "PATH": "/wf/bin:/usr/bin:/bin",
        "HOME": "/home/u",
        "RANK": "1",
        "PYTHONPATH": "/wf/repo",
        "TASK_QUEUE_ENABLE": "2",
    }


def test_a_forwarded_venv_goes_in_front_of_the_node_path_behind_the_workflow_bin():
    merged = merge({"PATH": "/usr/bin"}, {}, {"PATH": ["/wf/bin"]}, {"VIRTUAL_ENV": "/opt/venv"})
    assert merged["PATH"] == "/wf/bin:/opt/venv/bin:/usr/bin"


def test_the_toolchain_own_environment_holds_nothing_of_the_parent(monkeypatch):
    monkeypatch.setenv("MY_API_TOKEN", "s3cr3t-own-env")
    chain = Toolchain(
        "sim", SIM / "ascend_deepep", SIM / "Ascend", bin_dir=SIM / "bin", sim_env={"DEEPEP_SIM_SLOW_RANK": "3"}
    )
    sets, prepend = chain.own_env(extra={"RANK": "1"})
    assert sets == {"DEEPEP_SIM_SLOW_RANK": "3", "RANK": "1"}
    assert prepend == {"PATH": [str(SIM / "bin")], "PYTHONPATH": [str(SIM / "ascend_deepep")]}
    full = chain.env(extra={"RANK": "1"})  # commands run here still get the parent's environment, in memory
    assert full["MY_API_TOKEN"] == "s3cr3t-own-env" and full["PATH"].startswith(f"{SIM / 'bin'}{os.pathsep}")


def test_debug_clock_values_are_redacted_when_the_name_looks_secret(tmp_path):
    recorded = debug_clock_switches(
        tmp_path, {"DEBUG_CLOCK_ON": "OFF", "DEBUG_CLOCK_UPLOAD_TOKEN": "abc123", "HOME": "/root"}
    )
    assert recorded["environment"] == {"DEBUG_CLOCK_ON": "OFF", "DEBUG_CLOCK_UPLOAD_TOKEN": REDACTED}


def test_a_local_node_runs_in_this_environment_with_the_workflow_variables_merged_on(tmp_path, monkeypatch):
    monkeypatch.setenv("CALLER_SETTING", "kept")
    code = "import json, os; json.dump(dict(os.environ), open('seen.json', 'w'))"
    spec = NodeSpec(
        0, [sys.executable, "-c", code], {"RANK": "0"}, tmp_path, tmp_path / "node0.log", prepend={"PATH": ["/wf/bin"]}
    )
    assert LocalLauncher("127.0.0.1", 1, 5).run([spec], 30).all_exited_zero
    seen = json.loads((tmp_path / "seen.json").read_text())
    assert (
        seen["CALLER_SETTING"] == "kept"
        and seen["RANK"] == "0"
        and seen["PATH"] == f"/wf/bin{os.pathsep}{os.environ['PATH']}"
    )


def test_the_spec_file_is_private_and_the_node_wrapper_merges_it_with_stdin_onto_the_node(tmp_path, monkeypatch):
    monkeypatch.setenv("MY_API_TOKEN", "s3cr3t-spec-file")
    code = "import json, os; json.dump(dict(os.environ), open('seen.json', 'w'))"
    spec = NodeSpec(
        0,
        [sys.executable, "-c", code],
        {"RANK": "0", "WORLD_SIZE": "1"},
        tmp_path,
        tmp_path / "run" / "node0.log",
        prepend={"PATH": ["/wf/bin"]},
    )
    spec_file, exits = write_node_specs([spec], forwarded_on_stdin=["TASK_QUEUE_ENABLE"])
    text = spec_file.read_text()
    assert stat.S_IMODE(spec_file.stat().st_mode) == 0o600
    assert (
        "s3cr3t-spec-file" not in text and "TASK_QUEUE_ENABLE" in text and '"2"' not in text
    )  # the name, not the value
    # The node's own environment: a login shell's, without the caller's exports.
    node_env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "NODE_OWN": "yes", "DISPATCHPROF_NODE": "0"}
    proc = subprocess.Popen(
        [sys.executable, str(WRAPPER), str(spec_file), "127.0.0.1", "1", "5"],
        stdin=subprocess.PIPE,
        text=True,
        env=node_env,
    )
    proc.stdin.write(json.dumps({"TASK_QUEUE_ENABLE": "2"}) + "\n")  # one line; the pipe stays open: the lifeline
    proc.stdin.flush()
    try:
        assert proc.wait(timeout=30) == 0 and json.loads(exits[0].read_text())["exit_code"] == 0
    finally:
        proc.stdin.close()
    seen = json.loads((tmp_path / "seen.json").read_text())
    assert seen["NODE_OWN"] == "yes" and seen["TASK_QUEUE_ENABLE"] == "2" and seen["RANK"] == "0"
    assert seen["PATH"] == "/wf/bin:/usr/bin:/bin" and "MY_API_TOKEN" not in seen


def test_without_forwarding_the_wrapper_does_not_read_stdin(tmp_path):
    """Under slurm srun passes the caller's environment; the spec names nothing on stdin and none is read."""
    code = "import os; open('seen', 'w').write(os.environ.get('FROM_SRUN', '') + os.environ['RANK'])"
    spec = NodeSpec(0, [sys.executable, "-c", code], {"RANK": "0"}, tmp_path, tmp_path / "run" / "node0.log")
    spec_file, _ = write_node_specs([spec])
    env = {"PATH": os.environ["PATH"], "SLURM_NODEID": "0", "FROM_SRUN": "x"}
    proc = subprocess.Popen(
        [sys.executable, str(WRAPPER), str(spec_file), "127.0.0.1", "1", "5"], stdin=subprocess.PIPE, env=env
    )
    try:
        assert proc.wait(timeout=30) == 0  # stdin left open: a wrapper that read it would wait here
    finally:
        proc.kill()
        proc.stdin.close()
    assert Path(tmp_path / "seen").read_text() == "x0"


def test_under_ssh_the_end_of_the_launchers_pipe_ends_the_node(tmp_path):
    """The ssh launcher keeps the session's stdin open while the run lasts: when it ends (the launcher or its ssh
    client killed), node_wrapper.py ends its node's whole group, grandchildren included."""
    code = (
        "import subprocess, time; c = subprocess.Popen(['sleep', "
        "'300']); open('pids', 'w').write(str(c.pid)); time.sleep(300)"
    )
    spec = NodeSpec(0, [sys.executable, "-c", code], {}, tmp_path, tmp_path / "run" / "node0.log")
    spec_file, exits = write_node_specs([spec], forwarded_on_stdin=[])
    env = {"PATH": os.environ["PATH"], "DISPATCHPROF_NODE": "0"}
    proc = subprocess.Popen(
        [sys.executable, str(WRAPPER), str(spec_file), "127.0.0.1", "1", "5"], stdin=subprocess.PIPE, text=True, env=env
    )
    try:
        proc.stdin.write("{}\n")
        proc.stdin.flush()
        deadline = time.monotonic() + 30
        while not (tmp_path / "pids").is_file():
            assert time.monotonic() < deadline and proc.poll() is None
            time.sleep(0.1)
        time.sleep(0.5)
        assert proc.poll() is None  # the pipe is open: the node runs
        proc.stdin.close()
        assert proc.wait(timeout=30) == 1
    finally:
        if proc.poll() is None:
            proc.kill()
    grandchild = int((tmp_path / "pids").read_text())
    deadline = time.monotonic() + 10
    while os.path.exists(f"/proc/{grandchild}") and "State:\tZ" not in open(f"/proc/{grandchild}/status").read():
        assert time.monotonic() < deadline, "the node's group outlived the pipe"
        time.sleep(0.1)
    assert json.loads(exits[0].read_text())["exit_code"] is not None
