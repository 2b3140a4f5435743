"""Walking a user's tree without ever raising: every entry with what keeps it from being read (a link loop, a
dangling link, a FIFO, an unreadable file), each directory once by device and inode. The import (stages/imports)
and the cross-check (tools/crosscheck) walk with it, so both name a problem in the same words."""

from __future__ import annotations

import errno
import os
import stat
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator


@dataclass(frozen=True)
class TreeEntry:
    """One entry of a walked tree: its stat (links followed), or the problem that keeps it from being read."""

    path: str
    stat: os.stat_result | None
    problem: str | None = None
    is_dir: bool = False
    visited: bool = False  # a directory reached again through a link: not walked twice


def entry_problem(path: str, open_files: bool = True) -> tuple[os.stat_result | None, str | None]:
    """(stat, None) for a readable regular file or a directory; else (stat or None, what keeps it from being read).
    Never raises: a link loop, a dangling link, a FIFO or device, (``open_files``) a file that cannot be opened are
    problems. A file is opened (non-blocking, closed at once) because its permission bits do not say it: root reads a
    mode-000 file, and an ACL may refuse what the bits allow."""
    try:
        st = os.stat(path)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            return None, "a symbolic link loop (Too many levels of symbolic links)"
        if os.path.islink(path):
            return None, f"a dangling symbolic link (to {os.readlink(path)}, {exc.strerror})"
        return None, f"cannot be examined ({exc.strerror or exc})"
    if stat.S_ISDIR(st.st_mode):
        return st, None
    if not stat.S_ISREG(st.st_mode):
        return st, f"not a regular file ({file_kind(st.st_mode)})"
    if open_files:
        try:
            os.close(os.open(path, os.O_RDONLY | os.O_NONBLOCK))
        except OSError as exc:
            return st, f"cannot be read ({exc.strerror or exc})"
    return st, None


def file_kind(mode: int) -> str:
    kinds = (
        (stat.S_ISFIFO, "a FIFO"),
        (stat.S_ISSOCK, "a socket"),
        (stat.S_ISCHR, "a character device"),
        (stat.S_ISBLK, "a block device"),
    )
    return next((name for test, name in kinds if test(mode)), "not a file or directory")


def walk_tree(root: Path, open_files: bool = True) -> Iterator[TreeEntry]:
    """Every entry under ``root`` (or ``root`` itself when it is no directory), depth first in name order, never
    raising. Directory links are followed, each directory once (by device and inode): a directory link loop ends the
    walk there. A file link loop, a dangling link, an unreadable file (``open_files``: opened to tell) or a directory
    that cannot be listed comes with its problem."""
    stack = [str(root)]
    visited: set[tuple[int, int]] = set()
    while stack:
        current = stack.pop()
        st, problem = entry_problem(current, open_files)
        if st is None or problem is not None or not stat.S_ISDIR(st.st_mode):
            yield TreeEntry(current, st, problem)
            continue
        if (st.st_dev, st.st_ino) in visited:
            yield TreeEntry(current, st, is_dir=True, visited=True)
            continue
        visited.add((st.st_dev, st.st_ino))
        try:
            with os.scandir(current) as listing:
                names = sorted((e.name for e in listing), reverse=True)
        except OSError as exc:
            yield TreeEntry(current, st, f"a directory that cannot be listed ({exc.strerror or exc})", is_dir=True)
            continue
        yield TreeEntry(current, st, is_dir=True)
        stack.extend(os.path.join(current, name) for name in names)
