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

import re
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd
import pyarrow as pa
import pyarrow.dataset as ds
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


# <collection time, digits and T>-<run id>.v<schema>.parquet: names sort in time order, and a reader skips a record
# of a newer schema or a foreign file by its name, before opening it
RECORD_NAME = re.compile(r"^(?P<stamp>[0-9T]+)-(?P<run>[0-9A-Za-z_]+)\.v(?P<version>[0-9]+)\.parquet$")


def record_path(root: Path, series: str, run_id: str, recorded_at: str) -> Path:
    stamp = "".join(c for c in recorded_at.partition("+")[0] if c.isdigit() or c == "T") or "0"
    return root / series / f"{stamp}-{run_id}.v{SCHEMA_VERSION}.parquet"


def arrow_schema() -> pa.Schema:
    return pa.schema(
        [(c, _TYPES.get(c, pa.string())) for c in COLUMNS], metadata={SCHEMA_KEY: str(SCHEMA_VERSION).encode()}
    )


def record_table(rows: pd.DataFrame, run_id: str) -> pa.Table:
    """One run's record as the Arrow table its file holds; ``rows`` has every column of COLUMNS."""
    missing = [c for c in COLUMNS if c not in rows.columns]
    if missing:
        raise ValueError(f"history record of run {run_id}: missing columns {', '.join(missing)}")
    return pa.Table.from_pandas(rows.loc[:, list(COLUMNS)], schema=arrow_schema(), preserve_index=False)


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


def _named_records(folder: Path) -> tuple[list[Path], list[str]]:
    """The record files of a series folder in time order, and a sentence for each file left out by its name."""
    usable, skipped = [], []
    for path in sorted(folder.glob("*.parquet")) if folder.is_dir() else []:
        named = RECORD_NAME.match(path.name)
        if named is None:
            skipped.append(f"{path}: not named <time>-<run id>.v<schema>.parquet; left out (the file is left as it is)")
        elif int(named["version"]) > SCHEMA_VERSION:
            skipped.append(
                f"{path}: schema version {named['version']} is newer than this workflow's {SCHEMA_VERSION}; "
                "left out (the file is left as it is)"
            )
        else:
            usable.append(path)
    return usable, skipped


def _read_one(path: Path, kinds: tuple[str, ...]) -> tuple[pd.DataFrame | None, str | None]:
    problem = _problem(path)
    if problem is not None:
        return None, problem
    try:
        table = pq.read_table(path, columns=list(COLUMNS), filters=[("kind", "in", list(kinds))])
    except (OSError, pa.ArrowException, KeyError) as exc:
        return None, f"unreadable ({type(exc).__name__}: {exc})"
    return table.to_pandas(), None


def read_store(
    root: Path, series: str, kinds: tuple[str, ...] = ("metric", "cause", "layer"), last: int | None = None
) -> StoreRead:
    """The usable records of ``series`` (the ``last`` ones in time order when given; raw samples left out unless
    asked for), and what was left out and why. All files are read in one dataset scan; when that fails (a truncated
    or foreign file), file by file, so that the bad one is named and the others are read."""
    paths, skipped = _named_records(root / series)
    paths = paths[-last:] if last else paths
    try:
        dataset = ds.dataset([str(p) for p in paths], format="parquet", schema=arrow_schema())
        rows = dataset.to_table(columns=list(COLUMNS), filter=ds.field("kind").isin(list(kinds))).to_pandas()
        return StoreRead(rows=rows, skipped=skipped)
    except (OSError, pa.ArrowException, KeyError):
        pass
    frames = []
    for path in paths:
        frame, problem = _read_one(path, kinds)
        if problem is None:
            frames.append(frame)
        else:
            skipped.append(f"{path}: {problem}; left out (the file is left as it is)")
    rows = pd.concat(frames, ignore_index=True) if frames else pd.DataFrame(columns=list(COLUMNS))
    return StoreRead(rows=rows, skipped=skipped)
