"""Which OPPROF_ kernel run belongs to which rank: the identity sidecar by PID, else node x ranks_per_node + device."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

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


def load_identities(directory: str | None) -> dict[int, dict[str, Any]]:
    if not directory or not Path(directory).is_dir():
        return {}
    records = [json.loads(p.read_text()) for p in sorted(Path(directory).glob("*.json"))]
    return {int(r["pid"]): r for r in records if r.get("pid") is not None}


def rank_runs(root: Path, nodes: int, ranks_per_node: int, pattern: str, identities: dict[int, dict[str, Any]]) -> list[RankRun]:
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
                ident = identities.get(pid) if pid is not None else None
                if ident and ident.get("global_rank") is not None:
                    rank, how = int(ident["global_rank"]), "sidecar"
                elif device is not None:
                    rank, how = node * ranks_per_node + device, "node x ranks_per_node + device"
                else:
                    continue
                found.append(RankRun(rank, node, device, pid, kernel, run, basic, how))
    return found
