"""msopprof's visualize_data.bin (docs/formats.md §2): appended blocks, each a 12-byte
little-endian header (uint64 contentSize; uint8 type, padding, version, reserved) and contentSize bytes of
mostly UTF-8 JSON, padded with NULs to 4 bytes (the padding is counted in contentSize). CODE blocks (0x1)
carry a 4096-byte file path before their content. Unknown block types are skipped."""

from __future__ import annotations

import json
import math
import struct
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator

HEADER = struct.Struct("<QBBBB")
CODE, TRACE, FILE_API, INSTR_API, OP_BASIC_INFO, TOP_STALL_REASON = 0x1, 0x2, 0x3, 0x4, 0x5, 0xF
KNOWN = {
    0x1: "Code",
    0x2: "Trace",
    0x3: "FileApi",
    0x4: "InstrApi",
    0x5: "OpBasicInfo",
    0x6: "ComputeLoadFigure",
    0x7: "ComputeLoadTable",
    0x8: "StorageAccessHeatMap",
    0x9: "StorageAccessTable",
    0xC: "OccupancyMap",
    0xD: "RoofLine",
    0xE: "CacheLineHeatMap",
    0xF: "TopStallReason",
}
JSON_TYPES = {TRACE, FILE_API, INSTR_API, OP_BASIC_INFO, TOP_STALL_REASON}
STATES = [
    "IBuf_Empty",
    "Nop_Cycles",
    "Scoreboard_Not_Ready",
    "Register_bank_conflict",
    "Resource_conflict",
    "Warp_Level_Sync",
    "Divergence_Stack_Spill",
    "Others",
    "Active",
]
ALL, NOT_ISSUE = "Stall Sampling(All Samples)", "Stall Sampling(Not Issue)"
# JSON dtype codes (VisualizeBinDType, docs/formats.md §2). They say what a column's number means:
# PERCENTAGE columns hold 0..100 (the writer multiplies by 100, e.g. L2Cache Hit Rate), while the stall columns are
# CUSTOM_PERCENTAGE objects whose Percent is the writer's plain ratio 0..1 (a line's samples / all samples).
PERCENTAGE, CUSTOM_PERCENTAGE = 4, 100
PERCENT_SCALE = {CUSTOM_PERCENTAGE: 1.0, PERCENTAGE: 100.0}  # divide by this to get a fraction 0..1
DTYPE_MAPS = {FILE_API: "Files Dtype", INSTR_API: "Instructions Dtype"}


class VisualizeBinError(ValueError):
    """A visualize_data.bin that cannot be decoded; the message names the file, block and byte offset."""


@dataclass
class Block:
    kind: int
    version: int
    offset: int
    content: bytes
    path: str | None = None


def read_blocks(path: Path) -> list[Block]:
    data = path.read_bytes()
    blocks, offset = [], 0
    while offset < len(data):
        if len(data) - offset < HEADER.size:
            raise VisualizeBinError(
                f"{path}: byte {offset}: truncated block header ({len(data) - offset} of {HEADER.size} bytes)"
            )
        size, kind, padding, version, _ = HEADER.unpack_from(data, offset)
        start = offset + HEADER.size
        file_path = None
        if kind == CODE:
            if len(data) - start < 4096:
                raise VisualizeBinError(f"{path}: byte {offset}: CODE block truncated inside its 4096-byte file path")
            file_path = data[start : start + 4096].split(b"\0", 1)[0].decode(errors="replace")
            start += 4096
        end = start + size
        if end > len(data):
            raise VisualizeBinError(
                f"{path}: byte {offset}: block of type 0x{kind:x} declares {size} "
                f"bytes but only {len(data) - start} remain (truncated file)"
            )
        if padding > size:
            raise VisualizeBinError(f"{path}: byte {offset}: block padding {padding} exceeds its size {size}")
        blocks.append(
            Block(kind, version, offset, data[start : end - padding] if padding else data[start:end], file_path)
        )
        offset = end
    return blocks


def block_json(path: Path, block: Block) -> Any:
    try:
        return json.loads(block.content.rstrip(b"\0").decode("utf-8-sig"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise VisualizeBinError(
            f"{path}: byte {block.offset}: {KNOWN.get(block.kind, hex(block.kind))} block is not JSON ({exc})"
        ) from exc


def _walk(node: Any, file: str | None = None) -> Iterator[tuple[dict[str, Any], str | None]]:
    """Every record carrying stall samples, wherever the tool nests it, with the file it belongs to. The writer names a
    file object's path "Source" (next to its "Lines"); "File" is accepted too. Dtype maps also carry the stall keys
    (as dtype codes), so they are not records."""
    if isinstance(node, dict):
        named = node.get("File", node.get("Source") if "Lines" in node else None)
        file = named if isinstance(named, str) else file
        if ALL in node or NOT_ISSUE in node:
            yield node, file
        for key, value in node.items():
            if isinstance(value, dict | list) and not str(key).endswith(" Dtype"):
                yield from _walk(value, file)
    elif isinstance(node, list):
        for item in node:
            yield from _walk(item, file)


def _dtype(data: Any, key: str, map_key: str) -> Any:
    """The dtype code the block declares for ``key``: the writer nests it one level down
    ({"Files Dtype": {"Lines": {...}}}); a flat map is accepted too."""
    table = data.get(map_key) if isinstance(data, dict) else None
    if not isinstance(table, dict):
        return None
    code = (
        table[key]
        if key in table
        else next((inner[key] for inner in table.values() if isinstance(inner, dict) and key in inner), None)
    )
    return code if isinstance(code, int) and not isinstance(code, bool) else None


def _number(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        return None
    return float(value)


def _stall_entry(where: str, record: dict[str, Any], key: str, scale: float) -> tuple[float, dict[str, float]]:
    """One stall column -> (share 0..1 of its denominator, state mix: fractions of this record's own samples).
    Details are the writer's sample counts per state; dividing by their sum gives the mix (fractions stay fractions)."""
    entry = record.get(key)
    if not isinstance(entry, dict):
        raise VisualizeBinError(
            f"{where}: field {key!r} is {type(entry).__name__}, expected an object with Percent and Details"
        )
    percent = _number(entry.get("Percent"))
    if percent is None or not 0.0 <= percent <= scale * (1 + 1e-6):
        raise VisualizeBinError(
            f"{where}: field {key!r}.Percent is {entry.get('Percent')!r}, "
            f"expected a number in [0, {scale:g}] for its dtype"
        )
    details = entry.get("Details")
    if not isinstance(details, dict) or not all((v := _number(n)) is not None and v >= 0 for n in details.values()):
        raise VisualizeBinError(
            f"{where}: field {key!r}.Details is {details!r:.80}, "
            "expected an object of non-negative sample counts per state"
        )
    total = sum(float(v) for v in details.values())
    return min(percent / scale, 1.0), ({str(k): float(v) / total for k, v in details.items()} if total > 0 else {})


@dataclass
class PcSampling:
    """Decoded PC sampling. Each line/instruction record keeps the tool's fields and adds, in one unit:
    ``share`` (fraction 0..1 of all samples of the kernel, Active included: Stall Sampling(All Samples).Percent),
    ``mix`` (fractions of this record's own samples per state, all 9), ``not_issue_share`` (fraction of all
    not-issued samples) and ``not_issue_mix`` (the 8 stall states)."""

    top_stall: dict[str, float] | None  # TopStallReason counts (the 8 non-active states), None = no block
    lines: list[dict[str, Any]]
    instructions: list[dict[str, Any]]
    skipped_types: list[int]


def decode_pc_sampling(path: Path) -> PcSampling:
    top, lines, instructions, skipped = None, [], [], []
    for block in read_blocks(path):
        if block.kind not in JSON_TYPES:
            skipped.append(block.kind)
            continue
        if block.kind not in (TOP_STALL_REASON, FILE_API, INSTR_API):
            continue
        data = block_json(path, block)
        if block.kind == TOP_STALL_REASON:
            table = data.get("top_stall_reason_table") if isinstance(data, dict) else None
            if not isinstance(table, dict) or not all(isinstance(v, int | float) for v in table.values()):
                raise VisualizeBinError(
                    f"{path}: byte {block.offset}: TopStallReason block lacks a numeric top_stall_reason_table"
                )
            top = {str(k): float(v) for k, v in table.items()}
        else:
            target = lines if block.kind == FILE_API else instructions
            records = list(_walk(data))
            if not records:
                continue
            where = f"{path}: byte {block.offset}: {KNOWN[block.kind]} block"
            scales = {}
            for key in (ALL, NOT_ISSUE):
                code = _dtype(data, key, DTYPE_MAPS[block.kind])
                if code not in PERCENT_SCALE and any(key in r for r, _ in records):
                    raise VisualizeBinError(
                        f"{where}: field {DTYPE_MAPS[block.kind]!r}[{key!r}] is {code!r}, expected {CUSTOM_PERCENTAGE} "
                        f"(CUSTOM_PERCENTAGE: Percent a fraction 0..1) or {PERCENTAGE} "
                        "(PERCENTAGE: 0..100); without it the unit of Percent is unknown"
                    )
                scales[key] = PERCENT_SCALE.get(code, 1.0)
            for record, file in records:
                share, mix = _stall_entry(where, record, ALL, scales[ALL]) if ALL in record else (0.0, {})
                ni_share, ni_mix = (
                    _stall_entry(where, record, NOT_ISSUE, scales[NOT_ISSUE]) if NOT_ISSUE in record else (0.0, {})
                )
                norm = {"share": share, "mix": mix, "not_issue_share": ni_share, "not_issue_mix": ni_mix}
                target.append({**record, "File": record.get("File", file), **norm})
    return PcSampling(top, lines, instructions, skipped)
