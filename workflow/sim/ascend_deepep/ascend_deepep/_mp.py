"""Stand-in for torch.multiprocessing.spawn: run fn(local_rank, *args) in nprocs processes.

Like torch's spawn it waits for all processes and raises when one of them fails, naming it.
"""

from __future__ import annotations

import multiprocessing
from typing import Any, Callable


class ProcessExitedException(RuntimeError):
    pass


def spawn(fn: Callable[..., Any], args: tuple = (), nprocs: int = 1) -> None:
    ctx = multiprocessing.get_context("fork")
    procs = [ctx.Process(target=fn, args=(i, *args)) for i in range(nprocs)]
    for p in procs:
        p.start()
    for p in procs:
        p.join()
    failed = [(i, p.exitcode) for i, p in enumerate(procs) if p.exitcode != 0]
    if failed:
        i, code = failed[0]
        raise ProcessExitedException(f"process {i} terminated with exit code {code}")
