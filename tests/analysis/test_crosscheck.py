import shutil

from workflow.test_end_to_end import synthetic_timeline

from conftest import require
from dispatchprof.tools.crosscheck import compare_ranks, mirror_prof_tree, run_msprof_analyze, their_ranks


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
    ours = {
        "0": {"median_us": 9.5, "launches": 5},
        "1": {"median_us": 10.5, "launches": 5},
        "2": {"median_us": None, "launches": 0},
    }
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


def test_the_mirror_for_msprof_analyze_copies_dbs_with_their_wal_and_identity_files_not_raw_data(tmp_path):
    prof = tmp_path / "user" / "node0" / "PROF_000001_20261129184621000_ABCDEFGHIJKLMNOP"
    files = {
        "msprof_20261129184621.db": b"db",
        "msprof_20261129184621.db-wal": b"wal frames",
        "msprof_20261129184621.db-shm": b"index",
        "host/info.json": b"{}",
        "device_3/info.json.3": b"{}",
        "device_3/data/aicore.data.3.slice_0": b"raw",
        "mindstudio_profiler_output/op_summary_20261129184621.csv": b"text",
        "mindstudio_profiler_log/msprof_analysis_1.log": b"log",
    }
    for name, content in files.items():
        (prof / name).parent.mkdir(parents=True, exist_ok=True)
        (prof / name).write_bytes(content)
    (prof.parent / "other.db-journal").write_bytes(b"")  # empty: nothing to roll back
    mirror = mirror_prof_tree(tmp_path / "user", tmp_path / "mirror")
    copied = sorted(str(p.relative_to(mirror)) for p in mirror.rglob("*") if p.is_file())
    kept = ["msprof_20261129184621.db", "msprof_20261129184621.db-wal", "host/info.json", "device_3/info.json.3"]
    assert copied == sorted(f"node0/{prof.name}/{name}" for name in kept)
    assert (mirror / "node0" / prof.name / "msprof_20261129184621.db-wal").read_bytes() == b"wal frames"
