import codecs
import os
import re
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dispatchprof.stages.imports import ImportError_, checked_import, latency_csv_ranks, manifest, tree_fingerprint


def test_latency_csv_rank_count_mismatch_is_invalid_with_both_numbers(tmp_path):
    csv = tmp_path / "dispatch_latency.csv"
    csv.write_text("rank,iteration,elapsed_us,is_warmup,in_average\n0,0,1000,1,0\n1,0,20,0,1\n")
    state, reason, _ = checked_import("latency_csv", str(csv), nodes=2, world=16)
    assert state == "invalid" and "holds 2 ranks" in reason and "has 16" in reason


def test_not_provided_and_missing_imports_are_told_apart(tmp_path):
    assert checked_import("timeline_dir", None, 2, 16)[0] == "skipped"
    state, reason, _ = checked_import("timeline_dir", str(tmp_path / "nope"), 2, 16)
    assert state == "invalid" and "does not exist" in reason


def test_timeline_layout_counts_nodes_and_leaves_missing_ranks_to_the_coverage(tmp_path):
    for node in range(2):
        for i in range(8):
            (tmp_path / f"node{node}" / f"PROF_00000{i}_20260605155111872_ABCDEFGH{node}{i}").mkdir(parents=True)
    state, reason, details = checked_import("timeline_dir", str(tmp_path), 2, 16)
    assert (
        state == "ok"
        and details["directories"] == 16
        and "16 data directories (16 msprof) in 2 node directories" in reason
    )
    assert (
        checked_import("timeline_dir", str(tmp_path), 3, 24)[0] == "ok"
    )  # a node without data: the stage's coverage says so
    state, reason, _ = checked_import("timeline_dir", str(tmp_path), 1, 8)
    assert state == "invalid" and "node directories [1] but cluster.nodes is 1" in reason


def test_the_import_counts_prof_directories_by_the_parsers_rule(tmp_path):
    # 'PROF_1_2_x' is too short a tag for msprof (and for the parse): the import must not count it either
    (tmp_path / "node0" / "PROF_1_2_x").mkdir(parents=True)
    state, reason, _ = checked_import("timeline_dir", str(tmp_path), 1, 8)
    assert (
        state == "invalid"
        and "no profiler data directory found" in reason
        and "PROF_*" in reason
        and "*_ascend_pt" in reason
    )
    (tmp_path / "node0" / "PROF_000001_20260402160352000_ABCDEFGHIJ").mkdir()
    assert checked_import("timeline_dir", str(tmp_path), 1, 8)[0] == "ok"


def test_the_fingerprint_follows_names_sizes_and_mtimes_only(tmp_path):
    f = tmp_path / "node0" / "PROF_x" / "a.csv"
    f.parent.mkdir(parents=True)
    f.write_text("x")
    first = tree_fingerprint(str(tmp_path))
    assert (
        tree_fingerprint(str(tmp_path)) == first
        and tree_fingerprint(None) == "none"
        and tree_fingerprint(str(tmp_path / "no")) == "absent"
    )
    os.utime(f, ns=(f.stat().st_atime_ns, f.stat().st_mtime_ns + 1000))
    touched = tree_fingerprint(str(tmp_path))
    assert touched != first
    (f.parent / "b.csv").write_text("")
    assert tree_fingerprint(str(tmp_path)) != touched


def test_manifest_reads_in_place_and_changes_nothing(tmp_path):
    f = tmp_path / "node0" / "a.csv"
    f.parent.mkdir()
    f.write_text("x")
    before = os.stat(f)
    entries = manifest(tmp_path, checksums=True)
    assert entries == [
        {
            "path": str(f),
            "size": 1,
            "mtime": before.st_mtime,
            "sha256": "2d711642b726b04401627ca9fbac32f5c8530fb1903cc4db02258717921a4881",
        }
    ]
    assert os.stat(f).st_mtime == before.st_mtime


@settings(max_examples=150, deadline=None)
@given(st.binary(max_size=1500))
def test_garbage_latency_csv_is_counted_or_refused_clearly(tmp_path_factory, blob):
    path = tmp_path_factory.mktemp("c") / "dispatch_latency.csv"
    path.write_bytes(blob)
    try:
        count = latency_csv_ranks(path)
    except ImportError_ as exc:
        assert str(path) in str(exc)
        return
    # Counted: the header names a rank column, and no more ranks than rows after the header.
    text = blob.decode(errors="replace")
    assert "rank" in text
    assert count <= len(re.split(r"\r\n|\r|\n", text)) - 1


def test_a_symlink_loop_in_an_imported_tree_ends_the_walk_without_a_traceback(tmp_path):
    prof = tmp_path / "node0" / "PROF_x"
    prof.mkdir(parents=True)
    (prof / "a.csv").write_text("x")
    (prof / "loop").symlink_to(tmp_path, target_is_directory=True)  # node0/PROF_x/loop -> the root
    (tmp_path / "self").symlink_to(".", target_is_directory=True)
    first = tree_fingerprint(str(tmp_path))
    assert tree_fingerprint(str(tmp_path)) == first
    (prof / "a.csv").write_text("xy")  # still a fingerprint of the files: a change is seen
    assert tree_fingerprint(str(tmp_path)) != first
    assert [Path(e["path"]).name for e in manifest(tmp_path)] == ["a.csv"]  # rglob does not follow directory links


def test_an_unreadable_directory_is_part_of_the_fingerprint_not_a_crash(tmp_path, monkeypatch):
    (tmp_path / "node0").mkdir()
    real_scandir = os.scandir

    def refuse(path):
        if str(path).endswith("node0"):
            raise PermissionError(13, "Permission denied", str(path))
        return real_scandir(path)

    monkeypatch.setattr(os, "scandir", refuse)
    assert len(tree_fingerprint(str(tmp_path))) == 16


def test_an_empty_latency_csv_says_empty_file(tmp_path):
    for content in ("", "\n", " ,\n"):
        path = tmp_path / "dispatch_latency.csv"
        path.write_text(content)
        with pytest.raises(ImportError_) as err:
            latency_csv_ranks(path)
        assert str(err.value) == f"{path}: line 1: empty file; expected a header starting with rank,iteration"


@pytest.mark.parametrize(
    "encoding, named",
    [
        ("utf-16", "UTF-16 LE text (byte order mark ff fe)"),
        ("utf-16-be", "looks like"),
        ("utf-32", "UTF-32 LE text"),
        ("utf-16-le", "looks like UTF-16 LE"),
    ],
)
def test_a_csv_in_another_encoding_names_it(tmp_path, encoding, named):
    path = tmp_path / "dispatch_latency.csv"
    data = "rank,iteration,elapsed_us,is_warmup,in_average\n0,0,20.0,0,1\n".encode(encoding)
    if encoding == "utf-16-be":
        data = codecs.BOM_UTF16_BE + data
        named = "UTF-16 BE text (byte order mark fe ff)"
    path.write_bytes(data)
    with pytest.raises(ImportError_) as err:
        latency_csv_ranks(path)
    assert (
        str(err.value).startswith(f"{path}: line 1: ")
        and named in str(err.value)
        and "expected UTF-8" in str(err.value)
    )


def test_a_utf8_bom_is_read_as_utf8(tmp_path):
    path = tmp_path / "dispatch_latency.csv"
    path.write_bytes(codecs.BOM_UTF8 + b"rank,iteration\n0,0\n1,0\n")
    assert latency_csv_ranks(path) == 2


def prof_with(tmp_path: Path, make, name: str = "PROF_000001_20260101000000000_ABCDEFGHIJ") -> tuple[Path, Path]:
    """An imported tree (node0/<name>/: a timeline's PROF_ by default) with one entry made by
    ``make(directory) -> path``."""
    prof = tmp_path / "node0" / name
    prof.mkdir(parents=True)
    (prof / "msprof_20260101000000.db").write_bytes(b"x")
    return prof, make(prof)


def file_loop(prof: Path) -> Path:
    (prof / "a").symlink_to(prof / "b")
    (prof / "b").symlink_to(prof / "a")
    return prof / "a"


def dangling(prof: Path) -> Path:
    (prof / "gone.json").symlink_to(prof / "nowhere.json")
    return prof / "gone.json"


def fifo(prof: Path) -> Path:
    os.mkfifo(prof / "op_summary_20260101000000.csv")  # a FIFO where a file belongs: opening it would block the walk
    return prof / "op_summary_20260101000000.csv"


UNREADABLE = pytest.mark.parametrize(
    "make, why",
    [
        (file_loop, "a symbolic link loop"),
        (dangling, "a dangling symbolic link (to "),
        (fifo, "not a regular file (a FIFO)"),
    ],
    ids=["file-loop", "dangling-link", "fifo"],
)


@UNREADABLE
def test_an_entry_that_cannot_be_read_is_refused_by_the_import_with_its_path(tmp_path, make, why):
    """Outside a timeline's data directories (here: a PMU tree's OPPROF_, and a timeline tree's node directory) an
    entry that cannot be read refuses the whole import: whose it is, nothing tells."""
    prof, bad = prof_with(tmp_path / "pmu", make, "OPPROF_20260101000000_ABCDEFGHIJKLMNOP")
    fingerprint = tree_fingerprint(str(tmp_path / "pmu"))  # runs while Snakemake builds the DAG: it must not raise
    assert len(fingerprint) == 16 and tree_fingerprint(str(tmp_path / "pmu")) == fingerprint
    state, reason, details = checked_import("pmu_dir", str(tmp_path / "pmu"), 1, 8)
    assert state == "invalid" and f"{bad}: {why}" in reason and reason.startswith("analyze.pmu_dir: "), reason
    assert any(p.startswith(f"{bad}: {why}") for p in details["unreadable"])
    assert [Path(e["path"]).name for e in manifest(tmp_path / "pmu", checksums=True)] == [
        "msprof_20260101000000.db"
    ]  # the rest, read
    timeline = tmp_path / "timeline"
    prof_with(timeline, lambda prof: prof)
    node_level = make(timeline / "node0")
    state, reason, _ = checked_import("timeline_dir", str(timeline), 1, 8)
    assert state == "invalid" and f"{node_level}: {why}" in reason, reason


@UNREADABLE
def test_an_entry_inside_a_timeline_data_directory_is_left_to_its_ranks_refusal(tmp_path, make, why):
    """Inside a PROF_ the entry is that directory's: the import goes on, naming it, and the parse refuses the ranks
    of that directory only (tests/stages/test_stage_timeline_refused.py), as it does a corrupt db."""
    prof, bad = prof_with(tmp_path, make)
    state, reason, details = checked_import("timeline_dir", str(tmp_path), 1, 8)
    assert state == "ok" and reason.startswith(f"imported {tmp_path} in place"), reason
    assert (
        "cannot be read, the ranks of the data directories holding them left out: " in reason
        and f"{bad}: {why}" in reason
    )
    assert any(p.startswith(f"{bad}: {why}") for p in details["unreadable"]), details


def test_the_fingerprint_sees_a_loop_appear_and_go(tmp_path):
    prof, _ = prof_with(tmp_path, lambda prof: prof / "msprof_20260101000000.db")
    clean = tree_fingerprint(str(tmp_path))
    file_loop(prof)
    looped = tree_fingerprint(str(tmp_path))
    assert looped != clean  # the import reruns and says what it cannot read
    (prof / "a").unlink()
    (prof / "b").unlink()
    assert tree_fingerprint(str(tmp_path)) == clean


def test_an_imported_path_that_is_itself_a_loop_says_so_not_that_it_does_not_exist(tmp_path):
    (tmp_path / "x").symlink_to(tmp_path / "y")
    (tmp_path / "y").symlink_to(tmp_path / "x")
    assert len(tree_fingerprint(str(tmp_path / "x"))) == 16
    state, reason, _ = checked_import("latency_csv", str(tmp_path / "x"), 2, 16)
    assert state == "invalid" and f"{tmp_path / 'x'}: a symbolic link loop" in reason, reason
    assert manifest(tmp_path / "x") == []


UNPRIVILEGED = """
import json, os, sys
sys.path.insert(0, sys.argv[1])
from dispatchprof.stages.imports import checked_import, manifest, tree_fingerprint
from pathlib import Path
import sqlite3  # extension modules, loaded while the interpreter's own lib-dynload can be (under /root, mode 0700)
from dispatchprof.stages.timeline_parse import read_node_infos
if os.geteuid() == 0:  # root reads a mode-000 file: the check runs as nobody, as a user's account would
    os.setgid(65534)
    os.setuid(65534)
root = sys.argv[2]
found = read_node_infos(Path(root), range(1), 8)
print(json.dumps({"fingerprint": tree_fingerprint(root), "import": checked_import("timeline_dir", root, 1, 8),
                  "manifest": [Path(e["path"]).name for e in manifest(Path(root))],
                  "parse": {"unreadable": {str(p): v for p, v in found.unreadable.items()}, "refused": found.refused}}))
"""


def test_a_file_and_a_directory_the_user_cannot_read_are_refused_with_their_paths(tmp_path):
    """chmod 000 on a file and on a directory. The tests run as root, who reads them anyway, so the check runs in a
    subprocess that drops to uid 65534 first (as any user's own account, it runs directly), in a directory outside
    pytest's private tmp (mode 0700, which nobody could enter)."""
    import json
    import shutil
    import subprocess
    import sys
    import tempfile

    from conftest import ROOT

    root = Path(tempfile.mkdtemp(prefix="dispatchprof-perm-"))
    try:
        root.chmod(0o755)
        prof, locked = prof_with(root, lambda prof: prof / "msprof_20260101000000.db")
        for d in (root / "node0", prof):
            d.chmod(0o755)
        locked.chmod(0o000)
        (prof / "mindstudio_profiler_log").mkdir(mode=0o000)
        (prof / "mindstudio_profiler_log").chmod(0o000)
        done = subprocess.run(
            [sys.executable, "-c", UNPRIVILEGED, str(ROOT / "workflow" / "scripts"), str(root)],
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert done.returncode == 0, done.stderr
        seen = json.loads(done.stdout)
        state, reason, details = seen["import"]
        # inside the PROF_: that directory's ranks are refused by the parse, the import names both entries
        assert state == "ok" and "2 entries cannot be read, the ranks of the data directories holding" in reason, reason
        assert f"{locked}: cannot be read (Permission denied)" in details["unreadable"]
        assert (
            f"{prof / 'mindstudio_profiler_log'}: a directory that cannot be listed (Permission denied)"
            in details["unreadable"]
        )
        assert len(seen["fingerprint"]) == 16 and seen["manifest"] == []
        # the parse refuses that PROF_ (its identity is in the db it cannot open), both entries named first
        (said,) = seen["parse"]["refused"]["0"]
        assert said.startswith("; ".join(details["unreadable"]) + "; "), said
    finally:
        for d in (root / "node0" / prof.name / "mindstudio_profiler_log",):
            d.chmod(0o755)
        shutil.rmtree(root)


def test_a_permission_fix_changes_the_fingerprint_so_the_refused_import_runs_again(tmp_path):
    """chmod 644 on a file refused as unreadable changes neither its size nor its mtime: the mode is in the hash."""
    prof, locked = prof_with(tmp_path, lambda prof: prof / "msprof_20260101000000.db")
    locked.chmod(0o000)
    refused = tree_fingerprint(str(tmp_path))
    locked.chmod(0o644)
    assert tree_fingerprint(str(tmp_path)) != refused
