"""A job lives only as long as its Snakemake, and its tools
only as long as the job (shell/lifeline.py, node/reaper.py)."""

import json
import os
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st

from dispatchprof.node.reaper import registered
from dispatchprof.shell import lifeline
from dispatchprof.tools.launch import REAPER


def test_the_watcher_calls_back_once_the_watched_process_ends():
    sleeper = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(0.5)"])
    gone = threading.Event()
    lifeline.watch(sleeper.pid, gone.set, interval_s=0.05)
    assert not gone.wait(0.2)  # still running: no call
    sleeper.wait()
    assert gone.wait(5)


def test_a_reused_pid_is_not_the_process_that_was_recorded():
    me = os.getpid()
    assert lifeline.alive(me, lifeline.start_time(me))
    assert not lifeline.alive(me, lifeline.start_time(me) + 1)  # same pid, another start: another process


def test_the_nearest_snakemake_above_a_job_is_found_and_none_outside_snakemake():
    assert lifeline.snakemake_ancestor() is None  # pytest runs under no Snakemake
    # A stand-in "snakemake" (by its argv[0]) whose child asks for its nearest Snakemake.
    child = (
        "import sys; sys.path.insert(0, sys.argv[1]); from dispatchprof.shell "
        "import lifeline; print(lifeline.snakemake_ancestor())"
    )
    scripts = os.path.join(os.path.dirname(__file__), "..", "..", "workflow", "scripts")
    parent = subprocess.run(
        [
            "bash",
            "-c",
            'exec -a snakemake python3 -c "import subprocess, sys; r = '
            'subprocess.run(sys.argv[1:]); sys.exit(r.returncode)" "$@"',
            "x",
        ]
        + [sys.executable, "-c", child, scripts],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert parent.returncode == 0, parent.stderr
    assert parent.stdout.strip().isdigit()


def write_record(live_dir, pid, started, host=None, slurm=None, what="timeline/collect"):
    live_dir.mkdir(exist_ok=True)
    record = {"host": host or socket.gethostname(), "pid": pid, "started": started, "slurm_job_id": slurm, "what": what}
    (live_dir / f"{record['host']}.{pid}.json").write_text(json.dumps(record))


def test_the_lock_note_names_the_jobs_still_alive_and_says_unlock_is_safe_when_none_is(tmp_path):
    live = tmp_path / "live"
    dead = subprocess.Popen(["true"])
    dead.wait()
    write_record(live, dead.pid, 1)
    (live / "half-written.json").write_text('{"host": ')  # a record cut by a kill -9 names nothing
    assert lifeline.live_note(live).endswith("`snakemake --unlock` is safe.")
    write_record(live, os.getpid(), lifeline.start_time(os.getpid()))
    note = lifeline.live_note(live)
    assert f"pid {os.getpid()} (timeline/collect)" in note and "before `snakemake --unlock`" in note


def test_the_lock_note_asks_the_scheduler_about_jobs_of_other_hosts(tmp_path):
    live = tmp_path / "live"
    write_record(live, 4242, 7, host="node-a", slurm="1001")
    write_record(live, 4243, 7, host="node-b", slurm="1002")
    assert "SLURM job 1002" in lifeline.live_note(live, slurm_alive=lambda ids: {"1002"} & set(ids))
    assert "SLURM job 1001" not in lifeline.live_note(live, slurm_alive=lambda ids: {"1002"} & set(ids))
    gone = lifeline.live_note(live, slurm_alive=lambda ids: set())
    assert gone.endswith("`snakemake --unlock` is safe."), gone  # the scheduler answered: none of them runs


def test_without_squeue_or_with_it_failing_a_slurm_job_of_another_host_is_unknown_never_safe(tmp_path):
    """Issue 58: with squeue missing, the note called another host's SLURM job not alive and said --unlock is safe."""
    live = tmp_path / "live"
    write_record(live, 4242, 7, host="node-a", slurm="1001")
    write_record(live, 4243, 7, host="node-b", slurm="1002")
    for slurm_alive, why in ((None, "squeue is not available here"), (lambda ids: None, "squeue did not answer")):
        note = lifeline.live_note(live, slurm_alive=slurm_alive)
        assert not note.endswith("is safe.") and "whether `snakemake --unlock` is safe is not known" in note, note
        assert f"SLURM jobs 1001, 1002 could not be checked ({why}; `squeue -j 1001,1002`)" in note, note


def test_a_pid_recorded_on_another_host_without_a_slurm_job_is_unknown(tmp_path):
    """A job of another host (a shared directory, no SLURM) has a pid this host cannot look up: not known."""
    live = tmp_path / "live"
    write_record(live, 4242, 7, host="node-a", what="pmu/collect")
    note = lifeline.live_note(live, slurm_alive=lambda ids: set())
    assert not note.endswith("is safe.") and "not known" in note, note
    assert "pid 4242 (pmu/collect) runs on node-a, which this host cannot see (`ssh node-a ps -p 4242`)" in note
    write_record(live, os.getpid(), lifeline.start_time(os.getpid()))  # and one alive here: named, the other unknown
    note = lifeline.live_note(live)
    assert f"still alive from an earlier run: pid {os.getpid()}" in note and "runs on node-a" in note, note


def fake_squeue(bin_dir: Path, exit_code: int, stdout: str = "", stderr: str = "") -> None:
    bin_dir.mkdir(exist_ok=True)
    script = bin_dir / "squeue"
    script.write_text(f"#!/bin/sh\nprintf '{stdout}'\nprintf '{stderr}' >&2\nexit {exit_code}\n")
    script.chmod(0o755)


def test_squeue_that_fails_is_no_answer_and_one_that_knows_no_such_job_says_it_is_gone(tmp_path, monkeypatch):
    bin_dir = tmp_path / "bin"
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    fake_squeue(bin_dir, 1, stderr="slurm_load_jobs error: Unable to contact slurm controller")
    assert lifeline.slurm_jobs_alive(["1001"]) is None
    fake_squeue(bin_dir, 1, stderr="slurm_load_jobs error: Invalid job id specified")
    assert lifeline.slurm_jobs_alive(["1001"]) == set()
    fake_squeue(bin_dir, 0, stdout="1002\n")
    assert lifeline.slurm_jobs_alive(["1001", "1002"]) == {"1002"}
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))  # no squeue at all
    assert lifeline.slurm_jobs_alive(["1001"]) is None


def test_a_job_records_itself_as_live_until_it_exits(tmp_path):
    code = (
        "import sys, time; sys.path.insert(0, sys.argv[1]); from pathlib import Path; from dispatchprof.shell import "
        "lifeline;lifeline.record_live('probe', Path(sys.argv[2])); print('recorded', flush=True); time.sleep(0.5)"
    )
    scripts = os.path.join(os.path.dirname(__file__), "..", "..", "workflow", "scripts")
    proc = subprocess.Popen([sys.executable, "-c", code, scripts, str(tmp_path)], stdout=subprocess.PIPE, text=True)
    assert proc.stdout.readline().strip() == "recorded"
    assert [j.pid for j in lifeline.live_jobs(tmp_path)] == [proc.pid]
    proc.wait(timeout=10)
    assert lifeline.live_jobs(tmp_path) == []


@given(st.lists(st.tuples(st.sampled_from("+-"), st.integers(min_value=-3, max_value=40))))
def test_the_reaper_ends_exactly_the_groups_registered_and_not_released(events):
    lines = [f"{sign} {pgid}" for sign, pgid in events] + ["garbage", "+ ", "+ 1"]  # never pid 1, never a bad line
    expected: set[int] = set()
    for sign, pgid in events:
        if pgid > 1:
            (expected.add if sign == "+" else expected.discard)(pgid)
    assert registered(lines) == expected


def test_the_reaper_ends_a_registered_group_when_its_pipe_closes(tmp_path):
    group = subprocess.Popen(["sleep", "300"], start_new_session=True)
    try:
        run_reaper_until_its_pipe_closes(group)
    finally:
        if group.poll() is None:
            group.kill()


def run_reaper_until_its_pipe_closes(group):
    reaper = subprocess.Popen(
        [sys.executable, str(REAPER), "1"], stdin=subprocess.PIPE, text=True, start_new_session=True
    )
    reaper.stdin.write(f"+ {group.pid}\n")
    reaper.stdin.flush()
    time.sleep(0.3)
    assert group.poll() is None  # nothing happens while the job lives
    reaper.stdin.close()  # the job ends, however
    assert group.wait(timeout=10) != 0 and reaper.wait(timeout=10) == 0
