"""DebugClock outputs (docs/formats.md §3): the legacy CSV and the AKL semantic trace, hand-built fixtures,
and malformed input (truncated, unknown ids, wrong column counts, garbage) -> a clear error naming the file."""

import json
import shutil
import struct

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from conftest import FIXTURES
from dispatchprof.formats.debugclock import (
    MAGIC,
    DebugClockFormatError,
    encode_trace,
    find_captures,
    find_legacy_csvs,
    parse_capture,
    parse_event_map,
    parse_legacy_csv,
    path_hash,
)

ROOT = FIXTURES / "deepep" / "debugclock"
RANK0 = ROOT / "legacy" / "node0" / "dispatch_clock" / "dispatch_clock_rank_0.csv"
RANK1 = ROOT / "legacy" / "node1" / "dispatch_clock" / "dispatch_clock_rank_1.csv"
CAPTURE0 = ROOT / "akl" / "node0" / "rank0-pid4000-launch0"


def test_path_hash_matches_the_ids_of_the_guide():
    assert path_hash(["dispatch", "Init", "entry"]) == 0xE693BD81
    assert path_hash(["dispatch", "Process", "URMASendToken", "send_complete"]) == 0x5FB50072
    assert path_hash(["dispatch", "Process", "LocalWindowCopy", "end"]) == 0xC02086B7


def test_legacy_csvs_are_found_by_both_name_forms(tmp_path):
    shutil.copy(RANK0, tmp_path / "dispatch_clock_rank_0.csv")
    shutil.copy(RANK1, tmp_path / "dispatch_clock_run7_rank_1.csv")
    (tmp_path / "dispatch_latency.csv").write_text("x\n")
    assert [p.name for p in find_legacy_csvs(tmp_path)] == [
        "dispatch_clock_rank_0.csv",
        "dispatch_clock_run7_rank_1.csv",
    ]


def test_legacy_csv_keeps_missing_slots_missing_and_large_values():
    frame = parse_legacy_csv(RANK1)
    assert len(frame) == 3 * 7
    cell = frame[(frame.aiv_id == 0) & (frame.slot == 6)]["cycles"].iloc[0]
    assert cell is not None and str(cell) == "<NA>"
    assert frame[(frame.aiv_id == 2) & (frame.slot == 6)]["cycles"].iloc[0] == 600000
    assert frame[(frame.aiv_id == 1) & (frame.slot == 4)]["cycles"].iloc[0] == 7000


def test_legacy_columns_are_read_by_name(tmp_path):
    path = tmp_path / "dispatch_clock_rank_3.csv"
    path.write_text("time_1_cycles,aiv_id,time_0_cycles,rank\n20,0,10,3\n")
    frame = parse_legacy_csv(path)
    assert frame.sort_values("slot")["cycles"].tolist() == [10, 20]


@pytest.mark.parametrize(
    "text, needle",
    [
        ("rank,aiv_id,time_0_cycles\n0,0,5,6\n", "4 fields; expected 3"),
        ("rank,aiv_id,time_0_cycles\n0,0\n", "2 fields; expected 3"),
        ("aiv_id,time_0_cycles\n0,5\n", "column 'rank' missing"),
        ("rank,aiv_id\n0,0\n", "no time_<k>_cycles"),
        ("rank,aiv_id,time_0_cycles\n0,0,abc\n", "field time_0_cycles"),
        ("rank,aiv_id,time_0_cycles\n0,0,-7\n", "outside int32"),
        ("rank,aiv_id,time_0_cycles\n1,0,5\n", "file name says rank 0"),
        ("rank,aiv_id,time_0_cycles\n0,0,5\n0,0,6\n", "appears twice"),
        ("rank,aiv_id,time_0_cycles,extra\n0,0,5,1\n", "unexpected column"),
        ("", "empty file"),
    ],
)
def test_malformed_legacy_csv_names_file_and_field(tmp_path, text, needle):
    path = tmp_path / "dispatch_clock_rank_0.csv"
    path.write_text(text)
    with pytest.raises(DebugClockFormatError, match="dispatch_clock_rank_0.csv") as info:
        parse_legacy_csv(path)
    assert needle in str(info.value)


@settings(max_examples=200, deadline=None)
@given(st.binary(max_size=400))
def test_legacy_garbage_is_a_clear_error_or_a_valid_table(data):
    import tempfile
    from pathlib import Path

    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "dispatch_clock_rank_0.csv"
        path.write_bytes(data)
        try:
            frame = parse_legacy_csv(path)
        except DebugClockFormatError as exc:
            assert str(path) in str(exc)
        else:
            assert len(frame) > 0 and set(frame.columns) == {"rank", "aiv_id", "slot", "cycles"}


@settings(max_examples=200, deadline=None)
@given(st.integers(min_value=0, max_value=len(RANK1.read_bytes()) - 2), st.integers(min_value=0, max_value=3))
def test_legacy_truncated_or_cell_dropped_is_refused(cut, which):
    import tempfile
    from pathlib import Path

    lines = RANK1.read_text().splitlines()
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "dispatch_clock_rank_1.csv"
        if which == 0:  # a data row loses its last field: wrong column count
            lines[1 + cut % 3] = lines[1 + cut % 3].rsplit(",", 1)[0]
            path.write_text("\n".join(lines) + "\n")
            with pytest.raises(DebugClockFormatError, match="fields; expected 9"):
                parse_legacy_csv(path)
            return
        raw = RANK1.read_bytes()[:cut]
        path.write_bytes(raw)
        try:
            frame = parse_legacy_csv(path)
        except DebugClockFormatError as exc:
            assert str(path) in str(exc)
        else:  # a cut at a line end leaves whole rows (a cut inside the last number is not detectable in CSV)
            assert len(frame) % 7 == 0 and len(frame) <= 21
            assert set(frame["aiv_id"]) <= {0, 1, 2}


def test_event_map_and_capture_decode_in_tick_order():
    events = parse_event_map(ROOT / "akl" / "event_map.json")
    cap = parse_capture(CAPTURE0, events)
    assert (cap.rank, cap.pid, cap.launch, cap.dropped) == (0, 4000, 0, 0)
    core1 = cap.events[cap.events.block == 1]
    assert (
        core1["path"].iloc[0] == "dispatch/Init/entry"
        and core1["path"].iloc[-1] == "dispatch/Process/LocalWindowCopy/end"
    )
    assert core1["tick"].diff().dropna().ge(0).all()
    assert [p.name for p in find_captures(ROOT / "akl")] == ["rank0-pid4000-launch0", "rank1-pid4001-launch0"]


def _copy_capture(tmp_path):
    target = tmp_path / "rank0-pid4000-launch0"
    shutil.copytree(CAPTURE0, target)
    return target, parse_event_map(ROOT / "akl" / "event_map.json")


@settings(max_examples=100, deadline=None)
@given(st.integers(min_value=0, max_value=len((CAPTURE0 / "trace.bin").read_bytes()) - 1))
def test_truncated_trace_bin_is_refused(cut):
    import tempfile
    from pathlib import Path

    with tempfile.TemporaryDirectory() as tmp:
        target, events = _copy_capture(Path(tmp))
        (target / "trace.bin").write_bytes((CAPTURE0 / "trace.bin").read_bytes()[:cut])
        with pytest.raises(DebugClockFormatError, match=r"trace.bin: \d+ bytes; expected .*truncated"):
            parse_capture(target, events)


@settings(max_examples=100, deadline=None)
@given(st.binary(min_size=8, max_size=3 * (8 + 20) * 8))
def test_garbage_trace_bin_is_refused_or_decoded(data):
    import tempfile
    from pathlib import Path

    with tempfile.TemporaryDirectory() as tmp:
        target, events = _copy_capture(Path(tmp))
        (target / "trace.bin").write_bytes(data)
        try:
            cap = parse_capture(target, events)
        except DebugClockFormatError as exc:
            assert "trace.bin" in str(exc)
        else:
            assert cap.events["event_id"].isin(list(events)).all()


def test_event_id_missing_from_map_is_refused(tmp_path):
    target, events = _copy_capture(tmp_path)
    del events[0x5FB50072]
    with pytest.raises(
        DebugClockFormatError,
        match=r"trace.bin: row 0: event \d+: id 1605697650 \(0x5fb50072\) is not in the event map",
    ):
        parse_capture(target, events)


@pytest.mark.parametrize(
    "row, needle",
    [
        ({"block": 0, "events": [(0xE693BD81, 10)], "magic": 7}, "field magic"),
        ({"block": 0, "events": [(0xE693BD81, 10)], "committed": 0}, "not committed"),
        ({"block": 0, "events": [(0xE693BD81, 10), (0x2D7BABD6, 5)]}, "goes backwards"),
    ],
)
def test_decoder_refusals(tmp_path, row, needle):
    target, events = _copy_capture(tmp_path)
    (target / "trace.bin").write_bytes(encode_trace([row], 2))
    meta = json.loads((target / "capture.json").read_text())
    (target / "capture.json").write_text(json.dumps({**meta, "capacity": 2, "blocks": 1}))
    with pytest.raises(DebugClockFormatError, match=needle):
        parse_capture(target, events)


def test_event_map_with_a_wrong_hash_is_refused(tmp_path):
    path = tmp_path / "event_map.json"
    path.write_text(json.dumps({"schema": "akl.event-map.v1", "events": {"123": ["dispatch", "Init", "entry"]}}))
    with pytest.raises(DebugClockFormatError, match="hashes to"):
        parse_event_map(path)


def test_encoder_writes_the_documented_row_layout():
    raw = encode_trace([{"block": 3, "events": [(1, 2)]}], 2)
    assert struct.unpack("<12Q", raw)[:8] == (MAGIC, 1, 1, 0, 3, 0, 0, 1)
