"""Every reader of a user's text file accepts a UTF-8 byte-order mark (a file re-saved by an editor or Excel starts
with one): the same file with and without it reads the same. csv and json refuse it unless the text is decoded as
utf-8-sig, and the header's first name would otherwise be '\\ufeffDevice_id'."""

from __future__ import annotations

import dataclasses
import json
import shutil
from pathlib import Path

import pandas as pd
import pytest

from conftest import FIXTURES
from dispatchprof.analysis.rank_identity import load_identities
from dispatchprof.formats import debugclock, latency_csv, msopprof, msprof, msprof_tables, simulator, trace_json
from dispatchprof.formats.ranklog import find_pass_lines
from dispatchprof.stages.imports import latency_csv_ranks

BOM = b"\xef\xbb\xbf"
HELIX = FIXTURES / "msprof-real" / "single_kernel_run" / "mindstudio_profiler_output"
OPPROF = FIXTURES / "msopprof"
SIM = OPPROF / "simulator" / "single" / "OPPROF_20260301120000_ABCDEFGHIJKLMNOP" / "simulator"
AKL = FIXTURES / "deepep" / "debugclock" / "akl"
CAPTURE = AKL / "node0" / "rank0-pid4000-launch0"


def write_identity(directory: Path) -> Path:
    (directory / "ids").mkdir()
    (directory / "ids" / "n0-4242.json").write_text('{"node": 0, "pid": 4242, "global_rank": 3, "device": 3}\n')
    return directory / "ids" / "n0-4242.json"


def write_log(directory: Path) -> Path:
    (directory / "node0.log").write_text("[rank 0] elastic dispatch precision check passed\n")
    return directory / "node0.log"


# (name, the file to copy or write under tmp_path (None: made by the writer), the reader called on the copy's path
# or its directory). Each reader is the one the workflow calls on a user's file of that kind.
READERS = [
    ("op_summary CSV", HELIX / "op_summary_20260511093035.csv", lambda p: msprof_tables.read_op_summary([p])),
    ("op_summary device check", HELIX / "op_summary_20260511093035.csv", lambda p: msprof.export_devices(p.parent)),
    ("msprof JSON", HELIX / "msprof_20260511093035.json", msprof_tables.read_msprof_json),
    ("msprof JSON device check", HELIX / "msprof_20260511093035.json", lambda p: msprof.export_devices(p.parent)),
    ("info.json", HELIX / "msprof_20260511093035.json", msprof.load_json),
    ("msopprof metric CSV", OPPROF / "PipeUtilization_A2.csv", lambda p: msopprof.read_metric_csv(p)),
    ("OpBasicInfo.csv", OPPROF / "OpBasicInfo.csv", msopprof.read_op_basic_info),
    ("simulator trace.json", SIM / "trace.json", simulator.read_summary_trace),
    ("simulator core trace.json", SIM / "core0.veccore0" / "trace.json", simulator.read_core_trace),
    ("simulator instr_exe CSV", SIM / "core0.veccore0" / "core0.veccore0_instr_exe.csv", simulator.read_instr_exe),
    ("simulator code_exe CSV", SIM / "core0.veccore0" / "core0.veccore0_code_exe.csv", simulator.read_code_exe),
    ("PipeTimeline trace.json", OPPROF / "pipe_timeline" / "trace_pipe.json", trace_json.read_trace_json),
    ("dispatch_latency.csv", FIXTURES / "deepep" / "dispatch_latency_full.csv", latency_csv.parse_latency_csv),
    ("dispatch_latency.csv ranks (import)", FIXTURES / "deepep" / "dispatch_latency_full.csv", latency_csv_ranks),
    (
        "DebugClock legacy CSV",
        FIXTURES / "deepep" / "debugclock" / "legacy" / "node0" / "dispatch_clock" / "dispatch_clock_rank_0.csv",
        debugclock.parse_legacy_csv,
    ),
    ("DebugClock event_map.json", AKL / "event_map.json", debugclock.parse_event_map),
    (
        "DebugClock capture.json",
        CAPTURE / "capture.json",
        lambda p: debugclock.parse_capture(p.parent, debugclock.parse_event_map(AKL / "event_map.json")),
    ),
    ("identity sidecar", None, lambda p: load_identities(p.parent), write_identity),
    ("rank log", None, lambda p: find_pass_lines([p], r"\[rank (?P<rank>\d+)\].*precision check passed"), write_log),
]


def comparable(value):
    """A reader's result in a form == compares (frames by content, dataclasses field by field, paths dropped)."""
    if isinstance(value, pd.DataFrame):
        return value.reset_index(drop=True).astype(str).to_dict("list")  # NaN as "nan": equal to itself
    if isinstance(value, tuple):
        return tuple(comparable(v) for v in value)
    if isinstance(value, dict):
        return {k: comparable(v) for k, v in value.items()}
    if dataclasses.is_dataclass(value):
        return {
            f.name: comparable(getattr(value, f.name))
            for f in dataclasses.fields(value)
            if f.name not in ("source", "path")
        }
    return value


def place(tmp_path: Path, case: tuple, bom: bool) -> Path:
    source, writer = case[1], (case[3] if len(case) > 3 else None)
    directory = (
        tmp_path / ("bom" if bom else "plain") / (source.parent.name if source else "files")
    )  # names a reader reads
    directory.mkdir(parents=True)
    if source is None:
        path = writer(directory)
    else:
        for sibling in source.parent.iterdir():  # a reader may read its neighbours (trace.bin beside capture.json)
            if sibling.is_file() and (sibling == source or sibling.suffix not in (".csv", ".json")):
                shutil.copy(sibling, directory / sibling.name)
        path = directory / source.name
    if bom:
        path.write_bytes(BOM + path.read_bytes())
    return path


@pytest.mark.parametrize("case", READERS, ids=[c[0] for c in READERS])
def test_every_text_reader_reads_a_file_with_a_utf8_bom_as_the_same_file_without(tmp_path, case):
    plain = case[2](place(tmp_path, case, bom=False))
    marked_path = place(tmp_path, case, bom=True)
    assert marked_path.read_bytes().startswith(BOM)
    assert comparable(case[2](marked_path)) == comparable(plain)


# The rank logs are the workflow's own captures of a process's output, read leniently (bad bytes replaced) by design.
USER_FILES = [c for c in READERS if c[0] != "rank log"]


@pytest.mark.parametrize("encoding", ["utf-16", "utf-16-be", "utf-16-le"])
@pytest.mark.parametrize("case", USER_FILES, ids=[c[0] for c in USER_FILES])
def test_every_text_reader_refuses_utf16_naming_the_file_and_the_encoding(tmp_path, case, encoding):
    """The same file re-saved as UTF-16 (Excel's "Unicode Text", with a byte order mark; or without one) ends in the
    reader's own error, naming the file and UTF-16 (and how to convert it, where a mark says which), never in a
    decoding crash or a misleading "binary data" or "header lacks" message. The file is left as it was."""
    path = place(tmp_path, case, bom=False)
    encoded = path.read_bytes().decode("utf-8").encode(encoding)
    path.write_bytes(encoded)
    with pytest.raises(Exception) as caught:
        case[2](path)
    message = str(caught.value)
    assert not isinstance(caught.value, (UnicodeError, json.JSONDecodeError)), message
    assert str(path) in message and "UTF-16" in message, message
    if encoding == "utf-16":
        assert "iconv -f UTF-16" in message, message
    assert path.read_bytes() == encoded
