"""A job lives only as long as its Snakemake, and its tools
only as long as the job (shell/lifeline.py, node/reaper.py)."""

import json
import os
import socket
import subprocess
import sys
import threading
import time

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
    unchecked = lifeline.live_note(live)
    assert "could not be checked" in unchecked and "1001, 1002" in unchecked


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
