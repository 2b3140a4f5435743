from pathlib import Path

from dispatchprof.analysis.correctness import rank_table, verdict
from dispatchprof.formats.ranklog import PassLine
from dispatchprof.launch import CollectiveResult, NodeResult


def run(codes, timed_out=False, problem=None):
    return CollectiveResult(
        [NodeResult(n, Path(f"node{n}.log"), exit_code=c, started=1.0) for n, c in enumerate(codes)], timed_out, problem, list(range(len(codes)))
    )


def passes(ranks):
    return {r: PassLine(r, "log", 1, "passed") for r in ranks}


def test_all_ranks_passed_and_nodes_exited_zero_is_ok():
    table = rank_table(2, 2, passes(range(4)), run([0, 0]))
    assert list(table["global_rank"]) == [0, 1, 2, 3] and list(table["local_rank"]) == [0, 1, 0, 1]
    assert verdict(table, run([0, 0])).state == "ok"


def test_a_rank_without_its_success_line_fails_the_gate_by_name():
    result = run([0, 1])
    table = rank_table(2, 4, passes([0, 1, 2, 3, 4, 6, 7]), result)
    v = verdict(table, result)
    assert v.state == "failed" and "rank 5 did not pass" in v.reason and "node 1: 1" in v.reason


def test_a_nonzero_exit_fails_even_when_every_line_was_printed():
    result = run([0, 139])
    v = verdict(rank_table(2, 1, passes([0, 1]), result), result)
    assert v.state == "failed" and "node 1: 139" in v.reason


def test_timeout_keeps_the_launcher_reason_and_names_missing_ranks():
    result = run([None, None], timed_out=True, problem="the run exceeded its 5 s budget")
    v = verdict(rank_table(2, 1, passes([0]), result), result)
    assert v.state == "timeout" and v.reason.startswith("the run exceeded its 5 s budget") and "rank 1" in v.reason
