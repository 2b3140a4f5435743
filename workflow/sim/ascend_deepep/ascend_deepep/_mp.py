"""Stand-in for torch.multiprocessing.spawn: run fn(local_rank, *args) in nprocs processes.

Like torch's spawn (torch/multiprocessing/spawn.py, ProcessContext.join) it waits for the first process to end: when
one fails, it ends the others (SIGTERM, then SIGKILL after a grace period) and raises, naming the failed process
with torch's message ("process 3 terminated with exit code 1"). So a rank that dies does not leave its siblings
blocked in the collective.
"""

from __future__ import annotations

import multiprocessing
import multiprocessing.connection
import signal
import time
from typing import Any, Callable

# torch's ProcessContext.join gives the siblings 30 s after SIGTERM (its grace_period); the stand-in's ranks hold no
# device state, so a short grace suffices.
GRACE_S = 3.0


class ProcessExitedException(RuntimeError):
    def __init__(self, message: str, error_index: int, exit_code: int | None):
        super().__init__(message)
        self.error_index = error_index
        self.exit_code = exit_code


def _describe(index: int, exitcode: int) -> str:
    if exitcode < 0:
        try:
            name = signal.Signals(-exitcode).name
        except ValueError:
            name = f"signal {-exitcode}"
        return f"process {index} terminated with signal {name}"
    return f"process {index} terminated with exit code {exitcode}"


def _end(procs: list[multiprocessing.Process], grace_s: float) -> None:
    for p in procs:
        if p.is_alive():
            p.terminate()
    deadline = time.monotonic() + grace_s
    for p in procs:
        p.join(max(0.0, deadline - time.monotonic()))
    for p in procs:
        if p.is_alive():
            p.kill()
            p.join()


def spawn(fn: Callable[..., Any], args: tuple = (), nprocs: int = 1, grace_s: float = GRACE_S) -> None:
    ctx = multiprocessing.get_context("fork")
    procs = [ctx.Process(target=fn, args=(i, *args)) for i in range(nprocs)]
    for p in procs:
        p.start()
    pending = {p.sentinel: i for i, p in enumerate(procs)}
    try:
        while pending:
            for sentinel in multiprocessing.connection.wait(list(pending)):
                i = pending.pop(sentinel)
                procs[i].join()
                code = procs[i].exitcode
                if code != 0:
                    _end(procs, grace_s)
                    raise ProcessExitedException(_describe(i, code), i, code)
    finally:
        _end(procs, grace_s)  # nothing is left running, however this ends (KeyboardInterrupt, SIGTERM handler)
