"""msopprof's visualize_data.bin (shared/formats/msopprof.md §7): appended blocks, each a 12-byte
little-endian header (uint64 contentSize; uint8 type, padding, version, reserved) and contentSize bytes of
mostly UTF-8 JSON, padded with NULs to 4 bytes (the padding is counted in contentSize). CODE blocks (0x1)
carry a 4096-byte file path before their content. Unknown block types are skipped."""

from __future__ import annotations

import json
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
            raise VisualizeBinError(f"{path}: byte {offset}: truncated block header ({len(data) - offset} of {HEADER.size} bytes)")
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
                f"{path}: byte {offset}: block of type 0x{kind:x} declares {size} bytes but only {len(data) - start} remain (truncated file)"
            )
        if padding > size:
            raise VisualizeBinError(f"{path}: byte {offset}: block padding {padding} exceeds its size {size}")
        blocks.append(Block(kind, version, offset, data[start : end - padding] if padding else data[start:end], file_path))
        offset = end
    return blocks


def block_json(path: Path, block: Block) -> Any:
    try:
        return json.loads(block.content.rstrip(b"\0").decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise VisualizeBinError(f"{path}: byte {block.offset}: {KNOWN.get(block.kind, hex(block.kind))} block is not JSON ({exc})") from exc


def _walk(node: Any, file: str | None = None) -> Iterator[tuple[dict[str, Any], str | None]]:
    """Every record carrying stall samples, wherever the tool nests it, with the file it belongs to."""
    if isinstance(node, dict):
        file = node.get("File", file) if isinstance(node.get("File"), str) else file
        if ALL in node or NOT_ISSUE in node:
            yield node, file
        for value in node.values():
            if isinstance(value, dict | list):
                yield from _walk(value, file)
    elif isinstance(node, list):
        for item in node:
            yield from _walk(item, file)


@dataclass
class PcSampling:
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
                raise VisualizeBinError(f"{path}: byte {block.offset}: TopStallReason block lacks a numeric top_stall_reason_table")
            top = {str(k): float(v) for k, v in table.items()}
        else:
            target = lines if block.kind == FILE_API else instructions
            for record, file in _walk(data):
                target.append({**record, "File": record.get("File", file)})
    return PcSampling(top, lines, instructions, skipped)
