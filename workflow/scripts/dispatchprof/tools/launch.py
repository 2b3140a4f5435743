"""Launching a collective run on every node, and single commands, under a timeout.

A collective run starts one process per node, node 0 first; nodes > 0 start only when node 0's
readiness port (MASTER_ADDR:MASTER_PORT) answers. Every process runs in its own process group and is
ended by group (TERM, a grace period, then KILL), never by name; every such group is also registered with the
job's reaper (node/reaper.py), which ends it if the job dies without doing so itself (SIGKILL). A SIGTERM to the
job raises ``Cancelled`` (shell/lifeline.py): the groups are ended and the exception goes on, since a cancelled
run is no measurement. The launcher interface is ``Launcher.run(specs, timeout_s)``; the local launcher runs
nodes as local processes (the simulated cluster, or one real node).
"""

from __future__ import annotations

import json
import logging
import os
import shlex
import signal
import socket
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Mapping, Sequence

from dispatchprof.node.nodeenv import forwardable, merge
from dispatchprof.shell import cluster_lock
from dispatchprof.shell.lifeline import Cancelled, raise_cancelled

log = logging.getLogger(__name__)

KILL_GRACE_S = 5.0
POLL_S = 0.1


@dataclass
class NodeSpec:
    """One node's command. ``env`` and ``prepend`` are what the workflow sets and the directories it puts in front
    of PATH-like variables; the command runs in the node's own environment with them merged on (nodeenv.merge).
    ``stdin``: bytes the command reads on its standard input (the ssh launcher's forwarded variables)."""

    node: int
    argv: list[str]
    env: dict[str, str]
    cwd: Path
    log_path: Path
    prepend: dict[str, list[str]] = field(default_factory=dict)
    stdin: bytes | None = None
    # Keep the command's stdin open after ``stdin`` until the run ends: the ssh launcher's lifeline (the remote
    # node_wrapper.py ends its node when this pipe, and so the ssh connection, ends).
    hold_stdin: bool = False


@dataclass
class NodeResult:
    node: int
    log_path: Path
    pid: int | None = None
    exit_code: int | None = None
    started: float | None = None
    finished: float | None = None
    killed: bool = False

    @property
    def ran(self) -> bool:
        return self.started is not None


@dataclass
class CollectiveResult:
    nodes: list[NodeResult]
    timed_out: bool = False
    problem: str | None = None  # why the run as a whole did not complete (None when every node exited by itself)
    order: list[int] = field(default_factory=list)  # node indices in start order
    # The launcher could not get every node running (port taken, a node did not start or never became ready):
    # an infrastructure failure, never a verdict on the measurement.
    not_run: bool = False

    @property
    def all_exited_zero(self) -> bool:
        return all(n.exit_code == 0 for n in self.nodes)


class StartError(Exception):
    """A node's command could not be started at all (missing program or working directory)."""


def port_is_open(host: str, port: int, timeout_s: float = 0.5) -> bool:
    try:
        with socket.create_connection((host, port), timeout=timeout_s):
            return True
    except OSError:
        return False


def kill_group(proc: subprocess.Popen, grace_s: float = KILL_GRACE_S) -> None:
    """End a process and everything in its process group: TERM, wait, then KILL."""
    try:
        pgid = os.getpgid(proc.pid)
    except ProcessLookupError:
        pgid = proc.pid
    for sig, wait_s in ((signal.SIGTERM, grace_s), (signal.SIGKILL, grace_s)):
        try:
            os.killpg(pgid, sig)
        except ProcessLookupError:
            pass
        try:
            proc.wait(timeout=wait_s)
        except subprocess.TimeoutExpired:
            continue
        # The leader is gone, but group members may outlive it: KILL what is left.
        try:
            os.killpg(pgid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        return


REAPER = Path(__file__).resolve().parents[1] / "node" / "reaper.py"


class Reaper:
    """The job's lifeline to its process groups (node/reaper.py, in a session of its own): a group registered here
    is ended when the job dies without releasing it, even by SIGKILL. One per job process, started on first use;
    its pipe closes when the job exits, however it exits."""

    _pipe: subprocess.Popen | None = None

    @classmethod
    def _send(cls, line: str) -> None:
        if cls._pipe is None or cls._pipe.poll() is not None:
            try:
                cls._pipe = subprocess.Popen(
                    [sys.executable, str(REAPER), str(KILL_GRACE_S)],
                    stdin=subprocess.PIPE,
                    stdout=subprocess.DEVNULL,  # never holds the job's output pipes open after the job
                    stderr=subprocess.DEVNULL,
                    start_new_session=True,
                    text=True,
                    pass_fds=cluster_lock.inherited_fds(),  # the cluster stays locked until the tools are ended
                )
            except OSError as exc:  # no reaper: the launcher's own clean-up still runs on every exit but SIGKILL
                log.warning(
                    "could not start the reaper (%s): a job killed with SIGKILL would leave its tools running", exc
                )
                return
        assert cls._pipe.stdin is not None
        try:
            cls._pipe.stdin.write(line + "\n")
            cls._pipe.stdin.flush()
        except BrokenPipeError:
            cls._pipe = None

    @classmethod
    def register(cls, pgid: int) -> None:
        cls._send(f"+ {pgid}")

    @classmethod
    def release(cls, pgid: int) -> None:
        cls._send(f"- {pgid}")


def _start(spec: NodeSpec, result: NodeResult) -> subprocess.Popen:
    spec.log_path.parent.mkdir(parents=True, exist_ok=True)
    with open(spec.log_path, "wb") as out:
        if not Path(spec.cwd).is_dir():
            raise StartError(f"node {spec.node} could not start: working directory {spec.cwd} does not exist")
        try:
            proc = subprocess.Popen(
                spec.argv,
                cwd=spec.cwd,
                env=merge(os.environ, spec.env, spec.prepend),  # a local node's own environment is this one
                stdin=subprocess.DEVNULL if spec.stdin is None else subprocess.PIPE,
                stdout=out,
                stderr=subprocess.STDOUT,
                start_new_session=True,  # its own process group, so it can be ended as one
            )
        except OSError as exc:
            raise StartError(f"node {spec.node} could not start {spec.argv[0]!r}: {exc}") from exc
    Reaper.register(proc.pid)
    if proc.stdin is not None:
        try:
            proc.stdin.write(spec.stdin or b"")
            proc.stdin.flush()
            if not spec.hold_stdin:
                proc.stdin.close()
        except BrokenPipeError:  # it exited at once; its exit code says why
            pass
    log.info("node %d started: pid %d, log %s", spec.node, proc.pid, spec.log_path)
    result.pid, result.started = proc.pid, time.time()
    return proc


class _SigtermGuard:
    """Turn SIGTERM into ``Cancelled`` while a run is active, so its process groups are ended on the way out (a
    stage script has this from run_stage already; a launcher used on its own gets it here)."""

    def __enter__(self) -> _SigtermGuard:
        self._previous = signal.getsignal(signal.SIGTERM)
        try:
            signal.signal(signal.SIGTERM, raise_cancelled)
            self._installed = True
        except ValueError:  # not in the main thread
            self._installed = False
        return self

    def __exit__(self, *exc: object) -> None:
        if self._installed:
            signal.signal(signal.SIGTERM, self._previous)


class LocalLauncher:
    """All nodes as local processes. Node 0 first; the others when node 0's port answers."""

    def __init__(self, ready_host: str, ready_port: int, ready_timeout_s: float, fail_grace_s: float = 10.0):
        self.ready_host = ready_host
        self.ready_port = ready_port
        self.ready_timeout_s = ready_timeout_s
        self.fail_grace_s = fail_grace_s

    def run(self, specs: Sequence[NodeSpec], timeout_s: float) -> CollectiveResult:
        specs = sorted(specs, key=lambda s: s.node)
        results = {s.node: NodeResult(node=s.node, log_path=s.log_path) for s in specs}
        running: dict[int, subprocess.Popen] = {}
        outcome = CollectiveResult(nodes=[results[s.node] for s in specs])
        deadline = time.monotonic() + timeout_s

        if len(specs) > 1 and port_is_open(self.ready_host, self.ready_port):
            outcome.problem = (
                f"readiness port {self.ready_host}:{self.ready_port} already answers before node 0 started: "
                "another run (or a leftover process) holds it; free it or set cluster.master_port: auto"
            )
            outcome.not_run = True
            return outcome

        with _SigtermGuard():
            try:
                self._run(specs, results, running, outcome, deadline, timeout_s)
            except StartError as exc:
                outcome.problem = str(exc)
                outcome.not_run = True
            finally:
                for node, proc in running.items():
                    if proc.poll() is None:
                        kill_group(proc)
                        results[node].killed = True
                    else:
                        # The leader exited, but its children may still run in its group.
                        try:
                            os.killpg(proc.pid, signal.SIGKILL)
                        except (ProcessLookupError, PermissionError):
                            pass
                    results[node].exit_code = proc.returncode
                    results[node].finished = results[node].finished or time.time()
                    Reaper.release(proc.pid)
                    if proc.stdin is not None and not proc.stdin.closed:
                        proc.stdin.close()
        return outcome

    def _run(
        self,
        specs: Sequence[NodeSpec],
        results: dict[int, NodeResult],
        running: dict[int, subprocess.Popen],
        outcome: CollectiveResult,
        deadline: float,
        timeout_s: float,
    ) -> None:
        first, rest = specs[0], specs[1:]
        running[first.node] = _start(first, results[first.node])
        outcome.order.append(first.node)
        if rest:
            ready_deadline = min(deadline, time.monotonic() + self.ready_timeout_s)
            while not port_is_open(self.ready_host, self.ready_port):
                if running[first.node].poll() is not None:
                    outcome.problem = (
                        f"node {first.node} exited with code {running[first.node].returncode} before opening "
                        f"{self.ready_host}:{self.ready_port}; the other nodes were not started"
                    )
                    outcome.not_run = True
                    return
                if time.monotonic() > ready_deadline:
                    outcome.timed_out = time.monotonic() > deadline
                    outcome.problem = (
                        f"node {first.node} did not open {self.ready_host}:{self.ready_port} within "
                        f"{self.ready_timeout_s:g} s; the other nodes were not started"
                    )
                    outcome.not_run = True
                    return
                time.sleep(POLL_S)
            log.info(
                "node %d is ready (%s:%d answers); starting nodes %s",
                first.node,
                self.ready_host,
                self.ready_port,
                [s.node for s in rest],
            )
            for spec in rest:
                running[spec.node] = _start(spec, results[spec.node])
                outcome.order.append(spec.node)

        failed_at: float | None = None
        while True:
            for node, proc in running.items():
                if proc.poll() is not None and results[node].finished is None:
                    results[node].finished = time.time()
                    results[node].exit_code = proc.returncode
                    log.info("node %d exited with code %d", node, proc.returncode)
                    if proc.returncode != 0 and failed_at is None:
                        failed_at = time.monotonic()
            if all(p.poll() is not None for p in running.values()):
                return
            now = time.monotonic()
            if failed_at is not None and now - failed_at > self.fail_grace_s:
                bad = [n for n, r in results.items() if r.exit_code not in (None, 0)]
                outcome.problem = (
                    f"node {bad[0]} exited with code {results[bad[0]].exit_code}; "
                    f"the remaining nodes were stopped after {self.fail_grace_s:g} s"
                )
                return
            if now > deadline:
                outcome.timed_out = True
                waiting = [n for n, p in running.items() if p.poll() is None]
                outcome.problem = (
                    f"the run exceeded its {timeout_s:g} s budget; nodes {waiting} were still running and were stopped"
                )
                return
            time.sleep(POLL_S)


@dataclass
class CommandResult:
    argv: list[str]
    exit_code: int | None
    output: str
    timed_out: bool
    error: str | None = None  # the command could not be started at all

    @property
    def ok(self) -> bool:
        return self.exit_code == 0 and not self.timed_out and self.error is None


def run_command(
    argv: Sequence[str],
    timeout_s: float,
    env: Mapping[str, str] | None = None,
    cwd: str | Path | None = None,
    stdin: bytes | None = None,
) -> CommandResult:
    """Run one command in its own process group (``stdin``: what it reads on its standard input); on timeout the
    whole group is ended."""
    try:
        proc = subprocess.Popen(
            list(argv),
            cwd=cwd,
            env=dict(env) if env is not None else None,
            stdin=subprocess.DEVNULL if stdin is None else subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    except OSError as exc:
        return CommandResult(list(argv), None, "", False, error=f"{type(exc).__name__}: {exc}")
    Reaper.register(proc.pid)
    try:
        out, _ = proc.communicate(input=stdin, timeout=timeout_s)
        return CommandResult(list(argv), proc.returncode, out.decode(errors="replace"), False)
    except subprocess.TimeoutExpired:
        kill_group(proc)
        out, _ = proc.communicate()
        return CommandResult(list(argv), proc.returncode, out.decode(errors="replace"), True)
    except BaseException:  # Cancelled or Ctrl-C: the command's group goes with the job
        kill_group(proc)
        raise
    finally:
        Reaper.release(proc.pid)


WRAPPER = Path(__file__).resolve().parents[1] / "node" / "node_wrapper.py"


class SlurmLauncher:
    """All nodes as one srun step inside the job's allocation: one task per node, node index SLURM_NODEID.

    Node 0 starts at once; the others wait in node_wrapper.py until node 0's port answers. A single node
    needs --overlap: without mpi the executor plugin runs the job itself as a one-task step, inside which a
    nested srun would wait forever for free resources. srun passes this process's environment to every task
    (--export=ALL, its default): the spec file carries only what the workflow sets.
    """

    def __init__(
        self,
        ready_host: str,
        ready_port: int,
        ready_timeout_s: float,
        overlap: bool,
        srun_args: Sequence[str] = (),
        python: str = sys.executable,
    ):
        self.ready_host, self.ready_port, self.ready_timeout_s = ready_host, ready_port, ready_timeout_s
        self.overlap, self.srun_args, self.python = overlap, list(srun_args), python

    def command(self, nodes: int, spec_file: Path) -> list[str]:
        return [
            "srun",
            f"--nodes={nodes}",
            f"--ntasks={nodes}",
            "--ntasks-per-node=1",
            "--kill-on-bad-exit=1",  # one failing node ends the step, as the repository's launcher cancels the run
            *(["--overlap"] if self.overlap else []),
            *self.srun_args,
            self.python,
            str(WRAPPER),
            str(spec_file),
            self.ready_host,
            str(self.ready_port),
            str(self.ready_timeout_s),
        ]

    def run(self, specs: Sequence[NodeSpec], timeout_s: float) -> CollectiveResult:
        specs = sorted(specs, key=lambda s: s.node)
        run_dir = specs[0].log_path.parent
        spec_file, exits = write_node_specs(specs)
        results = {s.node: NodeResult(node=s.node, log_path=s.log_path) for s in specs}
        outcome = CollectiveResult(nodes=[results[s.node] for s in specs])
        argv = self.command(len(specs), spec_file)
        log.info("srun: %s", " ".join(argv))
        with open(run_dir / "srun.log", "wb") as srun_log, _SigtermGuard():
            try:
                proc = subprocess.Popen(
                    argv, stdin=subprocess.DEVNULL, stdout=srun_log, stderr=subprocess.STDOUT, start_new_session=True
                )
            except OSError as exc:
                outcome.problem = f"srun could not start: {exc}"
                outcome.not_run = True
                return outcome
            Reaper.register(proc.pid)
            try:
                proc.wait(timeout=timeout_s)
            except subprocess.TimeoutExpired:
                outcome.timed_out = True
                outcome.problem = (
                    f"the run exceeded its {timeout_s:g} s budget; the srun "
                    "step was stopped (every node's process group ended)"
                )
                kill_group(proc)
            except Cancelled:
                kill_group(proc)  # srun passes the TERM to every node's wrapper, which ends its node's group
                raise
            finally:
                Reaper.release(proc.pid)
        for node, path in exits.items():
            if path.is_file():
                data = json.loads(path.read_text())
                results[node].exit_code = data.get("exit_code")
                results[node].started, results[node].finished = data.get("started"), data.get("finished")
                if data.get("error"):  # node_wrapper: the node never got its command running
                    outcome.not_run = True
                    outcome.problem = outcome.problem or data["error"]
            results[node].killed = outcome.timed_out
        started = sorted((r.started, r.node) for r in results.values() if r.started)
        outcome.order = [node for _, node in started]
        if proc.returncode not in (0, None) and outcome.problem is None and not outcome.timed_out:
            bad = [n for n, r in results.items() if r.exit_code not in (0,)]
            outcome.problem = (
                f"srun exited {proc.returncode}; nodes without a clean exit: {bad} (see {run_dir / 'srun.log'})"
            )
        return outcome


def write_node_specs(
    specs: Sequence[NodeSpec], forwarded_on_stdin: Sequence[str] | None = None
) -> tuple[Path, dict[int, Path]]:
    """The per-node commands for node_wrapper.py, on the (shared) run directory; stale exit files removed.

    Only what the workflow sets is written (NodeSpec.env and .prepend), never the caller's environment;
    ``forwarded_on_stdin``: the names (never values) of the variables node_wrapper.py reads on its stdin."""
    run_dir = specs[0].log_path.parent
    run_dir.mkdir(parents=True, exist_ok=True)
    spec_file = run_dir / "node_specs.json"
    exits = {s.node: run_dir / f"node{s.node}.exit.json" for s in specs}
    for path in exits.values():
        path.unlink(missing_ok=True)
    stdin = {"forwarded_on_stdin": sorted(forwarded_on_stdin)} if forwarded_on_stdin is not None else {}
    records = [
        {
            "node": s.node,
            "argv": s.argv,
            "env": s.env,
            "prepend": s.prepend,
            "cwd": str(s.cwd),
            "log_path": str(s.log_path),
            "exit_file": str(exits[s.node]),
        }
        | stdin
        for s in specs
    ]
    write_private(spec_file, json.dumps(records))
    return spec_file, exits


def write_private(path: Path, text: str) -> None:
    """Write ``text`` readable by its owner only (mode 0600), replacing any earlier file at once."""
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.unlink(missing_ok=True)
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w") as handle:
        handle.write(text)
    os.replace(tmp, path)


class SshLauncher:
    """Each node over ssh, node 0 first. The spec file (on a filesystem every host shares, as the results directory
    is on a cluster) carries what the workflow sets; the caller's variables named by ``forward_env`` (a login shell
    on the node does not see them) travel on the ssh session's stdin, never on disk. Secret-looking names are refused.

    The local ssh clients run under LocalLauncher (ordering, readiness port, timeout, fail-fast); on a timeout or
    failure every remote node's process group, recorded by node_wrapper.py, is ended over ssh by its group id."""

    def __init__(
        self,
        hosts: Sequence[str],
        ready_host: str,
        ready_port: int,
        ready_timeout_s: float,
        fail_grace_s: float,
        ssh_options: Sequence[str] = (),
        python: str = "python3",
        forward_env: Sequence[str] = (),
    ):
        self.hosts, self.ssh_options, self.python = list(hosts), list(ssh_options), python
        self.forward_env = list(forward_env)
        self.local = LocalLauncher(ready_host, ready_port, ready_timeout_s, fail_grace_s)
        self.ready = (ready_host, ready_port, ready_timeout_s)

    def ssh(self, host: str, remote: Sequence[str]) -> list[str]:
        return ["ssh", "-o", "BatchMode=yes", *self.ssh_options, host, "--", shlex.join(remote)]

    def forwarded(self) -> dict[str, str]:
        """The caller's variables ``forward_env`` names; refused secret-looking names are logged (names only)."""
        forwarded, refused = forwardable(os.environ, self.forward_env)
        if refused:
            log.warning(
                "not forwarded to the nodes (the names look secret; config/README.md, cluster.forward_env): %s",
                ", ".join(refused),
            )
        log.info("forwarded to the nodes over ssh stdin: %s", ", ".join(sorted(forwarded)) or "nothing")
        return forwarded

    def run(self, specs: Sequence[NodeSpec], timeout_s: float) -> CollectiveResult:
        specs = sorted(specs, key=lambda s: s.node)
        forwarded = self.forwarded()
        spec_file, exits = write_node_specs(specs, forwarded_on_stdin=list(forwarded))
        host, port, ready_timeout = self.ready
        local_specs = []
        payload = json.dumps(forwarded).encode() + b"\n"  # one line: node_wrapper.py then waits for the pipe to end
        for spec in specs:
            remote = [
                "env",
                f"DISPATCHPROF_NODE={spec.node}",
                self.python,
                str(WRAPPER),
                str(spec_file),
                host,
                str(port),
                str(ready_timeout),
            ]
            log_path = spec.log_path.with_name(f"node{spec.node}.ssh.log")
            ssh = self.ssh(self.hosts[spec.node], remote)
            local_specs.append(NodeSpec(spec.node, ssh, {}, spec.cwd, log_path, stdin=payload, hold_stdin=True))
        outcome = self.local.run(local_specs, timeout_s)
        outcome.nodes = [
            NodeResult(
                node=n.node,
                log_path=s.log_path,
                pid=n.pid,
                exit_code=n.exit_code,
                started=n.started,
                finished=n.finished,
                killed=n.killed,
            )
            for n, s in zip(outcome.nodes, specs)
        ]
        if outcome.problem is not None or outcome.timed_out:
            self.remote_cleanup(exits)
        return outcome

    def remote_cleanup(self, exits: Mapping[int, Path]) -> None:
        for node, path in exits.items():
            if not path.is_file():
                continue
            record = json.loads(path.read_text())
            if record.get("pgid") and record.get("exit_code") is None:
                for sig in ("TERM", "KILL"):
                    run_command(self.ssh(self.hosts[node], ["kill", f"-{sig}", "--", f"-{int(record['pgid'])}"]), 30)
                    time.sleep(1)
                log.info("node %d: remote process group %s ended over ssh", node, record["pgid"])
