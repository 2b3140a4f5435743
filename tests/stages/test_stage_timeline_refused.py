"""One bad rank never costs the others: a rank whose msprof files are unreadable or refused is left out of the
timeline with its reason (the file named), and the stage goes on over the rest, as for a missing device.

The run is simulated by the simulator's own PROF_ writer (2 nodes x 8 ranks, known durations): the medians of the
ranks left are checked against the durations written (the event truth), not against a snapshot."""

import json
import shutil
import sys
import tempfile
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from conftest import ROOT, TIMELINE_MERGE_OUTPUTS, stage_run
from dispatchprof.shell.stage import guarded
from dispatchprof.stages.timeline import timeline
from dispatchprof.stages.timeline_parse import timeline_parse

NODES, PER_NODE, LAUNCHES = 2, 8, 7
WORLD = NODES * PER_NODE
CLUSTER = {
    "mode": "analyze",
    "cluster": {"nodes": NODES, "ranks_per_node": PER_NODE},
    "timeline": {"crosscheck": "off"},
}


def durations_ns(rank: int) -> list[int]:
    """Rank ``rank``'s launch durations: distinct per rank and launch, so that a rank read as another shows."""
    return [100_000 + 1_000 * rank + 37 * ((launch * 7 + rank) % LAUNCHES) for launch in range(LAUNCHES)]


def truth_median_us(rank: int) -> float:
    return float(np.median(durations_ns(rank))) / 1000  # analyze mode leaves no launch out (skip 0)


def simulated_run(root: Path) -> dict[int, Path]:
    """Every rank's PROF_ (the stand-in msprof's writer), rank_id recorded; the PROF_ of each rank."""
    sys.path.insert(0, str(ROOT / "workflow" / "sim"))
    from simprof.prof_writer import write_prof

    profs = {}
    for rank in range(WORLD):
        node, local = divmod(rank, PER_NODE)
        t = 1_795_977_981_065_797_700 + node * 3_000_000 + local * 1_000
        events = [
            {
                "name": "elastic_dispatch_kernel",
                "task_type": "AI_VECTOR_CORE",
                "stream": 1,
                "task_id": i + 1,
                "start_ns": t + i * 2_000_000,
                "dur_ns": d,
            }
            for i, d in enumerate(durations_ns(rank))
        ]
        (root / f"node{node}").mkdir(parents=True, exist_ok=True)
        proc = {"pid": 5000 + rank, "hostname": f"n{node}", "device_id": local, "rank_id": rank, "start_ns": t}
        profs[rank] = write_prof(root / f"node{node}", proc, events)
    return profs


def parse_and_merge(work: Path, raw: Path, between=None) -> tuple[object, dict, object]:
    """The parse part over both nodes (one job), then the merge, as the rules run them (run_stage's guarded: an input
    error is the merge's status): (part, merge, stats). ``between(part)`` runs after the parse."""
    overlay = {**CLUSTER, "analyze": {"timeline_dir": str(raw)}}
    outputs = {"coverage": "coverage.parquet", "launches": "launches.parquet", "ranks": "ranks.json", "plots": "plots"}
    params = {"needed": [], "nodes": [0, NODES - 1], "identity": None, "skip": 0}
    part = stage_run(
        work / "part", "timeline", outputs=outputs, params=params, overlay=overlay, part=f"nodes0-{NODES - 1}"
    )
    parsed = part.finish(timeline_parse(part))
    if between:
        between(part)
    (work / "baseline.json").write_text(json.dumps({"placeholder": True}))
    inputs = {
        "parts": [part.status_path],
        "coverage": [part.outputs["coverage"]],
        "launches": [part.outputs["launches"]],
        "ranks": [part.outputs["ranks"]],
        "baseline_stats": work / "baseline.json",
    }
    merge_outputs = TIMELINE_MERGE_OUTPUTS
    merge = stage_run(
        work / "merge",
        "timeline",
        inputs=inputs,
        outputs=merge_outputs,
        params={"needed": [], "groups": [f"0-{NODES - 1}"]},
        overlay=overlay,
    )
    status = merge.finish(guarded(merge, timeline))
    return parsed, status, json.loads(merge.outputs["stats"].read_text())


def db_of(prof: Path) -> Path:
    return next(prof.glob("msprof_*.db"))


def malformed(path: Path) -> None:
    """Pages after the first overwritten: SQLite opens the file, then finds "database disk image is malformed"."""
    data = bytearray(path.read_bytes())
    data[4096:] = b"\x5a" * (len(data) - 4096)
    path.write_bytes(bytes(data))


def truncated(path: Path) -> None:
    path.write_bytes(path.read_bytes()[: max(1, path.stat().st_size // 3)])


def zero_bytes(path: Path) -> None:
    path.write_bytes(b"")


def garbage(path: Path) -> None:
    path.write_bytes(bytes(range(256)) * 16)


def text_export_only(corrupt):
    """The db removed and the export's op_summary CSV (what is read without a db) corrupted."""

    def apply(prof: Path) -> Path:
        db_of(prof).unlink()
        (csv,) = prof.glob("mindstudio_profiler_output/op_summary_*.csv")
        corrupt(csv)
        return csv

    return apply


def on_db(corrupt):
    def apply(prof: Path) -> Path:
        corrupt(db_of(prof))
        return db_of(prof)

    return apply


def on_identity(prof: Path) -> Path:
    """The device's info.json (the PROF_'s identity) garbled: the PROF_ cannot be read, so no rank maps to it."""
    (path,) = prof.glob("device_*/info.json.*")
    garbage(path)
    return prof


def link_loop(prof: Path) -> Path:
    """Two links into each other inside the PROF_ (an entry that cannot be read): its rank is refused, unread."""
    (prof / "a").symlink_to(prof / "b")
    (prof / "b").symlink_to(prof / "a")
    return prof / "a"


def fifo_db(prof: Path) -> Path:
    """A FIFO where the db belongs: opening it would block the reader, so its PROF_ is refused before any read."""
    import os

    db = db_of(prof)
    db.unlink()
    os.mkfifo(db)
    return db


CORRUPTIONS = {
    "db malformed": on_db(malformed),
    "db truncated": on_db(truncated),
    "db zero bytes": on_db(zero_bytes),
    "db garbage": on_db(garbage),
    "csv truncated": text_export_only(truncated),
    "csv garbage": text_export_only(garbage),
    "identity garbage": on_identity,
    "link loop": link_loop,
    "fifo db": fifo_db,
}


@pytest.fixture(scope="module")
def intact(tmp_path_factory):
    """The simulated run and its timeline, untouched."""
    root = tmp_path_factory.mktemp("intact")
    profs = simulated_run(root / "raw")
    parsed, status, stats = parse_and_merge(root, root / "raw")
    assert parsed.state == status.state == "ok", (parsed.reason, status.reason)
    return root / "raw", profs, stats


def test_the_intact_run_gives_every_rank_its_written_median(intact):
    _, _, stats = intact
    assert stats["coverage"]["found"] == WORLD and stats["coverage"]["refused"] == {}
    assert {int(r): v["median_us"] for r, v in stats["per_rank"].items()} == pytest.approx(
        {r: truth_median_us(r) for r in range(WORLD)}, abs=1e-9
    )


def test_16_ranks_with_one_corrupt_db_give_a_timeline_on_15_with_the_bad_one_named(intact, tmp_path):
    raw, profs, intact_stats = intact
    shutil.copytree(raw, tmp_path / "raw")
    bad = 11
    db = db_of(tmp_path / "raw" / profs[bad].relative_to(raw))
    malformed(db)
    parsed, status, stats = parse_and_merge(tmp_path, tmp_path / "raw")
    assert parsed.state == "ok" and f"rank {bad} refused: {db}: not a readable msprof database" in parsed.reason, (
        parsed.reason
    )
    assert status.state == "ok", status.reason
    assert (
        "15/16 ranks (missing rank 11)" in status.reason
        and f"Left out, their files refused: rank {bad} ({db}: not a readable msprof database" in status.reason
    ), status.reason
    assert "database disk image is malformed" in status.reason
    coverage = stats["coverage"]
    assert coverage["found"] == 15 and coverage["missing"] == [bad] and list(coverage["refused"]) == [str(bad)]
    assert str(db) in coverage["refused"][str(bad)] and str(db) in coverage["why_missing"][str(bad)]
    assert [r["state"] for r in stats["coverage_rows"]] == ["refused"]
    # the ranks left: exactly the durations written, the same as the intact run's
    present = {int(r): v["median_us"] for r, v in stats["per_rank"].items() if v["launches"]}
    assert sorted(present) == [r for r in range(WORLD) if r != bad]
    assert present == pytest.approx({r: truth_median_us(r) for r in present}, abs=1e-9)
    assert present == {r: intact_stats["per_rank"][str(r)]["median_us"] for r in present}
    assert all(v["launches"] == LAUNCHES for r, v in stats["per_rank"].items() if int(r) != bad)
    # the report's answer says it too, with the file
    from dispatchprof.report.summary import timeline_sentences

    said = " ".join(timeline_sentences(stats))
    assert (
        "covers 15/16 ranks (missing rank 11)" in said
        and f"Left out because their files could not be used: rank 11 ({db}: not a readable msprof database" in said
    ), said


def test_a_garbled_identity_file_refuses_that_prof_and_names_it_for_the_rank_it_leaves_without_data(intact, tmp_path):
    raw, profs, _ = intact
    shutil.copytree(raw, tmp_path / "raw")
    prof = tmp_path / "raw" / profs[3].relative_to(raw)
    on_identity(prof)
    parsed, status, stats = parse_and_merge(tmp_path, tmp_path / "raw")
    assert status.state == "ok" and "15/16 ranks (missing rank 3)" in status.reason, status.reason
    assert (
        "no readable PROF_ directory maps to this rank" in stats["coverage"]["refused"]["3"]
        and str(prof) in stats["coverage"]["refused"]["3"]
    )


@settings(
    max_examples=10, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow]
)
@given(
    bad=st.dictionaries(st.integers(0, WORLD - 1), st.sampled_from(sorted(CORRUPTIONS)), min_size=1, max_size=WORLD),
)
def test_any_set_of_corrupt_ranks_leaves_a_result_over_the_rest_or_a_stated_refusal(intact, bad):
    raw, profs, intact_stats = intact
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        shutil.copytree(raw, work / "raw")
        named = {rank: CORRUPTIONS[kind](work / "raw" / profs[rank].relative_to(raw)) for rank, kind in bad.items()}
        parsed, status, stats = parse_and_merge(work, work / "raw")
        assert parsed.state == "ok", parsed.reason
        coverage = stats["coverage"]
        assert sorted(coverage["refused"]) == sorted(map(str, bad)) and coverage["missing"] == sorted(bad)
        for rank, path in named.items():
            assert str(path) in coverage["refused"][str(rank)], (rank, bad[rank], coverage["refused"][str(rank)])
        left = WORLD - len(bad)
        if left == 0:
            assert status.state == "invalid" and status.reason.startswith(
                "no rank has usable timeline data: every rank's files were refused"
            ), status.reason
            return
        if left / WORLD < coverage["min_fraction"]:
            assert (
                status.state == "invalid"
                and "below stats.min_rank_coverage" in status.reason
                and "Left out, their files refused" in status.reason
            )
            return
        assert status.state == "ok" and f"{left}/{WORLD} ranks" in status.reason, status.reason
        present = {int(r): v["median_us"] for r, v in stats["per_rank"].items() if v["launches"]}
        assert present == {r: intact_stats["per_rank"][str(r)]["median_us"] for r in range(WORLD) if r not in bad}


def test_one_file_the_user_cannot_read_refuses_its_rank_only_with_the_file_and_errno_named(
    intact, tmp_path, monkeypatch
):
    """Issue 58: a mode-000 db made the import refuse the whole tree (16 ranks lost) where a corrupt one costs its own
    rank. The tests run as root, who reads a mode-000 file, so the open that tells (formats/tree_walk.entry_problem)
    raises PermissionError for that one path, as it does for a user's account (the workflow test runs as nobody)."""
    import errno
    import os

    from dispatchprof.stages.imports import checked_import

    raw, profs, intact_stats = intact
    shutil.copytree(raw, tmp_path / "raw")
    bad = 5
    db = db_of(tmp_path / "raw" / profs[bad].relative_to(raw))
    real_open = os.open

    def refuse(path, flags, *args, **kwargs):
        if os.path.normpath(path) == str(db):
            raise PermissionError(errno.EACCES, os.strerror(errno.EACCES), str(path))
        return real_open(path, flags, *args, **kwargs)

    monkeypatch.setattr(os, "open", refuse)
    state, reason, details = checked_import("timeline_dir", str(tmp_path / "raw"), NODES, WORLD)
    assert state == "ok" and f"{db}: cannot be read (Permission denied)" in reason, reason
    parsed, status, stats = parse_and_merge(tmp_path, tmp_path / "raw")
    assert parsed.state == "ok" and f"rank {bad} refused: {db}: cannot be read (Permission denied)" in parsed.reason
    assert status.state == "ok" and "15/16 ranks (missing rank 5)" in status.reason, status.reason
    assert f"Left out, their files refused: rank {bad} ({db}: cannot be read (Permission denied))" in status.reason
    assert list(stats["coverage"]["refused"]) == [str(bad)]
    present = {int(r): v["median_us"] for r, v in stats["per_rank"].items() if v["launches"]}
    assert present == {r: intact_stats["per_rank"][str(r)]["median_us"] for r in range(WORLD) if r != bad}


def test_a_fifo_in_one_prof_refuses_that_prof_unread_and_the_others_are_analysed(intact, tmp_path):
    """A FIFO where the db belongs would block its reader: the directory is refused before any of it is read."""
    raw, profs, _ = intact
    shutil.copytree(raw, tmp_path / "raw")
    db = fifo_db(tmp_path / "raw" / profs[12].relative_to(raw))
    parsed, status, stats = parse_and_merge(tmp_path, tmp_path / "raw")
    assert status.state == "ok" and "15/16 ranks (missing rank 12)" in status.reason, status.reason
    assert f"{db}: not a regular file (a FIFO)" in stats["coverage"]["refused"]["12"]


@pytest.mark.parametrize("output", ["launches", "coverage", "ranks"])
def test_a_parse_output_damaged_before_the_merge_is_an_input_error_naming_it(intact, tmp_path, output):
    """Issue 58: a truncated launches.parquet made the merge "internal error in timeline.<genexpr> on an unknown file:
    ArrowInvalid: Parquet magic bytes not found (a workflow bug)". Now it is the merge's invalid input, named."""
    raw, _, _ = intact

    def truncate(part) -> None:
        path = part.outputs[output]
        path.write_bytes(path.read_bytes()[: path.stat().st_size // 2])
        truncate.path = path

    _, status, stats = parse_and_merge(tmp_path, raw, truncate)
    assert status.state == "invalid" and status.reason.startswith(f"{truncate.path}: cannot be read ("), status.reason
    why = "not valid JSON" if output == "ranks" else "not a readable Parquet file"
    assert why in status.reason and "workflow bug" not in status.reason, status.reason
    assert stats["placeholder"] is True  # the merge's outputs are placeholders that say why
