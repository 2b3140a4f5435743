"""The correctness gate: which ranks started and passed the precision test, and the stage verdict.

A run the launcher could not get going (port taken, a node that never became ready) is an infrastructure
failure: its verdict says "not run" and never that a rank failed the precision check.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, fields
from typing import TYPE_CHECKING

from dispatchprof.formats.ranklog import PassLine, name_ranks

if TYPE_CHECKING:  # every collective stage judges its run; only the correctness job writes the table (pandas ~0.4 s)
    import pandas as pd

    # A type only: analyses sit below the tools, which call this module (tools.collective judges every run).
    from dispatchprof.tools.launch import CollectiveResult


@dataclass
class Verdict:
    state: str
    reason: str
    # What ended the run: none (ok), infrastructure (not run), timeout, precision (a rank failed its precision check),
    # crash (a rank ended by a signal, or exited non-zero without a precision-failure line), exit (a node exited
    # non-zero although its ranks passed), build (every rank passed, but a side with deepep.ref loaded another build
    # than its own: tools.collective.own_build_check).
    cause: str = "none"


@dataclass(frozen=True)
class RankRow:
    """One global rank of a collective run: where it ran, whether it started and passed, its node's exit."""

    node: int
    local_rank: int
    global_rank: int
    started: bool | None  # None when deepep.start_pattern is not set: nothing is known about starting
    passed: bool
    exit_code: int | None  # the node's; None while it had not exited
    node_killed: bool
    log_path: str | None  # where the evidence is
    pass_line: str | None


def rank_table(
    nodes: int,
    ranks_per_node: int,
    passed: dict[int, PassLine],
    run: CollectiveResult,
    started: dict[int, PassLine] | None = None,
) -> list[RankRow]:
    """One row per global rank, in rank order: node, local rank, started (None when deepep.start_pattern is not set),
    passed, the node's exit code, and where the evidence is."""
    by_node = {n.node: n for n in run.nodes}
    rows = []
    for node in range(nodes):
        result = by_node.get(node)
        for local in range(ranks_per_node):
            rank = node * ranks_per_node + local
            line = passed.get(rank)
            rows.append(
                RankRow(
                    node=node,
                    local_rank=local,
                    global_rank=rank,
                    started=None if started is None else (rank in started or line is not None),
                    passed=line is not None,
                    exit_code=None if result is None or result.exit_code is None else int(result.exit_code),
                    node_killed=bool(result and result.killed),
                    log_path=line.path if line else (str(result.log_path) if result else None),
                    pass_line=line.text if line else None,
                )
            )
    return rows


def rank_frame(rows: list[RankRow]) -> pd.DataFrame:
    """The rank table as the correctness stage stores it (ranks.parquet): nullable started and exit code, strings."""
    import pandas as pd

    frame = pd.DataFrame([asdict(row) for row in rows], columns=[f.name for f in fields(RankRow)])
    return frame.astype({"started": "boolean", "exit_code": "Int64", "log_path": "string", "pass_line": "string"})


def _rank_span(ranks: list[int]) -> str:
    return (
        f"{ranks[0]}-{ranks[-1]}"
        if len(ranks) > 1 and ranks[-1] - ranks[0] == len(ranks) - 1
        else ", ".join(map(str, ranks))
    )


def never_started(rows: list[RankRow]) -> tuple[list[str], list[int]]:
    """Nodes none of whose ranks started (named as never ready), and the other ranks that never started."""
    if any(row.started is None for row in rows):
        return [], []
    dead, stray = [], []
    for node in sorted({row.node for row in rows}):
        ranks = [row for row in rows if row.node == node]
        missing = [row.global_rank for row in ranks if not row.started]
        if missing and len(missing) == len(ranks):
            dead.append(f"node {node} never became ready (none of its ranks {_rank_span(missing)} started)")
        else:
            stray += missing
    return dead, stray


def verdict(
    rows: list[RankRow],
    run: CollectiveResult,
    precision_failed: set[int] | None = None,
    first_death: tuple[int, str] | None = None,
) -> Verdict:
    """The run's state, reason and cause. ``precision_failed``: the ranks whose logs hold a precision-failure line
    (deepep.fail_pattern; None when it is not set: every rank without its success line then counts as failing the
    check). ``first_death``: the rank that died first and how ("exit code 1", "signal SIGKILL"), as its node's spawn
    says."""
    world = len(rows)
    dead_nodes, stray = never_started(rows)
    stray_text = [f"{name_ranks(stray, world)} never started"] if stray else []
    if run.not_run or dead_nodes:
        parts = dead_nodes + stray_text + ([run.problem] if run.problem else [])
        return Verdict("timeout" if run.timed_out else "failed", "not run: " + "; ".join(parts), "infrastructure")
    # started None (no start_pattern): counted as started
    not_passed = [row.global_rank for row in rows if row.started is not False and not row.passed]
    if run.timed_out:
        detail = "".join(f"; {t}" for t in stray_text) + (
            f"; {name_ranks(not_passed, world)} had not passed" if not_passed else ""
        )
        return Verdict("timeout", f"{run.problem}{detail}", "timeout")
    node_exit = {}  # every rank of a node carries the node's exit code: the first says it
    for row in rows:
        node_exit.setdefault(row.node, row.exit_code)
    bad_exit = sorted(node for node, code in node_exit.items() if code != 0)
    if not not_passed and not bad_exit and not stray and run.problem is None:
        return Verdict("ok", f"all {world} ranks passed the precision check and every node exited 0")
    failed = not_passed if precision_failed is None else [rank for rank in not_passed if rank in precision_failed]
    silent = [rank for rank in not_passed if rank not in failed]
    parts = stray_text[:]
    if failed:
        parts.append(f"{name_ranks(failed, world)} did not pass the precision check")
    if silent:
        parts.append(f"{name_ranks(silent, world)} printed neither a success nor a precision-failure line")
    if bad_exit:
        parts.append(
            "node exit codes "
            + ", ".join(f"node {n}: {'none' if node_exit[n] is None else node_exit[n]}" for n in bad_exit)
        )
    if run.problem:
        parts.append(run.problem)
    cause = failure_cause(failed, bad_exit, precision_failed, first_death) if not_passed else "exit"
    return Verdict("failed", "; ".join(parts), cause)


def failure_cause(
    failed: list[int], bad_exit: list[int], precision_failed: set[int] | None, first_death: tuple[int, str] | None
) -> str:
    """precision or crash, for a run some of whose ranks did not pass. The real test also exits 1 after a failed
    precision check, so an exit code alone does not say which: a rank ended by a signal is a crash; a rank that
    exited non-zero is a precision failure when its log holds the precision-failure line, else a crash. The rank
    that died first decides (the others die of its death); without one named, the lines do."""
    if first_death is not None:
        rank, how = first_death
        if how.startswith("signal"):
            return "crash"
        return "precision" if precision_failed is None or rank in precision_failed else "crash"
    if failed or not bad_exit:
        return "precision"  # a failure line (or, fail_pattern unset, no success line); or ranks that ended 0 silently
    return "crash"
