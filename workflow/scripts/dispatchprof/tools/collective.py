"""Building the per-node commands of a collective run, following the repository's launcher convention.

Parent environment per node: WORLD_SIZE = number of nodes, RANK = node index, MASTER_ADDR/PORT,
ASCEND_DEEPEP_TRANSPORT; the test spawns --ep-size processes itself (never torchrun).
"""

from __future__ import annotations

import copy
import json
import socket
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Mapping

from dispatchprof.analysis.correctness import RankRow, Verdict, rank_table, verdict
from dispatchprof.shell import cluster_lock
from dispatchprof.shell.config import render_args, world_ranks
from dispatchprof.formats.ranklog import LogFormatError, find_pass_lines, log_tail, spawn_failure
from dispatchprof.tools.launch import CollectiveResult, LocalLauncher, NodeSpec, SlurmLauncher, SshLauncher
from dispatchprof.tools.debugbuild import imported_own_build, loaded_libraries
from dispatchprof.tools.toolchain import Toolchain, build_worktree, built_repo


# The repository launcher's ports (docs/formats.md §3): what `auto` means where this host cannot pick a
# free port for node 0 (launchers slurm and ssh).
LAUNCHER_PORTS = {"master_port": 29520, "shmem_port": 8399}


def run_ports(config: Mapping[str, Any]) -> dict[str, int]:
    """The ports of one collective run. `auto` under launcher local: free ports of this host, picked now, so two
    runs on one machine never share a store; under slurm and ssh the launcher's defaults."""
    ports, held = {}, []
    try:
        for key, default in LAUNCHER_PORTS.items():
            value = config["cluster"][key]
            if value != "auto":
                ports[key] = int(value)
            elif config["launcher"] == "local":
                sock = socket.socket()
                held.append(sock)  # held until both are picked, so the two differ
                sock.bind(("", 0))
                ports[key] = sock.getsockname()[1]
            else:
                ports[key] = default
    finally:
        for sock in held:
            sock.close()
    return ports


def with_ports(config: Mapping[str, Any], ports: Mapping[str, int]) -> dict[str, Any]:
    resolved = copy.deepcopy(dict(config))
    resolved["cluster"].update(ports)
    return resolved


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
    values.update(
        {k: config["cluster"][k] for k in ("nodes", "ranks_per_node", "master_addr", "master_port", "shmem_port")}
    )
    values.update(
        log_dir=str(log_dir), run_tag=run_tag, transport=config["deepep"]["transport"], world_ranks=world_ranks(config)
    )
    return values


def test_command(
    config: Mapping[str, Any], chain: Toolchain, log_dir: Path, run_tag: str, script: str | None = None
) -> list[str]:
    """python3 <test or driver> <rendered test_args>; the script path is relative to the repository."""
    args = render_args(config["deepep"]["test_args"], test_values(config, log_dir, run_tag))
    return [config["deepep"]["python"], script or config["deepep"]["test"], *args]


def driver_environment(config: Mapping[str, Any], out_dir: Path, iterations: int, warmup: int) -> dict[str, str]:
    """What the generated perf driver reads: where to write, how many calls, and what it needs for routing."""
    return {
        "DISPATCHPROF_OUT": str(out_dir.resolve()),
        "DISPATCHPROF_ITERATIONS": str(iterations),
        "DISPATCHPROF_WARMUP": str(warmup),
        "DISPATCHPROF_NUM_EXPERTS": str(config["shape"]["num_experts"]),
        "DISPATCHPROF_RANKS_PER_NODE": str(config["cluster"]["ranks_per_node"]),
        "DISPATCHPROF_TOPK_KEY": config["baseline"]["topk_key"],
        "DISPATCHPROF_SYNCHRONIZE_START": "1" if config["baseline"]["synchronize_start"] else "0",
        # Mandatory for kernel-mode latency (ticks / this = seconds); an invalid value fails every rank before launch.
        "AKL_LATENCY_CLOCK_HZ": str(config["kernel"]["clock_hz"]),
    }


def node_specs(
    config: Mapping[str, Any], chain: Toolchain, argv_for: Callable[[int], list[str]], log_dir: Path
) -> list[NodeSpec]:
    specs = []
    for node in range(int(config["cluster"]["nodes"])):
        env, prepend = chain.own_env(
            extra=node_environment(config, node)
        )  # the node's own environment is merged under it
        specs.append(
            NodeSpec(
                node=node,
                argv=chain.wrap(argv_for(node)),
                env=env,
                cwd=chain.repo,
                log_path=log_dir / f"node{node}.log",
                prepend=prepend,
            )
        )
    return specs


def launcher(config: Mapping[str, Any]) -> LocalLauncher | SlurmLauncher | SshLauncher:
    cluster = config["cluster"]
    ready = (cluster["master_addr"], int(cluster["master_port"]), float(cluster["ready_timeout"]))
    if config["launcher"] == "slurm":
        slurm = config["slurm"]
        overlap = slurm["overlap"] if slurm["overlap"] != "auto" else int(cluster["nodes"]) == 1
        return SlurmLauncher(*ready, overlap=overlap, srun_args=slurm["srun_args"])
    if config["launcher"] == "ssh":
        ssh = config["ssh"]
        options = [item for option in ssh["options"] for item in ("-o", option)] + ["-p", str(ssh["port"])]
        if ssh["identity_file"]:
            options += ["-i", ssh["identity_file"]]
        hosts = [f"{ssh['user']}@{h}" if ssh["user"] else h for h in cluster["hosts"]]
        return SshLauncher(hosts, *ready, float(cluster["fail_grace"]), options, ssh["python"], cluster["forward_env"])
    return LocalLauncher(*ready, float(cluster["fail_grace"]))


@dataclass
class TestRun:
    """A collective run of the test (or the perf driver) and what its logs say about every rank."""

    result: CollectiveResult
    table: list[RankRow] | None  # one row per global rank; None when the logs could not be read
    verdict: Verdict
    command: list[str]
    run_dir: Path
    ports: dict[str, int] = field(default_factory=dict)
    own_build: dict[str, Any] | None = None  # with deepep.ref: whether the run imported its side's build (sha256)

    @property
    def details(self) -> dict[str, Any]:
        """What every collective stage records in its status: the run's ports and what ended it (verdict.cause), and
        with deepep.ref whether the run imported its own build."""
        out = {"ports": self.ports, "cause": self.verdict.cause}
        if self.own_build is not None:
            out["own_build"] = self.own_build
        return out


def run_test(
    config: Mapping[str, Any],
    chain: Toolchain,
    run_dir: Path,
    run_tag: str,
    timeout_s: float,
    script: str | None = None,
    extra_env: Mapping[str, str] | None = None,
    wrap: Callable[[int, list[str]], list[str]] | None = None,
) -> TestRun:
    """Run ``script`` (default: the configured test) on every node; validate every rank's success line.

    ``wrap(node, argv)`` may put a profiler in front of the command. Node logs and the test's own logs
    go under ``run_dir``.
    """
    if cluster_lock.held() is None:
        raise RuntimeError(
            "a collective run without the cluster lock: its stage calls StageRun.hold_cluster() once its gate is open"
        )
    run_dir = run_dir.resolve()
    test_logs = run_dir / "deepep"
    ports = run_ports(config)
    config = with_ports(config, ports)

    def argv_for(node: int) -> list[str]:
        argv = test_command(config, chain, test_logs, run_tag, script)
        return wrap(node, argv) if wrap else argv

    specs = node_specs(config, chain, argv_for, run_dir)
    for spec in specs:
        spec.env.update(extra_env or {})
    result = launcher(config).run(specs, timeout_s)
    logs = [p for p in [s.log_path for s in specs] + list(test_logs.glob(config["deepep"]["log_glob"])) if p.is_file()]
    start_pattern, fail_pattern = config["deepep"]["start_pattern"], config["deepep"]["fail_pattern"]
    try:
        passed = find_pass_lines(logs, config["deepep"]["pass_pattern"])
        started = find_pass_lines(logs, start_pattern, "start line") if start_pattern else None
        precision_failed = set(find_pass_lines(logs, fail_pattern, "precision-failure line")) if fail_pattern else None
    except LogFormatError as exc:
        return TestRun(result, None, Verdict("invalid", str(exc)), specs[0].argv, run_dir, ports)
    table = rank_table(config["cluster"]["nodes"], config["cluster"]["ranks_per_node"], passed, result, started)
    died = None if result.not_run else first_dead_rank(result, int(config["cluster"]["ranks_per_node"]), logs)
    judged = verdict(table, result, precision_failed, (died.rank, died.how) if died else None)
    if died and judged.state != "ok":
        # First when its death took others with it (their siblings ended, peers stopped); after, when it alone did not
        # pass. Its last lines show what it was doing; the cause (crash or precision) is the verdict's.
        alone = [row.global_rank for row in table if not row.passed] == [died.rank]
        judged = Verdict(
            judged.state, f"{judged.reason}; {died.text}" if alone else f"{died.text}; {judged.reason}", judged.cause
        )
    return TestRun(result, table, judged, specs[0].argv, run_dir, ports)


@dataclass(frozen=True)
class DeadRank:
    """The rank whose process failed first: how (torch's words: "exit code 1", "signal SIGKILL"), and the sentence
    that names it with its node, its log and its last lines."""

    rank: int
    how: str
    text: str


def first_dead_rank(result: CollectiveResult, ranks_per_node: int, logs: list[Path]) -> DeadRank | None:
    """The rank whose process failed first, as its node's spawn names it (torch's message), with the last lines that
    rank printed (lines holding "[rank <r>]", the convention of the test's lines); None when no node log names one."""
    exited = sorted(
        (n for n in result.nodes if n.exit_code not in (None, 0) and not n.killed and n.log_path.is_file()),
        key=lambda n: n.finished or 0,
    )
    for node in exited:
        failure = spawn_failure(node.log_path)
        if failure is None:
            continue
        rank = node.node * ranks_per_node + failure.local_rank
        tail = log_tail(logs, f"[rank {rank}]")
        said = f"; its last lines: {' | '.join(tail)}" if tail else f"; no line of its logs holds '[rank {rank}]'"
        return DeadRank(
            rank,
            failure.how,
            f"rank {rank} (node {node.node}, local rank {failure.local_rank}) "
            f"died first: {failure.how} ({failure.path}:{failure.line_no}){said}",
        )
    return None


def run_driver(
    config: Mapping[str, Any],
    chain: Toolchain,
    driver: Path,
    out_dir: Path,
    run_tag: str,
    timeout_s: float,
    iterations: int,
    warmup: int,
    wrap: Callable[[int, list[str]], list[str]] | None = None,
) -> TestRun:
    """Run the generated perf driver collectively (baseline, and under each profiler), writing into ``out_dir``."""
    env = {**driver_environment(config, out_dir, iterations, warmup), **chain.driver_env()}
    test = run_test(config, chain, out_dir, run_tag, timeout_s, script=str(driver.resolve()), extra_env=env, wrap=wrap)
    return own_build_check(config, chain, test)


def own_build_check(config: Mapping[str, Any], chain: Toolchain, test: TestRun) -> TestRun:
    """A side with deepep.ref: the run imported the build stage's checkout and the libraries build.json fingerprinted
    (library/<rank>.json of the runtime, "loaded <path> sha256" in the node logs), else it is invalid, with why. A
    commit A/B can then never compare X with X. Runs of another build (the DEBUG_CLOCK_ON one, which its stage checks
    against its own tree) and runs without a ref are left as they are."""
    if not config["deepep"].get("ref") or test.verdict.state != "ok" or chain.import_root is None:
        return test
    if chain.import_root.resolve() != built_repo(config).resolve():
        return test
    record_path = build_worktree(config).parent / "build.json"
    try:
        record = json.loads(record_path.read_text())
    except (OSError, ValueError) as exc:
        test.verdict = Verdict("invalid", f"no build record to check the loaded library against: {exc}", "build")
        return test
    ok, why = imported_own_build(loaded_libraries(test.run_dir), record, chain.import_root)
    test.own_build = {"ok": ok, "detail": why, "sha": record.get("sha")}
    if not ok:
        test.verdict = Verdict("invalid", why, "build")  # the run ended well; its build is not its side's
    return test
