"""dispatch_latency.csv (ascend_deepep / AKL LatencyProfile, shared/formats/deepep.md §1), and api_latency CSVs.

Columns are found by header name, never by position. Accepted: the full form
``rank,iteration,elapsed_ms,elapsed_us,is_warmup,in_average[,work columns][,metadata...]`` and the legacy
five-column form ``rank,iteration,elapsed_us,is_warmup,in_average``. Refused, with file, line and field:
mixed ``measurement`` or ``clock_hz``, duplicate (rank, iteration), unequal call counts across ranks,
negative or non-finite values, rows marked both warm-up and in_average, wrong types, binary garbage.
"""

from __future__ import annotations

import csv
import io
import math
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from dispatchprof.formats.text import read_text_file

REQUIRED = ("rank", "iteration", "is_warmup", "in_average")


class LatencyCsvError(ValueError):
    """A latency file that cannot be used; the message names the file, the line and the field."""


@dataclass
class LatencyTable:
    frame: pd.DataFrame  # rank, iteration, us, warmup, in_average (one row per rank and call)
    measurement: str | None  # kernel | event | None (legacy: unspecified boundary)
    clock_hz: str | None
    path: str


def _read_rows(path: Path) -> tuple[list[str], list[tuple[int, list[str]]]]:
    text = read_text_file(path, LatencyCsvError)
    try:
        rows = list(csv.reader(io.StringIO(text)))
    except csv.Error as exc:
        raise LatencyCsvError(f"{path}: not a readable CSV ({exc})") from exc
    if not rows or not any(cell.strip() for cell in rows[0]):
        raise LatencyCsvError(f"{path}: line 1: empty file; expected a header starting with rank,iteration")
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


def _duration(path: Path, line: int, field: str, value: str) -> float:
    try:
        number = float(value)
    except ValueError:
        raise LatencyCsvError(f"{path}: line {line}: field '{field}' is {value!r}, expected a number") from None
    if not math.isfinite(number) or number < 0:
        raise LatencyCsvError(f"{path}: line {line}: field '{field}' is {value}, expected a finite non-negative duration")
    return number


def _single_value(path: Path, rows: list[tuple[int, list[str]]], header: list[str], field: str) -> str | None:
    if field not in header:
        return None
    col = header.index(field)
    first: tuple[int, str] | None = None
    for line, row in rows:
        value = row[col].strip() if col < len(row) else ""
        if first is None:
            first = (line, value)
        elif value != first[1]:
            raise LatencyCsvError(
                f"{path}: line {line}: field '{field}' is {value!r} but line {first[0]} has {first[1]!r}; mixed {field} values cannot be compared"
            )
    return first[1] if first else None


def parse_latency_csv(path: str | Path) -> LatencyTable:
    path = Path(path)
    header, rows = _read_rows(path)
    missing = [f for f in REQUIRED if f not in header]
    if "elapsed_us" not in header and "elapsed_ms" not in header:
        missing.append("elapsed_us (or elapsed_ms)")
    if missing:
        raise LatencyCsvError(f"{path}: line 1: header lacks {', '.join(missing)}; found {header}")
    if not rows:
        raise LatencyCsvError(f"{path}: no data rows after the header")
    col = {name: header.index(name) for name in header}
    time_field, scale = ("elapsed_us", 1.0) if "elapsed_us" in col else ("elapsed_ms", 1000.0)
    records = []
    seen: dict[tuple[int, int], int] = {}
    for line, row in rows:
        if len(row) < len(header):
            raise LatencyCsvError(f"{path}: line {line}: {len(row)} fields, expected {len(header)} as in the header (truncated row?)")
        rank = _int(path, line, "rank", row[col["rank"]].strip())
        iteration = _int(path, line, "iteration", row[col["iteration"]].strip())
        us = _duration(path, line, time_field, row[col[time_field]].strip()) * scale
        warmup = _flag(path, line, "is_warmup", row[col["is_warmup"]].strip())
        in_average = _flag(path, line, "in_average", row[col["in_average"]].strip())
        if warmup and in_average:
            raise LatencyCsvError(f"{path}: line {line}: field 'in_average' is 1 on a warm-up row (is_warmup=1); a sample cannot be both")
        if (rank, iteration) in seen:
            raise LatencyCsvError(f"{path}: line {line}: field 'iteration': rank {rank} iteration {iteration} duplicates line {seen[(rank, iteration)]}")
        seen[(rank, iteration)] = line
        records.append((rank, iteration, us, warmup, in_average))
    measurement = _single_value(path, rows, header, "measurement")
    clock_hz = _single_value(path, rows, header, "clock_hz")
    frame = pd.DataFrame.from_records(records, columns=["rank", "iteration", "us", "warmup", "in_average"])
    counts = frame.groupby("rank").size()
    if counts.nunique() > 1:
        detail = ", ".join(f"rank {r}: {n}" for r, n in counts.items())
        raise LatencyCsvError(f"{path}: field 'rank': unequal call counts across ranks ({detail}); every rank must make the same calls")
    return LatencyTable(frame.sort_values(["iteration", "rank"], ignore_index=True), measurement, clock_hz, str(path))


def parse_api_csv(path: str | Path) -> pd.DataFrame:
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
                _duration(path, line, "api_us", row[col["api_us"]].strip()),
                _flag(path, line, "is_warmup", row[col["is_warmup"]].strip()),
            )
        )
    frame = pd.DataFrame.from_records(records, columns=["rank", "iteration", "us", "warmup"])
    frame["in_average"] = ~frame["warmup"]
    return frame
