"""msprof parsers on the real samples (public samples, docs/formats.md §5, copied to tests/fixtures/msprof-real),
on fixtures built from docs/formats.md §1, on the simulator's output, and on malformed input."""

import json
import shutil
import sqlite3
import sys
import tempfile

import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from conftest import FIXTURES, ROOT
from dispatchprof.analysis.timeline import kernel_regex
from dispatchprof.formats import msprof_tables
from dispatchprof.formats.msprof import MsprofFormatError, discover, op_summary_files, read_db_target, read_prof_info
from dispatchprof.formats.msprof_tables import (
    read_db,
    read_msprof_json,
    read_op_summary,
    read_prof_kernels,
    target_kernels_of,
)
from dispatchprof.formats.sqlite_read import read_only_db
from dispatchprof.formats.target_kernels import read_target_kernels

REAL = FIXTURES / "msprof-real"
SINGLE = REAL / "single_kernel_run" / "mindstudio_profiler_output"
FIVE = REAL / "custom_kernel_5_launches" / "mindstudio_profiler_output"
COMPARED = ["device", "stream", "task_id", "name", "task_type", "start_ns", "dur_ns"]


def test_real_op_summary_with_trailing_tabs_quoted_shapes_and_na_is_read_exactly():
    frame = read_op_summary(op_summary_files(SINGLE))
    assert len(frame) == 9
    first = frame.iloc[4]
    assert first["name"] == "matmul_kernel" and first["start_ns"] == 1778463028745189370 and first["dur_ns"] == 6560
    assert first["task_type"] == "AI_CORE" and first["stream"] == 1332 and first["task_id"] == 6


def test_real_csv_and_json_agree_row_for_row():
    csv = read_op_summary(op_summary_files(SINGLE))
    js = read_msprof_json(next(SINGLE.glob("msprof_*.json")))
    pd.testing.assert_frame_equal(
        csv[COMPARED].reset_index(drop=True), js[COMPARED].reset_index(drop=True), check_dtype=False
    )


def test_the_custom_kernels_five_launches_are_found_with_their_durations():
    frame = read_op_summary(op_summary_files(FIVE))
    hit = target_kernels_of(frame, kernel_regex("matmul").match, 0)
    assert hit.symbols == ["matmul_kernel"] and hit.dur_ns.tolist() == [355962, 348697, 346544, 350332, 347903]
    assert hit.start_ns.tolist() == sorted(hit.start_ns.tolist()) and hit.context_intervals == 4


def test_a_json_frame_goes_through_the_kernel_matcher_without_an_op_type():
    """The JSON carries no op type: the column is missing (None; NaN under pandas 3 through astype(str)), which the
    matcher must treat as no name, not hand a float to the pattern (a JSON-only PROF_ once crashed timeline_parse)."""
    frame = read_msprof_json(next(SINGLE.glob("msprof_*.json")))
    assert frame["op_type"].isna().all()
    hit = target_kernels_of(frame, kernel_regex("matmul").match, 4)
    assert hit.symbols == ["matmul_kernel"] and hit.dur_ns.tolist() == [6560, 6200, 5780, 6122, 5482]
    assert hit.other_name.tolist() == []  # nothing else between the launches: the DSA and Cast tasks come before


def test_json_pid_decoding_follows_the_documented_encoding():
    frame = read_msprof_json(next(SINGLE.glob("msprof_*.json")))
    assert set(frame["pid"]) == {198127} and set(frame["device"]) == {0}  # 202882464 = 198127<<10 | 13<<5 | 0


def test_block_num_header_variant_and_slices_are_accepted(tmp_path):
    text = (
        (FIVE / "op_summary_20260402160352.csv")
        .read_text()
        .replace("Block Dim,Mix Block Dim", "Block Num,Mix Block Num")
    )
    lines = text.splitlines(keepends=True)
    (tmp_path / "op_summary_slice_1_20260402160352.csv").write_text(lines[0] + "".join(lines[5:]))
    (tmp_path / "op_summary_slice_0_20260402160352.csv").write_text("".join(lines[:5]))
    files = op_summary_files(tmp_path)
    assert [f.name for f in files] == ["op_summary_slice_0_20260402160352.csv", "op_summary_slice_1_20260402160352.csv"]
    frame = read_op_summary(files)
    assert len(frame) == len(lines) - 1 and frame["start_ns"].is_monotonic_increasing


@pytest.fixture(scope="module")
def sim_prof(tmp_path_factory):
    """A PROF_ written by the simulator's writer (the same code the msprof stand-in uses)."""
    sys.path.insert(0, str(ROOT / "workflow" / "sim"))
    from simprof.prof_writer import write_prof

    root = tmp_path_factory.mktemp("prof")
    events = []
    t = 1_795_977_981_065_797_700
    for i in range(4):
        events.append(
            {
                "name": "cached_notify_combine",
                "task_type": "AI_VECTOR_CORE",
                "stream": 1332,
                "task_id": 3 * i + 1,
                "start_ns": t,
                "dur_ns": 8_123,
                "block_dim": 1,
            }
        )
        events.append(
            {
                "name": "elastic_dispatch_kernel",
                "task_type": "AI_VECTOR_CORE",
                "stream": 1332,
                "task_id": 3 * i + 2,
                "start_ns": t + 10_001,
                "dur_ns": 1_070_555 + i,
                "input_shapes": "256,7168;256,6",
            }
        )
        events.append(
            {
                "name": "N/A",
                "task_type": "MEMCPY_ASYNC",
                "stream": 1332,
                "task_id": 3 * i + 3,
                "start_ns": t + 1_100_000,
                "dur_ns": 2_100,
            }
        )
        t += 50_000_007
    proc = {"pid": 4242, "hostname": "n0", "device_id": 3, "rank_id": "11", "start_ns": events[0]["start_ns"]}
    return write_prof(root, proc, events)


def test_simulated_db_csv_and_json_agree_row_for_row(sim_prof):
    info = read_prof_info(sim_prof)
    assert info.pid == 4242 and info.devices == [3] and info.rank_id == 11 and info.db is not None
    db = read_db(info.db)
    csv = read_op_summary(op_summary_files(info.text_dir), info.pid)
    js = read_msprof_json(next(info.text_dir.glob("msprof_*.json")))
    assert len(db) == 8
    for other in (csv, js):
        pd.testing.assert_frame_equal(
            db[COMPARED].reset_index(drop=True), other[COMPARED].reset_index(drop=True), check_dtype=False
        )
    assert read_prof_kernels(info)["source"].iloc[0] == "db"


def is_dispatch(name):
    return name.startswith("elastic_dispatch_kernel")


def test_target_read_from_the_db_matches_the_whole_table_and_the_text_export(sim_prof):
    info = read_prof_info(sim_prof)
    fast = read_db_target(info.db, is_dispatch, 0, with_ids=True)
    whole = read_db(info.db)
    hit = whole[whole["name"] == "elastic_dispatch_kernel"]
    assert fast.start_ns.tolist() == hit["start_ns"].tolist() and fast.dur_ns.tolist() == [
        1_070_555,
        1_070_556,
        1_070_557,
        1_070_558,
    ]
    assert (
        fast.task_id.tolist() == [2, 5, 8, 11]
        and set(fast.stream) == {1332}
        and fast.symbols == ["elastic_dispatch_kernel"]
    )
    # Only compute kernels between launch 0 and the last launch:
    # the barriers of iterations 1..3 (MEMCPY is not compute).
    assert fast.other_name.tolist() == ["cached_notify_combine"] * 3 and fast.context_intervals == 3
    text = target_kernels_of(read_op_summary(op_summary_files(info.text_dir), info.pid), is_dispatch, 0)
    for field in ("start_ns", "dur_ns", "stream", "task_id", "other_start_ns", "other_dur_ns"):
        assert getattr(text, field).tolist() == getattr(fast, field).tolist(), field


def test_the_call_chain_window_limits_the_other_rows_read(sim_prof):
    info = read_prof_info(sim_prof)
    windowed = read_target_kernels(info, is_dispatch, 1)
    assert windowed.context_intervals == 1 and len(windowed.start_ns) == 4
    assert windowed.other_name.tolist() == ["cached_notify_combine"]  # only the one before launch 1
    assert (windowed.stream == -1).all()  # not asked for: not read from the db
    nothing = read_target_kernels(info, lambda name: False, 0)
    assert len(nothing.start_ns) == 0 and nothing.symbols == [] and nothing.context_intervals == 0


def test_rank_id_minus_one_means_unknown(tmp_path, sim_prof):
    info_file = next(sim_prof.glob("device_*/info.json.*"))
    data = json.loads(info_file.read_text())
    copy = tmp_path / sim_prof.name
    (copy / "device_3").mkdir(parents=True)
    (copy / "device_3" / "info.json.3").write_text(json.dumps({**data, "rank_id": -1}))
    assert read_prof_info(copy).rank_id is None
    assert discover(tmp_path) == [copy]


def test_a_db_whose_string_ids_are_missing_is_refused(tmp_path, sim_prof):
    db = tmp_path / "msprof_20260101000000.db"
    db.write_bytes(next(sim_prof.glob("msprof_*.db")).read_bytes())
    with sqlite3.connect(db) as conn:
        conn.execute("DELETE FROM STRING_IDS WHERE value = 'elastic_dispatch_kernel'")
    with pytest.raises(MsprofFormatError, match="missing from STRING_IDS"):
        read_db(db)
    with pytest.raises(MsprofFormatError, match="missing from STRING_IDS"):
        read_db_target(db, lambda name: name.startswith("cached"), 0)


def test_non_integer_times_in_the_db_are_refused_with_the_file(tmp_path, sim_prof):
    db = tmp_path / "msprof_20260101000000.db"
    db.write_bytes(next(sim_prof.glob("msprof_*.db")).read_bytes())
    with sqlite3.connect(db) as conn:
        target = (
            "SELECT MIN(globalTaskId) FROM COMPUTE_TASK_INFO WHERE name = "
            "(SELECT id FROM STRING_IDS WHERE value = 'elastic_dispatch_kernel')"
        )
        conn.execute(f"UPDATE TASK SET endNs = 'soon' WHERE globalTaskId = ({target})")
    with pytest.raises(MsprofFormatError, match=f"{db}.*non-integer"):
        read_db_target(db, is_dispatch, 0)
    with sqlite3.connect(db) as conn:
        conn.execute(f"UPDATE TASK SET endNs = 1.5 WHERE globalTaskId = ({target})")
    with pytest.raises(MsprofFormatError, match=f"{db}.*non-integer"):  # a REAL is refused, not truncated
        read_db(db)
    with sqlite3.connect(db) as conn:
        conn.execute(f"UPDATE TASK SET endNs = startNs - 5 WHERE globalTaskId = ({target})")
    with pytest.raises(MsprofFormatError, match=f"{db}.*endNs before startNs"):
        read_db_target(db, is_dispatch, 0)


def test_garbage_db_is_refused_with_the_file(tmp_path):
    bad = tmp_path / "msprof_20260101000000.db"
    bad.write_bytes(b"not sqlite at all" * 10)
    with pytest.raises(MsprofFormatError, match="msprof_20260101000000.db"):
        read_db(bad)
    with pytest.raises(MsprofFormatError, match="msprof_20260101000000.db"):
        read_db_target(bad, is_dispatch, 0)


@pytest.mark.parametrize(
    "edit,message",
    [
        (lambda t: t.replace("Task Start Time(us)", "Start"), "header lacks Task Start Time(us)"),
        (lambda t: t.replace("1778463028745189.370", "17784630x8745189.370"), "line 6: field 'Task Start Time(us)'"),
        (lambda t: t.replace(",6.560,", ",N/A,"), "field 'Task Duration(us)' is 'N/A'"),
        (lambda t: t.replace("0,4294967295,6,1332", "zero,4294967295,6,1332"), "field 'Device_id' is 'zero'"),
    ],
)
def test_malformed_op_summary_names_file_line_and_field(tmp_path, edit, message):
    path = tmp_path / "op_summary_20260511093035.csv"
    path.write_text(edit((SINGLE / "op_summary_20260511093035.csv").read_text()))
    with pytest.raises(MsprofFormatError) as err:
        read_op_summary([path])
    assert str(path) in str(err.value) and message in str(err.value)


@pytest.mark.parametrize("rows", [1, 3, 20_000])
def test_op_summary_read_in_runs_of_rows_is_the_table_read_whole_and_a_long_row_keeps_its_line(
    tmp_path, monkeypatch, rows
):
    """read_op_summary keeps only the columns it uses, run by run (issue 46: an op_summary has ~50 columns of text):
    the table is the same whatever the run's length, and a row with one field too many is refused at its line."""
    whole = read_op_summary(op_summary_files(SINGLE))
    monkeypatch.setattr(msprof_tables, "CSV_CHUNK_ROWS", rows)
    pd.testing.assert_frame_equal(read_op_summary(op_summary_files(SINGLE)), whole)
    lines = (SINGLE / "op_summary_20260511093035.csv").read_text().splitlines(keepends=True)
    path = tmp_path / "op_summary_20260511093035.csv"
    path.write_text("".join(lines[:7]) + lines[7].rstrip("\n") + ",extra\n" + "".join(lines[8:]))
    with pytest.raises(MsprofFormatError, match=r"not a readable CSV .*Expected \d+ fields in line 8, saw \d+"):
        read_op_summary([path])


def test_reordered_op_summary_columns_give_the_same_table(tmp_path):
    original = pd.read_csv(SINGLE / "op_summary_20260511093035.csv", dtype=str, keep_default_na=False)
    path = tmp_path / "op_summary_20260511093035.csv"
    original[list(reversed(original.columns))].to_csv(path, index=False)
    pd.testing.assert_frame_equal(
        read_op_summary([path])[COMPARED], read_op_summary(op_summary_files(SINGLE))[COMPARED]
    )


@settings(max_examples=150, deadline=None)
@given(st.binary(max_size=800))
def test_op_summary_garbage_ends_in_a_clear_error_or_a_table(tmp_path_factory, blob):
    path = tmp_path_factory.mktemp("ops") / "op_summary_20260511093035.csv"
    path.write_bytes(blob)
    try:
        frame = read_op_summary([path])
    except MsprofFormatError as exc:
        assert str(path) in str(exc)
    else:
        assert (frame["dur_ns"] >= 0).all()


@settings(max_examples=150, deadline=None)
@given(st.integers(min_value=0, max_value=len((SINGLE / "op_summary_20260511093035.csv").read_bytes())))
def test_truncated_op_summary_never_crashes(tmp_path_factory, cut):
    path = tmp_path_factory.mktemp("cut") / "op_summary_20260511093035.csv"
    path.write_bytes((SINGLE / "op_summary_20260511093035.csv").read_bytes()[:cut])
    try:
        frame = read_op_summary([path])
    except MsprofFormatError:
        return
    assert len(frame) <= 9


@settings(max_examples=150, deadline=None)
@given(
    st.one_of(
        st.binary(max_size=400),
        st.integers(min_value=0, max_value=len((SINGLE / "msprof_20260511093035.json").read_bytes())),
    )
)
def test_msprof_json_garbage_or_truncation_ends_in_a_clear_error(tmp_path_factory, blob_or_cut):
    path = tmp_path_factory.mktemp("js") / "msprof_20260511093035.json"
    data = (
        blob_or_cut
        if isinstance(blob_or_cut, bytes)
        else (SINGLE / "msprof_20260511093035.json").read_bytes()[:blob_or_cut]
    )
    path.write_bytes(data)
    try:
        frame = read_msprof_json(path)
    except MsprofFormatError as exc:
        assert str(path) in str(exc)
    else:
        assert (frame["dur_ns"] >= 0).all()


@settings(max_examples=100, deadline=None)
@given(
    st.lists(
        st.fixed_dictionaries(
            {
                "ph": st.sampled_from(["X", "M", "s"]),
                "pid": st.sampled_from([1, 202882464, "x"]),
                "ts": st.one_of(st.text(max_size=8), st.floats(), st.none()),
                "dur": st.one_of(st.floats(), st.text(max_size=4), st.none()),
                "args": st.one_of(st.none(), st.just({"Task Type": "AI_CORE"}), st.just({"name": "Ascend Hardware"})),
            }
        ),
        max_size=6,
    )
)
def test_msprof_json_with_wrong_types_ends_in_a_clear_error(tmp_path_factory, events):
    events = [{"name": "process_name", "ph": "M", "pid": 202882464, "args": {"name": "Ascend Hardware"}}, *events]
    path = tmp_path_factory.mktemp("jt") / "msprof_1.json"
    path.write_text(json.dumps(events))
    try:
        read_msprof_json(path)
    except MsprofFormatError as exc:
        assert str(path) in str(exc)


db_value = st.one_of(
    st.integers(min_value=-(2**63), max_value=2**63 - 1),
    st.text(max_size=5),
    st.floats(allow_nan=True),
    st.none(),
    st.binary(max_size=4),
)


@settings(max_examples=120, deadline=None)
@given(st.lists(st.tuples(db_value, db_value, db_value), min_size=1, max_size=6))
def test_db_with_wrong_types_in_times_or_names_ends_in_a_clear_error(tmp_path_factory, rows):
    """Each row: (name id, startNs, endNs) of a compute task; STRING_IDS knows ids 1 (the target) and 2."""
    db = tmp_path_factory.mktemp("db") / "msprof_20260101000000.db"
    with sqlite3.connect(db) as conn:
        conn.execute("CREATE TABLE STRING_IDS (id INTEGER, value TEXT)")
        conn.executemany("INSERT INTO STRING_IDS VALUES (?, ?)", [(1, "elastic_dispatch_kernel"), (2, "barrier")])
        conn.execute(
            "CREATE TABLE TASK (startNs INTEGER, endNs INTEGER, globalTaskId "
            "INTEGER PRIMARY KEY, streamId INTEGER, taskId INTEGER)"
        )
        conn.execute("CREATE TABLE COMPUTE_TASK_INFO (name INTEGER, globalTaskId INTEGER, opType INTEGER)")
        for i, (name, start, end) in enumerate([(1, 0, 10), *rows, (1, 100, 110)]):
            conn.execute("INSERT INTO TASK VALUES (?, ?, ?, 0, ?)", (start, end, i, i))
            conn.execute("INSERT INTO COMPUTE_TASK_INFO VALUES (?, ?, 2)", (name, i))
    try:
        kernels = read_db_target(db, is_dispatch, 0, with_ids=True)
    except MsprofFormatError as exc:
        assert str(db) in str(exc)
    else:
        assert (kernels.dur_ns >= 0).all() and (kernels.other_dur_ns >= 0).all() and kernels.start_ns.dtype == "int64"


def untyped_kernel_db(path, rows):
    """A db whose TASK and COMPUTE_TASK_INFO columns have no type affinity, so that a REAL 2.0, a TEXT '12' or a
    BLOB stays what it was written as. rows: (name id, startNs, endNs, globalTaskId); STRING_IDS 1 is the target."""
    with sqlite3.connect(path) as conn:
        conn.execute("CREATE TABLE STRING_IDS (id INTEGER, value TEXT)")
        conn.executemany("INSERT INTO STRING_IDS VALUES (?, ?)", [(1, "elastic_dispatch_kernel"), (2, "barrier")])
        conn.execute("CREATE TABLE TASK (startNs, endNs, globalTaskId INTEGER PRIMARY KEY, streamId, taskId)")
        conn.execute("CREATE TABLE COMPUTE_TASK_INFO (name, globalTaskId, opType)")
        for name, start, end, task in rows:
            conn.execute("INSERT INTO TASK VALUES (?, ?, ?, 0, ?)", (start, end, task, task))
            conn.execute("INSERT INTO COMPUTE_TASK_INFO VALUES (?, ?, 2)", (name, task))
    return path


not_an_integer = st.one_of(
    st.floats(allow_nan=False).filter(lambda f: f != int(f) if abs(f) < 2**63 else True),
    st.floats(min_value=-(2**53), max_value=2**53).map(float).filter(float.is_integer),  # 2.0: a REAL all the same
    st.integers(min_value=-(2**62), max_value=2**62).map(str),  # TEXT that reads as an integer
    st.integers(min_value=0, max_value=10**6).map(lambda i: str(i).encode()),  # BLOB that reads as one
    st.none(),
    st.text(max_size=4),
)


@settings(max_examples=150, deadline=None)
@given(st.integers(min_value=0, max_value=3), st.sampled_from([0, 1, 2]), not_an_integer, st.booleans())
def test_one_non_integer_value_in_a_selected_row_is_refused(tmp_path_factory, row, column, value, with_ids):
    """Four target launches, a non-integer name id, startNs or endNs in one of them: refused with the file,
    never truncated, dropped or read as the integer it looks like."""
    if column == 0:
        row = 1 + row % 2  # a name that is no target id makes the row a context row: read only inside the window
    rows = [[1, 100 * i, 100 * i + 10, i] for i in range(4)]
    rows[row][column] = value
    db = untyped_kernel_db(tmp_path_factory.mktemp("db") / "msprof_20260101000000.db", rows)
    with pytest.raises(MsprofFormatError, match=f"{db}.*non-integer"):
        read_db_target(db, is_dispatch, 0, with_ids=with_ids)


def test_a_null_end_or_a_real_start_in_one_launch_is_refused(tmp_path):
    for case, (start, end, column) in enumerate(
        ((200, None, "t.endNs"), (200.5, 210, "t.startNs"), (1e20, 210, "t.startNs"))
    ):
        (tmp_path / str(case)).mkdir()
        db = untyped_kernel_db(
            tmp_path / str(case) / "msprof_20260101000000.db", [(1, 0, 10, 0), (1, start, end, 1), (1, 300, 310, 2)]
        )
        with pytest.raises(MsprofFormatError, match=f"{db}.*non-integer.*{column} holds a REAL or NULL"):
            read_db_target(db, is_dispatch, 0)


def test_a_duration_that_does_not_fit_in_int64_is_refused_never_wrapped(tmp_path):
    """The duration is computed in SQLite (t.endNs - t.startNs): an overflow becomes a REAL there, which is refused,
    where int64 arithmetic would wrap it into a plausible number."""
    db = untyped_kernel_db(
        tmp_path / "msprof_20260101000000.db", [(1, -(2**62) * 2, 2**62 * 2 - 1, 0), (1, 10**18, 10**18 + 5, 1)]
    )
    with pytest.raises(MsprofFormatError, match=f"{db}.*endNs - startNs does not fit"):
        read_db_target(db, is_dispatch, 0)


def test_a_text_end_time_is_refused_although_the_subtraction_would_read_it_as_a_number(tmp_path):
    db = untyped_kernel_db(tmp_path / "msprof_20260101000000.db", [(1, 0, 10, 0), (1, 100, "150", 1), (1, 300, 310, 2)])
    with pytest.raises(MsprofFormatError, match=f"{db}.*non-integer.*t.endNs holds a TEXT"):
        read_db_target(db, is_dispatch, 0)


def test_launches_starting_together_come_in_task_id_order(tmp_path):
    """Ties in startNs: a defined order (globalTaskId), not whatever order the scan or the sorter leaves."""
    rows = [(1, 50, 60, 9), (1, 50, 70, 3), (2, 50, 55, 7), (1, 0, 5, 5), (2, 50, 52, 4), (1, 80, 90, 1)]
    db = untyped_kernel_db(tmp_path / "msprof_20260101000000.db", rows)
    kernels = read_db_target(db, is_dispatch, 0, with_ids=True)
    assert kernels.task_id.tolist() == [5, 3, 9, 1] and kernels.dur_ns.tolist() == [5, 20, 10, 10]
    assert kernels.other_dur_ns.tolist() == [2, 5]  # tasks 4 and 7, both at 50


@settings(max_examples=100, deadline=None)
@given(
    st.lists(st.tuples(st.sampled_from([1, 2]), st.integers(0, 50), st.integers(0, 5)), min_size=2, max_size=12),
    st.randoms(),
)
def test_the_context_window_holds_every_other_kernel_starting_in_it(tmp_path_factory, tasks, random):
    """Task ids in any order against start times (the read bounds the window's ids from TASK first): the other
    kernels are exactly those starting from launch 0 up to the last launch, in (start, task id) order."""
    ids = random.sample(range(1, 100), len(tasks))
    rows = [(name, start, start + dur, task) for (name, start, dur), task in zip(tasks, ids)]
    db = untyped_kernel_db(tmp_path_factory.mktemp("db") / "msprof_20260101000000.db", rows)
    kernels = read_db_target(db, is_dispatch, 0)
    target = sorted((start, task) for name, start, _, task in rows if name == 1)
    low, high = (target[0][0], target[-1][0]) if len(target) > 1 else (0, 0)
    expected = sorted(
        (start, task, end - start) for name, start, end, task in rows if name != 1 and low <= start < high
    )
    assert kernels.other_start_ns.tolist() == [e[0] for e in expected] and kernels.other_dur_ns.tolist() == [
        e[2] for e in expected
    ]


@settings(max_examples=150, deadline=None)
@given(
    st.lists(
        st.tuples(st.sampled_from([1, 2, 3]), st.sampled_from([1, 2, 3]), st.integers(0, 40), st.integers(0, 5)),
        min_size=1,
        max_size=14,
    ),
    st.integers(0, 3),
    st.sampled_from([{2}, {1, 2}]),
    st.randoms(),
)
def test_the_barrier_the_target_and_the_window_are_each_every_row_they_name(
    tmp_path_factory, tasks, context, barrier_names, random
):
    """Rows of three names (1 the target, 2 the barrier, 3 another) and opTypes: the target is every row named or
    typed 1, the barrier every row of its names (2, or a pattern that matches the target's name too; a row typed 1
    is a target as well), the other kernels every non-target row starting in the window, each in (start, task id)
    order. Whether the barrier shares the window's scan or not, and whether the task id is read for ties or not,
    the rows are the same."""
    ids = random.sample(range(1, 100), len(tasks))
    rows = [(name, op, start, start + dur, task) for (name, op, start, dur), task in zip(tasks, ids)]
    db = tmp_path_factory.mktemp("db") / "msprof_20260101000000.db"
    with sqlite3.connect(db) as conn:
        conn.execute("CREATE TABLE STRING_IDS (id INTEGER, value TEXT)")
        conn.executemany(
            "INSERT INTO STRING_IDS VALUES (?, ?)", [(1, "elastic_dispatch_kernel"), (2, "barrier"), (3, "other")]
        )
        conn.execute(
            "CREATE TABLE TASK (startNs INTEGER, endNs INTEGER, globalTaskId "
            "INTEGER PRIMARY KEY, streamId INTEGER, taskId INTEGER)"
        )
        conn.execute("CREATE TABLE COMPUTE_TASK_INFO (name INTEGER, globalTaskId INTEGER, opType INTEGER)")
        for name, op, start, end, task in random.sample(rows, len(rows)):  # any scan order
            conn.execute("INSERT INTO TASK VALUES (?, ?, ?, 0, ?)", (start, end, task, task))
            conn.execute("INSERT INTO COMPUTE_TASK_INFO VALUES (?, ?, ?)", (name, task, op))
    names = {1: "elastic_dispatch_kernel", 2: "barrier", 3: "other"}
    kernels = read_db_target(db, is_dispatch, context, is_barrier=lambda n: n in {names[b] for b in barrier_names})

    def ordered(chosen):
        return [(start, end - start) for _, _, start, end, _ in sorted(chosen, key=lambda r: (r[2], r[4]))]

    target = ordered([r for r in rows if 1 in r[:2]])
    intervals = min(len(target) - 1, context) if context and target else max(len(target) - 1, 0)
    low, high = (target[0][0], target[intervals][0]) if intervals else (0, 0)
    assert (
        list(zip(kernels.start_ns.tolist(), kernels.dur_ns.tolist())) == target
        and kernels.context_intervals == intervals
    )
    assert list(zip(kernels.barrier_start_ns.tolist(), kernels.barrier_dur_ns.tolist())) == ordered(
        [r for r in rows if r[0] in barrier_names]
    )
    others = [r for r in rows if 1 not in r[:2] and low <= r[2] < high]
    assert list(zip(kernels.other_start_ns.tolist(), kernels.other_dur_ns.tolist())) == ordered(others)
    assert kernels.other_name.tolist() == [names[r[0]] for r in sorted(others, key=lambda r: (r[2], r[4]))]


def test_a_barrier_name_that_is_no_integer_is_refused_whether_or_not_a_window_is_read(tmp_path):
    """A REAL 2.0 equals the barrier's id 2 in SQL, so the filter selects it: it is refused as every other row's
    name would be, with two launches (the barrier read with the window's kernels) as with one (read alone)."""
    for launches in (1, 2):
        rows = [(1, 100 * i, 100 * i + 10, i) for i in range(launches)] + [(2.0, 50, 55, 9)]
        db = untyped_kernel_db(tmp_path / f"msprof_2026010100000{launches}.db", rows)
        with pytest.raises(MsprofFormatError, match=f"{db}.*non-integer.*c.name holds a REAL or NULL"):
            read_db_target(db, is_dispatch, 0, is_barrier=lambda name: name == "barrier")


def test_a_text_task_id_that_the_join_reads_as_a_number_stays_in_the_window(tmp_path):
    db = untyped_kernel_db(tmp_path / "msprof_20260101000000.db", [(1, 0, 10, 1), (2, 20, 25, 2), (1, 40, 50, 3)])
    with sqlite3.connect(db) as conn:
        conn.execute("UPDATE COMPUTE_TASK_INFO SET globalTaskId = '2' WHERE globalTaskId = 2")
        assert conn.execute("SELECT typeof(globalTaskId) FROM COMPUTE_TASK_INFO WHERE name = 2").fetchone() == ("text",)
    assert read_db_target(db, is_dispatch, 0).other_start_ns.tolist() == [20]


def test_the_db_path_needs_no_pandas():
    """The msprof db reader runs in every parse job: pandas (a second of import) stays out of it. Import cycles are
    tests/unit/test_layout.py's."""
    import subprocess
    import sys

    from conftest import ROOT

    lib = ROOT / "workflow" / "scripts"
    code = (
        "import sys; sys.path.insert(0, sys.argv[1]); import "
        "dispatchprof.formats.target_kernels; print('pandas' in sys.modules)"
    )
    assert (
        subprocess.run(
            [sys.executable, "-c", code, str(lib)], capture_output=True, text=True, check=True
        ).stdout.strip()
        == "False"
    )


def test_a_shared_export_without_info_files_takes_its_device_from_the_csv(tmp_path):
    """What colleagues share: a PROF_ holding only mindstudio_profiler_output/ (real sample, no info.json, no db)."""
    prof = tmp_path / "PROF_000001_20260402160352000_ABCDEFGHIJ"
    shutil.copytree(FIXTURES / "msprof-real" / "custom_kernel_5_launches", prof)
    info = read_prof_info(prof)
    assert (info.devices, info.devices_from, info.rank_id, info.pid, info.db) == ([0], "export", None, None, None)
    kernels = read_target_kernels(info, kernel_regex("matmul_kernel").match, 0)
    assert len(kernels.start_ns) == 5


def test_a_json_only_export_takes_its_device_from_the_pid_encoding(tmp_path):
    prof = tmp_path / "PROF_000001_20260511093035000_ABCDEFGHIJ"
    out = prof / "mindstudio_profiler_output"
    out.mkdir(parents=True)
    shutil.copy(
        next((FIXTURES / "msprof-real" / "single_kernel_run" / "mindstudio_profiler_output").glob("msprof_*.json")), out
    )
    assert read_prof_info(prof).devices == [0]


def test_a_device_id_that_is_not_a_number_is_refused_by_line(tmp_path):
    prof = tmp_path / "PROF_000001_20260402160352000_ABCDEFGHIJ"
    shutil.copytree(FIXTURES / "msprof-real" / "custom_kernel_5_launches", prof)
    csv_path = next((prof / "mindstudio_profiler_output").glob("op_summary_*.csv"))
    lines = csv_path.read_text().splitlines()
    lines[3] = "x" + lines[3][1:]
    csv_path.write_text("\n".join(lines) + "\n")
    with pytest.raises(MsprofFormatError, match=r"op_summary_\d+\.csv: line 4: field 'Device_id' is 'x'"):
        read_prof_info(prof)


def two_device_prof(tmp_path, sim_prof):
    """sim_prof's process, as if it had also driven device 7: its tasks repeated on device 7, 1 us longer."""
    prof = tmp_path / sim_prof.name
    shutil.copytree(sim_prof, prof)
    shutil.copytree(prof / "device_3", prof / "device_7")
    (prof / "device_7" / "info.json.3").rename(prof / "device_7" / "info.json.7")
    db = next(prof.glob("msprof_*.db"))
    conn = sqlite3.connect(db)
    offset = conn.execute("SELECT max(globalTaskId) FROM TASK").fetchone()[0]
    conn.execute(
        "INSERT INTO TASK SELECT startNs, endNs + 1000, 7, connectionId, globalTaskId + "
        f"{offset}, globalPid, taskType, contextId, streamId, taskId, modelId FROM TASK"
    )
    conn.execute(
        "INSERT INTO COMPUTE_TASK_INFO SELECT name, globalTaskId + ?, blockNum, mixBlockNum, taskType, opType, "
        "inputFormats, inputDataTypes, inputShapes, outputFormats, outputDataTypes, "
        "outputShapes, attrInfo, opState, hf32Eligible, gridDim, blockDim FROM COMPUTE_TASK_INFO",
        (offset,),
    )
    conn.commit()
    conn.close()
    return prof


def test_several_devices_in_one_prof_are_split_by_device_id(tmp_path, sim_prof):
    info = read_prof_info(two_device_prof(tmp_path, sim_prof))
    assert info.devices == [3, 7]
    three = read_target_kernels(info, is_dispatch, 0, is_barrier=lambda n: n == "cached_notify_combine", device=3)
    seven = read_target_kernels(info, is_dispatch, 0, is_barrier=lambda n: n == "cached_notify_combine", device=7)
    assert len(three.start_ns) == len(seven.start_ns) == 4 and len(three.barrier_start_ns) == 4
    assert (seven.dur_ns - three.dur_ns).tolist() == [1000] * 4
    merged = read_target_kernels(info, is_dispatch, 0)
    assert len(merged.start_ns) == 8  # what the parse did before it split them


def test_schema_version_is_recorded_and_an_unended_session_is_told(tmp_path, sim_prof):
    prof = tmp_path / sim_prof.name
    shutil.copytree(sim_prof, prof)
    ended = read_target_kernels(read_prof_info(prof), is_dispatch, 0, skip_unended=True)
    assert (ended.schema_version, ended.session_ended, len(ended.start_ns)) == ("1.2.0", True, 4)
    db = next(prof.glob("msprof_*.db"))
    conn = sqlite3.connect(db)
    conn.execute("UPDATE SESSION_TIME_INFO SET endTimeNs = NULL")
    conn.execute("UPDATE TASK SET endNs = 'cut short'")  # a table that stops short anywhere: not read at all
    conn.commit()
    skipped = read_target_kernels(read_prof_info(prof), is_dispatch, 0, skip_unended=True)
    assert (skipped.schema_version, skipped.session_ended, len(skipped.start_ns), len(skipped.barrier_start_ns)) == (
        "1.2.0",
        False,
        0,
        0,
    )
    with pytest.raises(MsprofFormatError, match="t.endNs holds a TEXT"):  # read all the same when not skipped
        read_target_kernels(read_prof_info(prof), is_dispatch, 0)
    conn.execute("DROP TABLE STRING_IDS")  # nor its names
    conn.commit()
    conn.close()
    assert read_target_kernels(read_prof_info(prof), is_dispatch, 0, skip_unended=True).session_ended is False
    with pytest.raises(MsprofFormatError, match="no such table: STRING_IDS"):
        read_target_kernels(read_prof_info(prof), is_dispatch, 0)


def test_a_string_id_that_is_no_integer_is_refused_where_its_name_is_looked_for(tmp_path):
    db = untyped_kernel_db(tmp_path / "msprof_20260101000000.db", [(1, 0, 10, 0), (1, 100, 110, 1)])
    with sqlite3.connect(db) as conn:
        conn.execute(
            "INSERT INTO STRING_IDS VALUES ('x', 'unrelated'), ('9a', 'cached_notify_combine')"
        )  # TEXT, not converted
    assert read_db_target(db, is_dispatch, 0).start_ns.tolist() == [0, 100]  # an odd id of another name is no matter
    with pytest.raises(
        MsprofFormatError, match=f"{db}: STRING_IDS.id '9a' .of 'cached_notify_combine'. is not an integer"
    ):
        read_db_target(db, is_dispatch, 0, is_barrier=lambda name: name == "cached_notify_combine")


@settings(max_examples=80, deadline=None)
@given(st.binary(max_size=800))
def test_garbage_op_summary_without_info_files_ends_in_a_clear_error(tmp_path_factory, blob):
    prof = tmp_path_factory.mktemp("p") / "PROF_000001_20260402160352000_ABCDEFGHIJ"
    (prof / "mindstudio_profiler_output").mkdir(parents=True)
    path = prof / "mindstudio_profiler_output" / "op_summary_20260402160352.csv"
    path.write_bytes(b"Device_id,Task ID\n" + blob)
    try:
        info = read_prof_info(prof)
    except MsprofFormatError as exc:
        assert str(path) in str(exc)
        return
    assert all(isinstance(d, int) and d >= 0 for d in info.devices)


def dir_state(root):
    """Names, sizes, mtimes and bytes of every file under ``root``: a -shm or -wal created beside a db changes it."""
    return {
        str(p.relative_to(root)): (p.stat().st_size, p.stat().st_mtime_ns, p.read_bytes())
        for p in sorted(root.rglob("*"))
        if p.is_file()
    }


@pytest.fixture
def wal_db(tmp_path, sim_prof):
    """The simulator's db in WAL mode, closed cleanly (no -wal), in a directory whose name needs URI quoting."""
    db = tmp_path / "a user's exports #3? 100%" / "msprof_20260101000000.db"
    db.parent.mkdir()
    db.write_bytes(next(sim_prof.glob("msprof_*.db")).read_bytes())
    with sqlite3.connect(db) as conn:
        conn.execute("PRAGMA journal_mode=WAL")
    conn.close()
    return db


def test_mode_ro_writes_beside_a_wal_db_which_is_why_readers_open_it_immutable(wal_db):
    before = dir_state(wal_db.parent)
    conn = sqlite3.connect(
        f"file:{wal_db.as_posix().replace('%', '%25').replace('#', '%23').replace('?', '%3f')}?mode=ro", uri=True
    )
    conn.execute("SELECT COUNT(*) FROM TASK").fetchone()
    conn.close()
    assert dir_state(wal_db.parent) != before  # the hazard: mode=ro created the -shm of a user's db
    for extra in wal_db.parent.glob("*-shm"):
        extra.unlink()
    before = dir_state(wal_db.parent)
    target = read_db_target(wal_db, is_dispatch, 0)
    assert len(target.start_ns) == 4 and len(read_db(wal_db)) == 8
    assert dir_state(wal_db.parent) == before


def test_rows_only_in_the_wal_are_read_from_a_private_copy_that_is_removed(wal_db, tmp_path, monkeypatch):
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(scratch))
    expected = read_db(wal_db)
    conn = sqlite3.connect(wal_db, isolation_level=None)
    conn.execute("PRAGMA wal_autocheckpoint=0")
    conn.execute("INSERT INTO META_DATA VALUES ('WAL_ONLY', 'yes')")
    conn.execute("UPDATE TASK SET startNs = startNs")  # every TASK page into the -wal; its content unchanged
    copied = tmp_path / "copied"  # the files as a writer left them (closing the connection would checkpoint)
    copied.mkdir()
    for name in (wal_db.name, wal_db.name + "-wal"):
        shutil.copyfile(wal_db.with_name(name), copied / name)
    conn.close()
    db = copied / wal_db.name
    before = dir_state(copied)
    query = "SELECT value FROM META_DATA WHERE name = 'WAL_ONLY'"
    with read_only_db(db) as ro:
        assert ro.execute(query).fetchone() == ("yes",)
    raw = sqlite3.connect(f"{db.as_uri()}?immutable=1", uri=True)
    assert raw.execute(query).fetchone() is None  # the hazard: immutable=1 alone does not see the -wal's rows
    raw.close()
    pd.testing.assert_frame_equal(read_db(db), expected)
    assert dir_state(copied) == before and not list(scratch.iterdir())


def test_a_missing_db_is_an_error_naming_it_not_a_new_empty_file(tmp_path):
    with pytest.raises(MsprofFormatError, match="nowhere.db"):
        read_db(tmp_path / "nowhere.db")
    assert not list(tmp_path.iterdir())
