"""One PROF_'s target launches from its preferred source: the db through sqlite3 and numpy (the hot path of hundreds of
ranks, no pandas), else the text export through the pandas readers. Its own module, so that neither reader imports
the other (formats.msprof is the base; formats.msprof_tables builds on it)."""

from __future__ import annotations

from typing import Callable

import numpy as np

from dispatchprof.formats.msprof import MsprofFormatError, ProfInfo, TargetKernels, read_db_target


def read_target_kernels(
    info: ProfInfo,
    is_target: Callable[[str], bool],
    context_launches: int,
    with_ids: bool = False,
    is_barrier: Callable[[str], bool] | None = None,
    device: int | None = None,
    skip_unended: bool = False,
    max_us: float | None = None,
    host_launches: int = 0,
) -> TargetKernels:
    """Target launches and call-chain context of one PROF_, from its preferred source (as read_prof_kernels).
    The text export always carries stream and task ids; the db only ``with_ids``. ``is_barrier``: also every
    launch of the barrier kernel. ``device``: only that device's tasks (by TASK.deviceId, the CSV's Device_id or
    the JSON's pid & 31). ``skip_unended``: a db whose msprof session never ended yields no launches (read_db_target);
    a text export does not tell its session. ``max_us`` (stats.max_plausible_us): a target launch lasting longer is
    refused (refuse_implausible). ``host_launches``: the db's host calls of the first that many launches (0: all)."""
    if info.db is not None:
        kernels = read_db_target(
            info.db, is_target, context_launches, with_ids, is_barrier, device, skip_unended, host_launches
        )
    else:
        from dispatchprof.formats.msprof_tables import (
            read_prof_kernels,
            target_kernels_of,
        )  # pandas: only for text exports

        table = read_prof_kernels(info)
        if device is not None:
            table = table[table["device"] == device]
        kernels = target_kernels_of(table, is_target, context_launches, is_barrier)
    if max_us is not None:
        refuse_implausible(kernels, info, max_us)
    return kernels


def refuse_implausible(kernels: TargetKernels, info: ProfInfo, max_us: float) -> None:
    """A target launch lasting more than ``max_us`` is refused, naming the file and the launch by its start (the row:
    TASK.startNs in the db, Task Start Time(us) / ts in the text export): no dispatch lasts that long, and one such
    launch would move every statistic it enters. Other kernels are not judged: they are not dispatches."""
    over = kernels.dur_ns > max_us * 1000
    if not over.any():
        return
    i = int(np.flatnonzero(over)[0])
    start, dur = int(kernels.start_ns[i]), int(kernels.dur_ns[i])
    where = info.db if info.db is not None else info.text_dir
    raise MsprofFormatError(
        f"{where}: launch {i} of {kernels.name[i]} (start {start} ns, {start // 1000}.{start % 1000:03d} us): duration "
        f"{dur} ns, {dur / 1000:.4g} us, above stats.max_plausible_us "
        f"({max_us:g} us): not a plausible dispatch duration"
    )
