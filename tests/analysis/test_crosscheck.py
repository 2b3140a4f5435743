import hashlib
import os
import shutil
import sqlite3
import tempfile
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from workflow.test_end_to_end import synthetic_timeline

from conftest import require
from dispatchprof.tools import crosscheck
from dispatchprof.tools.crosscheck import (
    REVISITED,
    SQLITE_MAGIC,
    compare_ranks,
    failed,
    mirror_prof_tree,
    plan_prof_tree,
    run_crosscheck,
    run_msprof_analyze,
    their_ranks,
)


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


def tree_state(root):
    """Every entry under ``root`` (links not followed): kind, size, mtime and for a file its bytes' hash."""
    state = {}
    for top, dirs, files in os.walk(root):
        for name in dirs + files:
            path = Path(top) / name
            info = path.lstat()
            digest = hashlib.sha256(path.read_bytes()).hexdigest() if path.is_file() and not path.is_symlink() else None
            state[str(path.relative_to(root))] = (info.st_mode, info.st_size, info.st_mtime_ns, digest)
    return state


def looped_tree(root):
    synthetic_timeline(root, rank_id=True)
    prof = sorted((root / "node0").glob("PROF_*"))[0]
    os.symlink("..", prof / "loop")  # back to node0: os.walk(followlinks=True) died with ELOOP here (issue 58)
    return prof / "loop"


def test_a_directory_loop_is_walked_once_named_and_the_tree_read_in_place(tmp_path):
    loop = looped_tree(tmp_path / "user")
    plan = plan_prof_tree(tmp_path / "user")
    assert plan.left_out == [f"{loop}: {REVISITED}"]  # named as the import's walk names it, not walked twice
    assert plan.copy_needed == []  # rollback-journal dbs, nothing behind a link: msprof-analyze may read it as it is
    assert len([f for _, f, _ in plan.files if f.suffix == ".db"]) == 16
    mirror = mirror_prof_tree(tmp_path / "user", tmp_path / "mirror", plan)
    assert len(list(mirror.rglob("msprof_*.db"))) == 16


def test_msprof_analyze_reads_a_looped_tree_in_place_and_leaves_it_as_it_was(tmp_path):
    require(shutil.which("msprof-analyze") is not None, "msprof-analyze (requirements-dev.txt)")
    loop = looped_tree(tmp_path / "user")
    before = tree_state(tmp_path / "user")
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    ours = {str(r): {"median_us": 1000.0 + r, "launches": 6} for r in range(16)}
    result = run_crosscheck(tmp_path / "user", True, scratch, 300, ours, "elastic_dispatch_kernel")
    assert result["state"] == "ok" and result["their_ranks"] == 16 and result["read"] == "in_place", result
    assert result["left_out"] == [f"{loop}: {REVISITED}"] and result["left_out_count"] == 1
    assert not (scratch / "input").exists()
    assert tree_state(tmp_path / "user") == before  # read in place, nothing created or changed


def wal_tree(root):
    synthetic_timeline(root, nodes=1, per_node=2, rank_id=True)
    for db in sorted(root.rglob("msprof_*.db")):
        with sqlite3.connect(db) as conn:
            conn.execute("PRAGMA journal_mode=WAL")
        conn.close()


def test_a_wal_database_or_a_journal_or_a_linked_directory_needs_a_copy(tmp_path):
    wal_tree(tmp_path / "wal")
    plan = plan_prof_tree(tmp_path / "wal")
    assert len(plan.copy_needed) == 2 and all("a WAL database" in r for r in plan.copy_needed)
    synthetic_timeline(tmp_path / "hot" / "real", nodes=1, per_node=1)
    db = next((tmp_path / "hot").rglob("msprof_*.db"))
    db.with_name(db.name + "-journal").write_bytes(b"pages to roll back")
    assert [r for r in plan_prof_tree(tmp_path / "hot").copy_needed if "-journal" in r]
    (tmp_path / "linked").mkdir()
    os.symlink(tmp_path / "hot" / "real" / "node0", tmp_path / "linked" / "node0")
    assert any("directory link" in r for r in plan_prof_tree(tmp_path / "linked").copy_needed)


def test_without_msprof_analyze_nothing_is_walked_or_copied(tmp_path, monkeypatch):
    wal_tree(tmp_path / "user")  # a tree that would need a copy
    empty = tmp_path / "bin"
    empty.mkdir()
    monkeypatch.setenv("PATH", str(empty))
    calls = []
    monkeypatch.setattr(crosscheck, "mirror_prof_tree", lambda *a, **k: calls.append(a))
    monkeypatch.setattr(crosscheck, "plan_prof_tree", lambda *a, **k: calls.append(a))
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    result = run_crosscheck(tmp_path / "user", True, scratch, 300, {}, "elastic_dispatch_kernel")
    assert result == {"state": "skipped", "reason": crosscheck.NOT_INSTALLED}
    assert calls == [] and list(scratch.iterdir()) == []


def test_a_copy_that_does_not_fit_is_skipped_with_the_reason(tmp_path, monkeypatch):
    wal_tree(tmp_path / "user")
    monkeypatch.setattr(crosscheck.shutil, "which", lambda name: "/nonexistent/msprof-analyze")
    monkeypatch.setattr(crosscheck.shutil, "disk_usage", lambda path: shutil._ntuple_diskusage(10**9, 10**9, 1000))
    copies = []
    monkeypatch.setattr(crosscheck, "mirror_prof_tree", lambda *a, **k: copies.append(a))
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    result = run_crosscheck(tmp_path / "user", True, scratch, 300, {}, "elastic_dispatch_kernel")
    assert result["state"] == "skipped" and result["read"] is None, result
    assert "not copied" in result["reason"] and "has 0.0 MiB free" in result["reason"]
    assert "a WAL database" in result["reason"]
    assert copies == [] and list(scratch.iterdir()) == []


def test_a_tool_that_fails_is_a_note(tmp_path, monkeypatch):
    synthetic_timeline(tmp_path / "user", nodes=1, per_node=1)
    fake = tmp_path / "bin" / "msprof-analyze"
    fake.parent.mkdir()
    fake.write_text("#!/bin/sh\necho broken >&2\nexit 3\n")
    fake.chmod(0o755)
    monkeypatch.setenv("PATH", str(fake.parent))
    result = run_crosscheck(tmp_path / "user", True, tmp_path, 30, {}, "elastic_dispatch_kernel")
    assert result["state"] == "failed" and "exit 3" in result["reason"] and "broken" in result["reason"]
    note = failed(OSError(28, "No space left on device"))
    assert note["state"] == "failed" and "No space left on device" in note["reason"]


NAMES = st.sampled_from(["node0", "PROF_000001_20261129184621000_ABCDEFGHIJKLMNOP", "data", "a", "b"])
FILES = st.sampled_from(["msprof_1.db", "msprof_1.db-wal", "msprof_1.db-journal", "x.db-shm", "info.json", "f"])
TARGETS = st.sampled_from(["..", ".", "../..", "a", "../a", "missing", "self", "msprof_1.db"])


@st.composite
def trees(draw):
    """Up to ~12 entries: directories, files (some empty, some SQLite headers in WAL mode) and links anywhere."""
    entries = []
    for _ in range(draw(st.integers(0, 12))):
        depth = draw(st.lists(NAMES, max_size=3))
        kind = draw(st.sampled_from(["dir", "file", "link", "unreadable"]))
        entries.append((depth, kind, draw(FILES), draw(TARGETS), draw(st.booleans())))
    return entries


def build(root, entries):
    root.mkdir()
    for depth, kind, name, target, flag in entries:
        where = root.joinpath(*depth)
        if where.is_symlink() or (where.exists() and not where.is_dir()):
            continue
        try:
            where.mkdir(parents=True, exist_ok=True)
        except OSError:  # a link or a file on the way
            continue
        path = where / (name if kind != "link" else f"l_{name}")
        if path.exists() or path.is_symlink():
            continue
        if kind == "dir":
            path.mkdir()
        elif kind == "link":
            os.symlink(path.name if target == "self" else target, path)
        else:
            header = SQLITE_MAGIC + b"\x10\x00" + (b"\x02\x02" if flag else b"\x01\x01")
            path.write_bytes(header if name.endswith(".db") else (b"x" if flag else b""))
            if kind == "unreadable":
                path.chmod(0)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(entries=trees())
def test_arbitrary_small_trees_with_links_never_crash_the_walk_or_the_copy(tmp_path, monkeypatch, entries):
    fake = tmp_path / "bin" / "msprof-analyze"  # a tool that writes nothing: the whole cross-check ends as a note
    if not fake.exists():
        fake.parent.mkdir()
        fake.write_text("#!/bin/sh\nexit 1\n")
        fake.chmod(0o755)
    monkeypatch.setenv("PATH", str(fake.parent))
    # the tree two levels below its temporary directory (a link climbs at most there), the copies in another one
    with tempfile.TemporaryDirectory(dir=tmp_path) as tmp, tempfile.TemporaryDirectory(dir=tmp_path) as out:
        root = Path(tmp) / "x" / "y" / "tree"
        root.parent.mkdir(parents=True)
        build(root, entries)
        plan = plan_prof_tree(root)
        assert all(isinstance(e, str) and ": " in e for e in plan.left_out)
        mirror = mirror_prof_tree(root, Path(out) / "mirror", plan)
        assert sum(p.stat().st_size for p in mirror.rglob("*") if p.is_file()) == plan.bytes
        assert not [p for p in mirror.rglob("*") if p.is_symlink()]  # a copy of files, never of links
        scratch = Path(out) / "scratch"
        scratch.mkdir()
        result = run_crosscheck(root, True, scratch, 30, {}, "elastic_dispatch_kernel")
        assert result["state"] == "failed" and result["read"] == ("copied" if plan.copy_needed else "in_place")
