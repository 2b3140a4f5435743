"""Building the per-node commands of a collective run, following the repository's launcher convention.

Parent environment per node: WORLD_SIZE = number of nodes, RANK = node index, MASTER_ADDR/PORT,
ASCEND_DEEPEP_TRANSPORT; the test spawns --ep-size processes itself (never torchrun).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Callable, Mapping

from dispatchprof.config import render_args, world_ranks
from dispatchprof.launch import LocalLauncher, NodeSpec
from dispatchprof.toolchain import Toolchain


def node_environment(config: Mapping[str, Any], node: int) -> dict[str, str]:
    cluster = config["cluster"]
    return {
        "WORLD_SIZE": str(cluster["nodes"]),
        "RANK": str(node),
        "INDEX": str(node),
        "DEEPEP_NODE_INDEX": str(node),
        "MASTER_ADDR": str(cluster["master_addr"]),
        "MASTER_PORT": str(cluster["master_port"]),
        "SHMEM_ADDR": str(cluster["master_addr"]),
        "SHMEM_PORT": str(cluster["shmem_port"]),
        "ASCEND_DEEPEP_TRANSPORT": str(config["deepep"]["transport"]),
    }


def test_values(config: Mapping[str, Any], log_dir: Path, run_tag: str) -> dict[str, Any]:
    """The values deepep.test_args may name as {placeholders}."""
    values: dict[str, Any] = dict(config["shape"])
    values.update({k: config["cluster"][k] for k in ("nodes", "ranks_per_node", "master_addr", "master_port", "shmem_port")})
    values.update(log_dir=str(log_dir), run_tag=run_tag, transport=config["deepep"]["transport"], world_ranks=world_ranks(config))
    return values


def test_command(config: Mapping[str, Any], chain: Toolchain, log_dir: Path, run_tag: str, script: str | None = None) -> list[str]:
    """python3 <test or driver> <rendered test_args>; the script path is relative to the repository."""
    args = render_args(config["deepep"]["test_args"], test_values(config, log_dir, run_tag))
    return [config["deepep"]["python"], script or config["deepep"]["test"], *args]


def node_specs(config: Mapping[str, Any], chain: Toolchain, argv_for: Callable[[int], list[str]], log_dir: Path) -> list[NodeSpec]:
    specs = []
    for node in range(int(config["cluster"]["nodes"])):
        env = chain.env(extra=node_environment(config, node))
        specs.append(NodeSpec(node=node, argv=chain.wrap(argv_for(node)), env=env, cwd=chain.repo, log_path=log_dir / f"node{node}.log"))
    return specs


def launcher(config: Mapping[str, Any]) -> LocalLauncher:
    cluster = config["cluster"]
    if config["launcher"] != "local":
        raise ValueError(f"launcher {config['launcher']!r} is not available in this version")
    return LocalLauncher(cluster["master_addr"], int(cluster["master_port"]), float(cluster["ready_timeout"]), float(cluster["fail_grace"]))
