"""PipeTimeline / InstrTimeline trace.json (docs/formats.md §2) and its TRACE block in visualize_data.bin (§7), on
hand-built fixtures; damaged input gives TraceFormatError naming the file and field, never a crash or an empty table."""

import json
import struct
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dispatchprof.analysis.pipe_timeline import core_table
from dispatchprof.formats.trace_json import (
    TraceFormatError,
    parse_trace,
    read_run_trace,
    read_trace_block,
    read_trace_json,
)

FIX = Path(__file__).parents[1] / "fixtures/msopprof/pipe_timeline"


def block(kind, payload):
    pad = (-len(payload)) % 4
    content = payload + b"\0" * pad
    return struct.pack("<QBBBB", len(content), kind, pad, 0x5A, 0x5A) + content


def test_device_trace_events_are_read_exactly():
    trace = read_trace_json(FIX / "trace_pipe.json")
    ev = trace.events
    assert trace.schema_version == 1 and not trace.has_instructions
    assert len(ev) == 8
    core0 = ev[(ev["core"] == 0) & (ev["core_kind"] == "veccore0")]
    assert sorted(core0["pipe"]) == ["MTE2", "MTE2", "MTE3", "SCALAR", "VECTOR"]
    assert core0[core0["pipe"] == "VECTOR"][["ts_us", "dur_us"]].values.tolist() == [[2.0, 3.0]]
    assert set(ev["core_kind"]) == {"veccore0", "veccore1", "cubecore"}


def test_instr_trace_keeps_pc_and_code():
    ev = read_trace_json(FIX / "trace_instr.json").events
    mte2 = ev[ev["pipe"] == "MTE2"]
    assert list(mte2["pc_addr"]) == ["0x10f86a80", "0x10f86a80"]
    assert set(mte2["code"]) == {"elastic_dispatch.cpp:120"}


def test_declared_integer_pid_and_tid_are_resolved_by_metadata():
    ev = read_trace_json(FIX / "trace_declared_pids.json").events
    assert ev[["core", "core_kind", "pipe"]].values.tolist() == [[2, "veccore0", "MTE2"], [2, "veccore0", "VECTOR"]]


def test_pid_without_process_name_is_refused_by_name():
    with pytest.raises(
        TraceFormatError, match=r"trace_undeclared_pid.json: traceEvents\[0\]: field 'pid' is 5.*process_name"
    ):
        read_trace_json(FIX / "trace_undeclared_pid.json")


def test_visualize_bin_trace_block_equals_trace_json(tmp_path):
    payload = (FIX / "trace_pipe.json").read_bytes()
    (tmp_path / "visualize_data.bin").write_bytes(
        block(0x5, b'{"Op Name":"k"}') + block(0x2, payload) + block(0x9, b"{}")
    )
    from_bin = read_trace_block(tmp_path / "visualize_data.bin")
    assert from_bin is not None
    assert from_bin.events.equals(read_trace_json(FIX / "trace_pipe.json").events)
    assert read_run_trace(tmp_path).events.equals(from_bin.events)  # no trace.json there: the block is used


def test_visualize_bin_without_trace_block_has_no_trace(tmp_path):
    (tmp_path / "visualize_data.bin").write_bytes(block(0x5, b'{"Op Name":"k"}'))
    assert read_trace_block(tmp_path / "visualize_data.bin") is None


def test_truncated_json_names_the_file(tmp_path):
    path = tmp_path / "trace.json"
    path.write_text((FIX / "trace_pipe.json").read_text()[:200])
    with pytest.raises(TraceFormatError, match=r"trace.json: line \d+: not valid JSON"):
        read_trace_json(path)


@pytest.mark.parametrize(
    "event, field",
    [
        ({"ts": "1.0"}, "ts"),
        ({"dur": None}, "dur"),
        ({"dur": -1.0}, "dur"),
        ({"name": 3}, "name"),
        ({"tid": 7}, "tid"),
        ({"pid": "core0.aicore"}, "pid"),
        ({"args": []}, "args"),
    ],
)
def test_wrong_field_types_name_the_field(event, field):
    base = {"name": "MTE2", "ph": "X", "ts": 0.0, "dur": 1.0, "pid": "core0.veccore0", "tid": "MTE2", "args": {}}
    with pytest.raises(TraceFormatError, match=f"field '{field}'"):
        parse_trace({"traceEvents": [{**base, **event}]}, "t.json")


def test_top_level_must_hold_an_event_list():
    with pytest.raises(TraceFormatError, match="traceEvents"):
        parse_trace({"traceEvents": {"a": 1}}, "t.json")
    with pytest.raises(TraceFormatError, match="top level"):
        parse_trace([1, 2], "t.json")


@settings(max_examples=200, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(garbage=st.binary(max_size=400))
def test_binary_garbage_is_a_clear_error_or_a_valid_trace(tmp_path, garbage):
    path = tmp_path / "trace.json"
    path.write_bytes(garbage)
    try:
        trace = read_trace_json(path)
    except TraceFormatError as exc:
        assert str(path) in str(exc)
    else:  # only a JSON object with a list of events can pass
        assert isinstance(json.loads(garbage), dict)
        assert trace.events.empty or trace.events["dur_us"].ge(0).all()


JSONISH = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=True) | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=6), inner, max_size=4),
    max_leaves=4,
)


@settings(max_examples=300, suppress_health_check=[HealthCheck.too_slow])
@given(
    ev=st.fixed_dictionaries(
        {"ph": st.just("X")},
        optional={"name": JSONISH, "ts": JSONISH, "dur": JSONISH, "pid": JSONISH, "tid": JSONISH, "args": JSONISH},
    )
)
def test_wrong_types_anywhere_in_an_event_give_the_clear_error(ev):
    try:
        trace = parse_trace({"traceEvents": [ev]}, "t.json")
    except TraceFormatError as exc:
        assert str(exc).startswith("t.json: traceEvents[0]")
    else:
        row = trace.events.iloc[0]
        assert row["dur_us"] >= 0 and isinstance(row["name"], str) and isinstance(row["pipe"], str)


@settings(max_examples=100, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(cut=st.integers(min_value=1, max_value=2000))
def test_truncated_fixture_is_refused_with_the_file(tmp_path, cut):
    text = (FIX / "trace_instr.json").read_text().rstrip()
    path = tmp_path / "trace.json"
    path.write_text(text[: min(cut, len(text) - 1)])
    with pytest.raises(TraceFormatError, match=f"{path}: line \\d+: not valid JSON"):
        read_trace_json(path)


def test_begin_end_pairs_are_intervals_matched_per_thread_as_a_stack():
    trace = read_trace_json(FIX / "trace_be_pairs.json")
    ev = trace.events
    vector = ev[(ev["core"] == 0) & (ev["pipe"] == "VECTOR")].sort_values("ts_us")
    assert vector[["name", "ts_us"]].values.tolist() == [
        ["VADD", 0.5],
        ["WAIT_FLAG", 1.2],
        ["VMAX", 3.0],
        ["VCONV", 3.5],
    ]
    assert vector["dur_us"].round(6).tolist() == [0.013, 1.7, 4.0, 0.5]
    assert vector[vector["name"] == "VCONV"]["code"].item() == "dispatch.cpp:88"  # the E's args merge over the B's
    assert vector[vector["name"] == "VMAX"]["pc_addr"].item() == "0x10f86b00"
    flag = ev[(ev["core"] == 0) & (ev["pipe"] == "MTE2")]
    assert flag[["name", "ts_us"]].values.tolist() == [["SET_FLAG", 1.0]] and round(flag["dur_us"].item(), 6) == 0.01


def test_the_busy_time_of_a_lane_written_as_pairs_is_not_its_x_events_alone():
    ev = read_trace_json(FIX / "trace_be_pairs.json").events.assign(rank=0, launch=0)
    row = core_table(ev).set_index("core").loc[0]
    assert round(row["busy_us.VECTOR"], 6) == 5.713  # was 0.013 when only X events were read


def test_unmatched_begin_and_end_are_counted_and_named_never_dropped_silently():
    trace = read_trace_json(FIX / "trace_be_pairs.json")
    assert len(trace.unmatched) == 2
    assert any("traceEvents[9] B 'MOV_SRC_TO_DST_ALIGN'" in u and "a B that no E ends" in u for u in trace.unmatched)
    assert any("traceEvents[10] E 'MOV_UB_TO_OUT'" in u and "an E with no open B" in u for u in trace.unmatched)
    assert trace.warning.startswith(f"{FIX / 'trace_be_pairs.json'}: 2 unmatched B/E events")
    assert read_trace_json(FIX / "trace_pipe.json").warning is None
    assert set(trace.events["core"]) == {0}  # core 1 has only the unmatched events


def test_pairs_match_in_time_order_and_a_bad_ts_names_the_field():
    events = [
        {"name": "V", "ph": "E", "ts": 3.0, "pid": "core0.veccore0", "tid": "VECTOR"},
        {"name": "V", "ph": "B", "ts": 2.0, "pid": "core0.veccore0", "tid": "VECTOR"},
        {"name": "W", "ph": "B", "ts": 4.0, "pid": "core0.veccore0", "tid": "VECTOR"},
        {"name": "W", "ph": "E", "ts": 3.5, "pid": "core0.veccore0", "tid": "VECTOR"},
    ]
    trace = parse_trace({"traceEvents": events}, "t.json")
    assert trace.events[["name", "dur_us"]].values.tolist() == [
        ["V", 1.0]
    ]  # an E written before its B in the file still ends it
    assert [u.split(":")[0] for u in trace.unmatched] == [
        "traceEvents[3] E 'W' on pid 'core0.veccore0' tid 'VECTOR' at ts 3.5",
        "traceEvents[2] B 'W' on pid 'core0.veccore0' tid 'VECTOR' at ts 4.0",
    ]
    with pytest.raises(TraceFormatError, match=r"t.json: traceEvents\[0\]: field 'ts'"):
        parse_trace({"traceEvents": [{**events[0], "ts": "2"}, events[1]]}, "t.json")


@settings(max_examples=100, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(["B", "E"]), st.integers(0, 1), st.integers(0, 20)), max_size=30))
def test_every_begin_and_end_is_either_in_a_pair_or_named_unmatched(marks):
    events = [
        {"name": f"e{i}", "ph": ph, "ts": float(ts), "pid": "core0.veccore0", "tid": ["VECTOR", "MTE2"][lane]}
        for i, (ph, lane, ts) in enumerate(marks)
    ]
    trace = parse_trace({"traceEvents": events}, "t.json")
    assert 2 * len(trace.events) + len(trace.unmatched) == len(events)
    assert (trace.events["dur_us"] >= 0).all()
