"""Byte accounting of one dispatch call, from the routing each rank recorded.

Two definitions, always shown with their numbers:
- cross-rank token bytes: (token, destination rank) pairs whose destination is another rank, x hidden x dtype
  bytes: what has to cross between ranks (one copy per destination rank, as the kernel sends it);
- logical output bytes: every (token, expert) row the receivers hold, top-k copies included, x hidden x dtype bytes.
FP8 scales are not counted: the test does not transfer them. An allocated output capacity is never divided by a time.
"""

from __future__ import annotations

from typing import Any, Iterable, Mapping

DTYPE_BYTES = {"bf16": 2, "fp8": 1}
DEFINITIONS = {
    "cross_rank_token_bytes": "remote (token, destination rank) pairs x hidden x dtype bytes, summed over ranks, per dispatch call",
    "logical_output_bytes": "all (token, expert) rows incl. top-k copies x hidden x dtype bytes, summed over ranks, per dispatch call",
    "excluded": "FP8 scales are excluded: the test does not transfer them",
}


def byte_accounting(routing: Iterable[Mapping[str, Any]], hidden: int, dtype: str) -> dict[str, Any]:
    row_bytes = hidden * DTYPE_BYTES[dtype]
    per_rank: dict[str, dict[str, int]] = {}
    missing = []
    for record in routing:
        rank = record.get("global_rank")
        if not record.get("available") or rank is None:
            missing.append(rank)
            continue
        dests = record["destinations"].values()
        per_rank[str(int(rank))] = {
            "cross_rank_token_bytes": sum(d["tokens"] for d in dests if d["remote"]) * row_bytes,
            "logical_output_bytes": sum(d["pairs"] for d in dests) * row_bytes,
            "cross_node_token_bytes": sum(d["tokens"] for d in dests if not d["same_node"]) * row_bytes,
        }
    if missing or not per_rank:
        return {"available": False, "reason": f"routing not recorded for ranks {missing}" if missing else "no routing recorded", "definitions": DEFINITIONS}
    total = {key: sum(r[key] for r in per_rank.values()) for key in ("cross_rank_token_bytes", "logical_output_bytes", "cross_node_token_bytes")}
    return {"available": True, **total, "per_rank": per_rank, "row_bytes": row_bytes, "definitions": DEFINITIONS}


def bandwidth_gbps(byte_count: int, microseconds: float) -> float | None:
    """GB/s (1e9 bytes per second); None when the time is not positive."""
    return byte_count / (microseconds * 1e3) if microseconds > 0 else None
