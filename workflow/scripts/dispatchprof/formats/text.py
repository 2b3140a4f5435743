"""Reading a text file that must be text: binary data and non-UTF-8 bytes end in the parser's own error type,
naming the file and the line, never in a decoding crash."""

from __future__ import annotations

import csv
import io
import math
from pathlib import Path
from typing import Any, Mapping, Sequence

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


def finite_nonnegative(path: Path, line: int, field: str, value: str, error: type[Exception], what: str = "number") -> float:
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
