"""Byte accounting of one dispatch call, from the routing each rank recorded, and the bandwidths it gives.

Two definitions, always shown with their numbers:
- cross-rank token bytes: (token, destination rank) pairs whose destination is another rank, x hidden x dtype
  bytes: what has to cross between ranks (one copy per destination rank, as the kernel sends it);
- logical output bytes: every (token, expert) row the receivers hold, top-k copies included, x hidden x dtype bytes.
FP8 scales are not counted (DEFINITIONS["excluded"] says why). An allocated output capacity is never divided by a time.

The latency CSV may carry the writer's own per-call byte counts (processed_bytes, sent_bytes; docs/formats.md §3):
``csv_bytes`` reads them per rank and ``compare_bytes`` sets them beside this accounting.
Bandwidths (``bandwidths``): the group figure divides the bytes of all ranks by the per-iteration max duration, the
per-rank figure a rank's bytes by its own duration; in a coupled kernel the two answer different questions.
"""

from __future__ import annotations

from typing import Any, Iterable, Mapping

import numpy as np
import pandas as pd

DTYPE_BYTES = {"bf16": 2, "fp8": 1}
DEFINITIONS = {
    "cross_rank_token_bytes": (
        "remote (token, destination rank) pairs x hidden x dtype bytes, summed over ranks, per dispatch call"
    ),
    "logical_output_bytes": (
        "all (token, expert) rows incl. top-k copies x hidden x dtype bytes, summed over ranks, per dispatch call"
    ),
    # The profiling guide behind this workflow (issue 15 quotes it) says the FP8 path does not transfer or return
    # *complete* scales; docs/formats.md §3 has no sentence on FP8 scales (§3 --dtype fp8, §4 QuantMode only).
    "excluded": (
        "FP8 scales are not counted: the FP8 path does not transfer or return complete scales (the profiling guide, "
        "as quoted in this project's issue 15; docs/formats.md §3 names FP8 only as the test's --dtype fp8 and as the "
        "kernel's QuantMode template parameter), so the scale bytes actually moved are unknown; "
        "with dtype fp8 the figures count 1 byte per hidden element and nothing for scales"
    ),
}
# The CSV's columns and the accounting they are set beside: the nearest definitions, not documented equivalents.
CSV_PAIRS = {"sent_bytes": "cross_rank_token_bytes", "processed_bytes": "logical_output_bytes"}
PER_RANK_CAVEAT = (
    "in a coupled kernel a late rank looks fastest per rank: it waits least inside the kernel (its peers wait for its "
    "counts and tokens), so its own duration is the shortest and its bytes / duration the highest; a "
    "high per-rank figure does not make a rank fast, and the group figure is what one call delivers"
)


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
        return {
            "available": False,
            "reason": f"routing not recorded for ranks {missing}" if missing else "no routing recorded",
            "definitions": DEFINITIONS,
        }
    total = {
        key: sum(r[key] for r in per_rank.values())
        for key in ("cross_rank_token_bytes", "logical_output_bytes", "cross_node_token_bytes")
    }
    return {"available": True, **total, "per_rank": per_rank, "row_bytes": row_bytes, "definitions": DEFINITIONS}


def bandwidth_gbps(byte_count: int, microseconds: float) -> float | None:
    """GB/s (1e9 bytes per second); None when the time is not positive."""
    return byte_count / (microseconds * 1e3) if microseconds > 0 else None


def csv_bytes(work: pd.DataFrame, measured: pd.DataFrame) -> dict[str, Any]:
    """The CSV's per-call byte columns over the measured calls (``measured``: rank, iteration): per rank the median
    per call and whether every call carried the same count; totals are the sums over ranks of those medians."""
    rows = work.merge(measured[["rank", "iteration"]], on=["rank", "iteration"])
    per_rank: dict[str, dict[str, Any]] = {}
    for rank, group in rows.groupby("rank"):
        constant = all(group[c].nunique() == 1 for c in CSV_PAIRS)
        per_rank[str(int(rank))] = {
            **{
                c: int(group[c].iloc[0]) if constant else float(np.median(group[c].to_numpy(dtype=float)))
                for c in ("processed_bytes", "sent_bytes")
            },
            "constant": constant,
        }
    return {
        "per_rank": per_rank,
        "processed_bytes": sum(v["processed_bytes"] for v in per_rank.values()),
        "sent_bytes": sum(v["sent_bytes"] for v in per_rank.values()),
        "calls": int(len(rows)),
        "definition": (
            "the latency CSV's processed_bytes / sent_bytes (docs/formats.md §3, "
            "written by the work callback): per rank the median per measured call"
        ),
    }


def compare_bytes(computed: Mapping[str, Any], read: Mapping[str, Any]) -> dict[str, Any]:
    """Per rank, each CSV column against its nearest computed
    definition (CSV_PAIRS): agree only when equal on every rank."""
    pairs = {}
    for column, ours in CSV_PAIRS.items():
        mismatch = {
            rank: [values[column], computed["per_rank"].get(rank, {}).get(ours)]
            for rank, values in read["per_rank"].items()
            if values[column] != computed["per_rank"].get(rank, {}).get(ours)
        }
        pairs[column] = {"against": ours, "agree": not mismatch, "mismatch": mismatch}
    return {
        "pairs": pairs,
        "agree": all(p["agree"] for p in pairs.values()),
        "note": (
            "docs/formats.md §3 names processed_bytes and sent_bytes but not what the work callback counts: "
            "sent_bytes is set beside the cross-rank token bytes and processed_bytes beside the logical output bytes, "
            "the nearest definitions here; a mismatch [csv, computed] may be a different definition, not an error"
        ),
    }


def bandwidths(per_call_bytes: pd.DataFrame, measured: pd.DataFrame, byte_label: str) -> dict[str, Any]:
    """``per_call_bytes``: rank, iteration, bytes; ``measured``: rank, iteration, us (complete measured iterations).
    Group: per iteration the bytes of all ranks / the max duration over ranks, median over iterations. Per rank: per
    call its bytes / its own duration, median over its calls. Calls or iterations with a zero duration are left out."""
    rows = measured.merge(per_call_bytes, on=["rank", "iteration"])
    per_iter = rows.groupby("iteration").agg(total=("bytes", "sum"), max_us=("us", "max"))
    per_iter = per_iter[per_iter["max_us"] > 0]
    group = (per_iter["total"].astype(float) / (per_iter["max_us"] * 1e3)).to_numpy()
    timed = rows[rows["us"] > 0]
    own = timed.assign(gbps=timed["bytes"].astype(float) / (timed["us"] * 1e3))
    return {
        "bytes": byte_label,
        "group": {
            "gbps_median": float(np.median(group)) if len(group) else None,
            "iterations": int(len(group)),
            "definition": (
                f"{byte_label}: per iteration the total moved by all ranks / that iteration's "
                "max kernel duration over ranks; median over measured iterations; GB/s = 1e9 B/s"
            ),
        },
        "per_rank": {str(int(r)): float(np.median(g["gbps"])) for r, g in own.groupby("rank")},
        "per_rank_definition": (
            f"{byte_label}: per call that rank's own bytes / its own kernel "
            "duration; median over its measured calls; GB/s = 1e9 B/s"
        ),
        "per_rank_caveat": PER_RANK_CAVEAT,
    }


# Link classes: where a (token, destination rank) copy travels. Every remote send goes through URMA, one queue per
# destination rank (docs/formats.md §3); the class is the topology of the pair, not the transport.
LINK_CLASSES = ("intra_node", "inter_node")
LINK_DEFINITION = (
    "token payload bytes: (token, destination rank) pairs from the recorded routing (a token routed to several "
    "experts of one destination rank counts once for it) x hidden x dtype bytes, split by topology: intra_node = the "
    "destination is another rank of the sender's node, inter_node = a rank of another node; a rank's own tokens need "
    "no link and are in neither. intra_node + inter_node = cross_rank_token_bytes exactly. Wire bytes are not "
    "counted: the kernel's 512-byte blocks carry 480 bytes of payload and a 32-byte arrival flag, so the "
    "wire moves ~6.7% more than these figures, and FP8 scales are left out (as in cross_rank_token_bytes)"
)


def routing_problem(routing: list[Mapping[str, Any]], ranks_per_node: int, world: int | None) -> str | None:
    """Why the routing cannot give link bytes for this cluster: ranks without a record (a bound from part of the ranks
    is too short), or a record whose same-node flag disagrees
    with cluster.ranks_per_node (the classes would be wrong)."""
    recorded = {int(r["global_rank"]) for r in routing if r.get("global_rank") is not None}
    missing = sorted(set(range(world)) - recorded) if world else []
    if missing:
        return f"routing not recorded for ranks {missing}"
    for record in routing:
        src = int(record["global_rank"])
        for dest_key, dest in (record.get("destinations") or {}).items():
            ours = src // ranks_per_node == int(dest_key) // ranks_per_node
            if "same_node" in dest and bool(dest["same_node"]) != ours:
                return (
                    f"rank {src} -> {dest_key}: the driver recorded same_node={dest['same_node']}, but "
                    f"cluster.ranks_per_node {ranks_per_node} puts them on "
                    f"{'one node' if ours else 'two nodes'}: the cluster does not match the routing"
                )
    return None


def link_bytes(
    routing: Iterable[Mapping[str, Any]], hidden: int, dtype: str, ranks_per_node: int, world: int | None = None
) -> dict[str, Any]:
    """Per link class, the bytes of one launch: in total, sent and received per rank, and per (source node, destination
    node) pair. Built on ``byte_accounting``'s records (same availability rule, same row bytes); with ``world``, every
    rank 0..world-1 must have a record."""
    routing = list(routing)
    accounting = byte_accounting(routing, hidden, dtype)
    problem = (
        accounting.get("reason") if not accounting["available"] else routing_problem(routing, ranks_per_node, world)
    )
    if problem:
        return {"available": False, "reason": problem, "definition": LINK_DEFINITION}
    row_bytes = accounting["row_bytes"]
    classes = {
        c: {"bytes_per_launch": 0, "sent_per_rank": {}, "received_per_rank": {}, "per_node_pair": {}}
        for c in LINK_CLASSES
    }
    for record in routing:
        src = int(record["global_rank"])
        for dest_key, dest in record["destinations"].items():
            dst = int(dest_key)
            if dst == src or not dest["tokens"]:
                continue
            same = src // ranks_per_node == dst // ranks_per_node
            link = classes["intra_node" if same else "inter_node"]
            nbytes = dest["tokens"] * row_bytes
            link["bytes_per_launch"] += nbytes
            for key, rank in (("sent_per_rank", src), ("received_per_rank", dst)):
                link[key][str(rank)] = link[key].get(str(rank), 0) + nbytes
            pair = f"{src // ranks_per_node}->{dst // ranks_per_node}"
            link["per_node_pair"][pair] = link["per_node_pair"].get(pair, 0) + nbytes
    return {
        "available": True,
        "links": classes,
        "cross_rank_token_bytes": accounting["cross_rank_token_bytes"],
        "row_bytes": row_bytes,
        "definition": LINK_DEFINITION,
    }
