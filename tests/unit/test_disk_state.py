"""What is on disk against what the jobs recorded (shell/disk_state.py): a damaged, stale or retryable result is
named with its reason and its job is forced; a healthy tree forces nothing."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dispatchprof.shell import disk_state
from dispatchprof.shell.stage import RETRY_NOTE, finish_outputs
from dispatchprof.shell.status import Status, read_status, retryable


@pytest.fixture
def in_tmp(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    return tmp_path


def job(stage: str, part: str | None, outputs: dict[str, bytes], reads=(), state="ok", **fields) -> Path:
    """A job as a stage would finish it: its outputs written, then its status with what it wrote and read."""
    where = Path("results", "baseline", stage, *([part] if part else []))
    where.mkdir(parents=True, exist_ok=True)
    paths = {}
    for name, data in outputs.items():
        (where / name).write_bytes(data)
        paths[name] = where / name
    status = Status(stage, "baseline", state, "a test's job", "sim", part=part, **fields)
    finish_outputs(paths, where / "status.json", status, disk_state.record_inputs(reads))
    return where / "status.json"


def forced(tmp_path: Path) -> dict[str, str]:
    return {str(r.status): r.why for r in disk_state.reruns(Path("results"), ["baseline"])}


def test_a_healthy_tree_forces_nothing_and_a_touch_alone_is_no_change(in_tmp):
    parse = job("timeline", "nodes/nodes0-1", {"launches.parquet": b"PAR1 data PAR1"})
    job("timeline", None, {"stats.json": b"{}"}, reads=[parse, parse.parent / "launches.parquet"])
    assert forced(in_tmp) == {}
    os.utime(parse.parent / "launches.parquet", ns=(1, 1))  # `snakemake --touch`, a copy: same bytes
    assert forced(in_tmp) == {}


def test_a_truncated_or_edited_output_forces_its_own_job_naming_the_file(in_tmp):
    parse = job("timeline", "nodes/nodes0-1", {"launches.parquet": b"PAR1 data PAR1"})
    (parse.parent / "launches.parquet").write_bytes(b"PAR1")
    why = forced(in_tmp)[str(parse)]
    assert "launches.parquet holds 4 bytes where its job wrote 14" in why and "timeline/nodes/nodes0-1" in why
    (parse.parent / "launches.parquet").write_bytes(b"PAR1 DATA PAR1")  # same size, other bytes
    assert "its sha256 differs" in forced(in_tmp)[str(parse)]


def test_a_gone_collection_forces_its_job_and_names_what_was_made_from_it(in_tmp):
    collect = job("timeline", "collect", {})
    (collect.parent / "raw").mkdir()
    job("timeline", "nodes/nodes0-1", {"launches.parquet": b"x"}, reads=[collect])
    job("pmu", "collect", {}, reads=[collect])
    collect.unlink()  # Snakemake deletes the outputs of a killed job: raw/, run/ and the status
    why = forced(in_tmp)[str(collect)]
    assert "it is gone" in why and "pmu/collect, timeline/nodes/nodes0-1 were made from it" in why


def test_a_gone_output_directory_forces_its_job(in_tmp):
    where = Path("results", "baseline", "timeline", "collect")
    (where / "raw").mkdir(parents=True)
    status = Status("timeline", "baseline", "ok", "collected", "sim", part="collect")
    finish_outputs({"raw": where / "raw"}, where / "status.json", status)
    assert forced(in_tmp) == {}
    (where / "raw").rmdir()
    assert "raw is gone" in forced(in_tmp)[str(where / "status.json")]


def test_an_unreadable_status_forces_its_job(in_tmp):
    status = job("baseline", None, {"stats.json": b"{}"})
    status.write_text('{"schema": "dispatchprof.status/1", "stage"')
    assert "cannot be read" in forced(in_tmp)[str(status)]


def test_a_failure_whose_cause_may_be_gone_is_retried_and_says_so(in_tmp):
    port = job("env_capture", "node0", {}, state="failed")
    precision = job("correctness", None, {}, state="failed", details={"cause": "precision"})
    busy = job("pmu", "collect", {}, state="failed", details={"cause": "cluster_busy"})
    found = forced(in_tmp)
    assert str(port) in found and str(busy) in found and str(precision) not in found
    assert read_status(port).reason.endswith(RETRY_NOTE) and read_status(port).retry
    assert not read_status(precision).retry


def test_a_drill_down_older_than_what_it_drills_into_is_refreshed_and_a_collection_is_not(in_tmp):
    part = job("timeline", "nodes/nodes0-1", {"ranks.json": b"[]"})
    drill = job("timeline", "ranks/rank7", {"detail.json": b"{}"}, reads=[part], details={"on_demand": True})
    # A collection gates on an analysis that a re-analysis rewrites (an ancient() input): it never re-collects.
    pmu = job("pmu", "collect", {}, reads=[part])
    assert forced(in_tmp) == {}
    stamp = part.stat().st_mtime_ns + 10**9
    os.utime(part, ns=(stamp, stamp))  # `snakemake -R correctness` rewrote the timeline since
    found = forced(in_tmp)
    assert "was made from an older" in found[str(drill)] and str(pmu) not in found


@pytest.mark.parametrize("retry_state", ["ok", "skipped", "disabled"])
def test_a_state_that_is_no_failure_is_never_retried(retry_state):
    status = Status("env_capture", "baseline", retry_state, "why", "sim", details={"cause": "infrastructure"})
    assert not retryable(status)


def test_a_consumer_names_each_input_that_is_not_what_its_writer_wrote(in_tmp):
    parse = job("timeline", "nodes/nodes0-1", {"launches.parquet": b"PAR1 data PAR1", "ranks.json": b"[]"})
    launches, ranks = parse.parent / "launches.parquet", parse.parent / "ranks.json"
    assert disk_state.damaged_inputs([parse, launches, ranks]) == []
    launches.write_bytes(b"")
    problems = disk_state.damaged_inputs([parse, launches, ranks])
    assert len(problems) == 1 and str(launches) in problems[0] and "reruns timeline/nodes/nodes0-1" in problems[0]


record_values = st.one_of(st.none(), st.integers(), st.text(max_size=5), st.booleans(), st.lists(st.integers()))


@settings(max_examples=60, suppress_health_check=[HealthCheck.function_scoped_fixture], deadline=None)
@given(
    fields=st.dictionaries(
        st.sampled_from(["outputs", "inputs", "retry", "details", "state", "stage", "reason", "part"]),
        st.one_of(record_values, st.dictionaries(st.text(max_size=8), record_values, max_size=3)),
        max_size=5,
    ),
    raw=st.one_of(st.none(), st.binary(max_size=40)),
)
def test_any_status_on_disk_ends_in_reruns_or_nothing_never_a_crash(in_tmp, fields, raw):
    path = Path("results", "baseline", "timeline", "status.json")
    path.parent.mkdir(parents=True, exist_ok=True)
    data = {"schema": "dispatchprof.status/1", "stage": "timeline", "experiment": "baseline", "state": "ok"}
    data.update({"reason": "why", "toolchain": "sim", **fields})
    path.write_bytes(raw if raw is not None else json.dumps(data).encode())
    for rerun in disk_state.reruns(Path("results"), ["baseline"]):
        assert rerun.why
