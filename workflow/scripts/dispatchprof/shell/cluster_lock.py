"""One cluster, one collective at a time: the lock a collective job holds on the hardware it runs on.

Snakemake's own lock and the ``npu_cluster`` resource only order the jobs of one Snakemake process; two runs in one
directory (different experiments lock different files), or two clones, would put two collectives on the same NPUs
at once, and both measurements would be wrong without a word. So every collective job, once its gate is open, takes
a lock per host it occupies before it starts anything there, and holds it until the job process ends:
- an ``flock`` on ``<dir>/<host>.lock`` (the kernel releases it when the process dies, however it dies; the job's
  reaper inherits it, so it also outlives the job until the job's tools are ended);
- the holder writes who it is into the file (experiment, stage, directory, pid, host, since when), so that a waiting
  run can say whom it waits for;
- locks are taken in sorted order of their names, so runs that share hosts never wait for each other in a circle.

What a "host" is comes from ``scope``: the simulated cluster of one working directory, this host's NPUs, the ssh
hosts, or nothing under SLURM with ``toolchain: cann`` (the allocation is the lock: collective jobs ask for
``--exclusive``). Standard library only, no Snakemake.
"""

from __future__ import annotations

import datetime
import errno
import fcntl
import json
import os
import socket
import stat
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Callable, Mapping

# The lock directory of `cluster_lock.dir: auto`. The simulated cluster is the working directory's own; real NPUs are
# the host's, whatever directory, clone or user runs on them: a directory every user of the host can write to.
SIM_DIR = Path(".snakemake") / "dispatchprof-cluster"
HOST_DIR = Path("/tmp/dispatchprof-npu-locks")
SIM_HOST = "simulated-cluster"
SAY_EVERY_S = 30.0
POLL_S = 0.5


@dataclass(frozen=True)
class Scope:
    """Where the locks are and what they are named after (one per host the run occupies); ``names`` empty: no file
    lock (``why`` says what holds the hardware instead)."""

    directory: Path | None
    names: tuple[str, ...]
    why: str

    def paths(self) -> list[Path]:
        return [self.directory / f"{name}.lock" for name in sorted(self.names)] if self.directory else []

    def describe(self) -> str:
        if not self.names:
            return self.why
        return f"{', '.join(str(p) for p in self.paths())} ({self.why})"


def scope(config: Mapping[str, Any], cwd: Path) -> Scope:
    """What a collective job of ``config`` locks (module doc)."""
    chosen = config["cluster_lock"]["dir"]
    if config["toolchain"] == "sim":
        where = cwd / SIM_DIR if chosen == "auto" else Path(chosen)
        return Scope(where, (SIM_HOST,), "the simulated cluster of this directory" if chosen == "auto" else "shared")
    directory = HOST_DIR if chosen == "auto" else Path(chosen)
    launcher = config["launcher"]
    if launcher == "local":
        return Scope(directory, (socket.gethostname(),), "this host's NPUs")
    if launcher == "ssh":
        return Scope(directory, tuple(config["cluster"]["hosts"]), "the ssh hosts' NPUs, as runs from here see them")
    exclusive = config["slurm"]["exclusive"]
    why = (
        "the SLURM allocation: collective jobs ask for --exclusive"
        if exclusive
        else "nothing: slurm.exclusive is false, so SLURM may place other jobs on the same nodes"
    )
    return Scope(None, (), why)


@dataclass(frozen=True)
class Holder:
    """Who holds a lock, as the lock file says."""

    experiment: str
    stage: str
    directory: str
    pid: int
    host: str
    since: str

    @classmethod
    def here(cls, experiment: str, stage: str) -> Holder:
        since = datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds")
        return cls(experiment, stage, os.getcwd(), os.getpid(), socket.gethostname(), since)

    def describe(self) -> str:
        return (
            f"experiment {self.experiment} (stage {self.stage}) of {self.directory}, "
            f"pid {self.pid} on {self.host}, since {self.since}"
        )


class Busy(Exception):
    """The wait for the cluster ran out: another run still holds it."""

    def __init__(self, path: Path, holder: Holder | None, waited_s: float):
        self.path, self.holder, self.waited_s = path, holder, waited_s
        who = holder.describe() if holder else "a holder that did not say who it is"
        super().__init__(
            f"the cluster is busy: {path} is held by {who}; waited {waited_s:.0f} s (cluster_lock.wait); "
            "no measurement was made"
        )


@dataclass
class Held:
    """The locks this process holds: open descriptors, released when the process ends."""

    scope: Scope
    fds: list[int] = field(default_factory=list)
    waited_s: float = 0.0

    def release(self) -> None:
        """Let the cluster go before the process ends (a job never needs to: its end does it)."""
        for fd in self.fds:
            os.close(fd)
        self.fds.clear()
        if self in _HELD:
            _HELD.remove(self)

    def record(self) -> dict[str, Any]:
        return {
            "locks": [str(p) for p in self.scope.paths()],
            "by": self.scope.why,
            "waited_s": round(self.waited_s, 1),
        }


_HELD: list[Held] = []  # a process-wide fact (the kernel's locks are per process): what run_test checks


def held() -> Held | None:
    return _HELD[-1] if _HELD else None


def inherited_fds() -> tuple[int, ...]:
    """The descriptors a child that must outlive the job's tools keeps (the reaper): the locks then last as long."""
    return tuple(fd for h in _HELD for fd in h.fds)


def read_holder(path: Path) -> Holder | None:
    try:
        data = json.loads(path.read_text())
        return Holder(**{k: data[k] for k in Holder.__dataclass_fields__})
    except (OSError, ValueError, KeyError, TypeError):
        return None  # being written, or written by a run that never got to it


def _open(path: Path) -> int:
    """The lock file, created if need be; in a directory every user may write to, the file is too (another user's
    run must be able to take it and say who it is)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    shared = bool(path.parent.stat().st_mode & stat.S_IWOTH)
    try:
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o666 if shared else 0o644)
    except PermissionError:
        return os.open(path, os.O_RDONLY)  # flock needs no write access; the holder then cannot say who it is
    if shared:
        try:
            os.fchmod(fd, 0o666)
        except PermissionError:
            pass  # another user's file: theirs to set
    return fd


def _write_holder(fd: int, holder: Holder) -> None:
    try:
        os.ftruncate(fd, 0)
        os.pwrite(fd, json.dumps(asdict(holder)).encode(), 0)
    except OSError as exc:
        if exc.errno not in (errno.EBADF, errno.EINVAL, errno.EACCES):
            raise


def _take_one(path: Path, holder: Holder, deadline: float, started: float, say: Callable[[str], None]) -> int:
    fd = _open(path)
    next_say = time.monotonic()
    while True:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            _write_holder(fd, holder)
            return fd
        except BlockingIOError:
            pass
        now = time.monotonic()
        other = read_holder(path)
        if now >= deadline:
            os.close(fd)
            raise Busy(path, other, now - started)
        if now >= next_say:
            who = other.describe() if other else "another run"
            say(
                f"waiting for the cluster: {path} is held by {who}; up to {deadline - now:.0f} s more (cluster_lock.wait)"
            )
            next_say = now + SAY_EVERY_S
        time.sleep(min(POLL_S, max(deadline - now, 0.0)))


def take(scope: Scope, holder: Holder, wait_s: float, say: Callable[[str], None]) -> Held:
    """Every lock of ``scope``, in order, waiting up to ``wait_s`` in all; Busy (the locks taken so far are let go)
    when the wait runs out. The locks are held until this process ends."""
    started = time.monotonic()
    deadline = started + wait_s
    taken = Held(scope)
    try:
        for path in scope.paths():
            taken.fds.append(_take_one(path, holder, deadline, started, say))
    except BaseException:
        taken.release()
        raise
    taken.waited_s = time.monotonic() - started
    _HELD.append(taken)
    return taken
