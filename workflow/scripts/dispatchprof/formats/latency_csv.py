"""dispatch_latency.csv (ascend_deepep / AKL LatencyProfile, docs/formats.md §3), and api_latency CSVs.

Columns are found by header name, never by position. Accepted: the full form
``rank,iteration,elapsed_ms,elapsed_us,is_warmup,in_average[,work columns][,metadata...]`` and the legacy
five-column form ``rank,iteration,elapsed_us,is_warmup,in_average``. Refused, with file, line and field:
mixed ``measurement`` or ``clock_hz``, duplicate (rank, iteration), unequal call counts across ranks,
negative or non-finite values, rows marked both warm-up and in_average, wrong types, binary garbage.

Work columns (docs/formats.md §3, written only when the session has a work callback): ``processed_bytes`` and
``sent_bytes`` (uint64, per rank and call) come together or not at all (AKL's latency_plot refuses one byte column
alone); ``processed_gbps``/``sent_gbps``, when present, must equal bytes/(ms*1e6) and be empty exactly when ms = 0.
The file names the columns but not what the callback counts, so the parser keeps the bytes as they are
(``LatencyTable.work``) and the analysis compares them with its own accounting.

A test's file grows with its calls (5 million rows, 290 MB, is a long run), so it is read in pieces of whole lines
(issue 46): first the whole file's encoding (as every text reader: a NUL byte or non-UTF-8 anywhere is refused before
any row), then each piece typed by pyarrow and checked as arrays. Any piece in which that finds anything wrong or
unusual (a refusal, a space, a quote, a blank line) is read again row by row by the exact reader, which raises the
refusal with its line; a file with a quoted field is read by it whole, record by record, as the csv module reads it.
Which is first wrong decides, in file order, as when the file was read row by row: a duplicate (rank, iteration)
before a bad value further on. The table is the same whatever the piece size (tests/formats/test_latency_csv_chunks.py).
"""

from __future__ import annotations

import csv
import io
import itertools
import math
from array import array
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable, Iterator

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pacsv

from dispatchprof.formats.text import (
    CHUNK_BYTES,
    csv_records,
    finite_nonnegative,
    line_chunks,
    read_csv_rows,
    scan_csv_file,
)

REQUIRED = ("rank", "iteration", "is_warmup", "in_average")
WORK_BYTES = ("processed_bytes", "sent_bytes")
UINT64_MAX = 2**64 - 1
INT64_MAX = 2**63 - 1
SINGLES = ("measurement", "clock_hz")  # metadata with one value per file


class LatencyCsvError(ValueError):
    """A latency file that cannot be used; the message names the file, the line and the field."""


@dataclass
class LatencyTable:
    frame: pd.DataFrame  # rank, iteration, us, warmup, in_average (one row per rank and call)
    measurement: str | None  # kernel | event | None (legacy: unspecified boundary)
    clock_hz: str | None
    path: str
    work: pd.DataFrame | None = None  # rank, iteration, processed_bytes, sent_bytes (uint64); None: no work columns


def _read_rows(path: Path) -> tuple[list[str], list[tuple[int, list[str]]]]:
    rows = read_csv_rows(path, LatencyCsvError, "a header starting with rank,iteration")
    header = [h.strip() for h in rows[0]]
    return header, [(i + 2, r) for i, r in enumerate(rows[1:]) if any(c.strip() for c in r)]


def _int(path: Path, line: int, field: str, value: str) -> int:
    try:
        number = int(value)
    except ValueError:
        raise LatencyCsvError(f"{path}: line {line}: field '{field}' is {value!r}, expected an integer") from None
    if number < 0:
        raise LatencyCsvError(f"{path}: line {line}: field '{field}' is {number}, expected a non-negative integer")
    return number


def _flag(path: Path, line: int, field: str, value: str) -> bool:
    if value not in ("0", "1"):
        raise LatencyCsvError(f"{path}: line {line}: field '{field}' is {value!r}, expected 0 or 1")
    return value == "1"


def _duration(path: Path, line: int, field: str, value: str, max_us: float | None = None, scale: float = 1.0) -> float:
    """A finite non-negative duration; with ``max_us`` (stats.max_plausible_us) one above it is refused: no dispatch
    lasts that long, and one such row would move every statistic it enters (a mean of 1e298)."""
    us = finite_nonnegative(path, line, field, value, LatencyCsvError, "duration") * scale
    if max_us is not None and us > max_us:
        raise LatencyCsvError(
            f"{path}: line {line}: field '{field}' is {value}, {us:.4g} us, above "
            f"stats.max_plausible_us ({max_us:g} us): not a plausible dispatch duration"
        )
    return us


def _uint64(path: Path, line: int, field: str, value: str) -> int:
    number = _int(path, line, field, value)
    if number > UINT64_MAX:
        raise LatencyCsvError(
            f"{path}: line {line}: field '{field}' is {number}, expected a uint64 (at most {UINT64_MAX})"
        )
    return number


def _gbps(path: Path, line: int, field: str, value: str, byte_count: int, ms: float) -> None:
    """The writer's ``bytes/(ms*1e6)``, empty when ms = 0: a value
    that disagrees means the columns do not belong together."""
    if value == "":
        if ms != 0:
            raise LatencyCsvError(
                f"{path}: line {line}: field '{field}' is empty, expected "
                f"{byte_count / (ms * 1e6)!r} (bytes/(ms*1e6); empty only when elapsed_ms is 0)"
            )
        return
    try:
        number = float(value)
    except ValueError:
        raise LatencyCsvError(
            f"{path}: line {line}: field '{field}' is {value!r}, expected a number (bytes/(ms*1e6)) or empty"
        ) from None
    if ms == 0:
        raise LatencyCsvError(f"{path}: line {line}: field '{field}' is {value} but elapsed_ms is 0; expected empty")
    expected = byte_count / (ms * 1e6)
    # the writer's float formatting is not documented: allow its rounding (9 decimals, or a relative 1e-6)
    if not math.isfinite(number) or abs(number - expected) > 1e-9 + 1e-6 * abs(expected):
        raise LatencyCsvError(
            f"{path}: line {line}: field '{field}' is {value}, expected {expected!r} (bytes/(ms*1e6))"
        )


@dataclass
class _Layout:
    """What the header says: where each field is, the duration's field and scale, which work columns there are."""

    header: list[str]
    col: dict[str, int]
    time_field: str
    scale: float
    work: bool
    rates: list[str]  # the *_gbps columns present
    singles: list[str]  # measurement and clock_hz, those present
    max_us: float | None


def _layout(path: Path, header: list[str], max_us: float | None) -> _Layout:
    missing = [f for f in REQUIRED if f not in header]
    if "elapsed_us" not in header and "elapsed_ms" not in header:
        missing.append("elapsed_us (or elapsed_ms)")
    if missing:
        raise LatencyCsvError(f"{path}: line 1: header lacks {', '.join(missing)}; found {header}")
    has_work = [f for f in WORK_BYTES if f in header]
    if len(has_work) == 1:
        other = next(f for f in WORK_BYTES if f not in has_work)
        raise LatencyCsvError(
            f"{path}: line 1: field '{other}' missing but '{has_work[0]}' "
            "present; expected both work byte columns or neither"
        )
    col = {name: header.index(name) for name in header}
    time_field, scale = ("elapsed_us", 1.0) if "elapsed_us" in col else ("elapsed_ms", 1000.0)
    rates = (
        [f.replace("_bytes", "_gbps") for f in WORK_BYTES if f.replace("_bytes", "_gbps") in col] if has_work else []
    )
    return _Layout(header, col, time_field, scale, bool(has_work), rates, [f for f in SINGLES if f in col], max_us)


@dataclass
class _Part:
    """The rows of one piece of the file, as columns; ``line`` is each row's line number."""

    line: np.ndarray
    rank: np.ndarray
    iteration: np.ndarray
    us: np.ndarray
    warmup: np.ndarray
    in_average: np.ndarray
    processed: np.ndarray | None = None
    sent: np.ndarray | None = None


@dataclass
class _Singles:
    """measurement and clock_hz: the first row's value and the first row that differs (line, value), per field. A
    mixed value is refused after every row was read, as before (a bad row further on is named first)."""

    first: dict[str, tuple[int, str]] = field(default_factory=dict)
    mixed: dict[str, tuple[int, str]] = field(default_factory=dict)

    def see(self, name: str, line: int, value: str) -> None:
        if name not in self.first:
            self.first[name] = (line, value)
        elif name not in self.mixed and value != self.first[name][1]:
            self.mixed[name] = (line, value)

    def check(self, path: Path, names: list[str]) -> None:
        for name in names:
            if name in self.mixed:
                (line, value), (first_line, first) = self.mixed[name], self.first[name]
                raise LatencyCsvError(
                    f"{path}: line {line}: field '{name}' is {value!r} but line "
                    f"{first_line} has {first!r}; mixed {name} values cannot be compared"
                )


def _row_values(path: Path, layout: _Layout, line: int, row: list[str]) -> tuple[int, int, float, bool, bool]:
    """One row's rank, iteration, duration (us) and flags, every check in the order a reader meets the fields."""
    col = layout.col
    if len(row) < len(layout.header):
        raise LatencyCsvError(
            f"{path}: line {line}: {len(row)} fields, expected {len(layout.header)} as in the header (truncated row?)"
        )
    rank = _index(path, line, "rank", row[col["rank"]].strip())
    iteration = _index(path, line, "iteration", row[col["iteration"]].strip())
    us = _duration(path, line, layout.time_field, row[col[layout.time_field]].strip(), layout.max_us, layout.scale)
    warmup = _flag(path, line, "is_warmup", row[col["is_warmup"]].strip())
    in_average = _flag(path, line, "in_average", row[col["in_average"]].strip())
    if warmup and in_average:
        raise LatencyCsvError(
            f"{path}: line {line}: field 'in_average' is 1 on a warm-up row (is_warmup=1); a sample cannot be both"
        )
    return rank, iteration, us, warmup, in_average


def _row_work(path: Path, layout: _Layout, line: int, row: list[str], us: float) -> tuple[int, int]:
    col = layout.col
    counts = {f: _uint64(path, line, f, row[col[f]].strip()) for f in WORK_BYTES}
    for rate in layout.rates:
        _gbps(path, line, rate, row[col[rate]].strip(), counts[rate.replace("_gbps", "_bytes")], us / 1000)
    return counts["processed_bytes"], counts["sent_bytes"]


def _index(path: Path, line: int, field_name: str, value: str) -> int:
    """A rank or an iteration: a non-negative integer that fits the table's int64."""
    number = _int(path, line, field_name, value)
    if number > INT64_MAX:
        raise LatencyCsvError(
            f"{path}: line {line}: field '{field_name}' is {number}, expected an integer of at most {INT64_MAX}"
        )
    return number


def _first_duplicate(parts: list[_Part]) -> tuple[int, int, int, int] | None:
    """The first line (in file order) whose (rank, iteration) an earlier line had: (line, rank, iteration, that
    earlier line), or None."""
    if not parts:
        return None
    rank, iteration, line = (
        np.concatenate([getattr(p, name) for p in parts]) for name in ("rank", "iteration", "line")
    )
    order = np.lexsort((line, rank, iteration))
    rank, iteration, line = rank[order], iteration[order], line[order]
    repeat = np.flatnonzero((rank[1:] == rank[:-1]) & (iteration[1:] == iteration[:-1])) + 1
    if not len(repeat):
        return None
    at = repeat[np.argmin(line[repeat])]
    first = at
    while first > 0 and rank[first - 1] == rank[at] and iteration[first - 1] == iteration[at]:
        first -= 1
    return int(line[at]), int(rank[at]), int(iteration[at]), int(line[first])


def _duplicate_error(path: Path, parts: list[_Part]) -> LatencyCsvError | None:
    """The refusal of the first line (in file order) whose (rank, iteration) an earlier line had, or None."""
    if not parts:
        return None
    rank, iteration, line = (
        np.concatenate([getattr(p, name) for p in parts]) for name in ("rank", "iteration", "line")
    )
    return _duplicate_in(path, rank, iteration, line, np.lexsort((rank, iteration)))


def _duplicate_in(
    path: Path, rank: np.ndarray, iteration: np.ndarray, line: np.ndarray, order: np.ndarray
) -> LatencyCsvError | None:
    """``order``: a stable sort by (iteration, rank) of rows in file order, so equal keys stand in line order."""
    r, i = rank[order], iteration[order]
    repeat = np.flatnonzero((r[1:] == r[:-1]) & (i[1:] == i[:-1])) + 1
    if not len(repeat):
        return None
    at = repeat[np.argmin(line[order[repeat]])]
    first = at
    while first > 0 and r[first - 1] == r[at] and i[first - 1] == i[at]:
        first -= 1
    return LatencyCsvError(
        f"{path}: line {line[order[at]]}: field 'iteration': rank "
        f"{r[at]} iteration {i[at]} duplicates line {line[order[first]]}"
    )


class _Rows:
    """Rows checked one at a time (the exact reader: every refusal as the file's rows are met), kept as typed arrays."""

    def __init__(self, work: bool) -> None:
        self.line, self.rank, self.iteration = array("q"), array("q"), array("q")
        self.us, self.warmup, self.in_average = array("d"), array("b"), array("b")
        self.processed, self.sent = (array("Q"), array("Q")) if work else (None, None)

    def part(self) -> _Part:
        work = (
            (np.frombuffer(self.processed, np.uint64), np.frombuffer(self.sent, np.uint64))
            if self.processed is not None
            else (None, None)
        )
        flags = (np.frombuffer(self.warmup, np.int8).astype(bool), np.frombuffer(self.in_average, np.int8).astype(bool))
        ints = (np.frombuffer(a, np.int64) for a in (self.line, self.rank, self.iteration))
        return _Part(*ints, np.frombuffer(self.us, np.float64), *flags, *work)


def _read_rows_exactly(
    path: Path, layout: _Layout, records: Iterable[tuple[int, list[str]]], done: list[_Part], singles: _Singles
) -> _Part:
    """Rows as the reader always read them, each refusal naming its line. A duplicated (rank, iteration) is refused
    at the line that repeats it, before anything wrong further on: before raising for a line, the rows before it
    (and the line itself, where its work columns are wrong) are checked for one."""
    rows = _Rows(layout.work)
    for line, row in records:
        if not any(c.strip() for c in row):
            continue
        try:
            rank, iteration, us, warmup, in_average = _row_values(path, layout, line, row)
        except LatencyCsvError as exc:
            raise _duplicate_error(path, [*done, rows.part()]) or exc from None
        for target, value in zip(
            (rows.line, rows.rank, rows.iteration, rows.us, rows.warmup, rows.in_average),
            (line, rank, iteration, us, warmup, in_average),
        ):
            target.append(value)
        if layout.work:
            try:
                processed, sent = _row_work(path, layout, line, row, us)
            except LatencyCsvError as exc:
                raise _duplicate_error(path, [*done, rows.part()]) or exc from None
            rows.processed.append(processed)
            rows.sent.append(sent)
        for name in layout.singles:
            singles.see(name, line, row[layout.col[name]].strip())
    return rows.part()


# Bytes the fast reader takes as they are: printable ASCII but the space (csv keeps it in a field, the checks strip
# it), the quote, and x/X (pyarrow reads 0x10 as an integer, Python refuses it). Any other byte: the exact reader.
_FAST_BYTES = bytes(b for b in range(0x21, 0x7F) if b not in b'"xX') + b"\n\r"
_FLAGS = pa.array(["0", "1"])


def _arrow_table(layout: _Layout, piece: bytes) -> pa.Table | None:
    """The fields the checks read, typed by pyarrow's CSV reader (no quoting: the file has none), or None where it
    refuses the piece (a field it cannot convert, a row of another length: the exact reader says which)."""
    types: dict[str, pa.DataType] = {"rank": pa.int64(), "iteration": pa.int64(), layout.time_field: pa.float64()}
    types |= {"is_warmup": pa.string(), "in_average": pa.string()} | {f: pa.string() for f in layout.singles}
    if layout.work:
        types |= {f: pa.uint64() for f in WORK_BYTES} | {f: pa.float64() for f in layout.rates}
    names = [f"c{i}" for i in range(len(layout.header))]
    convert = pacsv.ConvertOptions(
        column_types={f"c{layout.col[f]}": t for f, t in types.items()},
        include_columns=[f"c{layout.col[f]}" for f in types],
        null_values=[""],  # an empty number is null: refused below but in *_gbps, where it is allowed
        strings_can_be_null=False,
    )
    parse = pacsv.ParseOptions(
        quote_char=False, double_quote=False, escape_char=False, newlines_in_values=False, ignore_empty_lines=False
    )
    try:
        table = pacsv.read_csv(
            pa.py_buffer(piece), pacsv.ReadOptions(column_names=names, use_threads=False), parse, convert
        )
    except pa.ArrowInvalid:
        return None
    return table.rename_columns(list(types))


def _read_rows_fast(layout: _Layout, piece: bytes, first_line: int, singles: _Singles) -> _Part | None:
    """The rows of a piece of whole lines at once, typed by pyarrow and checked as arrays; None where anything is
    not plainly right (a refusal, an odd byte, a blank line): the exact reader then reads the piece and says what."""
    if piece.translate(None, _FAST_BYTES) or b"\n\n" in piece or b"\n\r" in piece or piece.startswith((b"\n", b"\r")):
        return None
    table = _arrow_table(layout, piece)
    rows = piece.count(b"\n") + (not piece.endswith(b"\n"))
    numbers = ["rank", "iteration", layout.time_field, *(WORK_BYTES if layout.work else ())]
    if table is None or table.num_rows != rows or any(table[f].null_count for f in numbers):
        return None
    rank, iteration, value = (table[f].to_numpy() for f in ("rank", "iteration", layout.time_field))
    if (rank < 0).any() or (iteration < 0).any() or not np.isfinite(value).all() or (value < 0).any():
        return None
    us = value * layout.scale
    if layout.max_us is not None and (us > layout.max_us).any():
        return None
    if not all(pc.all(pc.is_in(table[f], value_set=_FLAGS)).as_py() for f in ("is_warmup", "in_average")):
        return None
    warmup, in_average = (pc.equal(table[f], "1").to_numpy() for f in ("is_warmup", "in_average"))
    if (warmup & in_average).any():
        return None
    work = (table["processed_bytes"].to_numpy(), table["sent_bytes"].to_numpy()) if layout.work else (None, None)
    if layout.work and not all(
        _rates_agree(table[rate], work[i], us / 1000)
        for i, rate in enumerate(WORK_BYTES)
        if rate.replace("_bytes", "_gbps") in layout.rates
    ):
        return None
    for name in layout.singles:
        values = table[name]
        first = singles.first.get(name, (first_line, values[0].as_py()))
        differ = np.flatnonzero(pc.not_equal(values, first[1]).to_numpy())
        singles.first[name] = first
        if len(differ) and name not in singles.mixed:
            singles.mixed[name] = (first_line + int(differ[0]), values[int(differ[0])].as_py())
    return _Part(np.arange(first_line, first_line + rows), rank, iteration, us, warmup, in_average, *work)


def _rates_agree(rate: pa.ChunkedArray, byte_count: np.ndarray, ms: np.ndarray) -> bool:
    """_gbps's checks as arrays: empty exactly where ms = 0, elsewhere bytes/(ms*1e6) within the writer's rounding."""
    empty = rate.is_null().to_numpy()
    if (empty != (ms == 0)).any():
        return False
    number = rate.to_numpy(zero_copy_only=False)[~empty]
    expected = byte_count[~empty].astype(np.float64) / (ms[~empty] * 1e6)
    return bool(np.isfinite(number).all() and (np.abs(number - expected) <= 1e-9 + 1e-6 * np.abs(expected)).all())


def _header_and_pieces(
    path: Path, plain: bool, chunk_bytes: int
) -> tuple[list[str] | None, Iterator[tuple[int, bytes | Iterator]]]:
    """The header row, then the data as (first line, piece): pieces of whole lines where every record is one line,
    else one stream of (line, record) pairs read by the csv module."""
    if not plain:
        records = csv_records(path, chunk_bytes)
        header = next(records, None)
        return header, iter([(2, enumerate(records, start=2))])
    pieces = line_chunks(path, chunk_bytes)
    first = next(pieces, None)
    if first is None:
        return None, iter(())
    data = first[1]
    end = data.find(b"\n") + 1 or len(data)
    header = next(csv.reader([data[:end].decode("utf-8")]), [])
    return header, itertools.chain([(2, data[end:])] if data[end:] else [], pieces)


def parse_latency_csv(path: str | Path, max_us: float | None = None, chunk_bytes: int = CHUNK_BYTES) -> LatencyTable:
    """The table of a latency file, read in pieces of about ``chunk_bytes`` (memory of the table and one piece, not
    of the file's text): each piece typed by pyarrow and checked as arrays, or, where that finds anything wrong or
    unusual, read row by row by the exact reader, which names the file, the line and the field. Pieces change
    nothing: any ``chunk_bytes`` gives the same table or the same refusal."""
    path = Path(path)
    plain = scan_csv_file(path, LatencyCsvError, chunk_bytes)
    header, pieces = _header_and_pieces(path, plain, chunk_bytes)
    if header is None or not any(cell.strip() for cell in header):
        raise LatencyCsvError(f"{path}: line 1: empty file; expected a header starting with rank,iteration")
    layout = _layout(path, [h.strip() for h in header], max_us)
    parts: list[_Part] = []
    singles = _Singles()
    for first_line, piece in pieces:
        part = _read_rows_fast(layout, piece, first_line, singles) if isinstance(piece, bytes) else None
        if part is None:
            records = (
                enumerate(csv.reader(io.StringIO(piece.decode("utf-8"))), start=first_line)
                if isinstance(piece, bytes)
                else piece
            )
            part = _read_rows_exactly(path, layout, records, parts, singles)
        if len(part.line):
            parts.append(part)
    return _table(path, layout, parts, singles)


def _table(path: Path, layout: _Layout, parts: list[_Part], singles: _Singles) -> LatencyTable:
    """The checks that need every row (a duplicate, mixed measurement or clock_hz, unequal call counts), in the
    reader's order, and the tables sorted by (iteration, rank)."""
    if not parts:
        raise LatencyCsvError(f"{path}: no data rows after the header")
    columns: dict[str, np.ndarray] = {}
    for name in (
        "line",
        "rank",
        "iteration",
        "us",
        "warmup",
        "in_average",
        *(("processed", "sent") if layout.work else ()),
    ):
        columns[name] = np.concatenate([getattr(p, name) for p in parts])
        for p in parts:  # each piece's column goes as soon as it is copied: the peak is one column, not the table
            setattr(p, name, None)
    order = np.lexsort((columns["rank"], columns["iteration"]))
    duplicate = _duplicate_in(path, columns["rank"], columns["iteration"], columns.pop("line"), order)
    if duplicate:
        raise duplicate
    singles.check(path, layout.singles)
    ranks, counts = np.unique(columns["rank"], return_counts=True)
    if len(np.unique(counts)) > 1:
        detail = ", ".join(f"rank {r}: {n}" for r, n in zip(ranks, counts))
        raise LatencyCsvError(
            f"{path}: field 'rank': unequal call counts across ranks ({detail}); every rank must make the same calls"
        )
    for name in list(columns):
        columns[name] = columns[name][order]
    frame = pd.DataFrame({f: columns[f] for f in ("rank", "iteration", "us", "warmup", "in_average")})
    work = (
        pd.DataFrame(
            {
                "rank": columns["rank"],
                "iteration": columns["iteration"],
                **{f: columns[c] for f, c in zip(WORK_BYTES, ("processed", "sent"))},
            }
        )
        if layout.work
        else None
    )
    values = {name: singles.first[name][1] for name in layout.singles}
    del columns, order
    release_memory()
    return LatencyTable(frame, values.get("measurement"), values.get("clock_hz"), str(path), work)


def release_memory() -> None:
    """Give freed memory back to the system: Arrow's pool keeps what the pieces' parses freed (on a 5M-row file
    ~120 MiB after the parse), and glibc's heap keeps freed blocks below its mmap threshold (~55 MiB more there).
    The baseline job's peak is measured against the file's size (issue 58 part 4: at most 3x)."""
    pa.default_memory_pool().release_unused()
    try:
        import ctypes

        ctypes.CDLL("libc.so.6").malloc_trim(0)
    except (OSError, AttributeError):  # not glibc: its heap stays as it is
        pass


def parse_api_csv(path: str | Path, max_us: float | None = None) -> pd.DataFrame:
    """The driver's per-rank full-API latency file: rank,iteration,api_us,is_warmup."""
    path = Path(path)
    header, rows = _read_rows(path)
    needed = ("rank", "iteration", "api_us", "is_warmup")
    missing = [f for f in needed if f not in header]
    if missing:
        raise LatencyCsvError(f"{path}: line 1: header lacks {', '.join(missing)}; found {header}")
    col = {name: header.index(name) for name in header}
    records = []
    for line, row in rows:
        if len(row) < len(header):
            raise LatencyCsvError(f"{path}: line {line}: {len(row)} fields, expected {len(header)} (truncated row?)")
        records.append(
            (
                _int(path, line, "rank", row[col["rank"]].strip()),
                _int(path, line, "iteration", row[col["iteration"]].strip()),
                _duration(path, line, "api_us", row[col["api_us"]].strip(), max_us),
                _flag(path, line, "is_warmup", row[col["is_warmup"]].strip()),
            )
        )
    frame = pd.DataFrame.from_records(records, columns=["rank", "iteration", "us", "warmup"])
    frame["in_average"] = ~frame["warmup"]
    return frame
