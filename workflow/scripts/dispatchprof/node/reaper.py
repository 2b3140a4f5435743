"""Ends the process groups a job started when the job itself dies, even by SIGKILL.

A job starts its tools in process groups of their own (so that they can be ended as a group, and so that a
Ctrl-C to Snakemake's group does not reach them half-way). If the job is killed with SIGKILL, nothing of the job
runs any more to end those groups. This process is the job's lifeline: it runs in a session of its own (a
signal to the job's group does not reach it), reads "+<pgid>" and "-<pgid>" lines on its standard input, and
when that input ends (the job exited, however) it ends every group still registered: TERM, a grace period, KILL.
Standard library only.

    python reaper.py [grace_s]
"""

from __future__ import annotations

import os
import signal
import sys
import time


def group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
        return True
    except ProcessLookupError:
        return False
    except PermissionError:  # someone else's group now (the id was reused): not ours to end
        return False


def end_groups(pgids: set[int], grace_s: float) -> None:
    """TERM every group, wait up to ``grace_s`` for them to go, then KILL what is left."""
    for pgid in pgids:
        try:
            os.killpg(pgid, signal.SIGTERM)
        except (ProcessLookupError, PermissionError):
            pass
    deadline = time.monotonic() + grace_s
    while any(group_alive(p) for p in pgids) and time.monotonic() < deadline:
        time.sleep(0.1)
    for pgid in pgids:
        try:
            os.killpg(pgid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass


def registered(lines: object) -> set[int]:
    """The groups still registered once the input ends: "+<pgid>" adds one, "-<pgid>" removes it."""
    pgids: set[int] = set()
    for line in lines:  # type: ignore[attr-defined]
        sign, _, number = line.strip().partition(" ")
        if not number.isdigit() or int(number) <= 1:
            continue
        (pgids.add if sign == "+" else pgids.discard)(int(number))
    return pgids


def main(argv: list[str]) -> int:
    grace_s = float(argv[1]) if len(argv) > 1 else 5.0
    for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, signal.SIG_IGN)  # only the end of the job's pipe ends this process
    pgids = registered(sys.stdin)
    if pgids:
        end_groups(pgids, grace_s)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
