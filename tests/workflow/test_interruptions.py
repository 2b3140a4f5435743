"""Runs a user may break: the demo in a path with a space and non-ASCII characters, interrupted with Ctrl-C
and rerun with a plain `snakemake`; a results directory that becomes read-only mid-run. Each on the smallest
cluster that still runs every stage (1 node x 2 ranks, short calls: ~12 s a whole run on 2 cores)."""

import hashlib
import json
import os
import re
import shutil
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conftest import assert_ended_by_fail_on, base_overlay, copy_workflow, require, without_slurm_probe
from workflow.test_end_to_end import processes_mentioning, synthetic_timeline

TINY = base_overlay(cluster={"nodes": 1, "ranks_per_node": 2})


def snakemake_cmd(wf):
    return [
        sys.executable,
        "-m",
        "snakemake",
        "--cores",
        "2",
        "--configfile",
        "config/config.yaml",
        str(wf.overlay(TINY)),
    ]


def start(wf, env, prefix=()):
    """snakemake in its own process group (as a terminal runs it: Ctrl-C reaches the whole group)."""
    cmd = [*prefix, *snakemake_cmd(wf)]
    return subprocess.Popen(
        cmd, cwd=wf.root, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, start_new_session=True, env=env
    )


def wait_for(path, proc, timeout_s=120.0, exists=lambda p: p.exists()):
    deadline = time.monotonic() + timeout_s
    while not exists(path):
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
    results = {
        name: without_pids(json.loads((root / name).read_text()))
        for name in ("report/summary.json", "baseline/stats.json", "timeline/stats.json")
    }
    # the history record is named by the time the run was recorded: each run's own, as a pid
    record = results["report/summary.json"]["history"].pop("record")
    assert re.fullmatch(r"results/history/baseline/\d{8}T\d{6}-[0-9a-f]{16}\.v1\.parquet", record), record
    return results


@pytest.mark.parametrize(
    "sig, said",
    [
        (signal.SIGINT, "timeline/collect: interrupted (Ctrl-C); the next snakemake reruns this job"),
        # what scancel, systemd and CI runners send: a cancelled measurement, never a `timeout` that stands for good
        (
            signal.SIGTERM,
            "timeline/collect: cancelled (received SIGTERM); its tools "
            "were stopped and the next snakemake reruns this job",
        ),
    ],
)
def test_ctrl_c_or_sigterm_in_a_spaced_non_ascii_path_then_plain_snakemake_gives_the_uninterrupted_results(
    tmp_path, sig, said
):
    spaced = copy_workflow(tmp_path / "my runs" / "é測" / "wf")
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    env = without_slurm_probe(
        {**os.environ, "TMPDIR": str(tmp)}
    )  # the stand-in msprof's simprof_ directories land here
    proc = start(spaced, env)
    try:
        # timeline_collect's msprof run has started: the probe script whose path once had to be free of spaces
        wait_for(spaced.root / "results" / "baseline" / "timeline" / "run" / "node0.log", proc)
        os.killpg(proc.pid, sig)
        out, _ = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    assert proc.returncode != 0
    assert "Traceback" not in out and "KeyboardInterrupt" not in out, out[-3000:]
    assert said in out, out[-3000:]
    assert not (spaced.root / "results" / "baseline" / "timeline" / "collect" / "status.json").exists()
    assert_nothing_left(spaced, tmp)

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


def test_kill_9_of_snakemake_leaves_no_process_and_says_unlock_is_safe_then_the_rerun_is_ok(tmp_path):
    wf = copy_workflow(tmp_path / "wf")
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    env = without_slurm_probe({**os.environ, "TMPDIR": str(tmp)})
    proc = start(wf, env)
    try:
        wait_for(wf.root / "results" / "baseline" / "timeline" / "run" / "node0.log", proc)
        time.sleep(1)
        os.kill(proc.pid, signal.SIGKILL)  # Snakemake alone: its jobs are left running, reparented
        proc.communicate(timeout=30)
        assert_nothing_left(wf, tmp)  # within 15 s: the jobs saw their Snakemake go and ended their tools
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    locked = wf.snakemake(overlay=TINY, env=env)
    assert locked.returncode != 0 and "Directory cannot be locked" in locked.stdout + locked.stderr
    assert "dispatchprof: no job of an earlier run is alive: `snakemake --unlock` is safe." in locked.stderr, (
        locked.stderr[-2000:]
    )
    unlocked = wf.snakemake("--unlock", overlay=TINY, env=env)
    assert unlocked.returncode == 0, unlocked.stderr[-2000:]
    rerun = wf.snakemake(overlay=TINY, env=env)
    assert rerun.returncode == 0, rerun.stderr[-3000:]
    summary = json.loads((wf.root / "results" / "baseline" / "report" / "summary.json").read_text())
    assert summary["stages"]["timeline"]["state"] == "ok", summary["stages"]["timeline"]


# A read-only bind mount of results/ in a mount namespace of the run's own (unshare; the mount ends with the run).
# Faithful where chmod is not: the tests run as root, for whom permissions do not count, and EROFS is what a
# read-only mount or a remounted filesystem gives. Needs CAP_SYS_ADMIN (root in this container).
READ_ONLY = 'mount --bind "$1" "$1" && mount -o remount,ro,bind "$1"'


def mount_namespaces() -> bool:
    if not (shutil.which("unshare") and shutil.which("nsenter") and shutil.which("mount")):
        return False
    probe = subprocess.run(
        ["unshare", "--mount", "--propagation", "private", "sh", "-c", READ_ONLY, "sh", "/tmp"], capture_output=True
    )
    return probe.returncode == 0


def require_mounts() -> None:
    """A private mount namespace (unshare, nsenter, mount as root): skipped without it, failed under CI=true."""
    require(mount_namespaces(), "unshare/nsenter and mount in a private mount namespace (root, CAP_SYS_ADMIN)")


def assert_nothing_left(wf, tmp):
    deadline = time.monotonic() + 15
    while processes_mentioning(str(wf.root)) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not processes_mentioning(str(wf.root)), "the run left processes behind"
    assert not list(tmp.glob("simprof_*")), "the stand-in msprof left its temporary directory"


def test_results_made_read_only_mid_run_end_it_with_one_line_and_no_traceback(tmp_path):
    require_mounts()
    wf = copy_workflow(tmp_path / "wf")
    (wf.root / "results").mkdir()
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    env = without_slurm_probe({**os.environ, "TMPDIR": str(tmp)})
    proc = start(wf, env, prefix=("unshare", "--mount", "--propagation", "private"))
    try:
        # timeline_collect's msprof (the stand-in) holds its simprof_ directory: the moment the run broke
        wait_for(tmp, proc, exists=lambda d: any(d.glob("simprof_*")))
        mounted = subprocess.run(
            ["nsenter", "-t", str(proc.pid), "-m", "sh", "-c", READ_ONLY, "sh", str(wf.root / "results")],
            capture_output=True,
            text=True,
        )
        assert mounted.returncode == 0, mounted.stderr
        out, _ = proc.communicate(timeout=180)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    assert proc.returncode == 1, out[-3000:]
    assert "Traceback" not in out, out[-3000:]
    said = re.findall(
        r"^timeline/collect: cannot write (.+): Read-only file system; the run cannot record this stage$", out, re.M
    )
    assert len(said) == 1, out[-3000:]
    assert (
        "\nStages (sim data):\n" in out and "Report: not built in this run" in out
    )  # the end-of-run table, through onerror
    assert not (wf.root / "results" / "baseline" / "timeline" / "collect" / "status.json").exists()
    assert_nothing_left(wf, tmp)


def test_a_read_only_results_directory_is_refused_before_any_job(tmp_path):
    require_mounts()
    wf = copy_workflow(tmp_path / "wf")
    (wf.root / "results").mkdir()
    cmd = [
        "unshare",
        "--mount",
        "--propagation",
        "private",
        "sh",
        "-c",
        f'{READ_ONLY} && shift && exec "$@"',
        "sh",
        "results",
        *snakemake_cmd(wf),
    ]
    result = subprocess.run(cmd, cwd=wf.root, capture_output=True, text=True, timeout=120, env=without_slurm_probe())
    assert result.returncode == 1 and "Traceback" not in result.stderr + result.stdout
    assert (
        "Results directory refused; nothing was run:\n  - cannot "
        f"write in {wf.root / 'results'}: Read-only file system\n" in result.stderr
    )
    assert "Execute" not in result.stdout + result.stderr and not list((wf.root / "results").iterdir())


def test_a_tampered_status_runs_its_stage_again_naming_the_file_and_the_field(tmp_path):
    """Issue 46's case (a status file edited by hand: its validations no longer a list), under issue 58's rule that a
    rerun tells the truth: the plain rerun names the file and the field, runs the stage that wrote it again, and the
    stages that gate on it run on the repaired status; no traceback, the table prints."""
    wf = copy_workflow(tmp_path / "wf")
    first = subprocess.run(
        [*snakemake_cmd(wf), "--until", "correctness"],
        cwd=wf.root,
        capture_output=True,
        text=True,
        env=without_slurm_probe(),
    )
    assert first.returncode == 0, first.stderr[-3000:]
    path = wf.root / "results" / "baseline" / "correctness" / "status.json"
    data = json.loads(path.read_text())
    path.write_text(json.dumps({**data, "validations": "all ranks passed"}))
    run = subprocess.run(
        [*snakemake_cmd(wf), "--until", "baseline"],
        cwd=wf.root,
        capture_output=True,
        text=True,
        env=without_slurm_probe(),
    )
    out = run.stdout + run.stderr
    assert run.returncode == 0 and "Traceback" not in out, out[-3000:]
    said = (
        "results/baseline/correctness/status.json: its status cannot be read "
        "(results/baseline/correctness/status.json: field 'validations' "
        "is a string ('all ranks passed'), expected a list of validations (mappings))"
    )
    assert f"Runs again: {said}" in run.stderr, run.stderr[-3000:]
    table = " ".join(run.stdout[run.stdout.index("Stages (sim data):") :].split())  # the table's rows, unwrapped
    assert "baseline correctness ok" in table and "baseline baseline ok" in table, table
    assert wf.status("correctness")["validations"] and wf.status("baseline")["state"] == "ok"


def test_a_rank_that_dies_is_a_crash_in_the_correctness_status_not_a_precision_failure(tmp_path):
    """sim.die_rank: rank 1 exits with code 1 at its first dispatch call, before any precision verdict. Before, the
    status said "2 of 2 did not pass the precision check" and details.cause precision."""
    wf = copy_workflow(tmp_path / "wf")
    overlay = wf.overlay(
        base_overlay(cluster={"nodes": 1, "ranks_per_node": 2}, sim={"die_rank": 1, "die_after_launches": 0}),
        "die.yaml",
    )
    cmd = [
        sys.executable,
        "-m",
        "snakemake",
        "--cores",
        "2",
        "--configfile",
        "config/config.yaml",
        str(overlay),
        "--until",
        "correctness",
    ]
    run = subprocess.run(cmd, cwd=wf.root, capture_output=True, text=True, env=without_slurm_probe())
    assert_ended_by_fail_on(run, "baseline/correctness is failed")
    status = wf.status("correctness")
    assert status["state"] == "failed" and status["details"]["cause"] == "crash", status
    assert (
        status["reason"].startswith("rank 1 (node 0, local rank 1) died first: exit code 1")
        and "(sim.die_rank)" in status["reason"]
    ), status
    assert "did not pass the precision check" not in status["reason"], status


def tree_state(root: Path) -> dict[str, tuple]:
    """Every entry under ``root``: kind, size, mtime (ns) and for a file its sha256. Any file created, removed or
    changed (a -shm beside a db, a checkpointed WAL) changes it."""
    state = {}
    for path in sorted(root.rglob("*")):
        info = path.lstat()
        digest = hashlib.sha256(path.read_bytes()).hexdigest() if path.is_file() else None
        state[str(path.relative_to(root))] = (path.is_dir(), info.st_size, info.st_mtime_ns, digest)
    return state


def to_wal_mode(db: Path) -> None:
    """The db in WAL mode, closed cleanly: no -wal beside it, but a read-write or mode=ro open creates a -shm."""
    with sqlite3.connect(db) as conn:
        conn.execute("PRAGMA journal_mode=WAL")
    conn.close()


def into_wal_only(db: Path, scratch: Path) -> None:
    """The db rewritten so that every table and row is in its -wal, never checkpointed (a writer that was killed,
    or files copied while it ran): the db file itself holds only its header page."""
    scratch.mkdir()
    fresh = scratch / db.name
    with sqlite3.connect(db) as source:
        dump = list(source.iterdump())
    source.close()
    conn = sqlite3.connect(fresh, isolation_level=None)
    conn.execute("PRAGMA journal_mode=WAL")
    conn.execute("PRAGMA wal_autocheckpoint=0")
    conn.executescript("\n".join(dump))  # the dump is one BEGIN ... COMMIT: one commit into the -wal
    for name in (db.name, db.name + "-wal"):
        shutil.copyfile(scratch / name, db.with_name(name))  # while the connection is open: closing would checkpoint
    conn.close()


def test_analyze_mode_reads_wal_databases_in_a_read_only_mount_and_changes_nothing_there(tmp_path):
    require_mounts()
    wf = copy_workflow(tmp_path / "wf")
    inputs = tmp_path / "inputs"
    timeline_dir = inputs / "timeline"
    synthetic_timeline(timeline_dir, rank_id=True)
    dbs = sorted(timeline_dir.rglob("msprof_*.db"))
    assert len(dbs) == 16
    for db in dbs:
        to_wal_mode(db)
    wal_only = dbs[3]
    into_wal_only(wal_only, tmp_path / "scratch")
    assert wal_only.stat().st_size == 4096 and wal_only.with_name(wal_only.name + "-wal").stat().st_size > 4096
    csv = inputs / "dispatch_latency.csv"
    csv.write_text(
        "rank,iteration,elapsed_us,is_warmup,in_average\n"
        + "".join(f"{r},{i},{10 + r},{int(i == 0)},{int(i != 0)}\n" for i in range(3) for r in range(16))
    )
    before = tree_state(inputs)
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    overlay = base_overlay(
        mode="analyze",
        analyze={"latency_csv": str(csv), "timeline_dir": str(timeline_dir)},
        timeline={"crosscheck": "auto"},
    )
    cmd = [
        "unshare",
        "--mount",
        "--propagation",
        "private",
        "sh",
        "-c",
        f'{READ_ONLY} && shift && exec "$@"',
        "sh",
        str(inputs),
    ]
    cmd += [
        sys.executable,
        "-m",
        "snakemake",
        "--cores",
        "2",
        "--configfile",
        "config/config.yaml",
        str(wf.overlay(overlay)),
    ]
    env = without_slurm_probe({**os.environ, "TMPDIR": str(tmp)})
    result = subprocess.run(cmd, cwd=wf.root, capture_output=True, text=True, timeout=600, env=env)
    assert result.returncode == 0, (result.stdout + result.stderr)[-3000:]
    assert tree_state(inputs) == before  # nothing created, removed or changed: no -shm, the -wal not checkpointed
    timeline = wf.status("timeline")
    assert timeline["state"] == "ok" and timeline["source"] == "import", timeline
    per_rank = json.loads((wf.root / "results/baseline/timeline/stats.json").read_text())["per_rank"]
    assert {rank: row["launches"] for rank, row in per_rank.items()} == {
        str(r): 6 for r in range(16)
    }  # rank 3 from its -wal
    crosscheck = json.loads((wf.root / "results/baseline/timeline/crosscheck.json").read_text())
    if shutil.which("msprof-analyze"):
        assert crosscheck["state"] == "ok" and crosscheck["their_ranks"] == 16, crosscheck  # it read a copy, rank 3 too
        assert crosscheck["read"] == "copied" and "a WAL database" in crosscheck["copy_needed"][0], crosscheck
    assert not list(tmp.glob("dispatchprof_db_*")), list(tmp.iterdir())  # the private copy of rank 3's db is removed
