"""No secret of the launching shell reaches the disk, and a forwarded tuning variable reaches the ranks (issue 29).

Per launcher: secret-looking variables with fresh random values are set in the environment Snakemake runs in, the
DAG runs up to correctness, and no file under results/ or .snakemake/ holds any of the values. The ranks of the
stand-in test print the runtime tuning they see (TASK_QUEUE_ENABLE, ...) in their logs. The ssh launcher runs
against a stand-in ssh that runs the remote command on this host in a login-like environment (env -i): the
caller's exports reach it only through the launcher's forwarding. The slurm case is in test_slurm.py.
"""

import json
import os
import secrets
import stat
from pathlib import Path

from conftest import base_overlay

STAND_IN_SSH = """#!/bin/sh
# Stand-in ssh (tests/workflow/test_no_secrets.py): runs the remote command here, as a login on the host would,
# without the caller's environment; stdin is passed through as ssh does.
while [ $# -gt 0 ]; do
    case "$1" in
        -o|-p|-i|-l|-F) shift 2 ;;
        --) shift; break ;;
        -*) shift ;;
        *) shift ;;  # the host
    esac
done
exec env -i HOME="$HOME" USER=root LOGNAME=root SHELL=/bin/sh PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin /bin/sh -c "$*"
"""


def planted() -> dict[str, str]:
    """Secret-looking variables with values found nowhere else; HCCL_AUTH_TOKEN is matched by the default HCCL_*."""
    return {
        name: f"{name.lower()}-{secrets.token_hex(12)}"
        for name in ("MY_API_TOKEN", "DB_PASSWORD", "HCCL_AUTH_TOKEN", "CLOUD_ACCESS_KEY")
    }


def files_holding(root: Path, values: dict[str, str]) -> list[str]:
    found = []
    for top in ("results", ".snakemake"):
        for path in (root / top).rglob("*"):
            if path.is_file() and not path.is_symlink():
                data = path.read_bytes()
                found += [
                    f"{path.relative_to(root)}: {name}" for name, value in values.items() if value.encode() in data
                ]
    return found


def tuning_lines(root: Path) -> dict[int, str]:
    lines = {}
    for log in (root / "results/baseline/correctness/run/deepep").glob("*/rank*.log"):
        for line in log.read_text().splitlines():
            if "runtime tuning:" in line:
                lines[int(log.stem.removeprefix("rank"))] = line.split("runtime tuning:", 1)[1].strip()
    return lines


def check_run(workflow_copy, overlay, env):
    secret_values = planted()
    env = {
        **os.environ,
        **env,
        **secret_values,
        "TASK_QUEUE_ENABLE": "2",
        "PYTORCH_NPU_ALLOC_CONF": "expandable_segments:True",
    }
    result = workflow_copy.snakemake("--until", "correctness", overlay=overlay, env=env)
    assert result.returncode == 0, result.stderr[-3000:]
    assert workflow_copy.status("correctness")["state"] == "ok", workflow_copy.status("correctness")
    assert files_holding(workflow_copy.root, secret_values) == []
    # Every one of the 16 ranks saw the tuning the user set on the launching host.
    assert tuning_lines(workflow_copy.root) == {
        rank: "TASK_QUEUE_ENABLE=2 PYTORCH_NPU_ALLOC_CONF=expandable_segments:True" for rank in range(16)
    }
    # Env capture names the forwarded variables that were set, and the refused one, never a value.
    for node in (0, 1):
        record = json.loads((workflow_copy.root / f"results/baseline/env_capture/node{node}/env.json").read_text())[
            "forward_env"
        ]
        assert {"TASK_QUEUE_ENABLE", "PYTORCH_NPU_ALLOC_CONF"} <= set(record["set"]) and record["refused"] == [
            "HCCL_AUTH_TOKEN"
        ], record
    return result


def test_local_launcher_writes_no_secret_and_the_ranks_see_the_tuning(workflow_copy):
    check_run(workflow_copy, base_overlay(), {})


def test_ssh_launcher_forwards_the_tuning_on_stdin_and_writes_no_secret(workflow_copy, tmp_path):
    bin_dir = tmp_path / "standin_bin"
    bin_dir.mkdir()
    (bin_dir / "ssh").write_text(STAND_IN_SSH)
    (bin_dir / "ssh").chmod(0o755)
    overlay = base_overlay(
        fixed_ports=True,
        launcher="ssh",
        cluster={"hosts": ["127.0.0.1", "localhost"]},
        ssh={"options": ["StrictHostKeyChecking=no"]},
    )
    check_run(workflow_copy, overlay, {"PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}"})
    run = workflow_copy.root / "results/baseline/correctness/run"
    assert (run / "node0.ssh.log").is_file()  # the nodes went through the stand-in ssh
    specs = json.loads((run / "node_specs.json").read_text())
    assert stat.S_IMODE((run / "node_specs.json").stat().st_mode) == 0o600
    # Only what the workflow sets, and the forwarded names (values went on stdin).
    assert {"TASK_QUEUE_ENABLE", "PYTORCH_NPU_ALLOC_CONF"} <= set(
        specs[0]["forwarded_on_stdin"]
    ) and "HCCL_AUTH_TOKEN" not in specs[0]["forwarded_on_stdin"]
    assert "HOME" not in specs[0]["env"] and specs[1]["env"]["RANK"] == "1"
    assert (
        "not forwarded to the nodes (the names look secret"
        in (workflow_copy.root / "results/baseline/correctness/logs/correctness.log").read_text()
    )
