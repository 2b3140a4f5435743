"""dispatch_latency.csv (ascend_deepep / AKL LatencyProfile, shared/formats/deepep.md §1), and api_latency CSVs.

Columns are found by header name, never by position. Accepted: the full form
``rank,iteration,elapsed_ms,elapsed_us,is_warmup,in_average[,work columns][,metadata...]`` and the legacy
five-column form ``rank,iteration,elapsed_us,is_warmup,in_average``. Refused, with file, line and field:
mixed ``measurement`` or ``clock_hz``, duplicate (rank, iteration), unequal call counts across ranks,
negative or non-finite values, rows marked both warm-up and in_average, wrong types, binary garbage.

Work columns (deepep.md §1, written only when the session has a work callback): ``processed_bytes`` and
``sent_bytes`` (uint64, per rank and call) come together or not at all (AKL's latency_plot refuses one byte column
alone); ``processed_gbps``/``sent_gbps``, when present, must equal bytes/(ms*1e6) and be empty exactly when ms = 0.
The file names the columns but not what the callback counts, so the parser keeps the bytes as they are
(``LatencyTable.work``) and the analysis compares them with its own accounting.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from dispatchprof.formats.text import finite_nonnegative, read_csv_rows

REQUIRED = ("rank", "iteration", "is_warmup", "in_average")
WORK_BYTES = ("processed_bytes", "sent_bytes")
UINT64_MAX = 2**64 - 1


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
            f"{path}: line {line}: field '{field}' is {value}, {us:.4g} us, above stats.max_plausible_us ({max_us:g} us): not a plausible dispatch duration"
        )
    return us


def _uint64(path: Path, line: int, field: str, value: str) -> int:
    number = _int(path, line, field, value)
    if number > UINT64_MAX:
        raise LatencyCsvError(f"{path}: line {line}: field '{field}' is {number}, expected a uint64 (at most {UINT64_MAX})")
    return number


def _gbps(path: Path, line: int, field: str, value: str, byte_count: int, ms: float) -> None:
    """The writer's ``bytes/(ms*1e6)``, empty when ms = 0: a value that disagrees means the columns do not belong together."""
    if value == "":
        if ms != 0:
            raise LatencyCsvError(
                f"{path}: line {line}: field '{field}' is empty, expected {byte_count / (ms * 1e6)!r} (bytes/(ms*1e6); empty only when elapsed_ms is 0)"
            )
        return
    try:
        number = float(value)
    except ValueError:
        raise LatencyCsvError(f"{path}: line {line}: field '{field}' is {value!r}, expected a number (bytes/(ms*1e6)) or empty") from None
    if ms == 0:
        raise LatencyCsvError(f"{path}: line {line}: field '{field}' is {value} but elapsed_ms is 0; expected empty")
    expected = byte_count / (ms * 1e6)
    # the writer's float formatting is not documented: allow its rounding (9 decimals, or a relative 1e-6)
    if not math.isfinite(number) or abs(number - expected) > 1e-9 + 1e-6 * abs(expected):
        raise LatencyCsvError(f"{path}: line {line}: field '{field}' is {value}, expected {expected!r} (bytes/(ms*1e6))")


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


def parse_latency_csv(path: str | Path, max_us: float | None = None) -> LatencyTable:
    path = Path(path)
    header, rows = _read_rows(path)
    missing = [f for f in REQUIRED if f not in header]
    if "elapsed_us" not in header and "elapsed_ms" not in header:
        missing.append("elapsed_us (or elapsed_ms)")
    if missing:
        raise LatencyCsvError(f"{path}: line 1: header lacks {', '.join(missing)}; found {header}")
    has_work = [f for f in WORK_BYTES if f in header]
    if len(has_work) == 1:
        other = next(f for f in WORK_BYTES if f not in has_work)
        raise LatencyCsvError(f"{path}: line 1: field '{other}' missing but '{has_work[0]}' present; expected both work byte columns or neither")
    if not rows:
        raise LatencyCsvError(f"{path}: no data rows after the header")
    col = {name: header.index(name) for name in header}
    time_field, scale = ("elapsed_us", 1.0) if "elapsed_us" in col else ("elapsed_ms", 1000.0)
    records = []
    work = []
    seen: dict[tuple[int, int], int] = {}
    for line, row in rows:
        if len(row) < len(header):
            raise LatencyCsvError(f"{path}: line {line}: {len(row)} fields, expected {len(header)} as in the header (truncated row?)")
        rank = _int(path, line, "rank", row[col["rank"]].strip())
        iteration = _int(path, line, "iteration", row[col["iteration"]].strip())
        us = _duration(path, line, time_field, row[col[time_field]].strip(), max_us, scale)
        warmup = _flag(path, line, "is_warmup", row[col["is_warmup"]].strip())
        in_average = _flag(path, line, "in_average", row[col["in_average"]].strip())
        if warmup and in_average:
            raise LatencyCsvError(f"{path}: line {line}: field 'in_average' is 1 on a warm-up row (is_warmup=1); a sample cannot be both")
        if (rank, iteration) in seen:
            raise LatencyCsvError(f"{path}: line {line}: field 'iteration': rank {rank} iteration {iteration} duplicates line {seen[(rank, iteration)]}")
        seen[(rank, iteration)] = line
        records.append((rank, iteration, us, warmup, in_average))
        if has_work:
            counts = {f: _uint64(path, line, f, row[col[f]].strip()) for f in WORK_BYTES}
            for f in WORK_BYTES:
                rate = f.replace("_bytes", "_gbps")
                if rate in col:
                    _gbps(path, line, rate, row[col[rate]].strip(), counts[f], us / 1000)
            work.append((rank, iteration, counts["processed_bytes"], counts["sent_bytes"]))
    measurement = _single_value(path, rows, header, "measurement")
    clock_hz = _single_value(path, rows, header, "clock_hz")
    frame = pd.DataFrame.from_records(records, columns=["rank", "iteration", "us", "warmup", "in_average"])
    counts = frame.groupby("rank").size()
    if counts.nunique() > 1:
        detail = ", ".join(f"rank {r}: {n}" for r, n in counts.items())
        raise LatencyCsvError(f"{path}: field 'rank': unequal call counts across ranks ({detail}); every rank must make the same calls")
    work_frame = (
        pd.DataFrame.from_records(work, columns=["rank", "iteration", *WORK_BYTES])
        .astype({f: "uint64" for f in WORK_BYTES})
        .sort_values(["iteration", "rank"], ignore_index=True)
        if has_work
        else None
    )
    return LatencyTable(frame.sort_values(["iteration", "rank"], ignore_index=True), measurement, clock_hz, str(path), work_frame)


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
