"""Reading a text file that must be text: binary data and non-UTF-8 bytes end in the parser's own error type,
naming the file and the line, never in a decoding crash."""

from __future__ import annotations

import codecs
import csv
import io
import math
from pathlib import Path
from typing import Any, Iterator, Mapping, Sequence

import numpy as np

from dispatchprof.formats.encoding import encoding_problem


def refusal(path: Path, exc: Exception) -> str:
    """Why a file (or the directory holding a rank's files) was refused, naming it: a parser's error names its file
    already, an OSError its path where it has one."""
    if isinstance(exc, OSError) and not exc.filename:
        return f"{path}: {exc.strerror or exc}"
    return str(exc)


def read_text_file(path: Path, error: type[Exception], expected: str = "a CSV text file") -> str:
    raw = path.read_bytes()
    problem = encoding_problem(path, raw, expected)
    if problem:
        raise error(problem)
    if b"\x00" in raw:  # beyond the first 4 KiB
        line = raw[: raw.index(b"\x00")].count(b"\n") + 1
        raise error(f"{path}: line {line}: binary data (NUL byte); expected {expected}")
    try:
        return raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = raw[: exc.start].count(b"\n") + 1
        raise error(f"{path}: line {line}: not UTF-8 text ({exc.reason}); expected {expected}") from exc


def read_csv_rows(path: Path, error: type[Exception], expected_header: str) -> list[list[str]]:
    """Every row of a CSV text file, header first; an unreadable or empty file ends in ``error`` naming the file and
    what header was expected."""
    text = read_text_file(path, error)
    try:
        rows = list(csv.reader(io.StringIO(text)))
    except csv.Error as exc:
        raise error(f"{path}: not a readable CSV ({exc})") from exc
    if not rows or not any(cell.strip() for cell in rows[0]):
        raise error(f"{path}: line 1: empty file; expected {expected_header}")
    return rows


CHUNK_BYTES = 16 * 2**20  # a streamed file is read in pieces of about this size, each ending at a newline


def line_chunks(path: Path, chunk_bytes: int = CHUNK_BYTES) -> Iterator[tuple[int, bytes]]:
    """The file's bytes in pieces of about ``chunk_bytes`` that end at a newline (the last may not; a longer line is
    one piece), each with the number of its first line; a leading UTF-8 byte order mark dropped. A newline is never
    part of a multi-byte UTF-8 character, so each piece decodes on its own."""
    if chunk_bytes < 1:
        raise ValueError(f"chunk_bytes is {chunk_bytes}, expected at least 1")
    line = 1
    with open(path, "rb") as handle:
        carry = handle.read(len(codecs.BOM_UTF8))
        if carry == codecs.BOM_UTF8:
            carry = b""
        while True:
            block = handle.read(chunk_bytes)
            if not block:
                if carry:
                    yield line, carry
                return
            cut = block.rfind(b"\n") + 1
            if cut == 0:
                carry += block
                continue
            piece = carry + block[:cut]
            yield line, piece
            line += piece.count(b"\n")
            carry = block[cut:]


def line_at(piece: bytes, first_line: int, offset: int) -> int:
    """The line number of byte ``offset`` of a piece whose first line is ``first_line``."""
    return first_line + piece.count(b"\n", 0, offset)


def _one_record_per_line(piece: bytes) -> bool:
    """Whether the csv module reads ``piece`` as one record per line: no quote (a quoted field may hold a newline), no
    carriage return but in CRLF (the csv module refuses a lone one), no line longer than its field size limit."""
    if b'"' in piece or (b"\r" in piece and piece.count(b"\r") != piece.count(b"\r\n")):
        return False
    # a line longer than the limit holds a whole aligned window of half the limit without a newline: look closer
    # only where one has none
    limit = csv.field_size_limit()
    half = max(limit // 2, 1)
    if all(piece.find(b"\n", start, start + half) >= 0 for start in range(0, len(piece) - half + 1, half)):
        return True
    ends = np.flatnonzero(np.frombuffer(piece, np.uint8) == 10)
    lengths = np.diff(ends, prepend=-1, append=len(piece))
    return int(lengths.max()) <= limit + 1  # each length counts its newline


def check_text_file(
    path: Path, error: type[Exception], expected: str = "a CSV text file", chunk_bytes: int = CHUNK_BYTES
) -> bool:
    """read_text_file's refusals, file by pieces (memory of one piece, not of the file), in the same order: its
    encoding (a byte order mark of UTF-16/32, UTF-16 without one), a NUL byte anywhere, then the first byte that is not
    UTF-8. Returns whether every line is one CSV record (no quote, no lone carriage return, no overlong line): a
    reader may then parse any run of whole lines on its own and number its records by their lines."""
    problem = encoding_problem(path, None, expected)
    if problem:
        raise error(problem)
    not_utf8: str | None = None
    plain = True
    for line, piece in line_chunks(path, chunk_bytes):
        if b"\x00" in piece:
            raise error(
                f"{path}: line {line_at(piece, line, piece.index(0))}: binary data (NUL byte); expected {expected}"
            )
        if not_utf8 is None and not piece.isascii():
            try:
                piece.decode("utf-8")
            except UnicodeDecodeError as exc:
                not_utf8 = (
                    f"{path}: line {line_at(piece, line, exc.start)}: "
                    f"not UTF-8 text ({exc.reason}); expected {expected}"
                )
        plain = plain and _one_record_per_line(piece)
    if not_utf8:
        raise error(not_utf8)
    return plain


def scan_csv_file(path: Path, error: type[Exception], chunk_bytes: int = CHUNK_BYTES) -> bool:
    """read_csv_rows's refusals of a whole file, file by pieces: check_text_file's, then a CSV the csv module cannot
    read. Returns check_text_file's answer (whether every line is one record)."""
    plain = check_text_file(path, error, "a CSV text file", chunk_bytes)
    if not plain:
        try:
            for _ in csv_records(path, chunk_bytes):
                pass
        except csv.Error as exc:
            raise error(f"{path}: not a readable CSV ({exc})") from exc
    return plain


def csv_records(path: Path, chunk_bytes: int = CHUNK_BYTES) -> Iterator[list[str]]:
    """Every record of a UTF-8 CSV file as read_csv_rows reads them (lines split at newlines only, as in a string),
    one at a time."""

    def lines() -> Iterator[str]:
        for _, piece in line_chunks(path, chunk_bytes):
            yield from io.StringIO(piece.decode("utf-8"))

    return csv.reader(lines())


def finite_nonnegative(
    path: Path, line: int, field: str, value: str, error: type[Exception], what: str = "number"
) -> float:
    """A field that must be a finite number >= 0 (a time, a duration): anything else ends in ``error``."""
    try:
        number = float(value)
    except ValueError:
        raise error(f"{path}: line {line}: field '{field}' is {value!r}, expected a number") from None
    if not math.isfinite(number) or number < 0:
        raise error(f"{path}: line {line}: field '{field}' is {value}, expected a finite non-negative {what}")
    return number


def csv_text(columns: Mapping[str, Sequence[Any]]) -> str:
    """Columns (numpy arrays or lists of int, float64, bool) as CSV text, written as pandas' ``to_csv(index=False)``
    writes them: floats in their shortest round-trip form, NaN as an empty field, booleans True/False (float32 would
    print its float64 value, where pandas prints the float32 one: the launch table has none). Without
    pandas, whose import is most of the cost of a small job (~0.3 s, ~48 MiB)."""

    def field(value: Any) -> str:
        if isinstance(value, (bool, np.bool_)):
            return "True" if value else "False"
        if isinstance(value, (float, np.floating)):
            return "" if math.isnan(value) else repr(float(value))
        return str(int(value))

    names = list(columns)
    rows = zip(*(columns[name] for name in names))
    return "".join([",".join(names) + "\n", *(",".join(field(v) for v in row) + "\n" for row in rows)])
