"""The timeline's parse part as a library function, without Snakemake (the whole DAG: tests/workflow)."""

import json
import shutil
import sqlite3
import sys

import pyarrow.parquet as pq
import pytest

from conftest import ROOT, TIMELINE_MERGE_OUTPUTS, stage_run, write_part_status
from dispatchprof.stages.timeline_parse import timeline_parse

OUTPUTS = {"coverage": "coverage.parquet", "launches": "launches.parquet", "ranks": "ranks.json", "plots": "plots"}
ONE_RANK = {"mode": "analyze", "cluster": {"nodes": 1, "ranks_per_node": 1}}


def simulated_prof(root, launches=5, device=0, rank_id="0", pid=4242):
    """A PROF_ of one rank, written by the simulator's writer (the code the msprof stand-in uses)."""
    sys.path.insert(0, str(ROOT / "workflow" / "sim"))
    from simprof.prof_writer import write_prof

    events, t = [], 1_795_977_981_065_797_700
    for i in range(launches):
        events.append(
            {
                "name": "elastic_dispatch_kernel",
                "task_type": "AI_VECTOR_CORE",
                "stream": 1,
                "task_id": i + 1,
                "start_ns": t,
                "dur_ns": 100_000 + i,
            }
        )
        t += 1_000_000
    return write_prof(
        root,
        {"pid": pid, "hostname": "n0", "device_id": device, "rank_id": rank_id, "start_ns": events[0]["start_ns"]},
        events,
    )


def parse_run(tmp_path, overlay, skip=1):
    return stage_run(
        tmp_path,
        "timeline",
        outputs=OUTPUTS,
        params={"needed": [], "nodes": [0, 0], "identity": None, "skip": skip},
        overlay=overlay,
        part="nodes0-0",
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
    # the chip as the data says it (the stand-in writes both): the db's NPU_INFO and info.json's platform_version
    assert status.details["chips"] == ["Ascend950PR (NPU_INFO of the db)", "platform_version Ascend950PR (info.json)"]


def test_a_node_without_prof_directories_is_ok_and_says_who_is_missing(tmp_path):
    (tmp_path / "raw").mkdir()
    status = timeline_parse(parse_run(tmp_path, {**ONE_RANK, "analyze": {"timeline_dir": str(tmp_path / "raw")}}))
    assert status.state == "ok" and status.reason == "node 0: 0 of 1 ranks with data"
    assert [v.check for v in status.validations if not v.passed] == ["every rank of these nodes has timeline data"]


def test_a_needed_input_not_ok_skips_the_part(tmp_path):
    collect = write_part_status(tmp_path / "collect" / "status.json", "timeline", "failed", part="collect")
    run = stage_run(
        tmp_path,
        "timeline",
        inputs={"timeline_collect": collect},
        outputs=OUTPUTS,
        params={"needed": ["timeline_collect"]},
        part="nodes0-0",
    )
    assert timeline_parse(run).state == "skipped"


def parse_and_merge(tmp_path, raw, kernel):
    """Analyze mode at library level: the node's parse part, then the merge, as the two rules run them."""
    from dispatchprof.stages.timeline import timeline

    overlay = {
        **ONE_RANK,
        "kernel": {"name": kernel},
        "analyze": {"timeline_dir": str(raw)},
        "timeline": {"crosscheck": "off"},
    }
    part = parse_run(
        tmp_path / "part", overlay, skip=0
    )  # analyze mode leaves no launch out (skip_launches in workflow/rules/fingerprints.smk)
    parsed = part.finish(timeline_parse(part))
    assert parsed.state == "ok", parsed.reason
    (tmp_path / "baseline.json").write_text(json.dumps({"placeholder": True}))
    merge_outputs = TIMELINE_MERGE_OUTPUTS
    inputs = {
        "parts": [part.status_path],
        "coverage": [part.outputs["coverage"]],
        "launches": [part.outputs["launches"]],
        "ranks": [part.outputs["ranks"]],
        "baseline_stats": tmp_path / "baseline.json",
    }
    merge = stage_run(
        tmp_path / "merge",
        "timeline",
        inputs=inputs,
        outputs=merge_outputs,
        params={"needed": [], "groups": ["0-0"]},
        overlay=overlay,
    )
    status = merge.finish(timeline(merge))
    return status, json.loads(merge.outputs["stats"].read_text())


def test_a_json_only_prof_gives_the_timeline_with_exact_medians(tmp_path):
    """A PROF_ whose export is msprof_*.json alone (no db, no op_summary): the JSON has no op type (None), which pandas
    3 keeps as NaN through astype(str); it once reached the kernel matcher as a float and crashed the parse job."""
    from conftest import FIXTURES

    raw = tmp_path / "raw"
    shutil.copytree(FIXTURES / "msprof-json-only", raw / "node0")
    status, stats = parse_and_merge(tmp_path, raw, "matmul_kernel")
    assert status.state == "ok", status.reason
    # Hand-checked (SOURCE.md): durations 355.962, 348.697, 346.544, 350.332, 347.903 us -> median 348.697 us.
    assert stats["per_rank"]["0"]["launches"] == 5 and stats["per_rank"]["0"]["median_us"] == pytest.approx(
        348.697, abs=1e-9
    )
    assert stats["chips"] == [] and stats["summary"]["chips"] == []  # a bare JSON export names no chip: none is guessed


def test_the_real_helix_json_alone_gives_the_timeline(tmp_path):
    from conftest import FIXTURES

    prof = tmp_path / "raw" / "node0" / "PROF_000001_20260511093035000_HELIXJSONA" / "mindstudio_profiler_output"
    prof.mkdir(parents=True)
    shutil.copy(
        next((FIXTURES / "msprof-real" / "single_kernel_run" / "mindstudio_profiler_output").glob("msprof_*.json")),
        prof,
    )
    status, stats = parse_and_merge(tmp_path, tmp_path / "raw", "matmul_kernel")
    assert status.state == "ok", status.reason
    # Hand-checked: the five matmul_kernel events have "dur" 6.56, 6.2, 5.78, 6.122, 5.482 (us) -> median 6.122 us,
    # as op_summary's Task Duration(us) of the same run.
    assert stats["per_rank"]["0"]["launches"] == 5 and stats["per_rank"]["0"]["median_us"] == pytest.approx(
        6.122, abs=1e-9
    )


def test_an_op_summary_resaved_with_a_bom_gives_the_timeline(tmp_path):
    """The device check (export_devices) once opened the CSV without utf-8-sig: "header lacks Device_id"."""
    from conftest import FIXTURES

    prof = tmp_path / "raw" / "node0" / "PROF_000001_20260402160352000_ABCDEFGHIJ"
    shutil.copytree(FIXTURES / "msprof-real" / "custom_kernel_5_launches", prof)
    csv = next((prof / "mindstudio_profiler_output").glob("op_summary_*.csv"))
    csv.write_bytes(b"\xef\xbb\xbf" + csv.read_bytes())
    status, stats = parse_and_merge(tmp_path, tmp_path / "raw", "matmul_kernel")
    assert status.state == "ok", status.reason
    assert stats["per_rank"]["0"]["launches"] == 5 and stats["per_rank"]["0"]["median_us"] == pytest.approx(
        348.697, abs=1e-9
    )


def test_a_prof_of_a_device_that_maps_to_no_rank_says_so_not_that_there_is_no_prof(tmp_path):
    """A real msprof db of device 2 in a 1x1 cluster: the PROF_ exists, its device cannot map to a rank."""
    (tmp_path / "raw" / "node0").mkdir(parents=True)
    simulated_prof(tmp_path / "raw" / "node0", device=2, rank_id="-1")
    status, stats = parse_and_merge(tmp_path, tmp_path / "raw", "elastic_dispatch_kernel")
    assert status.state == "invalid"
    assert "no PROF_ directory for this rank" not in status.reason
    for said in (
        "holds device 2",
        "ranks_per_node is 1",
        "cluster.infer_rank: device_id",
        "cluster.infer_rank: device_order",
    ):
        assert said in status.reason, status.reason


def json_that_breaks_the_reader(tmp_path):
    """A JSON export whose one hardware event has a list for its Task Type: read_msprof_json tests membership in a set
    and raises TypeError (unhashable), an exception no reader expects."""
    prof = tmp_path / "raw" / "node0" / "PROF_000001_20260402160352000_BROKENJSON" / "mindstudio_profiler_output"
    prof.mkdir(parents=True)
    hw = 4242 << 10
    events = [
        {"name": "process_name", "pid": hw, "tid": 0, "ph": "M", "args": {"name": "Ascend Hardware"}},
        {
            "name": "matmul_kernel",
            "pid": hw,
            "tid": 1,
            "ts": "1.000",
            "dur": 1.0,
            "ph": "X",
            "args": {"Task Type": ["AI_CORE"]},
        },
    ]
    (prof / "msprof_20260402160352.json").write_text(json.dumps(events))
    return prof / "msprof_20260402160352.json"


def test_a_reader_that_raises_makes_the_part_invalid_with_the_reader_and_file_and_the_traceback_in_the_log(
    tmp_path, monkeypatch, caplog
):
    from dispatchprof.shell.stage import guarded

    path = json_that_breaks_the_reader(tmp_path)
    overlay = {**ONE_RANK, "kernel": {"name": "matmul_kernel"}, "analyze": {"timeline_dir": str(tmp_path / "raw")}}
    run = parse_run(tmp_path, overlay, skip=0)
    with pytest.raises(TypeError):  # the suite's switch (tests/conftest.py): a bug fails the test
        guarded(run, timeline_parse)
    monkeypatch.delenv("DISPATCHPROF_RAISE")
    status = run.finish(guarded(run, timeline_parse))
    assert status.state == "invalid"
    assert status.reason.startswith(f"internal error in msprof_tables.read_msprof_json on {path}: TypeError: ")
    assert "Traceback" in caplog.text and "read_msprof_json" in caplog.text
    assert json.loads(run.status_path.read_text())["state"] == "invalid"
    assert all(p.exists() for p in run.outputs.values())  # placeholders: the DAG and the report go on


def implausible_prof(tmp_path, dur_ns=5_000_000_000):
    """One rank whose launch 2 lasts ``dur_ns`` (5 s: far above any dispatch, within int64)."""
    (tmp_path / "raw" / "node0").mkdir(parents=True)
    prof = simulated_prof(tmp_path / "raw" / "node0")
    db = next(prof.glob("msprof_*.db"))
    with sqlite3.connect(db) as conn:
        start = conn.execute("SELECT startNs FROM TASK ORDER BY startNs LIMIT 1 OFFSET 2").fetchone()[0]
        conn.execute("UPDATE TASK SET endNs = startNs + ? WHERE startNs = ?", (dur_ns, start))
    return prof, db, start


def refusal_of_the_rank(tmp_path, status):
    """The one rank's refusal: the part goes on (ok, its other ranks would be analysed), the rank is left out with
    why, and none of its launches reaches the statistics. Returns the refusal (the file named first)."""
    assert status.state == "ok", status.reason
    (rank,) = json.loads((tmp_path / "out" / "ranks.json").read_text())["ranks"]
    assert not rank["present"] and rank["reason"].startswith("refused: "), rank
    assert pq.read_table(tmp_path / "out" / "launches.parquet").num_rows == 0
    assert pq.read_table(tmp_path / "out" / "coverage.parquet").column("state").to_pylist() == ["refused"]
    assert f"rank 0 {rank['reason']}" in status.reason and status.details["refused"] == {"0": rank["reason"]}
    return rank["reason"].removeprefix("refused: ")


def test_an_implausible_launch_duration_is_refused_with_its_file_and_row(tmp_path):
    _, db, start = implausible_prof(tmp_path)
    status = timeline_parse(parse_run(tmp_path, {**ONE_RANK, "analyze": {"timeline_dir": str(tmp_path / "raw")}}))
    assert refusal_of_the_rank(tmp_path, status) == (
        f"{db}: launch 2 of elastic_dispatch_kernel (start {start} ns, {start // 1000}.{start % 1000:03d} us): "
        "duration 5000000000 ns, 5e+06 us, above stats.max_plausible_us (1e+06 us): not a plausible dispatch duration"
    )


def test_the_timeline_limit_is_the_configured_one(tmp_path):
    implausible_prof(tmp_path, dur_ns=200_000)  # 200 us: plausible under the default
    raw = {"analyze": {"timeline_dir": str(tmp_path / "raw")}}
    assert timeline_parse(parse_run(tmp_path, {**ONE_RANK, **raw})).state == "ok"
    status = timeline_parse(parse_run(tmp_path / "strict", {**ONE_RANK, **raw, "stats": {"max_plausible_us": 150}}))
    refused = refusal_of_the_rank(tmp_path / "strict", status)
    assert "launch 2 of elastic_dispatch_kernel" in refused and "(150 us)" in refused, refused


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
    refused = refusal_of_the_rank(tmp_path, status)
    assert message in refused, refused
    assert refused.startswith(str(csv if "above" not in message else csv.parent)), refused
    if "above" not in message:
        assert f"line {launch + 1}:" in refused


@pytest.mark.parametrize(
    "duration,message",
    [(1e300, "not 64-bit integers"), (5e6, "duration 5000000000 ns, 5e+06 us, above stats.max_plausible_us")],
)
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
    refused = refusal_of_the_rank(tmp_path, status)
    assert message in refused and refused.startswith(str(path if duration > 1e200 else path.parent)), refused
