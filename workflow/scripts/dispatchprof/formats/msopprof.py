"""msopprof (`msprof op`) OPPROF_ directories (shared/formats/msopprof.md §2-3).

Three layouts: one kernel at the root (unsuffixed CSVs), ``<kernel>/<n>/`` (one device), and
``device<id>/<kernel>/<n>/`` (several devices); metric CSVs may carry a 17-digit suffix. Every CSV line ends
with a trailing comma; ``NA``/``N/A`` mean not applicable and stay missing, never 0. Columns are found by
header name (the 950 PipeUtilization set changed between versions: 33 or 34 columns, older orders).
"""

from __future__ import annotations

import csv
import io
import math
import re
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from dispatchprof.formats.text import read_text_file

OPPROF_RE = re.compile(r"^OPPROF_\d{14}_[A-Z]{16}$")
METRIC_FILE_RE = re.compile(r"^(?P<metric>[A-Za-z0-9]{1,30}?)(?:_(?P<stamp>\d{17}))?\.csv$")
SUB_BLOCK_RE = re.compile(r"^(cube|vector)(\d+)$")
NA = {"NA", "N/A", ""}

# The tool's header sets (shared/formats/msopprof.md §3): what "not provided by this tool version" is measured against.
PIPE_950 = (
    "aic_time(us),aic_total_cycles,aic_cube_time(us),aic_cube_ratio,aic_scalar_time(us),aic_scalar_ratio,aic_mte1_time(us),aic_mte1_ratio,"
    "aic_mte1_active_bw(GB/s),aic_mte2_time(us),aic_mte2_ratio,aic_mte2_active_bw(GB/s),aic_mte3_time(us),aic_mte3_ratio,aic_mte3_active_bw(GB/s),"
    "aic_fixpipe_time(us),aic_fixpipe_ratio,aic_fixpipe_active_bw(GB/s),aic_icache_miss_rate,aiv_time(us),aiv_total_cycles,aiv_vec_time(us),"
    "aiv_vec_ratio,aiv_scalar_time(us),aiv_scalar_ratio,aiv_mte2_time(us),aiv_mte2_ratio,aiv_mte2_active_bw(GB/s),aiv_mte3_time(us),aiv_mte3_ratio,"
    "aiv_mte3_active_bw(GB/s),aiv_icache_miss_rate"
).split(",")
PIPE_A2 = (
    "aic_time(us),aic_total_cycles,aic_cube_time(us),aic_cube_ratio,aic_mte1_time(us),aic_mte1_ratio,aic_mte2_time(us),aic_mte2_ratio,"
    "aic_mte3_time(us),aic_mte3_ratio,aic_mte3_active_bw(GB/s),aic_fixpipe_time(us),aic_fixpipe_ratio,aic_fixpipe_active_bw(GB/s),"
    "aic_icache_miss_rate,aic_scalar_time(us),aic_scalar_ratio,aic_scalar_single_time(us),aic_scalar_dual_time(us),aic_scalar_mte1_stall_time(us),"
    "aic_scalar_mte2_stall_time(us),aic_scalar_mte3_stall_time(us),aic_scalar_cube_stall_time(us),aic_scalar_wait_ib_time(us),aic_scalar_wait_time(us),"
    "aiv_time(us),aiv_total_cycles,aiv_vec_time(us),aiv_vec_ratio,aiv_mte2_time(us),aiv_mte2_ratio,aiv_mte2_active_bw(GB/s),aiv_mte3_time(us),"
    "aiv_mte3_ratio,aiv_mte3_active_bw(GB/s),aiv_icache_miss_rate,aiv_scalar_time(us),aiv_scalar_ratio,aiv_scalar_single_time(us),"
    "aiv_scalar_dual_time(us),aiv_scalar_mte2_stall_time(us),aiv_scalar_mte3_stall_time(us),aiv_scalar_stall_by_ub_time(us),"
    "aiv_scalar_vector_stall_time(us),aiv_scalar_wait_ib_time(us),aiv_scalar_wait_time(us)"
).split(",")
A2_MARKERS = {"aiv_scalar_single_time(us)", "aic_scalar_single_time(us)", "aiv_scalar_wait_time(us)"}


class OpprofFormatError(ValueError):
    """An msopprof file that cannot be used; the message names the file, line and field."""


@dataclass(frozen=True)
class KernelRun:
    opprof: Path
    directory: Path
    layout: str  # root | kernel | device
    device: int | None
    kernel: str | None
    n: int | None


def discover(root: Path) -> list[Path]:
    return sorted(p for p in root.iterdir() if p.is_dir() and OPPROF_RE.match(p.name)) if root.is_dir() else []


def _has_run_files(directory: Path) -> bool:
    return any(p.is_file() and (p.name == "visualize_data.bin" or METRIC_FILE_RE.match(p.name)) for p in directory.iterdir())


def kernel_runs(opprof: Path) -> list[KernelRun]:
    """Every profiled launch in one OPPROF_, whatever its layout."""
    if _has_run_files(opprof):
        return [KernelRun(opprof, opprof, "root", None, None, None)]
    runs = []
    for first in sorted(p for p in opprof.iterdir() if p.is_dir() and p.name != "dump"):
        device = re.fullmatch(r"device(\d+)", first.name)
        kernel_dirs = sorted(p for p in first.iterdir() if p.is_dir()) if device else [first]
        for kernel_dir in kernel_dirs:
            for n_dir in sorted((p for p in kernel_dir.iterdir() if p.is_dir() and p.name.isdigit()), key=lambda p: int(p.name)):
                if _has_run_files(n_dir):
                    runs.append(
                        KernelRun(opprof, n_dir, "device" if device else "kernel", int(device.group(1)) if device else None, kernel_dir.name, int(n_dir.name))
                    )
    return runs


def metric_files(directory: Path) -> dict[str, Path]:
    found = {}
    for p in sorted(directory.iterdir()):
        m = METRIC_FILE_RE.match(p.name)
        if p.is_file() and m:
            found[m.group("metric")] = p
    return found


def _rows(path: Path) -> tuple[list[str], list[tuple[int, list[str]]]]:
    text = read_text_file(path, OpprofFormatError)
    try:
        rows = list(csv.reader(io.StringIO(text)))
    except csv.Error as exc:
        raise OpprofFormatError(f"{path}: not a readable CSV ({exc})") from exc

    def strip(row: list[str]) -> list[str]:
        return row[:-1] if row and row[-1].strip() == "" else row  # the writer's trailing comma

    if not rows:
        raise OpprofFormatError(f"{path}: line 1: empty file; expected a header")
    header = [h.strip() for h in strip(rows[0])]
    return header, [(i + 2, strip(r)) for i, r in enumerate(rows[1:]) if any(c.strip() for c in r)]


def _number(path: Path, line: int, field: str, value: str) -> float:
    value = value.strip()
    if value in NA:
        return math.nan
    try:
        number = float(value)
    except ValueError:
        raise OpprofFormatError(f"{path}: line {line}: field '{field}' is {value!r}, expected a number or NA") from None
    if not math.isfinite(number):
        raise OpprofFormatError(f"{path}: line {line}: field '{field}' is {value!r}, expected a finite number")
    return number


def read_metric_csv(path: Path) -> tuple[list[str], pd.DataFrame]:
    """A per-core metric CSV as a long table: block_id, sub_block_id, core_kind, core_index, metric, value (NaN = NA)."""
    header, rows = _rows(path)
    for needed in ("block_id", "sub_block_id"):
        if needed not in header:
            raise OpprofFormatError(f"{path}: line 1: header lacks {needed} (per-core CSVs of A2/A3/950 have it; 310P files are not supported)")
    if len(set(header)) != len(header):
        raise OpprofFormatError(f"{path}: line 1: duplicate column names in the header")
    metrics = [h for h in header if h not in ("block_id", "sub_block_id")]
    bi, si = header.index("block_id"), header.index("sub_block_id")
    records = []
    for line, row in rows:
        if len(row) != len(header):
            raise OpprofFormatError(f"{path}: line {line}: {len(row)} fields, expected {len(header)} as in the header (truncated row?)")
        try:
            block = int(row[bi])
        except ValueError:
            raise OpprofFormatError(f"{path}: line {line}: field 'block_id' is {row[bi]!r}, expected an integer") from None
        sub = SUB_BLOCK_RE.match(row[si].strip())
        if not sub:
            raise OpprofFormatError(f"{path}: line {line}: field 'sub_block_id' is {row[si]!r}, expected cube<k> or vector<k>")
        for name in metrics:
            records.append((block, row[si].strip(), sub.group(1), int(sub.group(2)), name, _number(path, line, name, row[header.index(name)])))
    frame = pd.DataFrame.from_records(records, columns=["block_id", "sub_block_id", "core_kind", "core_index", "metric", "value"])
    return header, frame


def read_op_basic_info(path: Path) -> dict[str, str]:
    header, rows = _rows(path)
    if not rows:
        raise OpprofFormatError(f"{path}: no data row after the header")
    line, row = rows[0]
    if len(row) != len(header):
        raise OpprofFormatError(f"{path}: line {line}: {len(row)} fields, expected {len(header)}")
    info = dict(zip(header, (c.strip() for c in row)))
    # The docs spell them "Device ID"/"PID"; the code writes "Device Id"/"Pid".
    for doc, code in (("Device ID", "Device Id"), ("PID", "Pid")):
        if doc in info and code not in info:
            info[code] = info[doc]
    return info


def header_set(header: list[str]) -> tuple[str, list[str]]:
    """Which chip's PipeUtilization header set a file belongs to."""
    return ("A2/A3", PIPE_A2) if A2_MARKERS & set(header) else ("Ascend 950", PIPE_950)


def missing_columns(header: list[str], frame: pd.DataFrame, op_type: str | None) -> list[str]:
    """Columns of the tool's set for this chip that the file lacks or leaves NA in every row: "not provided
    by this tool version". Only the side the kernel runs on counts (aiv_* for vector, aic_* for cube, both for mix)."""
    _, expected = header_set(header)
    sides = {"vector": ("aiv_",), "cube": ("aic_",)}.get((op_type or "mix").lower(), ("aic_", "aiv_"))
    present = frame.dropna(subset=["value"])["metric"].unique()
    return [c for c in expected if c.startswith(sides) and c not in present]
