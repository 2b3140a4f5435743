"""The timeline's parse part as a library function, without Snakemake (the whole DAG: tests/workflow)."""

import json
import sqlite3
import sys

import pyarrow.parquet as pq
import pytest

from conftest import ROOT, stage_run, write_part_status
from dispatchprof.stages.timeline_parse import timeline_parse

OUTPUTS = {"coverage": "coverage.parquet", "launches": "launches.parquet", "ranks": "ranks.json", "plots": "plots"}
ONE_RANK = {"mode": "analyze", "cluster": {"nodes": 1, "ranks_per_node": 1}}


def simulated_prof(root, launches=5):
    """A PROF_ of one rank, written by the simulator's writer (the code the msprof stand-in uses)."""
    sys.path.insert(0, str(ROOT / "workflow" / "sim"))
    from simprof.prof_writer import write_prof

    events, t = [], 1_795_977_981_065_797_700
    for i in range(launches):
        events.append({"name": "elastic_dispatch_kernel", "task_type": "AI_VECTOR_CORE", "stream": 1, "task_id": i + 1, "start_ns": t, "dur_ns": 100_000 + i})
        t += 1_000_000
    return write_prof(root, {"pid": 4242, "hostname": "n0", "device_id": 0, "rank_id": "0", "start_ns": events[0]["start_ns"]}, events)


def parse_run(tmp_path, overlay):
    return stage_run(
        tmp_path, "timeline", outputs=OUTPUTS, params={"needed": [], "nodes": [0, 0], "identity": None, "skip": 1}, overlay=overlay, part="nodes0-0"
    )


def test_a_rank_of_the_node_range_is_parsed_into_its_launches(tmp_path):
    (tmp_path / "raw" / "node0").mkdir(parents=True)
    simulated_prof(tmp_path / "raw" / "node0")
    status = timeline_parse(parse_run(tmp_path, {**ONE_RANK, "analyze": {"timeline_dir": str(tmp_path / "raw")}}))
    assert status.state == "ok", status.reason
    assert status.reason == "node 0: 1 of 1 ranks with data, kernel elastic_dispatch_kernel"
    ranks = json.loads((tmp_path / "out" / "ranks.json").read_text())["ranks"]
    assert ranks[0]["present"] and ranks[0]["launches"] == 4  # timeline skip: the first launch left out
    assert pq.read_table(tmp_path / "out" / "launches.parquet").num_rows == 5
    assert (tmp_path / "out" / "plots" / "rank0.svg").is_file()


def test_a_node_without_prof_directories_is_ok_and_says_who_is_missing(tmp_path):
    (tmp_path / "raw").mkdir()
    status = timeline_parse(parse_run(tmp_path, {**ONE_RANK, "analyze": {"timeline_dir": str(tmp_path / "raw")}}))
    assert status.state == "ok" and status.reason == "node 0: 0 of 1 ranks with data"
    assert [v.check for v in status.validations if not v.passed] == ["every rank of these nodes has timeline data"]


def test_a_needed_input_not_ok_skips_the_part(tmp_path):
    collect = write_part_status(tmp_path / "collect" / "status.json", "timeline", "failed", part="collect")
    run = stage_run(tmp_path, "timeline", inputs={"timeline_collect": collect}, outputs=OUTPUTS, params={"needed": ["timeline_collect"]}, part="nodes0-0")
    assert timeline_parse(run).state == "skipped"


def implausible_prof(tmp_path, dur_ns=5_000_000_000):
    """One rank whose launch 2 lasts ``dur_ns`` (5 s: far above any dispatch, within int64)."""
    (tmp_path / "raw" / "node0").mkdir(parents=True)
    prof = simulated_prof(tmp_path / "raw" / "node0")
    db = next(prof.glob("msprof_*.db"))
    with sqlite3.connect(db) as conn:
        start = conn.execute("SELECT startNs FROM TASK ORDER BY startNs LIMIT 1 OFFSET 2").fetchone()[0]
        conn.execute("UPDATE TASK SET endNs = startNs + ? WHERE startNs = ?", (dur_ns, start))
    return prof, db, start


def assert_never_reaches_the_statistics(tmp_path, status):
    assert status.state == "invalid", status.reason
    assert not any((tmp_path / "out" / name).exists() for name in ("launches.parquet", "coverage.parquet", "ranks.json"))


def test_an_implausible_launch_duration_is_refused_with_its_file_and_row(tmp_path):
    _, db, start = implausible_prof(tmp_path)
    status = timeline_parse(parse_run(tmp_path, {**ONE_RANK, "analyze": {"timeline_dir": str(tmp_path / "raw")}}))
    assert_never_reaches_the_statistics(tmp_path, status)
    assert status.reason == (
        f"{db}: launch 2 of elastic_dispatch_kernel (start {start} ns, {start // 1000}.{start % 1000:03d} us): duration 5000000000 ns, "
        "5e+06 us, above stats.max_plausible_us (1e+06 us): not a plausible dispatch duration"
    )


def test_the_timeline_limit_is_the_configured_one(tmp_path):
    implausible_prof(tmp_path, dur_ns=200_000)  # 200 us: plausible under the default
    raw = {"analyze": {"timeline_dir": str(tmp_path / "raw")}}
    assert timeline_parse(parse_run(tmp_path, {**ONE_RANK, **raw})).state == "ok"
    status = timeline_parse(parse_run(tmp_path / "strict", {**ONE_RANK, **raw, "stats": {"max_plausible_us": 150}}))
    assert status.state == "invalid" and "launch 2 of elastic_dispatch_kernel" in status.reason and "(150 us)" in status.reason, status.reason


@pytest.mark.parametrize(
    "duration,message",
    [
        ("1e300", "field 'Task Duration(us)' is '1e300', expected microseconds"),
        ("1" + "0" * 300, "beyond 64-bit nanoseconds"),  # 1e300 written out: once an OverflowError traceback
        ("99999999999999999.0", "beyond 64-bit nanoseconds"),  # once wrapped to 7.8e18 ns without a word
        ("5000000.000", "duration 5000000000 ns, 5e+06 us, above stats.max_plausible_us"),
        ("-1.000", "field 'Task Duration(us)' is '-1.000', expected microseconds"),
        ("nan", "field 'Task Duration(us)' is 'nan', expected microseconds"),
    ],
    ids=["1e300", "1e300-digits", "1e17-us", "5-s", "negative", "nan"],
)
def test_an_implausible_duration_in_the_text_export_never_reaches_the_statistics(tmp_path, duration, message):
    """A PROF_ with only its text export (the db removed): op_summary's third launch edited."""
    prof, db, _ = implausible_prof(tmp_path, dur_ns=100_002)
    db.unlink()
    (csv,) = prof.glob("mindstudio_profiler_output/op_summary_*.csv")
    lines = csv.read_text().splitlines(keepends=True)
    header = lines[0].split(",")
    launch = [i for i, line in enumerate(lines) if "elastic_dispatch_kernel" in line][2]
    fields = lines[launch].split(",")
    fields[header.index("Task Duration(us)")] = duration
    lines[launch] = ",".join(fields)
    csv.write_text("".join(lines))
    status = timeline_parse(parse_run(tmp_path, {**ONE_RANK, "analyze": {"timeline_dir": str(tmp_path / "raw")}}))
    assert_never_reaches_the_statistics(tmp_path, status)
    assert message in status.reason, status.reason
    assert status.reason.startswith(str(csv if "above" not in message else csv.parent)), status.reason
    if "above" not in message:
        assert f"line {launch + 1}:" in status.reason


@pytest.mark.parametrize("duration,message", [(1e300, "not 64-bit integers"), (5e6, "duration 5000000000 ns, 5e+06 us, above stats.max_plausible_us")])
def test_an_implausible_duration_in_the_msprof_json_never_reaches_the_statistics(tmp_path, duration, message):
    """A PROF_ whose only kernel table is the msprof JSON (db and op_summary removed): the third launch's 'dur'."""
    prof, db, _ = implausible_prof(tmp_path, dur_ns=100_002)
    db.unlink()
    for csv in prof.glob("mindstudio_profiler_output/op_summary_*.csv"):
        csv.unlink()
    (path,) = prof.glob("mindstudio_profiler_output/msprof_*.json")
    data = json.loads(path.read_text())
    events = data["traceEvents"] if isinstance(data, dict) else data
    [e for e in events if e.get("name") == "elastic_dispatch_kernel" and e.get("ph") == "X"][2]["dur"] = duration
    path.write_text(json.dumps(data))
    status = timeline_parse(parse_run(tmp_path, {**ONE_RANK, "analyze": {"timeline_dir": str(tmp_path / "raw")}}))
    assert_never_reaches_the_statistics(tmp_path, status)
    assert message in status.reason and status.reason.startswith(str(path if duration > 1e200 else path.parent)), status.reason
