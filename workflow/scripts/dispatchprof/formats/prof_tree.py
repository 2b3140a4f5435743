"""Where the timeline's profiler data sits in a user's tree, in whichever layout it was written (docs/analyze.md).

One walk finds every *data directory* of a tree, read-only (directory listings only), and one reader
(formats/prof_dirs.py) turns each into a ProfInfo, whatever its kind:

- ``msprof``: a ``PROF_*`` directory (``device_<n>/info.json.<n>``, ``msprof_*.db``, ``mindstudio_profiler_output/``);
- ``torch_npu``: a torch_npu profiler directory, ``<worker>_<pid>_<time>_ascend_pt`` (or any directory holding
  ``profiler_info*.json`` or ``ASCEND_PROFILER_OUTPUT/``), with
  ``ASCEND_PROFILER_OUTPUT/ascend_pytorch_profiler_<rank>.db`` (the msprof db's tables),
  ``profiler_info_<rank>.json`` (``rank_id``) and the run's own ``PROF_*`` inside;
- ``export``: a bare ``mindstudio_profiler_output/`` (what people share), its devices from the export.

A data directory is not searched further (a torch_npu directory's own PROF_ is part of it). A ``node<k>`` directory
above it says its node; without one the node follows from the rank (parse stage). Ranks come from what the files hold
(analysis/rank_identity): the torch_npu rank from ``profiler_info``'s ``rank_id`` (else the number in its name, as
msprof-analyze reads it), checked against the db's name and ``RANK_DEVICE_MAP``; a disagreement is refused, naming both.
Standard library only: the import job walks the tree without loading the parsers.
"""

from __future__ import annotations

import os
import re
import stat
from dataclasses import dataclass
from pathlib import Path

from dispatchprof.formats.names import PROF_RE

NODE_DIR_RE = re.compile(r"^node(\d+)$")
TORCH_DIR_SUFFIX = "_ascend_pt"  # torch_npu _profiler_path_creator: "{worker}_{pid}_{%Y%m%d%H%M%S%f[:-3]}_ascend_pt"
PROFILER_INFO_RE = re.compile(
    r"^profiler_info(?:_(\d+))?\.json$"
)  # profiler_info_<rank>.json; profiler_info.json without a rank
TORCH_DB_RE = re.compile(r"^ascend_pytorch_profiler(?:_(\d+))?\.db$")  # the same with the db (torch_npu DbParser)
TORCH_OUTPUT = "ASCEND_PROFILER_OUTPUT"
KERNEL_DETAILS = "kernel_details.csv"  # torch_npu's text export of the kernels, in TORCH_OUTPUT
EXPORT_DIR = "mindstudio_profiler_output"
MAX_DEPTH = 6  # msprof-analyze walks 5 levels below its -d; one more for a node<k> level above
KINDS = ("msprof", "torch_npu", "export")


@dataclass(frozen=True)
class DataDir:
    path: Path
    kind: str  # one of KINDS
    node: int | None  # from the node<k> directory above it; None when there is none


def directory_kind(name: str, children: set[str]) -> str | None:
    """Which kind of data directory a directory of this name and these entries is; None: search below it."""
    if PROF_RE.match(name):
        return "msprof"
    if name.endswith(TORCH_DIR_SUFFIX) or TORCH_OUTPUT in children or any(PROFILER_INFO_RE.match(c) for c in children):
        return "torch_npu"
    if name == EXPORT_DIR:
        return "export"
    return None


def listing(path: Path) -> set[str] | None:
    """The names in a directory; None when ``path`` is no directory. Unreadable directories raise OSError."""
    try:
        st = os.stat(path)
    except OSError:
        return None
    if not stat.S_ISDIR(st.st_mode):
        return None
    with os.scandir(path) as entries:
        return {e.name for e in entries}


def find_data_dirs(root: Path) -> list[DataDir]:
    """Every data directory of the tree at ``root`` (``root`` itself may be one), in path order. Directory links
    are followed, each directory once; the walk stops MAX_DEPTH levels down. Raises OSError for a directory it
    cannot list (the import's tree check names such entries before this runs)."""
    found: list[DataDir] = []
    stack: list[tuple[Path, int | None, int]] = [(root, None, 0)]
    seen: set[tuple[int, int]] = set()
    while stack:
        path, node, depth = stack.pop()
        children = listing(path)
        if children is None:
            continue
        st = os.stat(path)
        if (st.st_dev, st.st_ino) in seen:
            continue
        seen.add((st.st_dev, st.st_ino))
        kind = directory_kind(path.name, children)
        if kind is not None:
            found.append(DataDir(normal(path), kind, node))
            continue
        if depth >= MAX_DEPTH:
            continue
        for name in sorted(children, reverse=True):
            m = NODE_DIR_RE.match(name)
            stack.append((path / name, int(m.group(1)) if m and node is None and depth == 0 else node, depth + 1))
    return sorted(found, key=lambda d: str(d.path))


def normal(path: Path) -> Path:
    return Path(os.path.normpath(path))
