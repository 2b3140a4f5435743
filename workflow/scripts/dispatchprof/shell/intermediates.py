"""Reading what an earlier job of the run wrote (stats JSON, Parquet tables): a file that cannot be read (truncated,
overwritten, removed after its job ended) is an input error naming the file and why, never an exception from deep
inside the reader reported as a workflow bug (shell/stage.guarded makes it the stage's `invalid` reason)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any, Sequence

if TYPE_CHECKING:
    import pyarrow as pa  # imported where a table is read: a job that reads JSON only does not pay for it


class IntermediateUnreadable(ValueError):
    """A file of the run that cannot be read: its path and why."""

    def __init__(self, path: str | Path, why: str):
        super().__init__(
            f"{path}: cannot be read ({why}): a file of the run, damaged or removed since its job wrote it"
        )
        self.path, self.why = str(path), why


def read_json(path: str | Path) -> Any:
    """The JSON document at ``path``; IntermediateUnreadable when it cannot be read, is no UTF-8 or no JSON (a
    truncated file ends mid-document)."""
    try:
        raw = Path(path).read_bytes()
        return json.loads(raw.decode("utf-8"))
    except OSError as exc:
        raise IntermediateUnreadable(path, exc.strerror or str(exc)) from exc
    except UnicodeDecodeError as exc:
        raise IntermediateUnreadable(path, f"not UTF-8 text at byte {exc.start}") from exc
    except json.JSONDecodeError as exc:
        raise IntermediateUnreadable(
            path, f"not valid JSON: {exc.msg}, line {exc.lineno} column {exc.colno}, {len(raw)} bytes"
        ) from exc


def read_parquet(path: str | Path, columns: Sequence[str] | None = None) -> pa.Table:
    """The Parquet table at ``path`` (one file: ParquetFile, which does not import pyarrow.dataset), ``columns``
    only when given; IntermediateUnreadable when it cannot be read or is no Parquet file (a truncated one has no
    footer)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    try:
        return pq.ParquetFile(path).read(columns=list(columns) if columns is not None else None)
    except OSError as exc:  # pyarrow's own errors derive from it where the file is at fault: ArrowInvalid does not
        raise IntermediateUnreadable(path, exc.strerror or f"not a readable Parquet file: {exc}") from exc
    except pa.ArrowException as exc:
        raise IntermediateUnreadable(path, f"not a readable Parquet file: {exc}") from exc
