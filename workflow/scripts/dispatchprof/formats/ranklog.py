"""Success, precision-failure and start lines in the V2 test's logs.

The real test's pass line, failure line, start line and per-rank log names are not public, so all come from config
(`deepep.pass_pattern`, `deepep.fail_pattern`, `deepep.start_pattern`, `deepep.log_glob`). A pattern's named
group ``rank`` holds the global rank of the process that printed the line.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable, Iterator


class LogFormatError(ValueError):
    """A success line whose rank is not a usable number."""


@dataclass(frozen=True)
class PassLine:
    rank: int
    path: str
    line_no: int
    text: str


def confined_matches(regex: re.Pattern[str], line: str) -> Iterator[re.Match[str]]:
    """The pattern's matches in one physical line, each confined to its own stretch: from where it starts to where the
    next possible match starts. Processes that share a stdout interleave their writes, so one line can hold two ranks'
    lines ("[rank 5] ... FAILED ...[rank 7] ... passed"): a greedy pattern matched on the whole line would give rank 5
    rank 7's success (seen in a loaded CI run)."""
    starts, pos = [], 0
    while (found := regex.search(line, pos)) is not None:
        starts.append(found.start())
        pos = found.start() + 1
    for start, end in zip(starts, [*starts[1:], len(line)]):
        confined = regex.match(line, start, end)
        if confined is not None:
            yield confined


def find_pass_lines(paths: Iterable[Path], pattern: str, what: str = "success line") -> dict[int, PassLine]:
    """The first line matching ``pattern`` (a success line, or ``what``) of every rank found in ``paths`` (logs are
    read as text, bad bytes replaced)."""
    regex = re.compile(pattern)
    found: dict[int, PassLine] = {}
    for path in sorted(set(paths)):
        with open(path, encoding="utf-8-sig", errors="replace") as handle:
            for line_no, line in enumerate(handle, 1):
                for match in confined_matches(regex, line):
                    raw = match.group("rank")
                    if raw is None or not raw.isdigit():
                        raise LogFormatError(
                            f"{path}:{line_no}: field 'rank' of the {what} is {raw!r}, expected a non-negative integer"
                        )
                    rank = int(raw)
                    found.setdefault(rank, PassLine(rank, str(path), line_no, line.rstrip("\n")))
    return found


def name_ranks(ranks: Iterable[int], world: int | None = None) -> str:
    """'rank 5' or 'ranks 3, 5 (2 of 16)': how reasons name ranks, so a person can grep for them."""
    ranks = sorted(set(ranks))
    if len(ranks) == 1:
        return f"rank {ranks[0]}"
    of = f" ({len(ranks)} of {world})" if world else ""
    return "ranks " + ", ".join(str(r) for r in ranks) + of


# torch.multiprocessing.spawn's messages when a spawned process fails (torch/multiprocessing/spawn.py,
# ProcessContext.join): ProcessExitedException "process 3 terminated with exit code 1" or "... with signal SIGKILL",
# ProcessRaisedException "-- Process 3 terminated with the following error:" before the child's traceback.
SPAWN_FAILURE = re.compile(
    r"\b[Pp]rocess (?P<index>\d+) terminated with (?P<how>exit code -?\d+|signal \w+|the following error)"
)


@dataclass(frozen=True)
class SpawnFailure:
    """The process (local rank) a node's spawn named as the first to fail, and where it says so."""

    local_rank: int
    how: str
    path: str
    line_no: int


def spawn_failure(path: Path) -> SpawnFailure | None:
    """The first spawn failure a node log reports, or None (the log is read as text, bad bytes replaced)."""
    with open(path, errors="replace") as handle:
        for line_no, line in enumerate(handle, 1):
            match = SPAWN_FAILURE.search(line)
            if match:
                return SpawnFailure(int(match.group("index")), match.group("how"), str(path), line_no)
    return None


def log_tail(paths: Iterable[Path], marker: str, lines: int = 3) -> list[str]:
    """The last ``lines`` distinct non-empty lines holding ``marker`` (e.g. "[rank 5]") across ``paths``, in file order
    (a line the node log and the rank's own log both hold counts once)."""
    found: dict[str, None] = {}
    for path in paths:
        with open(path, errors="replace") as handle:
            found.update((line.strip(), None) for line in handle if marker in line and line.strip())
    return list(found)[-lines:]
