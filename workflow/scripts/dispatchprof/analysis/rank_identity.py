"""Which global rank a piece of profiler data belongs to: one rule for the timeline, PMU and PC sampling.

A *source* is the data of one device in one profiler directory (a PROF_ can hold several device_<id>
directories; an OPPROF_ kernel run one device). Evidence, strongest first:

1. our identity sidecar, written inside each rank process: (node, pid[, device]) -> global rank;
2. the rank named for the directory (``analyze.rank_map``, analyze mode), else the rank the profiler recorded (msprof
   info.json ``rank_id``, -1 or absent for plain msprof, the usual case; torch_npu's ``profiler_info`` ``rank_id``,
   its db's name or ``RANK_DEVICE_MAP``: formats/prof_tree.py), with where it was read;
3. inferred from the device id by ``cluster.infer_rank`` (how devices map to local ranks is not recorded by
   the tools, docs/formats.md §1): ``device_id`` (local rank = device id, one process per device
   with ASCEND_RT_VISIBLE_DEVICES unset) or ``device_order`` (position among this node's device ids, as
   msprof-analyze numbers them).

Two sources that claim one rank are refused, naming both: merging them would double a rank's launches,
choosing one would hide a stale or foreign collection.
"""

from __future__ import annotations

import json
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable, Mapping, Sequence

from dispatchprof.formats.ranklog import name_ranks
from dispatchprof.formats.text import read_text_file

INFER_RULES = ("device_id", "device_order")


class RankIdentityError(ValueError):
    """Data whose rank cannot be decided without guessing (the message names the sources)."""


@dataclass(frozen=True)
class RankSource:
    path: Path  # the PROF_ or the kernel run's directory
    node: int
    device: int | None
    pid: int | None
    recorded_rank: int | None = None  # what the profiler wrote (or analyze.rank_map names); None when -1 or absent
    recorded_from: str | None = None  # where it was read (e.g. "profiler_info_0.json rank_id")


@dataclass(frozen=True)
class RankAssignment:
    source: RankSource
    rank: int | None
    how: str  # sidecar | recorded | inferred (<rule>) | unknown

    @property
    def inferred(self) -> bool:
        return self.how.startswith("inferred")

    def local_rank(self, ranks_per_node: int) -> int | None:
        return self.rank - self.source.node * ranks_per_node if self.rank is not None else None


Identities = Mapping[tuple[int, int], Mapping[str, Any]]


def load_identities(directory: str | Path | None) -> dict[tuple[int, int], dict[str, Any]]:
    """The identity sidecars of one run, keyed by (node, pid): PIDs repeat across hosts."""
    if not directory or not Path(directory).is_dir():
        return {}
    records = [read_sidecar(p) for p in sorted(Path(directory).glob("*.json"))]
    return {(int(r.get("node") or 0), int(r["pid"])): r for r in records if r.get("pid") is not None}


def read_sidecar(path: Path) -> dict[str, Any]:
    """One identity sidecar (``{"node", "pid", "global_rank", "device"}``, written by the launcher beside each rank);
    anything else ends in RankIdentityError naming the file and what was expected."""
    expected = 'an identity sidecar, a UTF-8 JSON object {"node", "pid", "global_rank", "device"}'
    text = read_text_file(path, RankIdentityError, expected)
    try:
        record = json.loads(text)
    except json.JSONDecodeError as exc:
        raise RankIdentityError(f"{path}: not JSON ({exc}); expected {expected}") from exc
    if not isinstance(record, dict):
        raise RankIdentityError(f"{path}: a JSON {type(record).__name__}; expected {expected}")
    for key in ("node", "pid", "global_rank"):
        value = record.get(key)
        if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 0):
            raise RankIdentityError(
                f"identity sidecar {path}: field '{key}' is {value!r}; expected a non-negative integer"
            )
    return record


def _sidecar_rank(source: RankSource, identities: Identities) -> int | None:
    record = identities.get((source.node, source.pid)) if source.pid is not None else None
    if not record or record.get("global_rank") is None:
        return None
    device = record.get("device_id")
    # A process that drives several devices has one sidecar: it names a device only when it can.
    if isinstance(device, int) and source.device is not None and device != source.device:
        return None
    return int(record["global_rank"])


def assign_ranks(
    sources: Sequence[RankSource], ranks_per_node: int, identities: Identities, infer: str = "device_id"
) -> list[RankAssignment]:
    """Global rank of every source by the rule above; raises RankIdentityError when two sources claim one rank."""
    if infer not in INFER_RULES:
        raise ValueError(f"cluster.infer_rank is {infer!r}, expected one of {INFER_RULES}")
    order: dict[int, list[int]] = defaultdict(list)
    for source in sources:
        if source.device is not None and source.device not in order[source.node]:
            order[source.node].append(source.device)
    for devices in order.values():
        devices.sort()
    out = []
    for source in sources:
        rank, how = _sidecar_rank(source, identities), "sidecar"
        if rank is None and source.recorded_rank is not None:
            rank, how = (
                source.recorded_rank,
                f"recorded ({source.recorded_from})" if source.recorded_from else "recorded",
            )
        if rank is None and source.device is not None:
            local = source.device if infer == "device_id" else order[source.node].index(source.device)
            rank, how = (
                (source.node * ranks_per_node + local, f"inferred ({infer})")
                if local < ranks_per_node
                else (None, "unknown")
            )
        if rank is None:
            how = "unknown"
        out.append(RankAssignment(source, rank, how))
    refuse_duplicates(out)
    return out


def refuse_duplicates(assignments: Iterable[RankAssignment]) -> None:
    claimed: dict[int, RankAssignment] = {}
    for a in assignments:
        if a.rank is None:
            continue
        if a.rank in claimed:
            first = claimed[a.rank]
            raise RankIdentityError(
                f"rank {a.rank} is claimed twice: {describe(first)} and {describe(a)}; remove the stale or foreign one "
                "(or set RANK_ID / give the identity sidecar so each source names its rank; in analyze mode, name each "
                f"directory's rank: {rank_map_line(a.source.path)})"
            )
        claimed[a.rank] = a


def why_unmapped(a: RankAssignment, ranks_per_node: int, infer: str) -> str:
    """Why a source maps to no rank, naming what it holds and what is missing (a sentence part)."""
    where = f"{a.source.path} (node {a.source.node})"
    if a.source.device is None:
        return (
            f"{where} names neither a device nor a rank (no identity sidecar, "
            f"rank_id -1 or absent); name its rank: {rank_map_line(a.source.path)}"
        )
    if infer == "device_id":
        return (
            f"{where} holds device {a.source.device}, which maps to no rank: with no identity sidecar and rank_id -1 "
            f"its local rank is its device id (cluster.infer_rank: device_id), and ranks_per_node is {ranks_per_node}; "
            "set cluster.infer_rank: device_order (the node's devices "
            "in order), or record the rank (identity sidecar, RANK_ID)"
        )
    return (
        f"{where} holds device {a.source.device}, which maps to no rank: the node has more devices than ranks_per_node "
        f"{ranks_per_node} (cluster.infer_rank: device_order); raise "
        "cluster.ranks_per_node or record the rank (identity sidecar, RANK_ID)"
    )


def rank_map_line(path: Path) -> str:
    """The config line that names a directory's global rank outright (analyze mode), for a refusal to end with."""
    return f'analyze.rank_map: {{"{path}": <its global rank>}}'


def describe(a: RankAssignment) -> str:
    device = f" device {a.source.device}" if a.source.device is not None else ""
    return f"{a.source.path}{device} (by {a.how})"


@dataclass(frozen=True)
class Coverage:
    """Which expected ranks have data. ``state`` is ok when at least ``min_fraction`` of them do."""

    expected: int
    found: list[int]
    missing: list[int]
    min_fraction: float

    @property
    def fraction(self) -> float:
        return len(self.found) / self.expected if self.expected else 0.0

    @property
    def complete(self) -> bool:
        return not self.missing

    @property
    def enough(self) -> bool:
        return bool(self.found) and self.fraction >= self.min_fraction

    def sentence(self) -> str:
        text = f"{len(self.found)}/{self.expected} ranks"
        return text if self.complete else f"{text} (missing {name_ranks(self.missing)})"

    def as_dict(self) -> dict[str, Any]:
        return {
            "expected": self.expected,
            "found": len(self.found),
            "missing": self.missing,
            "fraction": self.fraction,
            "min_fraction": self.min_fraction,
        }


def refused_sentence(refused: Mapping[str, str] | Mapping[int, str], most: int = 3) -> str:
    """The ranks left out because their files could not be used, each with why (which names the file), as a
    sentence to end a stage's reason with; "" when none was."""
    if not refused:
        return ""
    named = "; ".join(
        f"rank {r} ({str(detail).removeprefix('refused: ')})" for r, detail in list(refused.items())[:most]
    )
    more = f" and {len(refused) - most} more" if len(refused) > most else ""
    return f". Left out, their files refused: {named}{more}"


def coverage_of(world: int, with_data: Iterable[int], min_fraction: float) -> Coverage:
    present = sorted({int(r) for r in with_data if 0 <= int(r) < world})
    return Coverage(world, present, sorted(set(range(world)) - set(present)), min_fraction)
