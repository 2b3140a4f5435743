import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dispatchprof.formats.ranklog import LogFormatError, find_pass_lines, name_ranks

PATTERN = r"\[rank (?P<rank>\d+)\].*precision check passed"


def test_pass_lines_are_found_per_rank_with_file_and_line(tmp_path):
    log = tmp_path / "node0.log"
    log.write_text(
        "[rank 0] node 0 starting\n[rank 1] elastic dispatch precision check "
        "passed: 3 tokens\n[rank 0] elastic dispatch precision check passed\n"
    )
    found = find_pass_lines([log], PATTERN)
    assert sorted(found) == [0, 1]
    assert found[1].line_no == 2 and found[1].path == str(log)


def test_a_failure_line_is_not_a_pass(tmp_path):
    log = tmp_path / "rank5.log"
    log.write_text("[rank 5] elastic dispatch precision check FAILED: 1 of 10 received tokens differ\n")
    assert find_pass_lines([log], PATTERN) == {}


def test_interleaved_writes_on_one_line_never_give_a_failed_rank_anothers_success(tmp_path):
    """Processes sharing a node's stdout interleave: this line is from a loaded CI run, where rank 5 failed and the
    greedy pattern on the whole line read it as passed (the verdict then blamed only node 0's exit code)."""
    log = tmp_path / "node0.log"
    log.write_text(
        "[rank 5] elastic dispatch precision check FAILED: 1 of 1536 received tokens "
        "differ[rank 7] elastic dispatch precision check passed: 1536 tokens received\n"
        "[rank 3] elastic dispatch precision check passed: 9 tokens[rank "
        "4] elastic dispatch precision check passed: 9 tokens\n"
    )
    found = find_pass_lines([log], PATTERN)
    assert sorted(found) == [3, 4, 7]


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 63), st.booleans()), min_size=1, max_size=6))
def test_however_rank_lines_are_glued_together_only_the_ranks_that_passed_are_found(tmp_path_factory, lines):
    text = "".join(
        f"[rank {r}] elastic dispatch precision check {'passed: 3 tokens' if ok else 'FAILED: 1 of 3 differ'}"
        for r, ok in lines
    )
    log = tmp_path_factory.mktemp("glued") / "node0.log"
    log.write_text(text + "\n")
    assert set(find_pass_lines([log], PATTERN)) == {r for r, ok in lines if ok}


def test_a_pattern_whose_rank_is_not_a_number_is_a_clear_error(tmp_path):
    log = tmp_path / "x.log"
    log.write_text("PASS rank=abc\n")
    with pytest.raises(LogFormatError, match=r"x.log:1: field 'rank'"):
        find_pass_lines([log], r"PASS rank=(?P<rank>\w+)")


@settings(max_examples=200, deadline=None)
@given(st.binary(max_size=2000))
def test_binary_garbage_never_crashes_and_never_invents_a_pass(tmp_path_factory, blob):
    path = tmp_path_factory.mktemp("g") / "garbage.log"
    path.write_bytes(blob)
    found = find_pass_lines([path], PATTERN)
    assert all(line.text in blob.decode(errors="replace") for line in found.values())


def test_ranks_are_named_so_a_person_can_grep_them():
    assert name_ranks([5]) == "rank 5"
    assert name_ranks([7, 3, 3], world=16) == "ranks 3, 7 (2 of 16)"
