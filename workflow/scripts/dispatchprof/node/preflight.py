"""Preflight on one node: what a real cluster would otherwise fail on after the allocation was paid for.

Env capture runs these checks on every node (over ssh under launcher ssh, so they see that host) and fails with
every problem listed. Checks that need only the configuration run before the DAG is built (config.check_config).

Standard library only: under launcher ssh this file runs on the remote host as a script, like node_wrapper.py,
reading its spec (JSON) and printing its findings (JSON).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
from typing import Any, Iterable, Mapping

try:
    from dispatchprof.node.nodeenv import merge
except ImportError:  # run as a script on a node: its sibling module
    from nodeenv import merge

FORBIDDEN_ENV = {
    # docs/formats.md §3: it overrides profile_dispatch_latency's output_dir, so the CSV lands elsewhere.
    "AKL_LATENCY_OUTPUT_DIR": (
        "overrides profile_dispatch_latency's output_dir: dispatch_latency.csv would not land in results/"
    ),
}


def flags_of(args: Iterable[str]) -> list[str]:
    """The long options of an argument list (``--name`` or ``--name=value``), in order, once each."""
    seen: list[str] = []
    for item in args:
        if item.startswith("--") and len(item) > 2:
            name = item.split("=", 1)[0]
            if name not in seen:
                seen.append(name)
    return seen


def missing_flags(flags: Iterable[str], help_text: str) -> list[str]:
    """Flags that the --help text never mentions (as a whole word: --route is not found inside --router)."""
    return [flag for flag in flags if not re.search(rf"(?<![\w-]){re.escape(flag)}(?![\w-])", help_text)]


def _run(argv: list[str], cwd: str | None, env: Mapping[str, str] | None, timeout_s: float) -> tuple[int | None, str]:
    """Exit code (None on timeout or when it could not start) and output; its process group is ended on timeout."""
    try:
        proc = subprocess.Popen(
            argv,
            cwd=cwd,
            env=dict(env) if env is not None else None,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    except OSError as exc:
        return None, f"could not start {argv[0]!r}: {exc}"
    try:
        out, _ = proc.communicate(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        out, _ = proc.communicate()
        return None, f"timed out after {timeout_s:g} s"
    return proc.returncode, out.decode(errors="replace")


def port_in_use(port: int) -> str | None:
    """Why the port cannot be bound on this host (another process holds it), or None when it is free."""
    with socket.socket() as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind(("", port))
        except OSError as exc:
            return str(exc)
    return None


def write_probe(directory: str) -> str | None:
    """Write and remove a file in ``directory`` (created when
    missing): None, or why the stages could not write there."""
    try:
        os.makedirs(directory, exist_ok=True)
        fd, path = tempfile.mkstemp(dir=directory, prefix=".preflight_")
        os.close(fd)
        os.unlink(path)
    except OSError as exc:
        return f"cannot write in {directory}: {exc.strerror}"
    return None


def run_checks(
    spec: Mapping[str, Any], environ: Mapping[str, str] = os.environ, forwarded: Mapping[str, str] | None = None
) -> list[dict[str, Any]]:
    """Every check of the spec; each finding is {check, ok, detail}. A check that cannot run is a failed check.
    ``environ`` is this node's environment, ``forwarded`` what the ssh launcher forwards onto it (read from stdin)."""
    findings: list[dict[str, Any]] = []
    environ = merge(environ, {}, None, forwarded)  # what the node's commands see, for the environment checks

    def add(check: str, ok: bool, detail: str) -> None:
        findings.append({"check": check, "ok": ok, "detail": detail})

    test = spec.get("test_help")
    if test:
        shown = " ".join(test["argv"][-3:])
        env = merge(os.environ, test.get("env") or {}, test.get("prepend"), forwarded)
        code, text = _run(test["argv"], test.get("cwd"), env, float(spec.get("timeout_s", 60)))
        if code != 0:
            add("test --help", False, f"`{shown}` did not list its options (exit {code}): {text.strip()[-300:]}")
        else:
            missing = missing_flags(spec["flags"], text)
            detail = (
                f"not in `{shown}`: {', '.join(missing)} (deepep.test_args)"
                if missing
                else f"all {len(spec['flags'])} flags listed"
            )
            add("deepep.test_args flags in the test's --help", not missing, detail)
    set_env = spec.get("set_env")
    if set_env:
        candidates = [set_env] if isinstance(set_env, str) else list(set_env)  # tried in order (cann.set_env)
        found = next((c for c in candidates if os.path.isfile(c)), None)
        missing = "; ".join(f"{c} does not exist" for c in candidates)
        add(
            "CANN set_env.sh",
            found is not None,
            f"{found} exists" + (f" (first of {len(candidates)} candidates)" if len(candidates) > 1 else "")
            if found
            else f"{missing} (cann.set_env)",
        )
    disk = spec.get("disk")
    if disk:
        path = disk["path"]
        while not os.path.exists(path) and os.path.dirname(path) != path:
            path = os.path.dirname(path)
        free = shutil.disk_usage(path).free
        need = int(disk["need_bytes"])
        add(
            "disk space",
            free >= need,
            f"{free / 2**30:.1f} GiB free at {path}; {disk['what']} need "
            f"about {need / 2**30:.1f} GiB (preflight.expected_mib_per_rank)",
        )
    for port in spec.get("ports", []):
        held = port_in_use(int(port))
        add(
            f"port {port} free on node 0",
            held is None,
            "free" if held is None else f"in use: {held} (another run or a leftover process)",
        )
    token = spec.get("shared_token")
    if token:
        seen = os.path.isfile(token)
        add(
            "results/ on a shared filesystem",
            seen,
            f"{token} "
            f"{'is visible here' if seen else 'written by the launching host is not visible here: put results/ on a filesystem every node shares'}",
        )
    unwritable = [problem for d in spec.get("write_dirs", []) if (problem := write_probe(d))]
    if spec.get("write_dirs"):
        shown = "; ".join(unwritable[:3]) + (f"; and {len(unwritable) - 3} more" if len(unwritable) > 3 else "")
        add(
            "results/ writable",
            not unwritable,
            shown or f"a file was written and removed in each of {len(spec['write_dirs'])} directories",
        )
    for name, why in FORBIDDEN_ENV.items():
        if environ.get(name):
            add(f"environment {name}", False, f"{name}={environ[name]!r} {why}: unset it")
    return findings


def main(argv: list[str]) -> int:
    with open(argv[1]) as handle:
        spec = json.load(handle)
    forwarded = json.load(sys.stdin) if "forwarded_on_stdin" in spec else None
    json.dump(run_checks(spec, forwarded=forwarded), sys.stdout)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
