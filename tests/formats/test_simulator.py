"""msopprof simulator output (§6): both trace.json forms, the per-core CSVs (decimal addr, details with commas), the
two layouts, and malformed input that must end in SimulatorFormatError naming the file, never a crash or a 0."""

import json
import shutil

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from conftest import FIXTURES
from dispatchprof.formats.simulator import (
    SimulatorFormatError,
    core_files,
    read_code_exe,
    read_core_trace,
    read_instr_exe,
    read_summary_trace,
    simulator_runs,
)

S = FIXTURES / "msopprof" / "simulator"
SINGLE = S / "single" / "OPPROF_20260301120000_ABCDEFGHIJKLMNOP" / "simulator"
CORE0 = SINGLE / "core0.veccore0"


def test_instr_exe_keeps_details_with_commas_and_reads_addr_as_decimal():
    frame = read_instr_exe(CORE0 / "core0.veccore0_instr_exe.csv")
    assert frame["instr"].tolist() == ["MOV_SRC_TO_DST_ALIGN", "VADD", "SET_FLAG", "RET"]
    assert frame["addr"].tolist() == [284715584, 284715648, 284715680, 284719232]
    assert frame["pc"].tolist()[0] == "0x10f86a40"
    assert frame["detail"].tolist() == [
        "dst:UB[0x200], src:GM[0x10f80000], len:0x80",
        "dst:UB[0x400], src0:UB[0x200], src1:UB[0x400], repeat:8",
        "pipe:V, tpipe:MTE3, event:0",
        "",
    ]
    assert frame["cycles"].tolist() == [2560, 768, 64, 16] and frame["call_count"].tolist() == [64, 64, 64, 8]
    assert frame["running_time_us"].tolist()[0] == pytest.approx(1.551515)


def test_code_exe_splits_the_numbers_from_the_right_so_a_comma_in_a_path_survives():
    frame = read_code_exe(CORE0 / "core0.veccore0_code_exe.csv")
    assert frame["code"].tolist() == [
        "csrc/kernels/elastic_dispatch/descriptor.h:44",
        "csrc/kernels/elastic_dispatch/descriptor.h:46",
        "/home/u/build,v2/descriptor.h:47",
    ]
    assert frame["cycles"].sum() == 2560 + 768 + 64


def test_per_core_trace_maps_integer_pids_to_pipes_by_process_name():
    frame = read_core_trace(CORE0 / "trace.json")
    assert set(frame["core"]) == {"core0.veccore0"}
    misses = frame[frame["pipe"] == "CACHEMISS"]
    assert misses["pc"].tolist() == ["0x10f86a00", "0x10f86a80", "0x10f86a00"]
    assert sorted(frame[frame["pipe"] != "CACHEMISS"]["pipe"]) == ["MTE2", "MTE2", "SCALAR", "VECTOR"]
    assert (
        frame[frame["name"] == "VADD"]["pc"].item() == "0x10f86a80"
        and frame[frame["name"] == "VADD"]["dur_us"].item() == 0.25
    )


def test_summary_trace_keeps_x_events_and_b_e_pairs_with_core_and_pipe_strings():
    frame = read_summary_trace(SINGLE / "trace.json")
    assert len(frame) == 7  # 6 X events and the SET_FLAG B/E pair; flow arrows are not intervals
    flag = frame[frame["name"] == "SET_FLAG"]
    assert flag[["pipe", "ts_us"]].values.tolist() == [["FLAG", 1.0]] and round(flag["dur_us"].item(), 6) == 0.1
    assert frame.attrs["unmatched"] == []
    assert (frame["pipe"] == "CACHEMISS").sum() == 4
    assert set(frame["core"]) == {"core0.veccore0", "core0.veccore1"}
    assert "WARP_0" in set(frame["pipe"])


def test_both_layouts_are_found_with_their_cores_and_suffixed_csvs():
    single = simulator_runs(S / "single")
    assert [(r.kernel, r.n, sorted(r.cores)) for r in single] == [(None, None, ["core0.veccore0", "core0.veccore1"])]
    multi = simulator_runs(S / "multi" / "OPPROF_20260301120500_QWERTYUIOPASDFGH")
    assert [(r.kernel, r.n, sorted(r.cores)) for r in multi] == [("build_descriptors", 1, ["core0.cubecore0"])]
    files = core_files(multi[0].cores["core0.cubecore0"])
    assert read_instr_exe(files["instr"])["detail"].tolist() == ["m:16, k:16, n:16"]
    assert read_code_exe(files["code"])["code"].tolist() == ["mm.cpp:7"]


def write(tmp_path, name, text):
    path = tmp_path / "core0.veccore0" / name
    path.parent.mkdir(exist_ok=True)
    path.write_text(text) if isinstance(text, str) else path.write_bytes(text)
    return path


def test_malformed_json_names_the_file_and_line(tmp_path):
    path = write(tmp_path, "trace.json", '{"schemaVersion": 1, "traceEvents": [\n{"ph": "X",')
    with pytest.raises(SimulatorFormatError, match=r"trace\.json: line 2: not valid JSON"):
        read_core_trace(path)


def test_a_pid_without_process_name_is_an_error_not_a_guess(tmp_path):
    events = [
        {"name": "process_name", "ph": "M", "pid": 30, "args": {"name": "VECTOR"}},
        {"name": "VADD", "ph": "X", "pid": 60, "tid": 0, "ts": 0, "dur": 1},
    ]
    path = write(tmp_path, "trace.json", json.dumps({"schemaVersion": 1, "traceEvents": events}))
    with pytest.raises(
        SimulatorFormatError,
        match=r"traceEvents\[1\]: pid 60 has no process_name metadata event; declared pids: \[30\]",
    ):
        read_core_trace(path)


def test_a_summary_trace_given_as_a_per_core_one_is_refused_by_field(tmp_path):
    with pytest.raises(SimulatorFormatError, match="field 'pid' is 'core0.veccore0', expected an integer pipe id"):
        read_core_trace(shutil.copy(SINGLE / "trace.json", tmp_path / "trace.json"))
    with pytest.raises(SimulatorFormatError, match="expected a core string and a pipe string"):
        read_summary_trace(CORE0 / "trace.json")


def test_a_reordered_or_missing_header_is_refused(tmp_path):
    path = write(
        tmp_path,
        "core0.veccore0_instr_exe.csv",
        "addr,instr,pipe,call_count,cycles,running_time(us),detail\n1,A,V,1,1,0.1,x\n",
    )
    with pytest.raises(SimulatorFormatError, match=r"line 1: header \['addr', 'instr'"):
        read_instr_exe(path)
    with pytest.raises(SimulatorFormatError, match="line 1: empty file"):
        read_code_exe(write(tmp_path, "core0.veccore0_code_exe.csv", ""))


def test_a_hex_addr_is_refused_not_read_as_another_number(tmp_path):
    path = write(
        tmp_path,
        "core0.veccore0_instr_exe.csv",
        "instr,addr,pipe,call_count,cycles,running_time(us),detail\nVADD,0x10f86a80,VECTOR,1,8,0.1,a, b\n",
    )
    with pytest.raises(
        SimulatorFormatError, match=r"line 2: field 'addr' is '0x10f86a80', expected a non-negative decimal integer"
    ):
        read_instr_exe(path)


def test_a_cachemiss_name_that_is_not_a_pc_is_refused(tmp_path):
    events = [
        {"name": "process_name", "ph": "M", "pid": 110, "args": {"name": "CACHEMISS"}},
        {"name": "miss", "ph": "X", "pid": 110, "tid": 0, "ts": 0, "dur": 1},
    ]
    path = write(tmp_path, "trace.json", json.dumps({"schemaVersion": 1, "traceEvents": events}))
    with pytest.raises(SimulatorFormatError, match="CACHEMISS event name 'miss', expected the PC as 0x%08x"):
        read_core_trace(path)


CSV_BYTES = (CORE0 / "core0.veccore0_instr_exe.csv").read_bytes()
CODE_BYTES = (CORE0 / "core0.veccore0_code_exe.csv").read_bytes()
TRACE_BYTES = (CORE0 / "trace.json").read_bytes().rstrip()
SUMMARY_BYTES = (SINGLE / "trace.json").read_bytes().rstrip()


def outcome(reader, path):
    """A parse either succeeds with a table whose rows all came from the input, or raises SimulatorFormatError."""
    try:
        return reader(path)
    except SimulatorFormatError as exc:
        assert str(path) in str(exc)
        return None


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(cut=st.integers(min_value=0, max_value=len(CSV_BYTES)), garbage=st.binary(max_size=200))
def test_truncated_or_binary_csvs_are_a_clear_error_or_a_prefix(tmp_path, cut, garbage):
    path = write(tmp_path, "core0.veccore0_instr_exe.csv", CSV_BYTES[:cut])
    frame = outcome(read_instr_exe, path)
    if frame is not None:
        assert len(frame) <= 4 and (frame["cycles"] >= 0).all()
    path.write_bytes(garbage)
    outcome(read_instr_exe, path)
    code = write(tmp_path, "core0.veccore0_code_exe.csv", CODE_BYTES[: cut % (len(CODE_BYTES) + 1)])
    frame = outcome(read_code_exe, code)
    if frame is not None:
        assert len(frame) <= 3 and (frame["cycles"] >= 0).all()
    code.write_bytes(garbage)
    outcome(read_code_exe, code)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(cut=st.integers(min_value=0, max_value=len(TRACE_BYTES) - 1), garbage=st.binary(max_size=200))
def test_truncated_or_binary_traces_are_a_clear_error(tmp_path, cut, garbage):
    path = write(tmp_path, "trace.json", TRACE_BYTES[:cut])
    assert outcome(read_core_trace, path) is None  # a truncated JSON object never parses
    path.write_bytes(SUMMARY_BYTES[: min(cut, len(SUMMARY_BYTES) - 1)])
    assert outcome(read_summary_trace, path) is None
    path.write_bytes(garbage)
    outcome(read_core_trace, path)


WRONG = st.one_of(
    st.none(), st.booleans(), st.text(max_size=5), st.lists(st.integers(), max_size=2), st.floats(allow_nan=True)
)


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    field=st.sampled_from(["ts", "dur", "pid", "name", "args"]),
    value=WRONG,
    index=st.integers(min_value=5, max_value=11),
)
def test_wrong_types_in_an_event_are_a_clear_error_never_a_silent_value(tmp_path, field, value, index):
    data = json.loads(TRACE_BYTES)
    data["traceEvents"][index][field] = value
    path = write(tmp_path, "trace.json", json.dumps(data))
    frame = outcome(read_core_trace, path)
    if frame is not None:  # only values the format allows get through (e.g. a string name, an int pid that is declared)
        assert frame["ts_us"].ge(0).all() and frame["dur_us"].ge(0).all()
        assert len(frame) == 7  # every X event of the file, none dropped


def test_simulator_traces_read_b_e_pairs_and_name_the_unmatched(tmp_path):
    summary = tmp_path / "trace.json"
    events = [
        {"name": "VADD", "ph": "X", "pid": "core0.veccore0", "tid": "VECTOR", "ts": 0.5, "dur": 0.013},
        {"name": "VMAX", "ph": "B", "pid": "core0.veccore0", "tid": "VECTOR", "ts": 1.0, "args": {"pc_addr": "0x10"}},
        {"name": "VMAX", "ph": "E", "pid": "core0.veccore0", "tid": "VECTOR", "ts": 3.0, "args": {"code": "a.cpp:1"}},
        {"name": "WAIT_FLAG", "ph": "B", "pid": "core0.veccore0", "tid": "VECTOR", "ts": 4.0},
    ]
    summary.write_text(json.dumps({"schemaVersion": 2, "traceEvents": events}))
    frame = read_summary_trace(summary)
    assert frame[["name", "ts_us", "dur_us", "pc", "code"]].values.tolist() == [
        ["VADD", 0.5, 0.013, "", ""],
        ["VMAX", 1.0, 2.0, "0x10", "a.cpp:1"],
    ]
    assert len(frame.attrs["unmatched"]) == 1 and "traceEvents[3] B 'WAIT_FLAG'" in frame.attrs["unmatched"][0]
    per_core = tmp_path / "core0.veccore0" / "trace.json"
    per_core.parent.mkdir()
    meta = {"name": "process_name", "ph": "M", "pid": 30, "args": {"name": "VECTOR"}}
    pairs = [
        {"name": "VADD", "ph": "B", "pid": 30, "tid": 1, "ts": 1.0},
        {"name": "VADD", "ph": "E", "pid": 30, "tid": 1, "ts": 1.5},
    ]
    per_core.write_text(
        json.dumps({"schemaVersion": 1, "traceEvents": [meta, *pairs, {"ph": "E", "pid": 30, "tid": 1, "ts": 2.0}]})
    )
    core = read_core_trace(per_core)
    assert core[["pipe", "ts_us", "dur_us"]].values.tolist() == [["VECTOR", 1.0, 0.5]]
    assert len(core.attrs["unmatched"]) == 1 and "an E with no open B" in core.attrs["unmatched"][0]
