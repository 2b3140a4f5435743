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

from dispatchprof.formats.names import OPPROF_RE
from dispatchprof.formats.text import read_text_file

METRIC_FILE_RE = re.compile(r"^(?P<metric>[A-Za-z0-9]{1,30}?)(?:_(?P<stamp>\d{17}))?\.csv$")
SUB_BLOCK_RE = re.compile(r"^(cube|vector)(\d+)$")
NA = {"NA", "N/A", ""}

# The writer's per-core CSV headers per chip family (Ascend/msopprof
# csrc/op_profiling/profiling/device/data_parse/metric_csv_header.h: `*For910B_` is the header set of the Atlas A2 and A3
# chips (Ascend910B*, Ascend910_93*), `*ForA5_` that of the Ascend 950; docs/formats.md §2). What "not
# provided by this tool version" is measured against. Without block_id/sub_block_id.
A2_A3, ASCEND_950 = "A2/A3", "Ascend 950"
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

# The per-core metric CSVs msopprof writes, one per enabled PMU metric (METRICS_CSV_MAP, docs/formats.md §2);
# `Default` turns on all seven. Their headers per chip family are the writer's (above), so each is parsed and shown; any
# other --aic-metrics value writes no per-core CSV whose format is documented, and the config schema refuses it for pmu.metrics.
PMU_METRIC_CSVS = (
    "PipeUtilization",
    "ArithmeticUtilization",
    "L2Cache",
    "Memory",
    "MemoryL0",
    "MemoryUB",
    "ResourceConflictRatio",
)
_L2 = (
    "read_close_hit,read_close_miss,read_close_victim,read_far_hit,read_far_miss,read_far_victim,read_hit_rate(%),"
    "write_close_hit,write_close_miss,write_close_victim,write_far_hit,write_far_miss,write_far_victim,write_hit_rate(%)"
).split(",")
_L2_A2 = (
    "write_cache_hit,write_cache_miss_allocate,r0_read_cache_hit,r0_read_cache_miss_allocate,r1_read_cache_hit,r1_read_cache_miss_allocate,"
    "write_hit_rate(%),read_hit_rate(%),total_hit_rate(%)"
).split(",")
# Columns per metric set, without block_id/sub_block_id: aic_time(us),aic_total_cycles,<aic>,aiv_time(us),aiv_total_cycles,<aiv>[,<both>].
_SIDES = {
    ASCEND_950: {
        "ArithmeticUtilization": (
            "aic_cube_ratio,aic_cube_fp_ratio,aic_cube_int_ratio,aic_cube_total_instr_number,aic_cube_fp_instr_number,aic_cube_int_instr_number",
            "aiv_vec_ratio,aiv_vec_vf_ratio,aiv_vec_sfu_ratio,aiv_vec_simt_vf_ratio",
            "",
        ),
        "L2Cache": (",".join(f"aic_{c}" for c in _L2), ",".join(f"aiv_{c}" for c in _L2), ""),
        "Memory": (
            "aic_l1_read_bw(GB/s),aic_l1_write_bw(GB/s),aic_main_mem_read_bw(GB/s),aic_main_mem_write_bw(GB/s),aic_mte1_instructions,aic_mte1_ratio,"
            "aic_mte2_instructions,aic_mte2_ratio,aic_mte3_instructions,aic_mte3_ratio",
            "aiv_ub_to_gm_bw(GB/s),aiv_gm_to_ub_bw(GB/s),aiv_main_mem_read_bw(GB/s),aiv_main_mem_write_bw(GB/s),aiv_mte2_instructions,aiv_mte2_ratio,"
            "aiv_mte3_instructions,aiv_mte3_ratio",
            "read_main_memory_datas(KB),write_main_memory_datas(KB),GM_to_L1_datas(KB),GM_to_L1_bw_usage_rate(%),L0C_to_L1_datas(KB),"
            "L0C_to_L1_bw_usage_rate(%),L0C_to_GM_datas(KB),L0C_to_GM_bw_usage_rate(%),GM_to_UB_datas(KB),GM_to_UB_bw_usage_rate(%),UB_to_GM_datas(KB),"
            "UB_to_GM_bw_usage_rate(%)",
        ),
        "MemoryL0": (
            "aic_l0a_read_bw(GB/s),aic_l0a_write_bw(GB/s),aic_l0b_read_bw(GB/s),aic_l0b_write_bw(GB/s),aic_l0c_read_bw_cube(GB/s),aic_l0c_write_bw_cube(GB/s)",
            "",
            "",
        ),
        "MemoryUB": (
            "",
            "aiv_ub_read_bw_vector(GB/s),aiv_ub_write_bw_vector(GB/s),aiv_ub_read_bw_gm(GB/s),aiv_ub_write_bw_gm(GB/s)",
            "",
        ),
        "ResourceConflictRatio": (
            "aic_cube_wait_ratio,aic_mte1_wait_ratio,aic_mte2_wait_ratio,aic_mte3_wait_ratio",
            "aiv_vec_stu_cflt_ratio,aiv_vec_ldu_cflt_ratio,aiv_vec_sfu_cflt_ratio,aiv_vec_wait_ratio,aiv_mte2_wait_ratio,aiv_mte3_wait_ratio",
            "",
        ),
    },
    A2_A3: {
        "ArithmeticUtilization": (
            "aic_cube_ratio,aic_cube_fp16_ratio,aic_cube_int8_ratio,aic_cube_fops,aic_cube_total_instr_number,aic_cube_fp_instr_number,"
            "aic_cube_int_instr_number",
            "aiv_vec_ratio,aiv_vec_fp32_ratio,aiv_vec_fp16_ratio,aiv_vec_int32_ratio,aiv_vec_int16_ratio,aiv_vec_misc_ratio,aiv_vec_fops",
            "",
        ),
        "L2Cache": (",".join(f"aic_{c}" for c in _L2_A2), ",".join(f"aiv_{c}" for c in _L2_A2), ""),
        "Memory": (
            "aic_l1_read_bw(GB/s),aic_l1_write_bw(GB/s),aic_main_mem_read_bw(GB/s),aic_main_mem_write_bw(GB/s),aic_mte1_instructions,aic_mte1_ratio,"
            "aic_mte2_instructions,aic_mte2_ratio,aic_mte3_instructions,aic_mte3_ratio",
            "aiv_ub_to_gm_bw(GB/s),aiv_gm_to_ub_bw(GB/s),aiv_main_mem_read_bw(GB/s),aiv_main_mem_write_bw(GB/s),aiv_mte2_instructions,aiv_mte2_ratio,"
            "aiv_mte3_instructions,aiv_mte3_ratio",
            "read_main_memory_datas(KB),write_main_memory_datas(KB),GM_to_L1_datas(KB),GM_to_L1_bw_usage_rate(%),L1_to_GM_datas(KB)(estimate),"
            "L1_to_GM_bw_usage_rate(%)(estimate),L0C_to_L1_datas(KB),L0C_to_L1_bw_usage_rate(%),L0C_to_GM_datas(KB),L0C_to_GM_bw_usage_rate(%),"
            "GM_to_UB_datas(KB),GM_to_UB_bw_usage_rate(%),UB_to_GM_datas(KB),UB_to_GM_bw_usage_rate(%)",
        ),
        "MemoryL0": (
            "aic_l0a_read_bw(GB/s),aic_l0a_write_bw(GB/s),aic_l0b_read_bw(GB/s),aic_l0b_write_bw(GB/s),aic_l0c_read_bw_cube(GB/s),aic_l0c_write_bw_cube(GB/s)",
            "",
            "",
        ),
        "MemoryUB": (
            "",
            "aiv_ub_read_bw_vector(GB/s),aiv_ub_write_bw_vector(GB/s),aiv_ub_read_bw_scalar(GB/s),aiv_ub_write_bw_scalar(GB/s)",
            "",
        ),
        "ResourceConflictRatio": (
            "aic_cube_wait_ratio,aic_mte1_wait_ratio,aic_mte2_wait_ratio,aic_mte3_wait_ratio",
            "aiv_vec_total_cflt_ratio,aiv_vec_bankgroup_cflt_ratio,aiv_vec_bank_cflt_ratio,aiv_vec_resc_cflt_ratio,aiv_vec_mte_cflt_ratio,"
            "aiv_vec_wait_ratio,aiv_mte2_wait_ratio,aiv_mte3_wait_ratio",
            "",
        ),
    },
}
CATALOGUE: dict[str, dict[str, list[str]]] = {
    family: {
        "PipeUtilization": pipe,
        **{
            name: [
                c
                for c in (
                    "aic_time(us),aic_total_cycles," + aic + ",aiv_time(us),aiv_total_cycles," + aiv + "," + both
                ).split(",")
                if c
            ]
            for name, (aic, aiv, both) in _SIDES[family].items()
        },
    }
    for family, pipe in ((ASCEND_950, PIPE_950), (A2_A3, PIPE_A2))
}
OTHER_950 = {name: cols for name, cols in CATALOGUE[ASCEND_950].items() if name != "PipeUtilization"}
# Soc names (msopprof's `Run Soc Version`, acl.get_soc_name(), npu-smi's Name) -> chip family.
_SOC_FAMILIES = ((re.compile(r"^Ascend ?910(B|_93|C)", re.I), A2_A3), (re.compile(r"^Ascend ?950", re.I), ASCEND_950))
INFERRED = "inferred from the CSV columns"


def soc_family(soc: str) -> str | None:
    """The chip family of a SoC name (Ascend910B2, Ascend910_9392, Ascend950PR_9599...), None if not one of ours."""
    return next((family for regex, family in _SOC_FAMILIES if regex.match(soc.strip())), None)


@dataclass(frozen=True)
class Chip:
    """The chip a run was profiled on: its name as the data says it (or the family when only inferred), its family
    (whose header catalogue applies) and where it was read."""

    name: str
    family: str | None
    source: str

    def as_dict(self) -> dict[str, str | None]:
        return {"name": self.name, "family": self.family, "source": self.source}


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
    """A per-core metric CSV as a long table: block_id, sub_block_id, core_kind, core_index, metric, value (NaN = NA)."""
    import pandas as pd  # here, not at the top: jobs that only discover OPPROF_ directories need no pandas

    header, rows = _rows(path)
    for needed in ("block_id", "sub_block_id"):
        if needed not in header:
            raise OpprofFormatError(
                f"{path}: line 1: header lacks {needed} (per-core CSVs of A2/A3/950 have it; 310P files are not supported)"
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


def header_set(header: list[str]) -> tuple[str, list[str]]:
    """Which chip family's PipeUtilization header set a file's columns look like: the last resort when the data does
    not name its chip (run_chip). A2/A3 files hold scalar single/dual/stall columns (pipeFor910B_), which some tool
    versions leave out; there the order tells: A2/A3 write aic_scalar_* after aic_icache_miss_rate, the 950 before
    aic_mte1 (pipeForA5_ and the older 950 order alike)."""
    if A2_MARKERS & set(header):
        return A2_A3, PIPE_A2
    if "aic_scalar_time(us)" in header and "aic_icache_miss_rate" in header:
        if header.index("aic_scalar_time(us)") > header.index("aic_icache_miss_rate"):
            return A2_A3, PIPE_A2
    return ASCEND_950, PIPE_950


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


def inferred_chip(header: list[str]) -> Chip:
    family = header_set(header)[0]
    return Chip(family, family, INFERRED)


def requested_metric_csvs(metrics: Sequence[str]) -> list[str]:
    """The per-core metric CSVs an --aic-metrics list makes msopprof write, in PMU_METRIC_CSVS order. Matched
    case-insensitively, as the tool does; `Default` (and `Roofline`/`MemoryDetail`, which turn it on) means all seven."""
    lowered = {m.lower() for m in metrics}
    if lowered & {"default", "roofline", "memorydetail"}:
        return list(PMU_METRIC_CSVS)
    return [m for m in PMU_METRIC_CSVS if m.lower() in lowered]


def expected_columns(metric: str, header: list[str], family: str | None) -> list[str]:
    """The tool's columns for a metric set on this chip family, to tell "not provided" (a column this chip's tool
    writes and this file lacks) from present. A chip not in the catalogue: the file's own header is the expectation."""
    if family in CATALOGUE and metric in CATALOGUE[family]:
        return CATALOGUE[family][metric]
    return [h for h in header if h not in ("block_id", "sub_block_id")]


def missing_columns(
    header: list[str], frame: pd.DataFrame, op_type: str | None, expected: Sequence[str] | None = None
) -> list[str]:
    """Columns of the tool's set for this chip that the file lacks or leaves NA in every row: "not provided
    by this tool version". Only the side the kernel runs on counts (aiv_* for vector, aic_* for cube, both for mix);
    columns of neither side (Memory's data volumes) never count, as the docs do not say which side fills them.
    ``expected`` defaults to the PipeUtilization header set of the file."""
    expected = list(expected) if expected is not None else header_set(header)[1]
    sides = {"vector": ("aiv_",), "cube": ("aic_",)}.get((op_type or "mix").lower(), ("aic_", "aiv_"))
    present = frame.dropna(subset=["value"])["metric"].unique()
    return [c for c in expected if c.startswith(sides) and c not in present]
