"""A job lives only as long as the Snakemake that started it, and a cancelled job is not a measurement.

Three pieces, all installed by ``run_stage`` for every stage script:
- SIGTERM (scancel, systemd, a CI runner, ``kill -TERM`` to Snakemake's group) raises ``Cancelled`` in the job's
  main thread. It is a BaseException, so no stage body mistakes it for a failed measurement: the launchers' finally
  blocks end their process groups on the way out, no status is written, and the job exits 143. Snakemake marks its
  outputs incomplete and the next plain ``snakemake`` (the profiles set rerun-incomplete) collects again.
- A watcher thread: when the nearest Snakemake process above the job is gone (``kill -9`` of Snakemake leaves its
  jobs running, reparented), the job cancels itself the same way. Under the SLURM executor the nearest Snakemake
  is the one the executor starts inside the allocation, so jobs still outlive the submitting Snakemake by design.
- A record of each live job in ``.snakemake/dispatchprof-live/`` (host, pid, the process's start time, SLURM job id),
  removed when the job ends. After a ``kill -9``, Snakemake's "Directory cannot be locked" comes with a line of ours
  that says whether any of them is still alive (``live_note``).
"""

from __future__ import annotations

import atexit
import json
import os
import signal
import socket
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

LIVE_DIR = Path(".snakemake") / "dispatchprof-live"
WATCH_INTERVAL_S = 0.5


class Cancelled(BaseException):
    """The job was cancelled from outside (SIGTERM, or its Snakemake is gone): no measurement, no status."""


def raise_cancelled(signum: int, frame: object) -> None:
    raise Cancelled(f"received {signal.Signals(signum).name}")


def parent_of(pid: int) -> int | None:
    """The parent pid from /proc/<pid>/stat (its command may hold spaces and parentheses: split after the last ')')."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return int(stat.rsplit(")", 1)[1].split()[1])


def start_time(pid: int) -> int | None:
    """The process's start time in clock ticks since boot: with the pid, it names one process (pids are reused)."""
    try:
        return int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[19])
    except (OSError, IndexError, ValueError):
        return None


def is_snakemake(pid: int) -> bool:
    try:
        argv = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
    except OSError:
        return False
    words = [Path(a.decode(errors="replace")).name for a in argv[:3]]
    return "snakemake" in words


def snakemake_ancestor(pid: int | None = None, depth: int = 8) -> int | None:
    """The nearest Snakemake process above ``pid`` (this process by default), or None (run outside Snakemake)."""
    current = parent_of(pid or os.getpid())
    for _ in range(depth):
        if current is None or current <= 1:
            return None
        if is_snakemake(current):
            return current
        current = parent_of(current)
    return None


def alive(pid: int, started: int | None) -> bool:
    """Whether the process ``pid`` that started at ``started`` still runs (a reused pid is another process)."""
    now = start_time(pid)
    return now is not None and (started is None or now == started)


def watch(pid: int, on_gone: Callable[[], None], interval_s: float = WATCH_INTERVAL_S) -> threading.Thread:
    """Call ``on_gone`` once when process ``pid`` ends; a daemon thread, so it never keeps the job alive."""
    started = start_time(pid)

    def loop() -> None:
        while alive(pid, started):
            time.sleep(interval_s)
        on_gone()

    thread = threading.Thread(target=loop, name=f"watch-{pid}", daemon=True)
    thread.start()
    return thread


@dataclass(frozen=True)
class LiveJob:
    host: str
    pid: int
    started: int | None
    slurm_job_id: str | None
    what: str

    def alive_here(self) -> bool:
        return self.host == socket.gethostname() and alive(self.pid, self.started)


def record_live(what: str, live_dir: Path = LIVE_DIR) -> Path | None:
    """Record this job as live until it exits. Best effort: a job that cannot write the record still runs."""
    job = LiveJob(socket.gethostname(), os.getpid(), start_time(os.getpid()), os.environ.get("SLURM_JOB_ID"), what)
    path = live_dir / f"{job.host}.{job.pid}.json"
    try:
        live_dir.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(f".{path.name}.tmp")
        tmp.write_text(json.dumps(job.__dict__))
        os.replace(tmp, path)
    except OSError:
        return None
    atexit.register(path.unlink, missing_ok=True)
    return path


def live_jobs(live_dir: Path = LIVE_DIR) -> list[LiveJob]:
    jobs = []
    for path in sorted(live_dir.glob("*.json")):
        try:
            jobs.append(LiveJob(**json.loads(path.read_text())))
        except (OSError, ValueError, TypeError):
            continue  # a record half written when its job was killed: it names nothing alive
    return jobs


def install(what: str) -> None:
    """SIGTERM cancels the job; so does the end of the Snakemake above it; the job is recorded as live."""
    try:
        signal.signal(signal.SIGTERM, raise_cancelled)
    except ValueError:  # not the main thread (a test calling a stage body from a thread): nothing to install
        return
    parent = snakemake_ancestor()
    if parent is not None:  # a job of a run (a test calling a stage directly is none: nothing to record or watch)
        record_live(what)
        watch(parent, lambda: os.kill(os.getpid(), signal.SIGTERM))


def live_note(live_dir: Path = LIVE_DIR, slurm_alive: Callable[[list[str]], set[str] | None] | None = None) -> str:
    """What to add to Snakemake's "Directory cannot be locked": which jobs of an earlier run still run (this host's
    by pid, other hosts' by SLURM job id when ``slurm_alive`` can ask the scheduler), that none does, or that it is
    not known. `snakemake --unlock` is called safe only when every recorded job was checked: a SLURM job without a
    scheduler to ask (``slurm_alive`` None, or it returns None: squeue failed) and a pid of another host (this host
    cannot see its processes) are unknown, never taken for gone."""
    jobs = live_jobs(live_dir)
    here = [j for j in jobs if j.alive_here()]
    other = [j for j in jobs if j.host != socket.gethostname()]
    elsewhere = sorted({j.slurm_job_id for j in other if j.slurm_job_id})
    queued = slurm_alive(elsewhere) if slurm_alive and elsewhere else None
    unknown = unchecked_jobs(elsewhere if queued is None else [], [j for j in other if not j.slurm_job_id], slurm_alive)
    if here or queued:
        parts = [f"pid {j.pid} ({j.what})" for j in here] + [f"SLURM job {i}" for i in sorted(queued or ())]
        return (
            f"dispatchprof: still alive from an earlier run: {', '.join(parts)}{'; ' + unknown if unknown else ''}. "
            "Wait for them or end them (kill -TERM <pid>, scancel <job id>) before `snakemake --unlock`."
        )
    if unknown:
        return (
            f"dispatchprof: no job of an earlier run is alive on this host, but {unknown}: whether "
            "`snakemake --unlock` is safe is not known; check them first."
        )
    return "dispatchprof: no job of an earlier run is alive: `snakemake --unlock` is safe."


def unchecked_jobs(slurm_ids: list[str], other_hosts: list[LiveJob], slurm_alive: object) -> str:
    """The recorded jobs live_note could not check, in words ("" when none): SLURM jobs without an answer from the
    scheduler, and pids of other hosts, each with the command that checks it."""
    said = []
    if slurm_ids:
        why = "squeue is not available here" if slurm_alive is None else "squeue did not answer"
        said.append(
            f"SLURM jobs {', '.join(slurm_ids)} could not be checked ({why}; `squeue -j {','.join(slurm_ids)}`)"
        )
    for job in other_hosts:
        said.append(
            f"pid {job.pid} ({job.what}) runs on {job.host}, which this host cannot see (`ssh {job.host} ps -p {job.pid}`)"
        )
    return "; ".join(said)


LOCK_DIR = Path(".snakemake") / "locks"


def lock_held(lock_dir: Path = LOCK_DIR) -> bool:
    return any(lock_dir.glob("*.lock"))


def slurm_jobs_alive(job_ids: list[str]) -> set[str] | None:
    """The ones of ``job_ids`` the scheduler still lists (squeue); None where squeue is missing, fails or times out:
    not an answer, so no job is taken for gone."""
    import subprocess

    try:
        out = subprocess.run(
            ["squeue", "-h", "-o", "%i", "-j", ",".join(job_ids)], capture_output=True, text=True, timeout=30
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    if out.returncode != 0:  # squeue exits 1 for job ids it no longer knows (finished and purged): they are gone
        return set() if "Invalid job id" in out.stderr else None
    return {line.strip() for line in out.stdout.splitlines() if line.strip()} & set(job_ids)
