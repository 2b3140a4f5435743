"""The history store: one Parquet file per run under ``history.path/<series>/``, readable without our code.

A record is a long table, one row per value: ``kind`` is ``metric`` (a headline or a layer's number, with its 95%
CI when it has one; ``better`` says its direction and makes it gated), ``cause`` (a cost-account cause's cost per
launch, gated), ``layer`` (a number that explains, not gated: a role's PMU busy time, a rank's median) or ``sample`` (a raw per-iteration max of a
scope; ``metric`` names the scope). Identity columns repeat on every row (Parquet's dictionary encoding makes that
cheap) so that ``duckdb.sql("select * from 'results/history/**/*.parquet'")`` or ``pandas.read_parquet`` answers
questions without this module. The file's key-value metadata holds ``dispatchprof.history`` = the schema version.

Writes (dispatchprof.stages.history.write_record) are atomic (a temporary file in the same directory, then ``os.replace``): two runs finishing together each
land their own file, an interrupted write leaves no record, and a re-analysis of one collection replaces its own file
(the name is the run id, derived from the collected data, so the noise of the series is not shrunk by copies).
Reading names every file it cannot use (truncated, foreign, of a newer schema) and never modifies or deletes it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

SCHEMA_KEY = b"dispatchprof.history"
SCHEMA_VERSION = 1
IDENTITY_COLUMNS = ("run_id", "series", "recorded_at", "toolchain", "comparable", "identity")
VALUE_COLUMNS = ("kind", "metric", "value", "ci_low", "ci_high", "better")
COLUMNS = IDENTITY_COLUMNS + VALUE_COLUMNS
_TYPES = {
    "value": pa.float64(),
    "ci_low": pa.float64(),
    "ci_high": pa.float64(),
}


@dataclass
class StoreRead:
    """What a read found: the rows of every usable record, and one sentence per file it left out."""

    rows: pd.DataFrame
    skipped: list[str] = field(default_factory=list)


def record_path(root: Path, series: str, run_id: str) -> Path:
    return root / series / f"{run_id}.parquet"


def record_table(rows: pd.DataFrame, run_id: str) -> pa.Table:
    """One run's record as the Arrow table its file holds; ``rows`` has every column of COLUMNS."""
    missing = [c for c in COLUMNS if c not in rows.columns]
    if missing:
        raise ValueError(f"history record of run {run_id}: missing columns {', '.join(missing)}")
    schema = pa.schema(
        [(c, _TYPES.get(c, pa.string())) for c in COLUMNS], metadata={SCHEMA_KEY: str(SCHEMA_VERSION).encode()}
    )
    return pa.Table.from_pandas(rows.loc[:, list(COLUMNS)], schema=schema, preserve_index=False)


def _problem(path: Path) -> str | None:
    """Why the file at ``path`` is not a record this code can read, or None."""
    try:
        meta = pq.read_schema(path).metadata or {}
    except (OSError, pa.ArrowException) as exc:
        return f"not a readable Parquet file ({type(exc).__name__}: {exc})"
    version = meta.get(SCHEMA_KEY)
    if version is None:
        return "not a dispatchprof history record (no dispatchprof.history metadata)"
    if not version.isdigit() or int(version) > SCHEMA_VERSION:
        return f"schema version {version.decode(errors='replace')} is newer than this workflow's {SCHEMA_VERSION}"
    return None


def read_store(root: Path, series: str, kinds: tuple[str, ...] = ("metric", "cause", "layer")) -> StoreRead:
    """Every usable record of ``series`` (raw samples left out unless asked for), and what was left out and why."""
    frames, skipped = [], []
    folder = root / series
    paths = sorted(folder.glob("*.parquet")) if folder.is_dir() else []
    for path in paths:
        problem = _problem(path)
        if problem is None:
            try:
                table = pq.read_table(path, columns=list(COLUMNS), filters=[("kind", "in", list(kinds))])
            except (OSError, pa.ArrowException, KeyError) as exc:
                problem = f"unreadable ({type(exc).__name__}: {exc})"
            else:
                frames.append(table.to_pandas())
        if problem is not None:
            skipped.append(f"{path}: {problem}; left out (the file is left as it is)")
    rows = pd.concat(frames, ignore_index=True) if frames else pd.DataFrame(columns=list(COLUMNS))
    return StoreRead(rows=rows, skipped=skipped)
