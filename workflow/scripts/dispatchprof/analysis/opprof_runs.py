"""Which OPPROF_ kernel run belongs to which rank: the rule of analysis.rank_identity (sidecar, then device)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Generic, TypeVar

from dispatchprof.analysis.rank_identity import Identities, RankSource, assign_ranks, why_unmapped
from dispatchprof.analysis.timeline import kernel_regex
from dispatchprof.formats.msopprof import (
    KernelRun,
    OpprofFormatError,
    discover,
    kernel_runs,
    metric_files,
    read_key_values,
    read_op_basic_info,
)
from dispatchprof.formats.text import refusal
from dispatchprof.shell.status import Validation


@dataclass
class RankRun:
    rank: int
    node: int
    device: int | None
    pid: int | None
    kernel: str
    run: KernelRun
    basic: dict[str, str]
    how: str


def basic_info(run: KernelRun) -> dict[str, str]:
    """A launch's OpBasicInfo.csv row; without the CSV, dump/op_basic_info.txt, which names the same Op Name, Device Id
    and Pid (DataCollectInDevice::SaveBasicInfo); {} when neither is there."""
    files = metric_files(run.directory)
    if "OpBasicInfo" in files:
        return read_op_basic_info(files["OpBasicInfo"])
    for base in (run.directory, run.opprof):
        if (base / "dump" / "op_basic_info.txt").is_file():
            return read_key_values(base / "dump" / "op_basic_info.txt")
    return {}


def _candidates(
    root: Path, nodes: int, refused: list[str] | None = None
) -> list[tuple[RankSource, str, KernelRun, dict[str, str]]]:
    """Every kernel run under ``root`` with its identity source, kernel and OpBasicInfo. With ``refused``, an OPPROF_
    or a launch whose files cannot be read is left out and named there (its rank, unknown without them, is then
    missing); without it, such a file raises."""
    found = []
    for node in range(nodes):
        for opprof in discover(root / f"node{node}"):
            try:
                runs = kernel_runs(opprof)
            except (OpprofFormatError, OSError) as exc:
                if refused is None:
                    raise
                refused.append(refusal(opprof, exc))
                continue
            for run in runs:
                try:
                    basic = basic_info(run)
                except (OpprofFormatError, OSError) as exc:
                    if refused is None:
                        raise
                    refused.append(refusal(run.directory, exc))
                    continue
                kernel = run.kernel or basic.get("Op Name") or ""
                device = (
                    run.device
                    if run.device is not None
                    else (int(basic["Device Id"]) if basic.get("Device Id", "").isdigit() else None)
                )
                pid = int(basic["Pid"]) if basic.get("Pid", "").isdigit() else None
                found.append((RankSource(opprof, node, device, pid), kernel, run, basic))
    return found


def rank_runs(
    root: Path,
    nodes: int,
    ranks_per_node: int,
    pattern: str,
    identities: Identities,
    infer: str = "device_id",
    refused: list[str] | None = None,
) -> list[RankRun]:
    """Every kernel run of the target under ``root`` with its global rank, by the one rule of analysis.rank_identity.
    The identity source is (node, device, pid): the runs of one source are its launches (launch_count > 1), not
    rivals for its rank; two sources claiming one rank are refused. ``refused``: see _candidates."""
    regex = kernel_regex(pattern)
    found = [c for c in _candidates(root, nodes, refused) if regex.match(c[1])]
    sources = list(dict.fromkeys(source for source, *_ in found))
    rank_of = {a.source: a for a in assign_ranks(sources, ranks_per_node, identities, infer)}
    return [
        RankRun(a.rank, source.node, source.device, source.pid, kernel, run, basic, a.how)
        for source, kernel, run, basic in found
        if (a := rank_of[source]).rank is not None
    ]


T = TypeVar("T")


@dataclass
class PerRank(Generic[T]):
    """What each rank's runs gave (rank -> (run, result) in run order), and the ranks left out with why."""

    read: dict[int, list[tuple[RankRun, T]]] = field(default_factory=dict)
    refused: dict[int, str] = field(default_factory=dict)  # rank -> "refused: <file>: why"
    unplaced: list[str] = field(default_factory=list)  # OPPROF_ or launches refused before their rank was known


def read_each_rank(
    runs: list[RankRun],
    read: Callable[[RankRun], T],
    errors: tuple[type[Exception], ...],
    unplaced: list[str] | None = None,
) -> PerRank[T]:
    """Each rank's runs read by ``read``. A rank any of whose runs raises one of ``errors`` (or an OSError) is left
    out whole, with why (the file named): one bad rank never costs the others, and a rank is never analysed on part of
    its launches."""
    by_rank: dict[int, list[RankRun]] = {}
    for r in runs:
        by_rank.setdefault(r.rank, []).append(r)
    result: PerRank[T] = PerRank(unplaced=list(unplaced or []))
    for rank, rank_runs_ in by_rank.items():
        try:
            result.read[rank] = [(r, read(r)) for r in rank_runs_]
        except (*errors, OSError) as exc:
            result.refused[rank] = f"refused: {refusal(rank_runs_[0].run.directory, exc)}"
    return result


def refused_details(per_rank: PerRank[Any]) -> dict[str, Any]:
    """A stage's record of what it left out: rank -> why, and the runs refused before their rank was known."""
    return {
        "refused": {str(r): why for r, why in sorted(per_rank.refused.items())},
        "refused_unplaced": per_rank.unplaced,
    }


def refused_validations(per_rank: PerRank[Any], what: str) -> list[Validation]:
    """A warning naming every refused rank and run with why: the stage went on without them."""
    named = [f"rank {r} {why}" for r, why in sorted(per_rank.refused.items())] + [
        f"rank unknown: {why}" for why in per_rank.unplaced
    ]
    if not named:
        return []
    return [
        Validation(
            f"every rank's {what} can be read",
            False,
            "warning",
            "; ".join(named[:8]) + (f" and {len(named) - 8} more" if len(named) > 8 else ""),
        )
    ]


def why_no_run_has(
    name: str,
    root: Path,
    nodes: int,
    ranks_per_node: int,
    pattern: str,
    identities: Identities,
    infer: str = "device_id",
) -> str:
    """When no rank's run holds file ``name``: what was found and what is missing, e.g. a visualize_data.bin whose
    launch names no kernel or device (no OpBasicInfo.csv, no dump/), or a device that maps to no rank."""
    regex = kernel_regex(pattern)
    holding = [c for c in _candidates(root, nodes) if (c[2].directory / name).is_file()]
    if not holding:
        return f"no {name} under {root} (node<k>/OPPROF_*/...)"
    source, kernel, run, basic = holding[0]
    where = (
        f"{len(holding)} {name} found (first: {run.directory / name}), "
        f"but none belongs to a rank of kernel.name {pattern!r}: "
    )
    if not basic:
        return (
            where
            + "no OpBasicInfo.csv (nor dump/op_basic_info.txt) beside it, so its kernel, device and pid are not known"
        )
    if not regex.match(kernel):
        return where + f"its kernel is {kernel!r}" if kernel else where + "its OpBasicInfo names no Op Name"
    (a,) = [x for x in assign_ranks([source], ranks_per_node, identities, infer) if x.rank is None] or [None]
    return where + (
        why_unmapped(a, ranks_per_node, infer) if a is not None else "its rank is claimed by another source"
    )
