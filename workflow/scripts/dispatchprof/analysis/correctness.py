"""The correctness gate: which ranks started and passed the precision test, and the stage verdict.

A run the launcher could not get going (port taken, a node that never became ready) is an infrastructure
failure: its verdict says "not run" and never that a rank failed the precision check.
"""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd

from dispatchprof.formats.ranklog import PassLine, name_ranks
from dispatchprof.launch import CollectiveResult


@dataclass
class Verdict:
    state: str
    reason: str
    # What ended the run: none (ok), infrastructure (not run), timeout, precision (a rank did not pass), exit (a node
    # exited non-zero although its ranks passed).
    cause: str = "none"


def rank_table(nodes: int, ranks_per_node: int, passed: dict[int, PassLine], run: CollectiveResult, started: dict[int, PassLine] | None = None) -> pd.DataFrame:
    """One row per global rank: node, local rank, started (NA when deepep.start_pattern is not set), passed, the
    node's exit code, and where the evidence is."""
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
                    "started": None if started is None else (rank in started or line is not None),
                    "passed": line is not None,
                    "exit_code": None if result is None or result.exit_code is None else int(result.exit_code),
                    "node_killed": bool(result and result.killed),
                    "log_path": line.path if line else (str(result.log_path) if result else None),
                    "pass_line": line.text if line else None,
                }
            )
    frame = pd.DataFrame(rows)
    return frame.astype({"started": "boolean", "exit_code": "Int64", "log_path": "string", "pass_line": "string"})


def _rank_span(ranks: list[int]) -> str:
    return f"{ranks[0]}-{ranks[-1]}" if len(ranks) > 1 and ranks[-1] - ranks[0] == len(ranks) - 1 else ", ".join(map(str, ranks))


def never_started(table: pd.DataFrame) -> tuple[list[str], list[int]]:
    """Nodes none of whose ranks started (named as never ready), and the other ranks that never started."""
    if table["started"].isna().any():
        return [], []
    dead, stray = [], []
    for node, ranks in table.groupby("node"):
        missing = ranks.loc[~ranks["started"].astype(bool), "global_rank"].tolist()
        if missing and len(missing) == len(ranks):
            dead.append(f"node {node} never became ready (none of its ranks {_rank_span(missing)} started)")
        else:
            stray += missing
    return dead, stray


def verdict(table: pd.DataFrame, run: CollectiveResult) -> Verdict:
    world = len(table)
    dead_nodes, stray = never_started(table)
    stray_text = [f"{name_ranks(stray, world)} never started"] if stray else []
    if run.not_run or dead_nodes:
        parts = dead_nodes + stray_text + ([run.problem] if run.problem else [])
        return Verdict("timeout" if run.timed_out else "failed", "not run: " + "; ".join(parts), "infrastructure")
    started = table["started"].fillna(True).astype(bool)  # NA (no start_pattern): counted as started
    not_passed = table.loc[started & ~table["passed"], "global_rank"].tolist()
    if run.timed_out:
        detail = "".join(f"; {t}" for t in stray_text) + (f"; {name_ranks(not_passed, world)} had not passed" if not_passed else "")
        return Verdict("timeout", f"{run.problem}{detail}", "timeout")
    bad_exit = sorted(set(table.loc[table["exit_code"].fillna(-1) != 0, "node"].tolist()))
    if not not_passed and not bad_exit and not stray and run.problem is None:
        return Verdict("ok", f"all {world} ranks passed the precision check and every node exited 0")
    parts = stray_text[:]
    if not_passed:
        parts.append(f"{name_ranks(not_passed, world)} did not pass the precision check")
    if bad_exit:
        codes = {int(n): table.loc[table["node"] == n, "exit_code"].iloc[0] for n in bad_exit}
        parts.append("node exit codes " + ", ".join(f"node {n}: {'none' if pd.isna(c) else c}" for n, c in codes.items()))
    if run.problem:
        parts.append(run.problem)
    return Verdict("failed", "; ".join(parts), "precision" if not_passed else "exit")
