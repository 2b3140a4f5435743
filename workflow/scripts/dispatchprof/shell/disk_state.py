"""What is on disk, against what the jobs recorded: a damaged or stale result is named, and its job reruns.

Snakemake reruns a job when its output is missing *and something downstream needs it*. A finished report needs
nothing: an intermediate truncated after it was written, raw data deleted by a killed job, or a status whose cause
has gone by itself (a port in use, a busy cluster) stay as they are, and a plain `snakemake` says "Nothing to be
done" over them. So every status records what its job wrote (size, mtime and sha256 of each file; each directory)
and which results/ files it read, and two checks read those records:
- ``damaged_inputs``: a job, before it reads anything, checks the files it takes against their writers' records (an
  input error naming the file, never a reader's crash);
- ``reruns``: before the DAG is built (Snakefile, hooks.smk), the status files of every experiment are read, and
  each job whose record no longer holds is forced to run again, with its reason; Snakemake then reruns what depends on
  it. What a job forces is the status file, an output of every stage rule.
Standard library only; no Snakemake.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable, Mapping

from dispatchprof.shell.status import Status, StatusError, read_status

STATUS = "status.json"
# Where status files are: results/<exp>/<stage>/, .../<stage>/<part>/ and .../<stage>/<kind>/<part>/ (never deeper:
# below are the raw trees, which are not walked).
STATUS_GLOBS = ("*/" + STATUS, "*/*/" + STATUS, "*/*/*/" + STATUS)


def sha256(path: Path) -> str:
    with open(path, "rb") as handle:
        return hashlib.file_digest(handle, "sha256").hexdigest()


def record_outputs(outputs: Iterable[Path]) -> dict[str, dict[str, Any]]:
    """What a job wrote: each file's size, mtime and sha256; each directory as a directory (its contents are raw
    data or pictures, checked by the stages that read them)."""
    record: dict[str, dict[str, Any]] = {}
    for path in outputs:
        if path.is_dir():
            record[str(path)] = {"directory": True}
        elif path.is_file():
            info = path.stat()
            record[str(path)] = {"bytes": info.st_size, "mtime_ns": info.st_mtime_ns, "sha256": sha256(path)}
    return record


def record_inputs(inputs: Iterable[str | Path]) -> dict[str, int]:
    """The results/ files a job reads (its Snakemake inputs), each with its mtime when the job started."""
    record = {}
    for path in map(Path, inputs):
        if path.parts[:1] == ("results",) and path.is_file():
            record[str(path)] = path.stat().st_mtime_ns
    return record


def changed(path: Path, record: Mapping[str, Any]) -> str | None:
    """How ``path`` differs from what its job recorded; None when it is as written. A file whose size and mtime are
    unchanged is taken as written; a new mtime alone (a copy, `snakemake --touch`) is settled by its sha256."""
    if record.get("directory"):
        return None if path.is_dir() else "is gone"
    try:
        info = path.stat()
    except FileNotFoundError:
        return "is gone"
    except OSError as exc:
        return f"cannot be read ({exc.strerror})"
    if info.st_size != record.get("bytes"):
        return f"holds {info.st_size} bytes where its job wrote {record.get('bytes')}"
    if info.st_mtime_ns == record.get("mtime_ns"):
        return None
    try:
        same = sha256(path) == record.get("sha256")
    except OSError as exc:
        return f"cannot be read ({exc.strerror})"
    return None if same else "was changed after its job wrote it (its sha256 differs)"


def damaged_inputs(inputs: Iterable[str | Path]) -> list[str]:
    """The input files of a job that are not what their writers recorded, each as a sentence naming the file and its
    writer. The writers' records are in the job's input status files (every consumer takes its producer's status)."""
    paths = {str(p) for p in inputs}
    problems = []
    for status_path in sorted(p for p in paths if Path(p).name == STATUS):
        try:
            writer = read_status(status_path)
        except StatusError:
            continue  # the gate names an unreadable status
        for path, record in writer.outputs.items():
            if path in paths and (how := changed(Path(path), record)):
                problems.append(f"{path} {how} ({_label(writer)}); the next plain snakemake reruns {_label(writer)}")
    return problems


def _label(status: Status) -> str:
    return status.stage if status.part is None else f"{status.stage}/{status.part}"


@dataclass(frozen=True)
class Rerun:
    """A status file to force (its job runs again, and what depends on it) and why."""

    status: Path
    why: str


def status_files(experiment_dir: Path) -> list[Path]:
    return sorted({p for pattern in STATUS_GLOBS for p in experiment_dir.glob(pattern)})


def reruns_of(path: Path, status: Status) -> list[Rerun]:
    """What the status file ``path`` (holding ``status``) says of its own job: its cause may be gone, an output is
    not what it wrote, or (a drill-down) what it was made from changed since."""
    label = _label(status)
    if status.retry:
        return [Rerun(path, f"{label} ended {status.state} for a cause that may be gone by now: {status.reason}")]
    for output, record in status.outputs.items():
        if how := changed(Path(output), record):
            return [Rerun(path, f"{output} {how}: {label} runs again")]
    if status.details.get("on_demand"):
        for used, mtime_ns in status.inputs.items():
            if _mtime_ns(Path(used)) not in (None, mtime_ns):
                return [Rerun(path, f"{label} was made from an older {used}: it runs again")]
    return []


def gone_inputs(status: Status) -> list[Path]:
    """The status files a job was made from that are no longer there (a killed job's outputs are deleted)."""
    return [Path(used) for used in status.inputs if Path(used).name == STATUS and not Path(used).exists()]


def _mtime_ns(path: Path) -> int | None:
    try:
        return path.stat().st_mtime_ns
    except OSError:
        return None


def reruns(results: Path, experiments: Iterable[str]) -> list[Rerun]:
    """Every job of ``experiments`` whose results on disk no longer hold (module doc), one entry per status file."""
    found: dict[Path, Rerun] = {}
    made_from_gone: dict[Path, list[str]] = {}
    for experiment in experiments:
        for path in status_files(results / experiment):
            try:
                status = read_status(path)
            except StatusError as exc:
                found.setdefault(path, Rerun(path, f"its status cannot be read ({exc})"))
                continue
            for rerun in reruns_of(path, status):
                found.setdefault(rerun.status, rerun)
            for gone in gone_inputs(status):
                made_from_gone.setdefault(gone, []).append(_label(status))
    for gone, labels in made_from_gone.items():
        names = list(dict.fromkeys(labels))
        made = f"{', '.join(names)} {'was' if len(names) == 1 else 'were'} made from it"
        why = f"it is gone (deleted, or taken by a job that failed or was killed), and {made}: its job runs again"
        found.setdefault(gone, Rerun(gone, why))
    return list(found.values())
