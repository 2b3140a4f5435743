import shutil

from workflow.test_end_to_end import synthetic_timeline

from conftest import require
from dispatchprof.tools.crosscheck import compare_ranks, run_msprof_analyze, their_ranks


def test_ranks_map_one_to_one_only_when_rank_id_is_set():
    theirs = {0: {"op": "k", "count": 5, "median_us": 10.0}, 1: {"op": "k", "count": 5, "median_us": 11.0}}
    ours = {"0": {"median_us": 9.5, "launches": 5}, "1": {"median_us": 10.5, "launches": 5}}
    mapped = compare_ranks(theirs, ours, rank_ids_set=True)
    assert [r["our_rank"] for r in mapped["rows"]] == [0, 1] and mapped["note"] is None
    merged = compare_ranks(theirs, {**ours, "2": {"median_us": 1.0, "launches": 5}}, rank_ids_set=False)
    assert all(r["our_rank"] is None for r in merged["rows"]) and "merged" in merged["note"]


def test_a_rank_without_launches_is_not_counted_as_found():
    # ours lists every expected rank; before, a missing rank (0 launches) made "we found 3" beside their 2
    theirs = {0: {"op": "k", "count": 5, "median_us": 10.0}, 1: {"op": "k", "count": 5, "median_us": 11.0}}
    ours = {"0": {"median_us": 9.5, "launches": 5}, "1": {"median_us": 10.5, "launches": 5}, "2": {"median_us": None, "launches": 0}}
    result = compare_ranks(theirs, ours, rank_ids_set=True)
    assert result["our_ranks"] == 2 and result["note"] is None


def test_msprof_analyze_collapses_ranks_without_rank_id_and_keeps_them_with_it(tmp_path):
    require(shutil.which("msprof-analyze") is not None, "msprof-analyze (requirements-dev.txt)")
    for with_ids in (False, True):
        root = tmp_path / f"ids_{with_ids}"
        synthetic_timeline(root, rank_id=with_ids)
        db, reason = run_msprof_analyze(root, tmp_path / f"out_{with_ids}", 300)
        assert db is not None, reason
        ranks = their_ranks(db, "elastic_dispatch_kernel")
        assert len(ranks) == (16 if with_ids else 8)  # device 0..7 of both nodes collide without rank_id
