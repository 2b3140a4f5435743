"""A rank that dies ends its collective in seconds: the stand-in's spawn ends its siblings as torch's mp.spawn does,
the node exits non-zero, the launcher stops the other nodes after cluster.fail_grace, and the verdict names the rank
and what it printed last. Runs the stand-in's precision test on 2 nodes x 2 ranks through the local launcher
(no Snakemake; ~2-5 s each)."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

from conftest import ROOT
from dispatchprof.shell.config import deep_merge, fill_defaults, load_schema, run_config
from dispatchprof.shell.stage import SCHEMA_PATH
from dispatchprof.tools import collective, toolchain

STAND_IN = ROOT / "workflow" / "sim" / "ascend_deepep"
pytestmark = pytest.mark.usefixtures("cluster_held")  # a collective run holds the cluster (shell/cluster_lock.py)


def config_with(**sim) -> dict:
    overlay = {"cluster": {"nodes": 2, "ranks_per_node": 2, "fail_grace": 2, "ready_timeout": 20}, "sim": sim}
    config = deep_merge(yaml.safe_load((ROOT / "config" / "config.yaml").read_text()), overlay)
    fill_defaults(config, load_schema(SCHEMA_PATH))
    return run_config(config, config["experiment"])


@pytest.mark.parametrize("die_rank", [1, 2])  # on node 0 (which serves the store) and on node 1
def test_a_rank_that_dies_ends_the_collective_in_seconds_and_is_named(tmp_path, die_rank):
    config = config_with(die_rank=die_rank, die_after_launches=0)
    started = time.monotonic()
    run = collective.run_test(config, toolchain.resolve(config, ROOT), tmp_path / "run", "die", timeout_s=120)
    elapsed = time.monotonic() - started
    assert elapsed < 30, f"the collective took {elapsed:.0f} s"
    assert run.verdict.state == "failed", run.verdict
    node, local = divmod(die_rank, 2)
    assert run.verdict.reason.startswith(
        f"rank {die_rank} (node {node}, local rank {local}) died first: exit code 1"
    ), run.verdict.reason
    assert "(sim.die_rank)" in run.verdict.reason  # the tail of what the rank printed
    assert not run.result.timed_out
    # a crash, not "4 of 4 did not pass the precision check": no rank's log holds a precision-failure line
    assert run.verdict.cause == "crash" and run.details["cause"] == "crash", run.verdict
    assert "did not pass the precision check" not in run.verdict.reason
    assert "(4 of 4) printed neither a success nor a precision-failure line" in run.verdict.reason


def test_without_the_knob_every_rank_passes(tmp_path):
    config = config_with()
    run = collective.run_test(config, toolchain.resolve(config, ROOT), tmp_path / "run", "ok", timeout_s=120)
    assert run.verdict.state == "ok", run.verdict


def _spawn_script(tmp_path: Path, body: str) -> Path:
    script = tmp_path / "spawn_case.py"
    script.write_text(
        "import os, sys, time\n"
        "from ascend_deepep import _mp\n"
        f"{body}\n"
        "if __name__ == '__main__':\n"
        "    try:\n"
        "        _mp.spawn(work, nprocs=4, grace_s=1.0)\n"
        "    except _mp.ProcessExitedException as exc:\n"
        "        print(exc, exc.error_index, exc.exit_code, flush=True)\n"
        "        sys.exit(1)\n"
    )
    return script


def run_spawn(script: Path) -> subprocess.CompletedProcess:
    """Run a spawn case; it must end within seconds (its siblings would otherwise sleep 600 s)."""
    started = time.monotonic()
    out = subprocess.run(
        [sys.executable, str(script)],
        env={**os.environ, "PYTHONPATH": str(STAND_IN)},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert time.monotonic() - started < 15
    return out


def test_spawn_ends_blocked_siblings_on_the_first_failure_and_names_it(tmp_path):
    script = _spawn_script(
        tmp_path,
        "def work(i):\n"
        "    open(os.path.join(os.path.dirname(__file__), f'pid{i}'), 'w').write(str(os.getpid()))\n"
        "    if i == 2:\n"
        "        time.sleep(0.3); sys.exit(3)\n"
        "    time.sleep(600)  # blocked in the collective\n",
    )
    out = run_spawn(script)
    assert out.returncode == 1 and out.stdout.strip() == "process 2 terminated with exit code 3 2 3", out
    for i in range(4):  # no sibling outlives the spawn
        pid = int((tmp_path / f"pid{i}").read_text())
        assert not Path(f"/proc/{pid}").exists() or "Z" in Path(f"/proc/{pid}/stat").read_text().split()[2]


def test_spawn_kills_a_sibling_that_ignores_sigterm_and_names_a_signal(tmp_path):
    script = _spawn_script(
        tmp_path,
        "import signal\n"
        "def work(i):\n"
        "    if i == 0:\n"
        "        time.sleep(0.3); os.kill(os.getpid(), signal.SIGSEGV)\n"
        "    signal.signal(signal.SIGTERM, signal.SIG_IGN)\n"
        "    time.sleep(600)\n",
    )
    out = run_spawn(script)
    assert out.stdout.strip() == "process 0 terminated with signal SIGSEGV 0 -11", out


def test_a_precision_failure_keeps_its_reason_first_and_every_other_rank_passes(tmp_path):
    config = config_with(precision_fail_rank=3)
    run = collective.run_test(config, toolchain.resolve(config, ROOT), tmp_path / "run", "prec", timeout_s=120)
    assert run.verdict.state == "failed" and run.verdict.cause == "precision", run.verdict
    assert run.verdict.reason.startswith("rank 3 did not pass the precision check"), run.verdict.reason
    assert (
        "rank 3 (node 1, local rank 1) died first: exit code 1" in run.verdict.reason
        and "precision check FAILED" in run.verdict.reason
    )


def test_a_precision_failure_and_a_crash_on_the_same_rank_are_told_apart(tmp_path):
    """The same rank, the same exit code 1: its log's precision-failure line is the only difference."""
    causes = {}
    for knob in ("precision_fail_rank", "die_rank"):
        config = config_with(**{knob: 3})
        run = collective.run_test(config, toolchain.resolve(config, ROOT), tmp_path / knob, knob, timeout_s=120)
        assert "rank 3 (node 1, local rank 1) died first: exit code 1" in run.verdict.reason, run.verdict
        causes[knob] = run.verdict.cause
    assert causes == {"precision_fail_rank": "precision", "die_rank": "crash"}
