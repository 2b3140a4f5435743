"""Rank lists as the report's sentences say them: the noun agrees with the list ("rank 9", "ranks 9 and 12")."""

from __future__ import annotations

from typing import Sequence


def rank_list(ranks: Sequence[int], limit: int = 8) -> str:
    """A rank list as a sentence starts it: "Rank 3", "Ranks 1 and 4", "Ranks
    0, 1, ..., 7 and 5 other ranks" ("7 and 7 more" read as a rank list)."""
    shown = [str(r) for r in ranks[:limit]]
    if len(ranks) == 1:
        return f"Rank {shown[0]}"
    if len(ranks) > limit:
        more = len(ranks) - limit
        return "Ranks " + ", ".join(shown) + f" and {more} other rank{'s' if more > 1 else ''}"
    return "Ranks " + ", ".join(shown[:-1]) + f" and {shown[-1]}"
