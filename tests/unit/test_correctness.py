from pathlib import Path

from dispatchprof.analysis.correctness import rank_frame, rank_table, verdict
from dispatchprof.formats.ranklog import PassLine
from dispatchprof.tools.launch import CollectiveResult, NodeResult


def run(codes, timed_out=False, problem=None):
    return CollectiveResult(
        [NodeResult(n, Path(f"node{n}.log"), exit_code=c, started=1.0) for n, c in enumerate(codes)],
        timed_out,
        problem,
        list(range(len(codes))),
    )


def passes(ranks):
    return {r: PassLine(r, "log", 1, "passed") for r in ranks}


def test_all_ranks_passed_and_nodes_exited_zero_is_ok():
    table = rank_table(2, 2, passes(range(4)), run([0, 0]))
    assert [r.global_rank for r in table] == [0, 1, 2, 3] and [r.local_rank for r in table] == [0, 1, 0, 1]
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


def test_a_taken_port_is_not_run_and_never_a_precision_failure():
    # Before: "ranks 0, 1, 2, 3 (4 of 4) did not pass the precision check" when another run held the port.
    result = run([None, None], problem="readiness port 127.0.0.1:29520 already answers before node 0 started")
    result.not_run = True
    table = rank_table(2, 2, {}, result, started={})
    v = verdict(table, result)
    assert v.state == "failed" and v.cause == "infrastructure"
    assert v.reason.startswith("not run: node 0 never became ready") and "already answers" in v.reason
    assert "precision" not in v.reason


def test_a_dead_node_is_named_with_the_ranks_that_never_started():
    result = run(
        [None, None],
        timed_out=True,
        problem="the run exceeded its 6 s budget; nodes [0, 1] were still running and were stopped",
    )
    table = rank_table(2, 8, {}, result, started={r: PassLine(r, "log", 1, "start") for r in range(8)})
    v = verdict(table, result)
    assert v.state == "timeout" and v.cause == "infrastructure"
    assert "node 1 never became ready (none of its ranks 8-15 started)" in v.reason and "6 s budget" in v.reason
    assert "node 0 never" not in v.reason


def test_a_rank_that_never_started_is_named_apart_from_the_ranks_that_failed():
    result = run([1, 1])
    started = {r: PassLine(r, "log", 1, "start") for r in (0, 1, 2)}
    v = verdict(rank_table(2, 2, passes([0, 2]), result, started=started), result)
    assert v.cause == "precision" and "rank 3 never started" in v.reason and "rank 1 did not pass" in v.reason
    assert "rank 3 did not pass" not in v.reason


def test_without_a_start_pattern_nothing_is_claimed_about_starting():
    result = run([0, 1])
    table = rank_table(2, 2, passes([0, 1, 2]), result)
    assert all(r.started is None for r in table)
    v = verdict(table, result)
    assert v.cause == "precision" and "never" not in v.reason and "rank 3 did not pass" in v.reason


def test_the_stored_table_keeps_unknowns_as_nulls_in_nullable_columns():
    # ranks.parquet's schema: started is nullable (no start pattern), exit_code too (a node that had not exited)
    result = run([0, None], timed_out=True, problem="budget")
    frame = rank_frame(rank_table(2, 2, passes([0, 1]), result))
    assert list(frame.columns) == [
        "node",
        "local_rank",
        "global_rank",
        "started",
        "passed",
        "exit_code",
        "node_killed",
        "log_path",
        "pass_line",
    ]
    assert {c: str(t) for c, t in frame.dtypes.items()} == {
        "node": "int64",
        "local_rank": "int64",
        "global_rank": "int64",
        "started": "boolean",
        "passed": "bool",
        "exit_code": "Int64",
        "node_killed": "bool",
        "log_path": "string",
        "pass_line": "string",
    }
    assert (
        frame["started"].isna().all()
        and frame["exit_code"].tolist()[:2] == [0, 0]
        and frame["exit_code"].isna().tolist()[2:] == [True, True]
    )
    assert frame["pass_line"].tolist()[:2] == ["passed", "passed"] and frame["pass_line"].isna().tolist()[2:] == [
        True,
        True,
    ]


# A crash is a crash: the real test also exits 1 after a failed precision check, so the exit code alone does not
# say which. The precision-failure lines (deepep.fail_pattern) and how the first rank died do.
def test_a_rank_that_died_without_a_precision_failure_line_is_a_crash_not_sixteen_precision_failures():
    # Before: "ranks 0, ..., 15 (16 of 16) did not pass the precision check", details.cause precision.
    result = run([1, -15])
    v = verdict(rank_table(2, 8, {}, result), result, precision_failed=set(), first_death=(1, "exit code 1"))
    assert v.state == "failed" and v.cause == "crash", v
    assert "did not pass the precision check" not in v.reason
    assert "(16 of 16) printed neither a success nor a precision-failure line" in v.reason


def test_a_rank_whose_log_holds_the_precision_failure_line_is_a_precision_failure():
    result = run([0, 1])
    v = verdict(
        rank_table(2, 2, passes([0, 1, 2]), result), result, precision_failed={3}, first_death=(3, "exit code 1")
    )
    assert v.cause == "precision" and v.reason.startswith("rank 3 did not pass the precision check"), v
    assert "printed neither" not in v.reason


def test_a_rank_ended_by_a_signal_is_a_crash_whatever_the_lines_say():
    result = run([1, 0])
    table = rank_table(2, 2, passes([2, 3]), result)
    assert verdict(table, result, precision_failed={1}, first_death=(0, "signal SIGSEGV")).cause == "crash"
    assert verdict(table, result, precision_failed=None, first_death=(0, "signal SIGKILL")).cause == "crash"


def test_without_a_named_death_a_nonzero_exit_and_no_failure_line_is_a_crash():
    result = run([0, 137])  # node 1's process itself ended (no spawn message): its ranks printed nothing
    table = rank_table(2, 2, passes([0, 1]), result)
    assert verdict(table, result, precision_failed=set()).cause == "crash"
    assert verdict(table, result, precision_failed={2}).cause == "precision"


def test_without_a_fail_pattern_a_nonzero_exit_stays_a_precision_failure():
    # deepep.fail_pattern: null, the failure line is not known: every rank without its success line failed the check
    result = run([1, 0])
    v = verdict(rank_table(2, 2, passes([2, 3]), result), result, precision_failed=None, first_death=(1, "exit code 1"))
    assert v.cause == "precision" and "ranks 0, 1 (2 of 4) did not pass the precision check" in v.reason
