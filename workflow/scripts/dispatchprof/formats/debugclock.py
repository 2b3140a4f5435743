"""DebugClock outputs of an ascend_deepep DEBUG_CLOCK_ON build (docs/formats.md §3).

Two formats, found by name under a directory tree:
- legacy (19c40e9): ``dispatch_clock_rank_*.csv`` / ``dispatch_clock_*_rank_*.csv``, columns
  ``rank,aiv_id,time_<k>_cycles`` (one row per AIV, one file per rank); slot k = tick[k+1] - tick[k] in device
  cycles, ``-1`` = missing endpoint, int32 overflow or unused slot. Each file is the latest snapshot only.
- ascend-kernel-lab semantic trace: ``rank<R>-pid<P>-launch<L>/{trace.bin,capture.json}`` plus an
  ``event_map.json``. trace.bin is little-endian uint64 rows of ``8 + 2*cap`` words per block:
  ``[magic, version 1, count, dropped, blockIdx, subBlockIdx, retained, committed 1]`` then (event_id, tick) pairs.
  Rejected as AKL's decoder rejects them: bad magic, an uncommitted row, an unknown event id, a tick going
  backwards within a core; and a file whose size is not whole rows (truncated).

Missing slots stay missing (NA), never 0; the legacy analyzer's clipping (< 0, > 500000 -> 0) is not repeated.
"""

from __future__ import annotations

import json
import re
import struct
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable

import pandas as pd

from dispatchprof.formats.text import read_csv_rows, read_text_file, refusal

MAGIC = 0x414B4C5452433031
VERSION = 1
HEADER_WORDS = 8
FNV_SEED, FNV_PRIME = 2166136261, 16777619
LEGACY_RE = re.compile(r"^dispatch_clock(?:_.*)?_rank_(\d+)\.csv$")
CAPTURE_RE = re.compile(r"^rank(\d+)-pid(\d+)-launch(\d+)$")
SLOT_RE = re.compile(r"^time_(\d+)_cycles$")
MISSING = -1
INT32_MAX = 2**31 - 1


class DebugClockFormatError(ValueError):
    """A DebugClock file that cannot be used; the message names the file, the line or row, and the field."""


# -- legacy CSV ------------------------------------------------------------------------------------------------


def find_legacy_csvs(root: Path) -> list[Path]:
    """Every legacy clock CSV under ``root`` (both documented name forms)."""
    return sorted(p for p in root.rglob("dispatch_clock*_rank_*.csv") if p.is_file() and LEGACY_RE.match(p.name))


def _cell_int(path: Path, line: int, field: str, value: str) -> int:
    try:
        number = int(value.strip())
    except ValueError:
        raise DebugClockFormatError(f"{path}: line {line}: field {field}: {value!r} is not an integer") from None
    return number


def parse_legacy_csv(path: str | Path) -> pd.DataFrame:
    """One legacy clock CSV -> rank, aiv_id, slot, cycles (Int64; NA where the file has -1)."""
    path = Path(path)
    rows = read_csv_rows(path, DebugClockFormatError, "the header rank,aiv_id,time_<k>_cycles")
    header = [h.strip() for h in rows[0]]
    for name in ("rank", "aiv_id"):
        if name not in header:
            raise DebugClockFormatError(
                f"{path}: line 1: column {name!r} missing; expected "
                f"rank,aiv_id,time_<k>_cycles (found {','.join(header)})"
            )
    slots = {i: int(m.group(1)) for i, h in enumerate(header) if (m := SLOT_RE.match(h))}
    if not slots:
        raise DebugClockFormatError(f"{path}: line 1: no time_<k>_cycles column; expected rank,aiv_id,time_<k>_cycles")
    unknown = [h for i, h in enumerate(header) if i not in slots and h not in ("rank", "aiv_id")]
    if unknown:
        raise DebugClockFormatError(
            f"{path}: line 1: unexpected column(s) {unknown}; expected rank,aiv_id,time_<k>_cycles"
        )
    if len(set(header)) != len(header):
        raise DebugClockFormatError(f"{path}: line 1: duplicate column names in {','.join(header)}")
    file_rank = int(m.group(1)) if (m := LEGACY_RE.match(path.name)) else None
    out: list[tuple[int, int, int, Any]] = []
    seen: set[int] = set()
    ri, ai = header.index("rank"), header.index("aiv_id")
    for n, row in enumerate(rows[1:], start=2):
        if not any(c.strip() for c in row):
            continue
        if len(row) != len(header):
            raise DebugClockFormatError(f"{path}: line {n}: {len(row)} fields; expected {len(header)} as in the header")
        rank, aiv = _cell_int(path, n, "rank", row[ri]), _cell_int(path, n, "aiv_id", row[ai])
        if rank < 0 or aiv < 0:
            raise DebugClockFormatError(f"{path}: line {n}: rank {rank} / aiv_id {aiv}: expected non-negative")
        if file_rank is not None and rank != file_rank:
            raise DebugClockFormatError(
                f"{path}: line {n}: field rank: {rank}, but the file name says rank {file_rank}"
            )
        if aiv in seen:
            raise DebugClockFormatError(f"{path}: line {n}: field aiv_id: {aiv} appears twice")
        seen.add(aiv)
        for col, slot in slots.items():
            value = _cell_int(path, n, header[col], row[col])
            if value < MISSING or value > INT32_MAX:
                raise DebugClockFormatError(
                    f"{path}: line {n}: field {header[col]}: {value} is outside int32 ticks (-1 = missing)"
                )
            out.append((rank, aiv, slot, pd.NA if value == MISSING else value))
    if not out:
        raise DebugClockFormatError(f"{path}: no data rows; expected one row per AIV")
    frame = pd.DataFrame(out, columns=["rank", "aiv_id", "slot", "cycles"])
    return frame.astype({"rank": "int64", "aiv_id": "int64", "slot": "int64", "cycles": "Int64"})


# -- AKL semantic trace ----------------------------------------------------------------------------------------


def path_hash(parts: Iterable[str]) -> int:
    """FNV-1a-32 over each path part's UTF-8 bytes plus a NUL terminator (akl semantic.path_hash)."""
    h = FNV_SEED
    for part in parts:
        for byte in part.encode("utf-8") + b"\x00":
            h = ((h ^ byte) * FNV_PRIME) & 0xFFFFFFFF
    return h


def parse_event_map(path: str | Path) -> dict[int, tuple[str, ...]]:
    """event_map.json -> {event id: path parts}; every id must be the hash of its parts."""
    path = Path(path)
    text = read_text_file(path, DebugClockFormatError, "akl.event-map.v1 JSON")
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise DebugClockFormatError(f"{path}: not JSON ({exc}); expected akl.event-map.v1") from None
    if (
        not isinstance(data, dict)
        or data.get("schema") != "akl.event-map.v1"
        or not isinstance(data.get("events"), dict)
    ):
        raise DebugClockFormatError(
            f"{path}: field schema/events: expected {{'schema': 'akl.event-map.v1', 'events': {{id: [parts]}}}}"
        )
    events = {}
    for key, parts in data["events"].items():
        if (
            not str(key).isdigit()
            or not isinstance(parts, list)
            or not parts
            or not all(isinstance(p, str) for p in parts)
        ):
            raise DebugClockFormatError(
                f"{path}: field events[{key!r}]: expected a decimal id and a list of path parts"
            )
        if path_hash(parts) != int(key):
            raise DebugClockFormatError(
                f"{path}: field events[{key!r}]: {'/'.join(parts)} hashes to {path_hash(parts)}, not {key}"
            )
        events[int(key)] = tuple(parts)
    return events


def find_event_maps(root: Path) -> list[Path]:
    return sorted(p for p in root.rglob("event_map.json") if p.is_file())


def find_captures(root: Path) -> list[Path]:
    """Capture directories ``rank<R>-pid<P>-launch<L>`` under ``root`` (one per rank and launch)."""
    return sorted(p for p in root.rglob("rank*-pid*-launch*") if p.is_dir() and CAPTURE_RE.match(p.name))


@dataclass
class Capture:
    rank: int
    pid: int
    launch: int
    meta: dict[str, Any]
    events: pd.DataFrame  # rank, launch, block, sub_block, seq, event_id, path, tick
    dropped: int
    run: int = 0  # the stage's OFF/ON run pair it came from (<root>/run<i>/...): launch counters restart per process


def _capture_meta(path: Path) -> dict[str, Any]:
    if not path.is_file():
        raise DebugClockFormatError(f"{path}: missing; every capture has capture.json beside trace.bin")
    text = read_text_file(path, DebugClockFormatError, "akl.semantic.v1 JSON")
    try:
        meta = json.loads(text)
    except json.JSONDecodeError as exc:
        raise DebugClockFormatError(f"{path}: not JSON ({exc}); expected akl.semantic.v1") from None
    if not isinstance(meta, dict) or meta.get("schema") != "akl.semantic.v1":
        raise DebugClockFormatError(f"{path}: field schema: expected 'akl.semantic.v1'")
    for key in ("capacity", "blocks", "rank"):
        if not isinstance(meta.get(key), int) or isinstance(meta.get(key), bool) or meta[key] < 0:
            raise DebugClockFormatError(f"{path}: field {key}: {meta.get(key)!r}; expected a non-negative integer")
    if meta["capacity"] < 2 or meta["capacity"] % 2:
        raise DebugClockFormatError(f"{path}: field capacity: {meta['capacity']}; expected an even number >= 2")
    return meta


def parse_capture(directory: str | Path, event_map: dict[int, tuple[str, ...]]) -> Capture:
    """One capture directory -> its events in tick order per core."""
    directory = Path(directory)
    m = CAPTURE_RE.match(directory.name)
    if not m:
        raise DebugClockFormatError(f"{directory}: not a capture directory; expected rank<R>-pid<P>-launch<L>")
    rank, pid, launch = (int(g) for g in m.groups())
    meta = _capture_meta(directory / "capture.json")
    if meta["rank"] != rank:
        raise DebugClockFormatError(
            f"{directory / 'capture.json'}: field rank: {meta['rank']}, but the directory says rank {rank}"
        )
    trace = directory / "trace.bin"
    if not trace.is_file():
        raise DebugClockFormatError(f"{trace}: missing; every capture has trace.bin beside capture.json")
    raw = trace.read_bytes()
    cap, blocks = meta["capacity"], meta["blocks"]
    row_words = HEADER_WORDS + 2 * cap
    expected = blocks * row_words * 8
    if len(raw) != expected:
        raise DebugClockFormatError(
            f"{trace}: {len(raw)} bytes; expected {expected} ({blocks} blocks x {row_words} "
            f"uint64 words, capacity {cap} from capture.json): truncated or not this capture's"
        )
    words = struct.unpack(f"<{blocks * row_words}Q", raw) if raw else ()
    rows, dropped = [], 0
    for b in range(blocks):
        w = words[b * row_words : (b + 1) * row_words]
        magic, version, count, drop, block, sub, _retained, committed = w[:HEADER_WORDS]
        where = f"{trace}: row {b}"
        if magic != MAGIC:
            raise DebugClockFormatError(f"{where}: field magic: {magic:#x}; expected {MAGIC:#x}")
        if version != VERSION:
            raise DebugClockFormatError(f"{where}: field version: {version}; expected {VERSION}")
        if committed != 1:
            raise DebugClockFormatError(
                f"{where}: field committed: {committed}; expected 1 (the row was not committed)"
            )
        if count > cap:
            raise DebugClockFormatError(f"{where}: field count: {count} exceeds the capacity {cap}")
        dropped += drop
        last = None
        for seq in range(count):
            event, tick = w[HEADER_WORDS + 2 * seq], w[HEADER_WORDS + 2 * seq + 1]
            if event not in event_map:
                raise DebugClockFormatError(f"{where}: event {seq}: id {event} ({event:#010x}) is not in the event map")
            if last is not None and tick < last:
                raise DebugClockFormatError(
                    f"{where}: event {seq}: tick {tick} goes backwards (previous {last}) within block {block}"
                )
            last = tick
            rows.append((rank, launch, int(block), int(sub), seq, int(event), "/".join(event_map[event]), int(tick)))
    frame = pd.DataFrame(rows, columns=["rank", "launch", "block", "sub_block", "seq", "event_id", "path", "tick"])
    return Capture(rank, pid, launch, meta, frame.astype({"tick": "int64", "event_id": "int64"}), int(dropped))


# -- writing (fixtures and tests; the simulator has its own writer) ----------------------------------------------


def encode_trace(rows: list[dict[str, Any]], capacity: int) -> bytes:
    """trace.bin bytes of ``rows`` ({block, sub_block, events: [(id, tick)], committed?, magic?}) at ``capacity``."""
    out = bytearray()
    for row in rows:
        events = row["events"]
        head = [
            row.get("magic", MAGIC),
            VERSION,
            len(events),
            row.get("dropped", 0),
            row["block"],
            row.get("sub_block", 0),
            0,
            row.get("committed", 1),
        ]
        body = [v for pair in events for v in pair] + [0] * (2 * (capacity - len(events)))
        out += struct.pack(f"<{len(head) + len(body)}Q", *head, *body)
    return bytes(out)


# -- a tree of DebugClock outputs ------------------------------------------------------------------------------

NODE_PART, RUN_PART = re.compile(r"^node(\d+)$"), re.compile(r"^run(\d+)$")


@dataclass
class Loaded:
    root: Path
    legacy: list[tuple[int, int, pd.DataFrame]]  # (node, run, parse_legacy_csv frame) per file
    captures: list[tuple[int, Capture]]  # (node, capture)
    event_map: Path | None
    refused: dict[str, str] = field(default_factory=dict)  # rank (as its file names it) -> "refused: <file>: why"


def _placement(root: Path, path: Path) -> tuple[int, int]:
    """(node, run) from the path under root: <root>/[run<i>/]node<k>/... ; node 0 and run 0 when not named."""
    node = run = 0
    for part in path.relative_to(root).parts:
        if m := NODE_PART.match(part):
            node = int(m.group(1))
        elif m := RUN_PART.match(part):
            run = int(m.group(1))
    return node, run


def load_tree(root: str | Path) -> Loaded:
    """Every DebugClock file under ``root``, both formats found by name. AKL captures need an event_map.json
    somewhere under root (several must agree): the decoder rejects ids it cannot name. A rank with a file that cannot
    be read or parsed is left out whole (all its files), with why (Loaded.refused); the event maps serve every rank,
    so a bad one raises."""
    root = Path(root)
    refused: dict[tuple[int, int], str] = {}  # (node, rank as the file name says it) -> why
    legacy: list[tuple[int, int, pd.DataFrame, tuple[int, int]]] = []
    for path in find_legacy_csvs(root):
        node, run = _placement(root, path)
        key = (node, int(LEGACY_RE.match(path.name).group(1)))  # find_legacy_csvs matched it
        try:
            legacy.append((node, run, parse_legacy_csv(path), key))
        except (DebugClockFormatError, OSError) as exc:
            refused.setdefault(key, refusal(path, exc))
    dirs = find_captures(root)
    maps = find_event_maps(root)
    captures: list[tuple[int, Capture, tuple[int, int]]] = []
    if dirs:
        if not maps:
            raise DebugClockFormatError(
                f"{root}: {len(dirs)} AKL captures but no event_map.json under "
                "it; expected the build's ascend_deepep/lib/event_map.json"
            )
        events = merged_event_maps(maps)
        for d in dirs:
            node, run = _placement(root, d)
            key = (node, int(CAPTURE_RE.match(d.name).group(1)))  # find_captures matched it
            try:
                capture = parse_capture(d, events)
            except (DebugClockFormatError, OSError) as exc:
                refused.setdefault(key, refusal(d, exc))
                continue
            capture.run = run
            captures.append((node, capture, key))
    return Loaded(
        root,
        [(node, run, frame) for node, run, frame, key in legacy if key not in refused],
        [(node, capture) for node, capture, key in captures if key not in refused],
        maps[0] if maps else None,
        {
            str(rank) if node == 0 else f"{rank} (node{node})": f"refused: {why}"
            for (node, rank), why in sorted(refused.items())
        },
    )


def merged_event_maps(maps: list[Path]) -> dict[int, tuple[str, ...]]:
    """Every event map's ids and paths; two maps that name one id differently are refused."""
    events: dict[int, tuple[str, ...]] = {}
    for path in maps:
        for key, parts in parse_event_map(path).items():
            if events.setdefault(key, parts) != parts:
                raise DebugClockFormatError(
                    f"{path}: field events[{key}]: {'/'.join(parts)} disagrees "
                    f"with another event map ({'/'.join(events[key])})"
                )
    return events
