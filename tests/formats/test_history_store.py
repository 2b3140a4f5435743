"""The history store: atomic records that pandas and DuckDB read without our code; files it cannot use are named,
left as they are, and never cost the other records."""

from __future__ import annotations

import json
import os
import threading

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dispatchprof.formats.history_store import COLUMNS, SCHEMA_KEY, read_store, record_path
from dispatchprof.stages.history import write_record


def rows(run: str, value: float = 1000.0, kind: str = "metric") -> pd.DataFrame:
    return pd.DataFrame(
        [
            {
                "run_id": run,
                "series": "demo",
                "recorded_at": "2026-12-07T10:00:00+00:00",
                "toolchain": "sim",
                "comparable": json.dumps({"ranks": 16}),
                "identity": "{}",
                "kind": kind,
                "metric": "latency.kernel.median",
                "value": value,
                "ci_low": value - 1,
                "ci_high": None,
                "better": "lower",
            },
            {
                **dict.fromkeys(COLUMNS, ""),
                "run_id": run,
                "series": "demo",
                "kind": "sample",
                "metric": "s",
                "value": 1.0,
                "ci_low": None,
                "ci_high": None,
            },
        ]
    )


def test_round_trip_and_samples_left_out_by_default(tmp_path):
    write_record(tmp_path, "demo", "r1", rows("r1"))
    read = read_store(tmp_path, "demo")
    assert read.skipped == []
    assert list(read.rows["kind"]) == ["metric"]
    assert read.rows["value"].iloc[0] == 1000.0 and pd.isna(read.rows["ci_high"].iloc[0])
    assert read.rows["ci_low"].iloc[0] == 999.0
    assert len(read_store(tmp_path, "demo", kinds=("sample",)).rows) == 1


def test_readable_by_duckdb_without_our_code(tmp_path):
    import duckdb

    write_record(tmp_path, "demo", "r1", rows("r1"))
    write_record(tmp_path, "demo", "r2", rows("r2", 1010.0))
    got = duckdb.sql(f"select avg(value) from '{tmp_path}/**/*.parquet' where kind = 'metric'").fetchall()[0][0]
    assert got == pytest.approx(1005.0)


def test_a_rewrite_of_one_run_replaces_its_record(tmp_path):
    write_record(tmp_path, "demo", "r1", rows("r1"))
    write_record(tmp_path, "demo", "r1", rows("r1", 900.0))
    assert list(read_store(tmp_path, "demo").rows["value"]) == [900.0]
    assert [p.name for p in (tmp_path / "demo").iterdir()] == ["20261207T100000-r1.v1.parquet"]


def test_bad_files_are_named_skipped_and_left_as_they_are(tmp_path):
    good_path = write_record(tmp_path, "demo", "good", rows("good"))
    folder = tmp_path / "demo"
    good = good_path.read_bytes()
    (folder / "20261208T000000-truncated.v1.parquet").write_bytes(good[: len(good) // 2])
    pq.write_table(pa.table({"x": [1]}), folder / "20261208T000000-foreign.v1.parquet")
    pq.write_table(pa.table({"x": [1]}), folder / "notes.parquet")
    newer = pa.Table.from_pandas(rows("newer"), preserve_index=False).replace_schema_metadata({SCHEMA_KEY: b"99"})
    pq.write_table(newer, folder / "20261208T000000-newer.v99.parquet")
    pq.write_table(newer, folder / "20261208T000000-lying.v1.parquet")  # its name says 1, its metadata 99
    before = {p.name: p.read_bytes() for p in folder.iterdir()}
    read = read_store(tmp_path, "demo")
    assert set(read.rows["run_id"]) == {"good"}
    text = "\n".join(read.skipped)
    assert "truncated.v1.parquet: not a readable Parquet file" in text
    assert "foreign.v1.parquet: not a dispatchprof history record" in text
    assert "notes.parquet: not named <time>-<run id>.v<schema>.parquet" in text
    assert "newer.v99.parquet: schema version 99 is newer" in text
    assert "lying.v1.parquet: schema version 99 is newer" in text
    assert len(read.skipped) == 5
    assert {p.name: p.read_bytes() for p in folder.iterdir()} == before


def test_last_reads_the_newest_records_only(tmp_path):
    for day in range(1, 6):
        frame = rows(f"r{day}").assign(recorded_at=f"2026-12-0{day}T10:00:00+00:00")
        write_record(tmp_path, "demo", f"r{day}", frame)
    assert sorted(read_store(tmp_path, "demo", last=2).rows["run_id"]) == ["r4", "r5"]


def test_two_runs_writing_at_once_both_land(tmp_path):
    threads = [threading.Thread(target=write_record, args=(tmp_path, "demo", f"r{i}", rows(f"r{i}"))) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    read = read_store(tmp_path, "demo")
    assert sorted(read.rows["run_id"]) == [f"r{i}" for i in range(8)] and read.skipped == []
    assert not [p for p in (tmp_path / "demo").iterdir() if p.suffix == ".tmp"]


def test_record_respects_the_umask(tmp_path):
    old = os.umask(0o027)
    try:
        path = write_record(tmp_path, "demo", "r1", rows("r1"))
    finally:
        os.umask(old)
    assert oct(path.stat().st_mode & 0o777) == oct(0o640)
    assert record_path(tmp_path, "demo", "r1", "2026-12-07T10:00:00+00:00") == path


def test_a_record_without_its_columns_is_refused(tmp_path):
    with pytest.raises(ValueError, match="missing columns"):
        write_record(tmp_path, "demo", "r1", rows("r1").drop(columns=["better"]))


def test_missing_store_reads_empty(tmp_path):
    read = read_store(tmp_path / "nowhere", "demo")
    assert read.rows.empty and read.skipped == []


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.binary(max_size=300))
def test_any_bytes_as_a_record_are_skipped_not_raised(tmp_path, data):
    (tmp_path / "demo").mkdir(exist_ok=True)
    (tmp_path / "demo" / "20261207T100000-x.v1.parquet").write_bytes(data)
    read = read_store(tmp_path, "demo")
    assert read.rows.empty and len(read.skipped) == 1
