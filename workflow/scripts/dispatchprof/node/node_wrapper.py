"""Runs one node's command of a collective run, on that node (one task per node under srun, or over ssh).

The node index comes from SLURM_NODEID (slurm) or DISPATCHPROF_NODE (ssh). Nodes > 0 wait until node 0's
readiness port answers. The command runs in its own process group, ended as a group on SIGTERM (the
scheduler's warning, or the launcher's timeout). The exit status is written to the node's exit file.
The command's environment is this node's own (srun passes the caller's; ssh gives the login environment) with
the spec's variables merged on, and under ssh the forwarded variables read from stdin (nodeenv.py).
Standard library only: it runs in the cluster's Python, before anything else is imported.

    python node_wrapper.py <specs.json> <ready_host> <ready_port> <ready_timeout_s>
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time

try:
    from dispatchprof.node.nodeenv import merge
except ImportError:  # run as a script on a node: its sibling module
    from nodeenv import merge


def port_open(host: str, port: int) -> bool:
    try:
        with socket.create_connection((host, port), timeout=0.5):
            return True
    except OSError:
        return False


def write_exit(path: str, data: dict) -> None:
    tmp = f"{path}.tmp"
    with open(tmp, "w") as handle:
        json.dump(data, handle)
    os.replace(tmp, path)


def end_with_stdin(pgid: int) -> None:
    """Block until the launcher's pipe ends, then end the node's group (TERM, then KILL); the main thread's wait
    returns and records the exit."""
    sys.stdin.read()
    for sig in (signal.SIGTERM, signal.SIGKILL):
        try:
            os.killpg(pgid, sig)
        except ProcessLookupError:
            return
        time.sleep(5)


def main(argv: list[str]) -> int:
    spec_file, host, port, ready_timeout = argv[1], argv[2], int(argv[3]), float(argv[4])
    node = int(os.environ.get("SLURM_NODEID", os.environ.get("DISPATCHPROF_NODE", "0")))
    specs = {int(s["node"]): s for s in json.load(open(spec_file))}
    spec = specs[node]
    # Under ssh the first line of stdin is the forwarded variables; the launcher keeps the pipe open while the run
    # lasts, so its end (the launcher or its ssh client gone, even by SIGKILL) ends this node (lifeline below).
    lifeline = "forwarded_on_stdin" in spec
    forwarded = json.loads(sys.stdin.readline() or "{}") if lifeline else {}
    env = merge(os.environ, spec["env"], spec.get("prepend"), forwarded)
    record = {
        "node": node,
        "host": socket.gethostname(),
        "slurm_nodeid": os.environ.get("SLURM_NODEID"),
        "started": None,
        "finished": None,
        "exit_code": None,
        "error": None,
    }
    if node > 0:
        deadline = time.monotonic() + ready_timeout
        while not port_open(host, port):
            if time.monotonic() > deadline:
                record["error"] = f"node 0 did not open {host}:{port} within {ready_timeout:g} s"
                write_exit(spec["exit_file"], record)
                return 3
            time.sleep(0.1)
    os.makedirs(os.path.dirname(spec["log_path"]), exist_ok=True)
    with open(spec["log_path"], "wb") as log:
        try:
            proc = subprocess.Popen(
                spec["argv"],
                cwd=spec["cwd"],
                env=env,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        except OSError as exc:
            record["error"] = f"node {node} could not start {spec['argv'][0]!r}: {exc}"
            write_exit(spec["exit_file"], record)
            return 127
    record["started"] = time.time()
    record["pgid"] = proc.pid  # its own session: the launcher ends the node by this group, never by name
    write_exit(spec["exit_file"], record)

    def stop(signum: int, frame: object) -> None:
        for sig in (signal.SIGTERM, signal.SIGKILL):
            try:
                os.killpg(proc.pid, sig)
            except ProcessLookupError:
                return
            try:
                proc.wait(timeout=5)
                os.killpg(proc.pid, signal.SIGKILL)
            except (subprocess.TimeoutExpired, ProcessLookupError):
                continue
            return

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    if lifeline:
        threading.Thread(target=end_with_stdin, args=(proc.pid,), daemon=True).start()
    code = proc.wait()
    try:
        os.killpg(proc.pid, signal.SIGKILL)  # leftovers of the group
    except ProcessLookupError:
        pass
    record.update(finished=time.time(), exit_code=code)
    write_exit(spec["exit_file"], record)
    return 0 if code == 0 else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv))
