"""A candidate cause: the shifts that would remove a delay, per analysed launch, with the facts its explanation reads."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np


@dataclass
class Candidate:
    evidence: str
    rank: int | None
    node: int | None
    ranks: list[int]
    cols: np.ndarray  # the grid's columns of those ranks
    arrival_shift: np.ndarray  # [row, len(cols)] lateness removed at the barrier (launch-period scope)
    end_shift: np.ndarray  # [row, len(cols)] end delay removed in the timed kernel scope
    struck: np.ndarray  # [row] bool
    facts: dict[str, Any]
    period_extra: np.ndarray | None = None  # [row] a saving that moves the whole group (added to the shifts' saving)
    timed_extra: np.ndarray | None = None
    group: bool = False  # listed, never named (late-ending ranks; own work that the clocks cannot establish): facts["not_named"] says why
