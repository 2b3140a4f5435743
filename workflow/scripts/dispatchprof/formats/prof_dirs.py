"""Each data directory of a tree (formats/prof_tree.py) read into a ProfInfo, whatever its layout: msprof's PROF_,
torch_npu's *_ascend_pt, a bare mindstudio_profiler_output/ (docs/formats.md §1.7)."""

from __future__ import annotations

from pathlib import Path

from dispatchprof.formats.msprof import (
    MsprofFormatError,
    ProfInfo,
    db_devices,
    export_devices,
    load_json,
    query_db,
    read_prof_info,
    recorded_rank,
)
from dispatchprof.formats.names import PROF_RE
from dispatchprof.formats.prof_tree import (
    EXPORT_DIR,
    KERNEL_DETAILS,
    PROFILER_INFO_RE,
    TORCH_DB_RE,
    TORCH_OUTPUT,
    DataDir,
    directory_kind,
    listing,
    normal,
)


def read_data_dir(data: DataDir) -> ProfInfo:
    """The identity and tables of one data directory, whatever its kind (module doc). Raises MsprofFormatError
    naming the file, or OSError."""
    if data.kind == "msprof":
        return read_prof_info(data.path)
    if data.kind == "export":
        return ProfInfo(
            data.path,
            None,
            None,
            None,
            export_devices(data.path),
            None,
            None,
            data.path,
            devices_from="export",
            kind="export",
        )
    return read_torch_dir(data.path)


def read_data_path(path: Path) -> ProfInfo:
    """The ProfInfo of a data directory known by its path alone (a rank's recorded ``prof``: a drill-down), its kind
    read from its name and entries as the walk reads it; a directory of no known kind is read as msprof's PROF_."""
    kind = directory_kind(path.name, listing(path) or set()) or "msprof"
    return read_data_dir(DataDir(path, kind, None))


def profiler_info_rank(path: Path) -> tuple[int | None, str | None]:
    """(rank, where it was read) from a torch_npu profiler_info file: its ``rank_id``, else the rank in its name."""
    info = load_json(path)
    if not isinstance(info, dict):
        raise MsprofFormatError(f"{path}: a JSON {type(info).__name__}; expected torch_npu's profiler_info object")
    named = PROFILER_INFO_RE.match(path.name)
    in_name = int(named.group(1)) if named and named.group(1) else None
    field = recorded_rank(info.get("rank_id"))
    if field is not None and in_name is not None and field != in_name:
        raise MsprofFormatError(
            f"{path}: field 'rank_id' is {field} but the file name says rank {in_name}; expected one rank"
        )
    if field is not None:
        return field, f"{path.name} rank_id"
    return (in_name, f"{path.name} (its name)") if in_name is not None else (None, None)


def only_one(path: Path, names: list[str], what: str) -> str | None:
    if len(names) > 1:
        raise MsprofFormatError(
            f"{path}: {len(names)} {what} ({', '.join(names)}); expected one per torch_npu profiler directory"
        )
    return names[0] if names else None


def rank_device_map(db: Path) -> list[tuple[int, int]]:
    """A torch_npu db's RANK_DEVICE_MAP rows (rankId, deviceId), -1 (not recorded) kept; [] without the table."""

    def rows(conn, _):  # type: ignore[no-untyped-def]
        if not conn.execute("SELECT 1 FROM sqlite_master WHERE type='table' AND name='RANK_DEVICE_MAP'").fetchone():
            return []
        return [
            (r, d)
            for r, d in conn.execute("SELECT DISTINCT rankId, deviceId FROM RANK_DEVICE_MAP")
            if isinstance(r, int) and isinstance(d, int)
        ]

    return query_db(db, rows, strings=False)[0]


def torch_rank(path: Path, children: set[str], db: Path | None, mapped: set[int]) -> tuple[int | None, str | None]:
    """The rank a torch_npu directory records, and where: profiler_info, else the db's name, else its RANK_DEVICE_MAP
    (``mapped``, the ranks it names). Every place that names one must name the same."""
    info_name = only_one(path, sorted(c for c in children if PROFILER_INFO_RE.match(c)), "profiler_info files")
    rank, where = profiler_info_rank(path / info_name) if info_name else (None, None)
    named = TORCH_DB_RE.match(db.name) if db is not None else None
    if db is not None and named and named.group(1) is not None:
        in_name = int(named.group(1))
        if rank is not None and in_name != rank:
            raise MsprofFormatError(
                f"{db}: its name says rank {in_name} but {path / str(info_name)} says {rank}; expected one rank"
            )
        rank, where = (in_name, f"{db.name} (its name)") if rank is None else (rank, where)
    if len(mapped) > 1 or (mapped and rank is not None and mapped != {rank}):
        held = f"{rank} ({where})" if rank is not None else "one rank"
        raise MsprofFormatError(f"{db}: RANK_DEVICE_MAP.rankId holds {sorted(mapped)}; expected {held}")
    if rank is None and mapped:
        rank, where = next(iter(mapped)), f"RANK_DEVICE_MAP of {db.name}"
    return rank, where


def read_torch_dir(path: Path) -> ProfInfo:
    """One torch_npu profiler directory: its db and rank
    (torch_rank), its own PROF_ for pid, host and the text export."""
    children = listing(path) or set()
    output = path / TORCH_OUTPUT
    dbs = sorted(c for c in (listing(output) or set()) if TORCH_DB_RE.match(c))
    db_name = only_one(output, dbs, "ascend_pytorch_profiler dbs")
    db = output / db_name if db_name else None
    profs = sorted(c for c in children if PROF_RE.match(c) and (path / c).is_dir())
    inner = read_prof_info(path / profs[-1]) if only_one(path, profs, "PROF_ directories") else None
    pairs = rank_device_map(db) if db is not None else []
    rank, where = torch_rank(path, children, db, {r for r, _ in pairs if r >= 0})
    devices, devices_from = (inner.devices, inner.devices_from) if inner is not None and inner.devices else ([], "none")
    if not devices and db is not None:
        # RANK_DEVICE_MAP, one row, before a scan of TASK (millions of rows in a long run)
        devices, devices_from = sorted({d for _, d in pairs if d >= 0}) or db_devices(db), "db"
    missing, details = None, None
    if db is None and (inner is None or inner.text_dir is None):
        details = output / KERNEL_DETAILS if (output / KERNEL_DETAILS).is_file() else None
        missing = (
            None
            if details is not None
            else (
                f"torch_npu directory without {TORCH_OUTPUT}/ascend_pytorch_profiler*.db, "
                f"{TORCH_OUTPUT}/{KERNEL_DETAILS} or PROF_*/{EXPORT_DIR}/: profile with experimental_config "
                "export_type db (torch_npu.profiler.ExportType.Db), or run torch_npu.profiler.profiler.analyse on it"
            )
        )
    return ProfInfo(
        path=path,
        pid=inner.pid if inner else None,
        hostname=inner.hostname if inner else None,
        host_uid=inner.host_uid if inner else None,
        devices=devices,
        rank_id=rank,
        db=db if db is not None else (inner.db if inner else None),
        text_dir=inner.text_dir if inner else None,
        error_lines=inner.error_lines if inner else [],
        versions=inner.versions if inner else {},
        devices_from=devices_from if devices else "none",
        device_rank_ids={d: rank for d in devices},
        kind="torch_npu",
        rank_from=where,
        missing_why=missing,
        kernel_details=details,
    )


def resolve_rank_map(root: Path, rank_map: dict[str, int] | None, found: list[DataDir]) -> dict[Path, int]:
    """analyze.rank_map's directories (relative to ``root``, or absolute) as the data directories they name, with
    their ranks. A key that names none of ``found`` is refused, naming what was found."""
    resolved = {normal(root / key): int(rank) for key, rank in (rank_map or {}).items()}
    known = {normal(d.path) for d in found}
    stray = [str(p) for p in resolved if p not in known]
    if stray:
        listed = ", ".join(str(d.path) for d in found[:6]) or "none"
        raise MsprofFormatError(
            f"analyze.rank_map names {stray[0]}, which is no data directory of {root} (found: {listed})"
        )
    return resolved
