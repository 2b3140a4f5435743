"""Reading an SQLite database that is not ours (a user's msprof export, read in place) without writing beside it.

``mode=ro`` is not enough: a read-only connection to a WAL database still creates or updates its ``-shm`` file, and
on a read-only share it fails with "attempt to write a readonly database". ``immutable=1`` writes nothing and takes
no locks, but it ignores the journal files: rows still in a ``-wal`` file are not seen (a database whose tables are
all in its -wal reads "no such table"), and a hot ``-journal`` is not rolled back. So a database with no non-empty
journal file beside it is opened immutable; one with such a file is read from a private copy of the database and
its journal files, which is removed afterwards. The copy is opened read-write (it is ours): SQLite replays the WAL
or rolls the journal back into the copy, as the program that wrote the files would have on its next open.
"""

from __future__ import annotations

import shutil
import sqlite3
import tempfile
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator
from urllib.parse import urlencode

JOURNAL_SUFFIXES = ("-wal", "-journal")  # never -shm: it is rebuilt from the -wal, and a copy of it could be stale


def sqlite_uri(path: Path, **params: str | int) -> str:
    """A file: URI for ``path`` with its characters quoted (a space, '#' or '?' in a name is not a URI delimiter)."""
    return path.absolute().as_uri() + ("?" + urlencode(params) if params else "")


def pending_journals(path: Path) -> list[Path]:
    """The journal files beside ``path`` that hold something immutable=1 would not see."""
    found = [path.with_name(path.name + suffix) for suffix in JOURNAL_SUFFIXES]
    return [journal for journal in found if journal.is_file() and journal.stat().st_size > 0]


@contextmanager
def read_only_db(path: Path) -> Iterator[sqlite3.Connection]:
    """A connection that reads ``path`` and every committed row, writing nothing in its directory (module doc).
    SQLite errors propagate (the caller names the file in its own error); a missing file is an error, not a new
    empty database."""
    if not path.is_file():
        raise sqlite3.OperationalError(f"no such database file: {path}")
    journals = pending_journals(path)
    if not journals:
        with _closing(sqlite3.connect(sqlite_uri(path, immutable=1), uri=True)) as conn:
            yield conn
        return
    with tempfile.TemporaryDirectory(prefix="dispatchprof_db_") as scratch:
        copy = Path(scratch) / path.name
        for source in (path, *journals):
            shutil.copyfile(source, copy.with_name(source.name))
        with _closing(sqlite3.connect(sqlite_uri(copy), uri=True)) as conn:
            conn.execute("PRAGMA query_only = ON")  # the replay above is the only write; a query cannot add one
            yield conn


@contextmanager
def _closing(conn: sqlite3.Connection) -> Iterator[sqlite3.Connection]:
    # sqlite3's own context manager commits or rolls back; it does not close the connection (and its file handles)
    try:
        yield conn
    finally:
        conn.close()
