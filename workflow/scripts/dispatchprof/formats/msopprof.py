"""msopprof (`msprof op`) OPPROF_ directories (docs/formats.md §2-3).

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
from typing import TYPE_CHECKING, Sequence

if TYPE_CHECKING:
    import pandas as pd

from dispatchprof.formats.msopprof_writers import (
    A2_A3,
    ASCEND_950,
    WRITERS,
    Writer,
    describe,
    file_fit,
    launch_writers,
    unknown_columns,
)
from dispatchprof.formats.names import OPPROF_RE
from dispatchprof.formats.text import read_text_file

METRIC_FILE_RE = re.compile(r"^(?P<metric>[A-Za-z0-9]{1,30}?)(?:_(?P<stamp>\d{17}))?\.csv$")
SUB_BLOCK_RE = re.compile(r"^(cube|vector)(\d+)$")
NA = {"NA", "N/A", ""}

# The writers' per-core CSV headers (formats/msopprof_writers.py, docs/formats.md §2.5): which one wrote a launch's
# files is judged from its columns (judge_columns), and "not provided by this tool version" is measured against that
# writer. CATALOGUE keeps the newest open-source header set per chip family: what a chip named
# by the data expects when no writer's columns fit its files. Without block_id/sub_block_id.
_NEWEST = {A2_A3: "msopprof *For910B_ e581c4a..d6c29df", ASCEND_950: "msopprof *ForA5_ 44ba9d9..d6c29df"}
CATALOGUE: dict[str, dict[str, list[str]]] = {
    family: {metric: list(cols) for metric, cols in next(w for w in WRITERS if w.name == name).files.items()}
    for family, name in _NEWEST.items()
}
PIPE_950, PIPE_A2 = CATALOGUE[ASCEND_950]["PipeUtilization"], CATALOGUE[A2_A3]["PipeUtilization"]
OTHER_950 = {name: cols for name, cols in CATALOGUE[ASCEND_950].items() if name != "PipeUtilization"}

# The per-core metric CSVs msopprof writes, one per enabled PMU metric (METRICS_CSV_MAP, docs/formats.md §2);
# `Default` turns on all seven. Each is parsed and shown; any other --aic-metrics value writes no per-core CSV whose
# format is documented, and the config schema refuses it for pmu.metrics.
PMU_METRIC_CSVS = (
    "PipeUtilization",
    "ArithmeticUtilization",
    "L2Cache",
    "Memory",
    "MemoryL0",
    "MemoryUB",
    "ResourceConflictRatio",
)
# Soc names (msopprof's `Run Soc Version`, acl.get_soc_name(), npu-smi's Name, a db's NPU_INFO) -> chip family.
# npu-smi writes the name without "Ascend" (910B2).
_SOC_FAMILIES = (
    (re.compile(r"^(Ascend ?)?910(B|_93|C)", re.I), A2_A3),
    (re.compile(r"^(Ascend ?)?950", re.I), ASCEND_950),
)
UNKNOWN_CHIP = "chip unknown"


def soc_family(soc: str) -> str | None:
    """The chip family of a SoC name (Ascend910B2, Ascend910_9392, Ascend950PR_9599...), None if not one of ours."""
    return next((family for regex, family in _SOC_FAMILIES if regex.match(soc.strip())), None)


@dataclass(frozen=True)
class Chip:
    """The chip a launch was profiled on: its name as the data says it and where it was read, with its family; or, when
    no file names it, UNKNOWN_CHIP with the writer its columns fit as the source (never a chip guessed from columns).
    ``columns`` says which writer's columns the files hold, whatever named the chip."""

    name: str
    family: str | None
    source: str
    columns: str = ""

    def as_dict(self) -> dict[str, str | None]:
        return {"name": self.name, "family": self.family, "source": self.source, "columns": self.columns}


@dataclass(frozen=True)
class ColumnVerdict:
    """What a launch's metric CSVs say of their writer: the best-fitting writers ([] = no known writer), and per
    metric set the columns "not provided" is judged against and the columns no fitting writer writes (kept, listed)."""

    writers: tuple[Writer, ...]
    expected: dict[str, list[str]]
    new: dict[str, list[str]]

    def described(self) -> str:
        return describe(self.writers)


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
    return any(
        p.is_file() and (p.name == "visualize_data.bin" or METRIC_FILE_RE.match(p.name)) for p in directory.iterdir()
    )


def kernel_runs(opprof: Path) -> list[KernelRun]:
    """Every profiled launch in one OPPROF_, whatever its layout."""
    if _has_run_files(opprof):
        return [KernelRun(opprof, opprof, "root", None, None, None)]
    runs = []
    for first in sorted(p for p in opprof.iterdir() if p.is_dir() and p.name != "dump"):
        device = re.fullmatch(r"device(\d+)", first.name)
        kernel_dirs = sorted(p for p in first.iterdir() if p.is_dir()) if device else [first]
        for kernel_dir in kernel_dirs:
            for n_dir in sorted(
                (p for p in kernel_dir.iterdir() if p.is_dir() and p.name.isdigit()), key=lambda p: int(p.name)
            ):
                if _has_run_files(n_dir):
                    runs.append(
                        KernelRun(
                            opprof,
                            n_dir,
                            "device" if device else "kernel",
                            int(device.group(1)) if device else None,
                            kernel_dir.name,
                            int(n_dir.name),
                        )
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
    """A per-core metric CSV as a long table: block_id, sub_block_id,
    core_kind, core_index, metric, value (NaN = NA)."""
    import pandas as pd  # here, not at the top: jobs that only discover OPPROF_ directories need no pandas

    header, rows = _rows(path)
    for needed in ("block_id", "sub_block_id"):
        if needed not in header:
            raise OpprofFormatError(
                f"{path}: line 1: header lacks {needed} (per-core CSVs "
                "of A2/A3/950 have it; 310P files are not supported)"
            )
    if len(set(header)) != len(header):
        raise OpprofFormatError(f"{path}: line 1: duplicate column names in the header")
    metrics = [h for h in header if h not in ("block_id", "sub_block_id")]
    bi, si = header.index("block_id"), header.index("sub_block_id")
    records = []
    for line, row in rows:
        if len(row) != len(header):
            raise OpprofFormatError(
                f"{path}: line {line}: {len(row)} fields, expected {len(header)} as in the header (truncated row?)"
            )
        try:
            block = int(row[bi])
        except ValueError:
            raise OpprofFormatError(
                f"{path}: line {line}: field 'block_id' is {row[bi]!r}, expected an integer"
            ) from None
        sub = SUB_BLOCK_RE.match(row[si].strip())
        if not sub:
            raise OpprofFormatError(
                f"{path}: line {line}: field 'sub_block_id' is {row[si]!r}, expected cube<k> or vector<k>"
            )
        for name in metrics:
            records.append(
                (
                    block,
                    row[si].strip(),
                    sub.group(1),
                    int(sub.group(2)),
                    name,
                    _number(path, line, name, row[header.index(name)]),
                )
            )
    frame = pd.DataFrame.from_records(
        records, columns=["block_id", "sub_block_id", "core_kind", "core_index", "metric", "value"]
    )
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


def read_key_values(path: Path) -> dict[str, str]:
    """dump/op_basic_info.txt: one `key=value` a line (`Run Soc Version=Ascend910B2`, `Rated Freq=1800`)."""
    pairs = {}
    for line in read_text_file(path, OpprofFormatError).splitlines():
        key, sep, value = line.partition("=")
        if sep:
            pairs[key.strip()] = value.strip()
    return pairs


def run_chip(directory: Path, opprof: Path | None = None) -> Chip | None:
    """The chip one profiled launch names itself: `Run Soc Version` of its dump/op_basic_info.txt (the writer's
    DataCollectInDevice::SaveBasicInfo; in the launch directory, or at the OPPROF_ root for the one-kernel layout).
    OpBasicInfo.csv carries no chip (its 9 columns, OpBasicHeaderFor910B/ForA5). None when no file says it."""
    for base in (directory, opprof):
        path = base / "dump" / "op_basic_info.txt" if base is not None else None
        if path is not None and path.is_file():
            soc = read_key_values(path).get("Run Soc Version", "")
            if soc and soc.upper() not in NA:
                return Chip(soc, soc_family(soc), "Run Soc Version in dump/op_basic_info.txt")
    return None


def columns_chip(verdict: ColumnVerdict) -> Chip:
    """The chip of a launch whose files do not name it: unknown, with the writer its columns fit as the only evidence.
    Never a chip name from columns: the same columns were seen on more than one chip family (docs/formats.md §2.5)."""
    return Chip(UNKNOWN_CHIP, None, verdict.described(), verdict.described())


def judge_columns(headers: dict[str, list[str]], family: str | None) -> ColumnVerdict:
    """Which writer wrote one launch's metric CSVs (metric set -> header), and what each file is measured against:
    the columns of the best writer that fits it; else, for a chip whose family the data names, that family's newest
    open-source header set; else the file's own header (only all-NA columns are then "not provided")."""
    writers = tuple(launch_writers(headers))
    expected: dict[str, list[str]] = {}
    new: dict[str, list[str]] = {}
    for metric, header in headers.items():
        fitted = file_fit(metric, header, writers)
        if fitted is not None:
            expected[metric], new[metric] = list(fitted.writer.files[metric]), list(fitted.new)
            continue
        own = [h for h in header if h not in ("block_id", "sub_block_id")]
        expected[metric] = CATALOGUE.get(family or "", {}).get(metric, own)
        new[metric] = list(unknown_columns(metric, header))
    return ColumnVerdict(writers, expected, new)


def requested_metric_csvs(metrics: Sequence[str]) -> list[str]:
    """The per-core metric CSVs an --aic-metrics list makes msopprof write, in PMU_METRIC_CSVS order. Matched
    case-insensitively, as the tool does; `Default` (and
    `Roofline`/`MemoryDetail`, which turn it on) means all seven."""
    lowered = {m.lower() for m in metrics}
    if lowered & {"default", "roofline", "memorydetail"}:
        return list(PMU_METRIC_CSVS)
    return [m for m in PMU_METRIC_CSVS if m.lower() in lowered]


def missing_columns(
    header: list[str], frame: pd.DataFrame, op_type: str | None, expected: Sequence[str] | None = None
) -> list[str]:
    """Columns of the tool's set for this chip that the file lacks or leaves NA in every row: "not provided
    by this tool version". Only the side the kernel runs on counts (aiv_* for vector, aic_* for cube, both for mix);
    columns of neither side (Memory's data volumes) never count, as the docs do not say which side fills them.
    ``expected`` (the writer's columns, judge_columns) defaults to the file's own header."""
    expected = list(expected) if expected is not None else [h for h in header if h not in ("block_id", "sub_block_id")]
    sides = {"vector": ("aiv_",), "cube": ("aic_",)}.get((op_type or "mix").lower(), ("aic_", "aiv_"))
    present = frame.dropna(subset=["value"])["metric"].unique()
    return [c for c in expected if c.startswith(sides) and c not in present]
