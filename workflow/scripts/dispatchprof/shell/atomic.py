"""Atomic output writing: a reader never sees a half-written file, and a crash leaves the old one."""

from __future__ import annotations

import json
import os
import shutil
import stat
import sys
import tempfile
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Iterator


def umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def copy_under_umask(src: str | Path, dst: str | Path) -> str:
    """Copy a file's content and its mode less the umask (shutil.copy2 keeps the source's mode: a build output made
    world-readable under another umask stays so in results/). A ``copy_function`` for shutil.copytree too."""
    shutil.copyfile(src, dst)
    os.chmod(dst, stat.S_IMODE(os.stat(src).st_mode) & ~umask())
    return str(dst)


def make_executable(path: str | Path) -> None:
    """rwx as far as the umask allows (a generated script: 0755 under umask 022, 0750 under 027)."""
    os.chmod(path, 0o777 & ~umask())


@contextmanager
def atomic_path(path: str | Path) -> Iterator[Path]:
    """Yield a temporary path next to ``path``; rename it over ``path`` only if the block succeeds. The result has
    the mode a plain open() would give (0666 less the umask), not mkstemp's 0600: a lead on a shared filesystem
    must be able to read the report."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    os.close(fd)
    try:
        yield Path(tmp)
        os.chmod(tmp, 0o666 & ~umask())
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)


def write_text_atomic(path: str | Path, text: str) -> None:
    with atomic_path(path) as tmp:
        tmp.write_text(text)


def write_json_atomic(path: str | Path, data: Any, indent: int | None = 2) -> None:
    write_text_atomic(path, json.dumps(data, indent=indent, sort_keys=False, default=str) + "\n")


def write_parquet_atomic(path: str | Path, frame: Any, metadata: dict[str, str] | None = None) -> None:
    """Write a pandas DataFrame as Parquet; ``metadata`` goes into the schema (e.g. the toolchain)."""
    import pyarrow as pa

    write_table_parquet_atomic(path, pa.Table.from_pandas(frame, preserve_index=False), metadata)


def pyarrow_without_pandas_probe() -> None:
    """For jobs that never hand pandas objects to pyarrow (the parse and not_provided jobs): pyarrow imports pandas
    (~0.3 s) the first time it builds any array, only to ask whether the input is a pandas object. Here that first
    question finds pandas absent, and pyarrow keeps the answer for such questions: until a conversion that needs
    pandas (Table.from_pandas, to_pandas) imports it again (pyarrow's pandas-shim.pxi retries then), pyarrow takes a
    pandas object handed to pa.array for a plain sequence (NaN stays NaN instead of becoming null). So: only where
    pyarrow gets lists and numpy arrays. Nothing to do once pandas is loaded."""
    if "pandas" in sys.modules:
        return
    import pyarrow as pa

    sys.meta_path.insert(
        0, _NO_PANDAS
    )  # not sys.modules["pandas"] = None: pyarrow's Cython import takes that None as pandas
    try:
        pa.array([0])
    finally:
        sys.meta_path.remove(_NO_PANDAS)


class _PandasAbsent:  # a meta path finder: an object with find_spec (importlib.abc would cost every job ~10 ms)
    def find_spec(self, name: str, path: Any = None, target: Any = None) -> None:
        if name.partition(".")[0] == "pandas":
            raise ModuleNotFoundError("pandas is hidden from pyarrow's first probe", name=name)
        return None


_NO_PANDAS = _PandasAbsent()


def write_arrow_parquet_atomic(
    path: str | Path, columns: dict[str, Any], metadata: dict[str, str] | None = None
) -> None:
    """Write columns as Parquet without pandas: lists (None = null; an empty list is a string column), numpy
    arrays, or pyarrow arrays."""
    import pyarrow as pa

    table = pa.table(
        {
            name: values
            if isinstance(values, pa.Array)
            else pa.array(values, type=pa.string() if len(values) == 0 else None)
            for name, values in columns.items()
        }
    )
    write_table_parquet_atomic(path, table, metadata)


def write_table_parquet_atomic(path: str | Path, table: Any, metadata: dict[str, str] | None = None) -> None:
    """Write a pyarrow Table as Parquet; ``metadata`` goes into the schema."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    if metadata:
        merged = dict(table.schema.metadata or {})
        merged.update({k.encode(): v.encode() for k, v in metadata.items()})
        table = table.replace_schema_metadata(merged)
    # Dictionary encoding only for columns whose values repeat by nature (names, roles, states). On measured numbers
    # (timestamps, durations) pyarrow builds a dictionary per column before it gives up on it: +60-80 MiB of peak
    # memory for one parse job's 256,000 launches, for no smaller file. What is read back is the same table.
    repeating = [
        f.name
        for f in table.schema
        if pa.types.is_string(f.type) or pa.types.is_large_string(f.type) or pa.types.is_dictionary(f.type)
    ]
    with atomic_path(path) as tmp:
        pq.write_table(table, tmp, use_dictionary=repeating)
