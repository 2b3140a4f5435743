"""Analyze mode with inputs that cannot be read, as a user runs it: one corrupt msprof db costs its own rank only,
and a file link loop in an imported tree is that import's refusal (the link named), never a traceback before the
DAG. The rest of the run goes on: the report is rendered and the end-of-run table printed."""

import json
import sys
from pathlib import Path

import numpy as np
import pytest

from conftest import ROOT, assert_ended_by_fail_on, base_overlay

NODES, PER_NODE, LAUNCHES = 2, 8, 6


def durations_ns(rank: int) -> list[int]:
    return [1_000_000 + 1000 * rank + 50 * ((launch * 5 + rank) % LAUNCHES) for launch in range(LAUNCHES)]


def simulated_timeline(root: Path) -> dict[int, Path]:
    """Every rank's PROF_ as the stand-in msprof writes it (rank_id recorded), no barrier kernel."""
    sys.path.insert(0, str(ROOT / "workflow" / "sim"))
    from simprof.prof_writer import write_prof

    profs = {}
    for rank in range(NODES * PER_NODE):
        node, local = divmod(rank, PER_NODE)
        t = 1_795_977_981_000_000_000 + node * 1_700_000 + local * 2_000
        events = [
            {
                "name": "elastic_dispatch_kernel",
                "task_type": "AI_VECTOR_CORE",
                "stream": 1332,
                "task_id": i + 1,
                "start_ns": t + i * 50_000_000,
                "dur_ns": d,
            }
            for i, d in enumerate(durations_ns(rank))
        ]
        proc = {"pid": 1000 + rank, "hostname": f"n{node}", "device_id": local, "rank_id": rank, "start_ns": t}
        profs[rank] = write_prof(root / f"node{node}", proc, events)
    return profs


def test_a_corrupt_db_costs_its_rank_and_a_file_loop_its_import_and_the_run_ends_with_the_table(
    workflow_copy, tmp_path
):
    profs = simulated_timeline(tmp_path / "timeline")
    bad = 5
    db = next(profs[bad].glob("msprof_*.db"))
    data = bytearray(db.read_bytes())
    data[4096:] = b"\x5a" * (len(data) - 4096)  # pages after the first overwritten: "database disk image is malformed"
    db.write_bytes(bytes(data))
    opprof = tmp_path / "pmu" / "node0" / "OPPROF_20260101000000_ABCDEFGHIJKLMNOP"
    opprof.mkdir(parents=True)
    (opprof / "a").symlink_to(opprof / "b")
    (opprof / "b").symlink_to(opprof / "a")
    analyze = {"timeline_dir": str(tmp_path / "timeline"), "pmu_dir": str(tmp_path / "pmu")}
    result = workflow_copy.snakemake(overlay=base_overlay(mode="analyze", analyze=analyze))
    assert_ended_by_fail_on(result, "baseline/pmu is invalid")
    for said in ("Traceback", "InputFunctionException", "Too many levels of symbolic links: "):
        assert said not in result.stderr, result.stderr[-3000:]
    # the loop: the PMU import refuses its tree, naming the link; the stage folds its import part (the worst state
    # wins: invalid, the bad input's state in the status contract); the table says so
    pmu_import = json.loads((workflow_copy.root / "results/baseline/pmu/import/status.json").read_text())
    assert pmu_import["state"] == "invalid" and f"{opprof / 'a'}: a symbolic link loop" in pmu_import["reason"], (
        pmu_import
    )
    pmu = workflow_copy.status("pmu")
    assert (
        pmu["state"] == "invalid"
        and pmu["upstream"] == {"pmu_import": "invalid"}
        and f"{opprof / 'a'}: a symbolic link loop" in pmu["reason"]
    ), pmu
    table = result.stdout[result.stdout.index("Stages (imported data):") :]
    assert str(opprof / "a") in table, table
    # the corrupt db: the timeline goes on over the other 15 ranks, the file named
    timeline = workflow_copy.status("timeline")
    assert timeline["state"] == "ok" and f"15/16 ranks (missing rank {bad})" in timeline["reason"], timeline
    assert (
        f"Left out, their files refused: rank {bad} ({db}: not a "
        "readable msprof database (database disk image is malformed))" in timeline["reason"]
    ), timeline["reason"]
    assert str(db) in timeline["details"]["coverage"]["refused"][str(bad)]
    stats = json.loads((workflow_copy.root / "results/baseline/timeline/stats.json").read_text())
    present = {int(r): v["median_us"] for r, v in stats["per_rank"].items() if v["launches"]}
    truth = {
        r: float(np.median(durations_ns(r))) / 1000 for r in range(NODES * PER_NODE) if r != bad
    }  # analyze mode: no launch left out
    assert present == pytest.approx(truth, abs=1e-9)
    html = (workflow_copy.root / "results/baseline/report/report.html").read_text()
    assert "Partial coverage: 15/16 ranks (missing rank 5)" in html and str(db) in html
    assert "Report: results/baseline/report/report.html" in result.stdout


# Loaded by every Python process of the run (PYTHONPATH): the open that tells whether a file can be read
# (stages/imports.entry_problem) refuses the paths listed, as the kernel refuses a mode-000 file to a user's account.
# Root reads a mode-000 file, and a process dropped to another uid cannot start this machine's interpreter (under
# /root, mode 0700); tests/unit/test_imports.py runs the same checks as uid 65534 in a process started as root.
REFUSING_OPEN = """
import errno, os
_refused = set(filter(None, os.environ.get("DISPATCHPROF_TEST_EACCES", "").split(os.pathsep)))
if _refused:
    _open = os.open

    def _refusing_open(path, flags, *args, **kwargs):
        if os.path.normpath(os.fsdecode(path)) in _refused:
            raise PermissionError(errno.EACCES, os.strerror(errno.EACCES), path)
        return _open(path, flags, *args, **kwargs)

    os.open = _refusing_open
"""


def test_a_file_the_user_cannot_read_costs_its_rank_only(workflow_copy, tmp_path):
    """Issue 58: one mode-000 db in an analyze-mode tree made the import refuse the whole tree (every rank lost),
    where a corrupt db costs its own rank. Now its rank is refused, the file and the errno named, and the other 15
    are analysed."""
    import os

    profs = simulated_timeline(tmp_path / "timeline")
    bad = 9
    db = next(profs[bad].glob("msprof_*.db"))
    db.chmod(0o000)
    inject = tmp_path / "inject"
    inject.mkdir()
    (inject / "sitecustomize.py").write_text(REFUSING_OPEN)
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join(filter(None, [str(inject), os.environ.get("PYTHONPATH")])),
        "DISPATCHPROF_TEST_EACCES": str(db),
    }
    analyze = {"timeline_dir": str(tmp_path / "timeline")}
    result = workflow_copy.snakemake(
        "--until", "timeline", overlay=base_overlay(mode="analyze", analyze=analyze), env=env
    )
    assert result.returncode == 0, result.stderr[-3000:]
    imported = json.loads((workflow_copy.root / "results/baseline/timeline/import/status.json").read_text())
    assert imported["state"] == "ok" and f"{db}: cannot be read (Permission denied)" in imported["reason"], imported
    timeline = workflow_copy.status("timeline")
    assert timeline["state"] == "ok" and f"15/16 ranks (missing rank {bad})" in timeline["reason"], timeline
    assert (
        f"Left out, their files refused: rank {bad} ({db}: cannot be read (Permission denied))" in timeline["reason"]
    ), timeline["reason"]
    stats = json.loads((workflow_copy.root / "results/baseline/timeline/stats.json").read_text())
    present = {int(r): v["median_us"] for r, v in stats["per_rank"].items() if v["launches"]}
    truth = {r: float(np.median(durations_ns(r))) / 1000 for r in range(NODES * PER_NODE) if r != bad}
    assert present == pytest.approx(truth, abs=1e-9)
