"""The column catalogue of msopprof's per-core metric CSVs: each known writer, the columns it writes per CSV (in its
order), the chips it was seen on and where each fact comes from (docs/formats.md §2.5).

A writer is a tool version whose CSV headers are known: the open-source header of `Ascend/msopprof`
(`csrc/op_profiling/profiling/device/data_parse/metric_csv_header.h`, Mulan PSL v2; one entry per distinct version of
its `*For910B_` and `*ForA5_` sets) and the `msprof op` shipped with a CANN release, read from real exports. Those of
CANN 8.3.RC2 and 8.5.2 differ from every open-source version: PipeUtilization in the header's order before e581c4a
followed by the DBI columns `aic_mte1_active_bw,aic_mte2_active_bw` (the order the open-source 950 figure shows too),
and ResourceConflictRatio with `aiv_mte1_wait_ratio`. Column names without block_id/sub_block_id.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Mapping, Sequence

BLOCK_COLUMNS = ("block_id", "sub_block_id")

# Column sets of the open-source header, one per distinct version (`<vector>@<first commit>`), verbatim.
COLUMN_SETS: dict[str, str] = {
    "pipeFor910B_@bac21ac": (
        "aic_time(us),aic_total_cycles,aic_cube_time(us),aic_cube_ratio,aic_scalar_time(us),aic_scalar_ratio,"
        "aic_mte1_time(us),aic_mte1_ratio,aic_mte2_time(us),aic_mte2_ratio,aic_mte3_time(us),aic_mte3_ratio,"
        "aic_mte3_active_bw(GB/s),aic_fixpipe_time(us),aic_fixpipe_ratio,aic_fixpipe_active_bw(GB/s),"
        "aic_icache_miss_rate,aiv_time(us),aiv_total_cycles,aiv_vec_time(us),aiv_vec_ratio,aiv_scalar_time(us),"
        "aiv_scalar_ratio,aiv_mte2_time(us),aiv_mte2_ratio,aiv_mte2_active_bw(GB/s),"
        "aiv_mte3_time(us),aiv_mte3_ratio,aiv_mte3_active_bw(GB/s),aiv_icache_miss_rate"
    ),
    "pipeFor910B_@e581c4a": (
        "aic_time(us),aic_total_cycles,aic_cube_time(us),aic_cube_ratio,aic_mte1_time(us),aic_mte1_ratio,"
        "aic_mte2_time(us),aic_mte2_ratio,aic_mte3_time(us),aic_mte3_ratio,aic_mte3_active_bw(GB/s),"
        "aic_fixpipe_time(us),aic_fixpipe_ratio,aic_fixpipe_active_bw(GB/s),aic_icache_miss_rate,aic_scalar_time(us),"
        "aic_scalar_ratio,aic_scalar_single_time(us),aic_scalar_dual_time(us),aic_scalar_mte1_stall_time(us),"
        "aic_scalar_mte2_stall_time(us),aic_scalar_mte3_stall_time(us),aic_scalar_cube_stall_time(us),"
        "aic_scalar_wait_ib_time(us),aic_scalar_wait_time(us),aiv_time(us),aiv_total_cycles,aiv_vec_time(us),"
        "aiv_vec_ratio,aiv_mte2_time(us),aiv_mte2_ratio,aiv_mte2_active_bw(GB/s),aiv_mte3_time(us),aiv_mte3_ratio,"
        "aiv_mte3_active_bw(GB/s),aiv_icache_miss_rate,aiv_scalar_time(us),aiv_scalar_ratio,"
        "aiv_scalar_single_time(us),aiv_scalar_dual_time(us),aiv_scalar_mte2_stall_time(us),"
        "aiv_scalar_mte3_stall_time(us),aiv_scalar_stall_by_ub_time(us),"
        "aiv_scalar_vector_stall_time(us),aiv_scalar_wait_ib_time(us),aiv_scalar_wait_time(us)"
    ),
    "resourceConflictFor910B_": (
        "aic_time(us),aic_total_cycles,aic_cube_wait_ratio,aic_mte1_wait_ratio,aic_mte2_wait_ratio,aic_mte3_wait_ratio,"
        "aiv_time(us),aiv_total_cycles,aiv_vec_total_cflt_ratio,aiv_vec_bankgroup_cflt_ratio,aiv_vec_bank_cflt_ratio,"
        "aiv_vec_resc_cflt_ratio,aiv_vec_mte_cflt_ratio,aiv_vec_wait_ratio,aiv_mte2_wait_ratio,aiv_mte3_wait_ratio"
    ),
    "arithmeticFor910B_": (
        "aic_time(us),aic_total_cycles,aic_cube_ratio,aic_cube_fp16_ratio,aic_cube_int8_ratio,aic_cube_fops,"
        "aic_cube_total_instr_number,aic_cube_fp_instr_number,aic_cube_int_instr_number,aiv_time(us),aiv_total_cycles,"
        "aiv_vec_ratio,aiv_vec_fp32_ratio,aiv_vec_fp16_ratio,"
        "aiv_vec_int32_ratio,aiv_vec_int16_ratio,aiv_vec_misc_ratio,aiv_vec_fops"
    ),
    "l2CacheFor910B_": (
        "aic_time(us),aic_total_cycles,aic_write_cache_hit,aic_write_cache_miss_allocate,aic_r0_read_cache_hit,"
        "aic_r0_read_cache_miss_allocate,aic_r1_read_cache_hit,aic_r1_read_cache_miss_allocate,aic_write_hit_rate(%),"
        "aic_read_hit_rate(%),aic_total_hit_rate(%),aiv_time(us),aiv_total_cycles,aiv_write_cache_hit,"
        "aiv_write_cache_miss_allocate,aiv_r0_read_cache_hit,aiv_r0_read_cache_miss_allocate,aiv_r1_read_cache_hit,"
        "aiv_r1_read_cache_miss_allocate,aiv_write_hit_rate(%),aiv_read_hit_rate(%),aiv_total_hit_rate(%)"
    ),
    "memoryFor910B_": (
        "aic_time(us),aic_total_cycles,aic_l1_read_bw(GB/s),aic_l1_write_bw(GB/s),aic_main_mem_read_bw(GB/s),"
        "aic_main_mem_write_bw(GB/s),aic_mte1_instructions,aic_mte1_ratio,aic_mte2_instructions,aic_mte2_ratio,"
        "aic_mte3_instructions,aic_mte3_ratio,aiv_time(us),aiv_total_cycles,aiv_ub_to_gm_bw(GB/s),"
        "aiv_gm_to_ub_bw(GB/s),aiv_main_mem_read_bw(GB/s),aiv_main_mem_write_bw(GB/s),aiv_mte2_instructions,"
        "aiv_mte2_ratio,aiv_mte3_instructions,aiv_mte3_ratio,read_main_memory_datas(KB),write_main_memory_datas(KB),"
        "GM_to_L1_datas(KB),GM_to_L1_bw_usage_rate(%),L1_to_GM_datas(KB)(estimate),"
        "L1_to_GM_bw_usage_rate(%)(estimate),L0C_to_L1_datas(KB),L0C_to_L1_bw_usage_rate(%),L0C_to_GM_datas(KB),"
        "L0C_to_GM_bw_usage_rate(%),GM_to_UB_datas(KB),"
        "GM_to_UB_bw_usage_rate(%),UB_to_GM_datas(KB),UB_to_GM_bw_usage_rate(%)"
    ),
    "memoryL0For910B_, memoryL0ForA5_": (
        "aic_time(us),aic_total_cycles,aic_l0a_read_bw(GB/s),aic_l0a_write_bw(GB/s),aic_l0b_read_bw(GB/s),"
        "aic_l0b_write_bw(GB/s),aic_l0c_read_bw_cube(GB/s),aic_l0c_write_bw_cube(GB/s),aiv_time(us),aiv_total_cycles"
    ),
    "memoryUbFor910B_": (
        "aic_time(us),aic_total_cycles,aiv_time(us),aiv_total_cycles,aiv_ub_read_bw_vector(GB/s),"
        "aiv_ub_write_bw_vector(GB/s),aiv_ub_read_bw_scalar(GB/s),aiv_ub_write_bw_scalar(GB/s)"
    ),
    "pipeForA5_@bac21ac, @44ba9d9": (
        "aic_time(us),aic_total_cycles,aic_cube_time(us),aic_cube_ratio,aic_scalar_time(us),aic_scalar_ratio,"
        "aic_mte1_time(us),aic_mte1_ratio,aic_mte1_active_bw(GB/s),aic_mte2_time(us),aic_mte2_ratio,"
        "aic_mte2_active_bw(GB/s),aic_mte3_time(us),aic_mte3_ratio,aic_mte3_active_bw(GB/s),aic_fixpipe_time(us),"
        "aic_fixpipe_ratio,aic_fixpipe_active_bw(GB/s),aic_icache_miss_rate,aiv_time(us),aiv_total_cycles,"
        "aiv_vec_time(us),aiv_vec_ratio,aiv_scalar_time(us),aiv_scalar_ratio,aiv_mte2_time(us),aiv_mte2_ratio,"
        "aiv_mte2_active_bw(GB/s),aiv_mte3_time(us),aiv_mte3_ratio,aiv_mte3_active_bw(GB/s),aiv_icache_miss_rate"
    ),
    "pipeForA5_@79ae61a": (
        "aic_time(us),aic_total_cycles,aic_cube_time(us),aic_cube_ratio,aic_scalar_time(us),aic_scalar_ratio,"
        "aic_mte1_time(us),aic_mte1_ratio,aic_mte1_active_bw(GB/s),aic_mte2_time(us),aic_mte2_ratio,"
        "aic_mte2_active_bw(GB/s),aic_mte3_time(us),aic_mte3_ratio,aic_mte3_active_bw(GB/s),aic_fixpipe_time(us),"
        "aic_fixpipe_ratio,aic_fixpipe_active_bw(GB/s),aic_icache_miss_rate,aiv_time(us),aiv_total_cycles,"
        "aiv_vec_time(us),aiv_vec_ratio,aiv_scalar_time(us),aiv_scalar_ratio,aiv_mte2_time(us),"
        "aiv_mte2_ratio,aiv_mte2_active_bw(GB/s),aiv_mte3_time(us),aiv_mte3_ratio,aiv_icache_miss_rate"
    ),
    "resourceConflictForA5_": (
        "aic_time(us),aic_total_cycles,aic_cube_wait_ratio,aic_mte1_wait_ratio,aic_mte2_wait_ratio,aic_mte3_wait_ratio,"
        "aiv_time(us),aiv_total_cycles,aiv_vec_stu_cflt_ratio,aiv_vec_ldu_cflt_ratio,"
        "aiv_vec_sfu_cflt_ratio,aiv_vec_wait_ratio,aiv_mte2_wait_ratio,aiv_mte3_wait_ratio"
    ),
    "arithmeticForA5_": (
        "aic_time(us),aic_total_cycles,aic_cube_ratio,aic_cube_fp_ratio,aic_cube_int_ratio,aic_cube_total_instr_number,"
        "aic_cube_fp_instr_number,aic_cube_int_instr_number,aiv_time(us),aiv_total_cycles,"
        "aiv_vec_ratio,aiv_vec_vf_ratio,aiv_vec_sfu_ratio,aiv_vec_simt_vf_ratio"
    ),
    "l2CacheForA5_@bac21ac": (
        "aic_time(us),aic_total_cycles,aic_write_cache_hit,aic_write_cache_miss_allocate,aic_r0_read_cache_hit,"
        "aic_r0_read_cache_miss_allocate,aic_write_hit_rate(%),aic_read_hit_rate(%),aic_total_hit_rate(%),aiv_time(us),"
        "aiv_total_cycles,aiv_write_cache_hit,aiv_write_cache_miss_allocate,aiv_r0_read_cache_hit,"
        "aiv_r0_read_cache_miss_allocate,aiv_write_hit_rate(%),aiv_read_hit_rate(%),aiv_total_hit_rate(%)"
    ),
    "l2CacheForA5_@79ae61a, @44ba9d9": (
        "aic_time(us),aic_total_cycles,aic_read_close_hit,aic_read_close_miss,aic_read_close_victim,aic_read_far_hit,"
        "aic_read_far_miss,aic_read_far_victim,aic_read_hit_rate(%),aic_write_close_hit,aic_write_close_miss,"
        "aic_write_close_victim,aic_write_far_hit,aic_write_far_miss,aic_write_far_victim,aic_write_hit_rate(%),"
        "aiv_time(us),aiv_total_cycles,aiv_read_close_hit,aiv_read_close_miss,aiv_read_close_victim,aiv_read_far_hit,"
        "aiv_read_far_miss,aiv_read_far_victim,aiv_read_hit_rate(%),aiv_write_close_hit,aiv_write_close_miss,"
        "aiv_write_close_victim,aiv_write_far_hit,aiv_write_far_miss,aiv_write_far_victim,aiv_write_hit_rate(%)"
    ),
    "memoryForA5_@bac21ac, @44ba9d9": (
        "aic_time(us),aic_total_cycles,aic_l1_read_bw(GB/s),aic_l1_write_bw(GB/s),aic_main_mem_read_bw(GB/s),"
        "aic_main_mem_write_bw(GB/s),aic_mte1_instructions,aic_mte1_ratio,aic_mte2_instructions,aic_mte2_ratio,"
        "aic_mte3_instructions,aic_mte3_ratio,aiv_time(us),aiv_total_cycles,aiv_ub_to_gm_bw(GB/s),"
        "aiv_gm_to_ub_bw(GB/s),aiv_main_mem_read_bw(GB/s),aiv_main_mem_write_bw(GB/s),aiv_mte2_instructions,"
        "aiv_mte2_ratio,aiv_mte3_instructions,aiv_mte3_ratio,read_main_memory_datas(KB),write_main_memory_datas(KB),"
        "GM_to_L1_datas(KB),GM_to_L1_bw_usage_rate(%),L0C_to_L1_datas(KB),L0C_to_L1_bw_usage_rate(%),"
        "L0C_to_GM_datas(KB),L0C_to_GM_bw_usage_rate(%),GM_to_UB_datas(KB),"
        "GM_to_UB_bw_usage_rate(%),UB_to_GM_datas(KB),UB_to_GM_bw_usage_rate(%)"
    ),
    "memoryForA5_@79ae61a": (
        "aic_time(us),aic_total_cycles,aic_l1_read_bw(GB/s),aic_l1_write_bw(GB/s),aic_main_mem_read_bw(GB/s),"
        "aic_main_mem_write_bw(GB/s),aic_mte1_instructions,aic_mte1_ratio,aic_mte2_instructions,aic_mte2_ratio,"
        "aic_mte3_instructions,aic_mte3_ratio,aiv_time(us),aiv_total_cycles,aiv_gm_to_ub_bw(GB/s),"
        "aiv_main_mem_read_bw(GB/s),aiv_main_mem_write_bw(GB/s),aiv_mte2_instructions,aiv_mte2_ratio,"
        "aiv_mte3_instructions,aiv_mte3_ratio,read_main_memory_datas(KB),write_main_memory_datas(KB),"
        "GM_to_L1_datas(KB),GM_to_L1_bw_usage_rate(%),L0C_to_L1_datas(KB),L0C_to_L1_bw_usage_rate(%),"
        "L0C_to_GM_datas(KB),L0C_to_GM_bw_usage_rate(%),GM_to_UB_datas(KB),GM_to_UB_bw_usage_rate(%)"
    ),
    "memoryUbForA5_@bac21ac, @44ba9d9": (
        "aic_time(us),aic_total_cycles,aiv_time(us),aiv_total_cycles,aiv_ub_read_bw_vector(GB/s),"
        "aiv_ub_write_bw_vector(GB/s),aiv_ub_read_bw_gm(GB/s),aiv_ub_write_bw_gm(GB/s)"
    ),
    "memoryUbForA5_@79ae61a": (
        "aic_time(us),aic_total_cycles,aiv_time(us),aiv_total_cycles,"
        "aiv_ub_read_bw_vector(GB/s),aiv_ub_write_bw_vector(GB/s),aiv_ub_write_bw_gm(GB/s)"
    ),
}


def columns(name: str) -> tuple[str, ...]:
    return tuple(COLUMN_SETS[name].split(","))


# CANN 8.3.RC2 and 8.5.2 `msprof op` on Ascend910B2, verbatim from the real exports named in their writers.
PIPE_CANN_8 = columns("pipeFor910B_@bac21ac") + ("aic_mte1_active_bw(GB/s)", "aic_mte2_active_bw(GB/s)")
RESOURCE_CONFLICT_CANN_8 = (
    "aic_time(us),aic_total_cycles,aic_cube_wait_ratio,aic_mte1_wait_ratio,aic_mte2_wait_ratio,aic_mte3_wait_ratio,"
    "aiv_time(us),aiv_total_cycles,aiv_vec_total_cflt_ratio,aiv_vec_bankgroup_cflt_ratio,aiv_vec_bank_cflt_ratio,"
    "aiv_vec_resc_cflt_ratio,aiv_vec_mte_cflt_ratio,aiv_vec_wait_ratio,"
    "aiv_mte1_wait_ratio,aiv_mte2_wait_ratio,aiv_mte3_wait_ratio"
).split(",")
# Columns a writer appends only when it has their data: A2/A3 scalar waits per sync id (string-sorted, non-zero only)
# and the DBI bandwidths (pipeDbiFor910B_). Present or not, they are the writer's, never "new".
OPTIONAL_910B = re.compile(r"^(aic|aiv)_scalar_wait_id\d+_time\(us\)$|^aic_mte[12]_active_bw\(GB/s\)$")
NEVER_OPTIONAL = re.compile(r"^$")
MSO = "Ascend/msopprof csrc/op_profiling/profiling/device/data_parse/metric_csv_header.h"
REAL_EXPORTS = (
    "neo-pan/ascend-msprof-skill"  # public, but without a licence: its files are read, not copied (docs/formats.md §5)
)


@dataclass(frozen=True)
class Writer:
    """One tool version's per-core CSVs: metric set -> its columns in the order it writes them."""

    name: str
    seen_on: str  # the chips it was seen on (real exports), or written for (by the header's own name)
    family: str | None  # the chip family whose columns these are, when the source says it
    source: str
    files: dict[str, tuple[str, ...]] = field(default_factory=dict)
    optional: re.Pattern[str] = NEVER_OPTIONAL


def _910b(pipe: str) -> dict[str, tuple[str, ...]]:
    return {
        "PipeUtilization": columns(pipe),
        "ResourceConflictRatio": columns("resourceConflictFor910B_"),
        "ArithmeticUtilization": columns("arithmeticFor910B_"),
        "L2Cache": columns("l2CacheFor910B_"),
        "Memory": columns("memoryFor910B_"),
        "MemoryL0": columns("memoryL0For910B_, memoryL0ForA5_"),
        "MemoryUB": columns("memoryUbFor910B_"),
    }


def _a5(pipe: str, l2: str, memory: str, ub: str) -> dict[str, tuple[str, ...]]:
    return {
        "PipeUtilization": columns(pipe),
        "ResourceConflictRatio": columns("resourceConflictForA5_"),
        "ArithmeticUtilization": columns("arithmeticForA5_"),
        "L2Cache": columns(l2),
        "Memory": columns(memory),
        "MemoryL0": columns("memoryL0For910B_, memoryL0ForA5_"),
        "MemoryUB": columns(ub),
    }


A2_A3, ASCEND_950 = "A2/A3", "Ascend 950"
_CANN_8 = _910b("pipeFor910B_@bac21ac") | {
    "PipeUtilization": PIPE_CANN_8,
    "ResourceConflictRatio": tuple(RESOURCE_CONFLICT_CANN_8),
}
# Shipped writers first (seen in real exports): named first in a tie, and the measure of "not provided" when tied.
WRITERS: tuple[Writer, ...] = (
    Writer(
        "CANN 8.5.2 msprof op",
        "seen on Ascend910B2",
        A2_A3,
        f"{REAL_EXPORTS} tests/fixtures/real_cann852_workload_pair (npu-smi 910B2, toolkit 8.5.2) @0b4836b",
        {
            m: _CANN_8[m]
            for m in ("PipeUtilization", "ResourceConflictRatio", "ArithmeticUtilization", "L2Cache", "Memory")
        },
    ),
    Writer(
        "CANN 8.3.RC2 msprof op",
        "seen on Ascend910B2",
        A2_A3,
        f"{REAL_EXPORTS} tests/fixtures/real_default_vector_minimal (npu-smi 910B2, version.cfg 8.3.RC2) @bc4ae25",
        {
            m: _CANN_8[m]
            for m in (
                "PipeUtilization",
                "ResourceConflictRatio",
                "ArithmeticUtilization",
                "Memory",
                "MemoryL0",
                "MemoryUB",
            )
        },
    ),
    Writer(
        "msopprof *For910B_ e581c4a..d6c29df",
        "written for Atlas A2/A3, by its name",
        A2_A3,
        f"{MSO} @d6c29df",
        _910b("pipeFor910B_@e581c4a"),
        OPTIONAL_910B,
    ),
    Writer(
        "msopprof *For910B_ bac21ac..79ae61a",
        "written for Atlas A2/A3, by its name",
        A2_A3,
        f"{MSO} @bac21ac",
        _910b("pipeFor910B_@bac21ac"),
        OPTIONAL_910B,
    ),
    Writer(
        "msopprof *ForA5_ 44ba9d9..d6c29df",
        "written for Ascend 950, by its name",
        ASCEND_950,
        f"{MSO} @d6c29df",
        _a5(
            "pipeForA5_@bac21ac, @44ba9d9",
            "l2CacheForA5_@79ae61a, @44ba9d9",
            "memoryForA5_@bac21ac, @44ba9d9",
            "memoryUbForA5_@bac21ac, @44ba9d9",
        ),
    ),
    Writer(
        "msopprof *ForA5_ 79ae61a..e581c4a",
        "written for Ascend 950, by its name",
        ASCEND_950,
        f"{MSO} @79ae61a",
        _a5("pipeForA5_@79ae61a", "l2CacheForA5_@79ae61a, @44ba9d9", "memoryForA5_@79ae61a", "memoryUbForA5_@79ae61a"),
    ),
    Writer(
        "msopprof *ForA5_ bac21ac",
        "written for Ascend 950, by its name",
        ASCEND_950,
        f"{MSO} @bac21ac",
        _a5(
            "pipeForA5_@bac21ac, @44ba9d9",
            "l2CacheForA5_@bac21ac",
            "memoryForA5_@bac21ac, @44ba9d9",
            "memoryUbForA5_@bac21ac, @44ba9d9",
        ),
    ),
)


@dataclass(frozen=True)
class Fit:
    """How one writer's columns for a metric CSV fit a file's header: the file holds every column the writer writes;
    ``new`` are the file's columns the writer does not write (nor may append); ``in_order`` whether the writer's
    columns stand in the writer's order, any it may append after them."""

    writer: Writer
    new: tuple[str, ...]
    in_order: bool


def fit(writer: Writer, metric: str, header: Sequence[str]) -> Fit | None:
    """None when the writer does not catalogue this CSV or the file lacks one of its columns."""
    expected = writer.files.get(metric)
    present = [c for c in header if c not in BLOCK_COLUMNS]
    if expected is None or not set(expected) <= set(present):
        return None
    new = tuple(c for c in present if c not in expected and not writer.optional.match(c))
    # The columns a writer may append come after its own: a file with them inline is in another order.
    appended = [c for c in present if c not in expected and writer.optional.match(c)]
    return Fit(writer, new, [c for c in present if c in expected or c in appended] == list(expected) + appended)


def _rank(fits: Sequence[Fit]) -> tuple[int, int]:
    """Fewer new columns first, then fewer files out of order: order is evidence, but a set match still fits."""
    return sum(len(f.new) for f in fits), sum(not f.in_order for f in fits)


def launch_writers(headers: Mapping[str, Sequence[str]]) -> list[Writer]:
    """The writers whose columns fit every metric CSV of one launch that they catalogue (PipeUtilization at least),
    the best-ranked ones only, in catalogue order; [] when none fits."""
    scored = []
    for writer in WRITERS:
        if "PipeUtilization" not in writer.files or "PipeUtilization" not in headers:
            continue
        fits = [fit(writer, metric, header) for metric, header in headers.items() if metric in writer.files]
        if all(f is not None for f in fits):
            scored.append((_rank([f for f in fits if f is not None]), writer))
    best = min((rank for rank, _ in scored), default=None)
    return [writer for rank, writer in scored if rank == best]


def file_fit(metric: str, header: Sequence[str], preferred: Sequence[Writer]) -> Fit | None:
    """The best fit of one CSV: among the launch's writers (``preferred``) that catalogue it, else among all."""
    for pool in (preferred, WRITERS):
        fits = [f for f in (fit(w, metric, header) for w in pool) if f is not None]
        if fits:
            return min(fits, key=lambda f: _rank([f]))  # min keeps the first of equals: catalogue order
    return None


def unknown_columns(metric: str, header: Sequence[str]) -> tuple[str, ...]:
    """Columns that no writer of the catalogue writes for this CSV: what is new when no writer fits."""
    known = {c for w in WRITERS for c in w.files.get(metric, ())}
    return tuple(c for c in header if c not in BLOCK_COLUMNS and c not in known and not OPTIONAL_910B.match(c))


def describe(writers: Sequence[Writer]) -> str:
    """'columns of the <writer> writer (seen on <chips>)', or 'columns of no known writer'."""
    if not writers:
        return "columns of no known writer"
    names = " / ".join(w.name for w in writers)
    seen = "; ".join(dict.fromkeys(w.seen_on for w in writers))
    return f"columns of the {names} writer{'s' if len(writers) > 1 else ''} ({seen})"
