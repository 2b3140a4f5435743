"""Which OPPROF_ kernel run belongs to which rank: the rule of analysis.rank_identity (sidecar, then device)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from dispatchprof.analysis.rank_identity import Identities, RankSource, assign_ranks
from dispatchprof.analysis.timeline import kernel_regex
from dispatchprof.formats.msopprof import KernelRun, discover, kernel_runs, metric_files, read_op_basic_info


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


def rank_runs(root: Path, nodes: int, ranks_per_node: int, pattern: str, identities: Identities, infer: str = "device_id") -> list[RankRun]:
    """Every kernel run of the target under ``root`` with its global rank, by the one rule of analysis.rank_identity.
    The identity source is (node, device, pid): the runs of one source are its launches (launch_count > 1), not
    rivals for its rank; two sources claiming one rank are refused."""
    regex = kernel_regex(pattern)
    found = []
    for node in range(nodes):
        for opprof in discover(root / f"node{node}"):
            for run in kernel_runs(opprof):
                files = metric_files(run.directory)
                basic = read_op_basic_info(files["OpBasicInfo"]) if "OpBasicInfo" in files else {}
                kernel = run.kernel or basic.get("Op Name") or ""
                if not regex.match(kernel):
                    continue
                device = run.device if run.device is not None else (int(basic["Device Id"]) if basic.get("Device Id", "").isdigit() else None)
                pid = int(basic["Pid"]) if basic.get("Pid", "").isdigit() else None
                found.append((RankSource(opprof, node, device, pid), kernel, run, basic))
    sources = list(dict.fromkeys(source for source, *_ in found))
    rank_of = {a.source: a for a in assign_ranks(sources, ranks_per_node, identities, infer)}
    return [
        RankRun(a.rank, source.node, source.device, source.pid, kernel, run, basic, a.how)
        for source, kernel, run, basic in found
        if (a := rank_of[source]).rank is not None
    ]
