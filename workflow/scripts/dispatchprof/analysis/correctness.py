"""The correctness gate: which ranks passed the precision test, and the stage verdict."""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd

from dispatchprof.formats.ranklog import PassLine, name_ranks
from dispatchprof.launch import CollectiveResult


@dataclass
class Verdict:
    state: str
    reason: str


def rank_table(nodes: int, ranks_per_node: int, passed: dict[int, PassLine], run: CollectiveResult) -> pd.DataFrame:
    """One row per global rank: node, local rank, passed, the node's exit code, and where the evidence is."""
    by_node = {n.node: n for n in run.nodes}
    rows = []
    for node in range(nodes):
        result = by_node.get(node)
        for local in range(ranks_per_node):
            rank = node * ranks_per_node + local
            line = passed.get(rank)
            rows.append(
                {
                    "node": node,
                    "local_rank": local,
                    "global_rank": rank,
                    "passed": line is not None,
                    "exit_code": None if result is None or result.exit_code is None else int(result.exit_code),
                    "node_killed": bool(result and result.killed),
                    "log_path": line.path if line else (str(result.log_path) if result else None),
                    "pass_line": line.text if line else None,
                }
            )
    frame = pd.DataFrame(rows)
    return frame.astype({"exit_code": "Int64", "log_path": "string", "pass_line": "string"})


def verdict(table: pd.DataFrame, run: CollectiveResult) -> Verdict:
    world = len(table)
    not_passed = table.loc[~table["passed"], "global_rank"].tolist()
    bad_exit = sorted(set(table.loc[table["exit_code"].fillna(-1) != 0, "node"].tolist()))
    if run.timed_out:
        detail = f"; {name_ranks(not_passed, world)} had not passed" if not_passed else ""
        return Verdict("timeout", f"{run.problem}{detail}")
    if not not_passed and not bad_exit and run.problem is None:
        return Verdict("ok", f"all {world} ranks passed the precision check and every node exited 0")
    parts = []
    if not_passed:
        parts.append(f"{name_ranks(not_passed, world)} did not pass the precision check")
    if bad_exit:
        codes = {int(n): table.loc[table["node"] == n, "exit_code"].iloc[0] for n in bad_exit}
        parts.append("node exit codes " + ", ".join(f"node {n}: {'none' if pd.isna(c) else c}" for n, c in codes.items()))
    if run.problem:
        parts.append(run.problem)
    return Verdict("failed", "; ".join(parts))
