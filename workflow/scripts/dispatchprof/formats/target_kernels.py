"""One PROF_'s target launches from its preferred source: the db through sqlite3 and numpy (the hot path of hundreds of
ranks, no pandas), else the text export through the pandas readers. Its own module, so that neither reader imports
the other (formats.msprof is the base; formats.msprof_tables builds on it)."""

from __future__ import annotations

from typing import Callable

from dispatchprof.formats.msprof import ProfInfo, TargetKernels, read_db_target


def read_target_kernels(
    info: ProfInfo,
    is_target: Callable[[str], bool],
    context_launches: int,
    with_ids: bool = False,
    is_barrier: Callable[[str], bool] | None = None,
    device: int | None = None,
    skip_unended: bool = False,
) -> TargetKernels:
    """Target launches and call-chain context of one PROF_, from its preferred source (as read_prof_kernels).
    The text export always carries stream and task ids; the db only ``with_ids``. ``is_barrier``: also every
    launch of the barrier kernel. ``device``: only that device's tasks (by TASK.deviceId, the CSV's Device_id or
    the JSON's pid & 31). ``skip_unended``: a db whose msprof session never ended yields no launches (read_db_target);
    a text export does not tell its session."""
    if info.db is not None:
        return read_db_target(info.db, is_target, context_launches, with_ids, is_barrier, device, skip_unended)
    from dispatchprof.formats.msprof_tables import read_prof_kernels, target_kernels_of  # pandas: only for text exports

    kernels = read_prof_kernels(info)
    if device is not None:
        kernels = kernels[kernels["device"] == device]
    return target_kernels_of(kernels, is_target, context_launches, is_barrier)
