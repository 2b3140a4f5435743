"""Success (and start) lines in the V2 test's logs.

The real test's pass line, start line and per-rank log names are not public (shared/formats/deepep.md §7),
so all come from config (`deepep.pass_pattern`, `deepep.start_pattern`, `deepep.log_glob`). A pattern's named
group ``rank`` holds the global rank of the process that printed the line.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable


class LogFormatError(ValueError):
    """A success line whose rank is not a usable number."""


@dataclass(frozen=True)
class PassLine:
    rank: int
    path: str
    line_no: int
    text: str


def find_pass_lines(paths: Iterable[Path], pattern: str) -> dict[int, PassLine]:
    """The first success line of every rank found in ``paths`` (logs are read as text, bad bytes replaced)."""
    regex = re.compile(pattern)
    found: dict[int, PassLine] = {}
    for path in sorted(set(paths)):
        with open(path, errors="replace") as handle:
            for line_no, line in enumerate(handle, 1):
                match = regex.search(line)
                if not match:
                    continue
                raw = match.group("rank")
                if raw is None or not raw.isdigit():
                    raise LogFormatError(f"{path}:{line_no}: field 'rank' of the success line is {raw!r}, expected a non-negative integer")
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
