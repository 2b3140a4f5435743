"""What env capture checks on each node before a collective stage costs an allocation, built from the config.

The node-side checks live in preflight.py (standard library only, so they can run on a remote host); this
module decides what to check and where: locally (launchers local and slurm: the job already runs on the node)
or over ssh on the node's host (launcher ssh). Profiler options are checked against the --help texts env
capture recorded.
"""

from __future__ import annotations

import json
import socket
from pathlib import Path
from typing import Any, Mapping

from dispatchprof.tools.collective import LAUNCHER_PORTS, launcher, run_ports, with_ports
from dispatchprof.tools.launch import SshLauncher, run_command, write_private
from dispatchprof.tools.opprofiler import op_profiler_command, timeline_run
from dispatchprof.node.preflight import FORBIDDEN_ENV, flags_of, missing_flags, run_checks
from dispatchprof.tools.profiling import msprof_command
from dispatchprof.tools.toolchain import Toolchain

PREFLIGHT_SCRIPT = Path(__file__).resolve().parents[1] / "node" / "preflight.py"


def node_spec(
    config: Mapping[str, Any],
    chain: Toolchain,
    node: int,
    results_dir: Path,
    token: Path | None,
    timeout_s: float,
    check_ports: bool,
) -> dict[str, Any]:
    """The checks preflight.py runs on one node. Ports are checked by the first run's env capture only: it runs
    before every collective stage, whereas a later run's capture may overlap an earlier run's collectives."""
    deepep, cluster = config["deepep"], config["cluster"]
    world = int(cluster["nodes"]) * int(cluster["ranks_per_node"])
    per_rank = int(config["preflight"]["expected_mib_per_rank"]) * 2**20
    own, prepend = chain.own_env()  # never the parent's environment: under ssh this spec is a file on shared disk
    spec: dict[str, Any] = {
        "node": node,
        "timeout_s": timeout_s,
        "test_help": {
            "argv": chain.wrap([deepep["python"], deepep["test"], "--help"]),
            "cwd": str(chain.repo),
            "env": own,
            "prepend": prepend,
        },
        "flags": flags_of(deepep["test_args"]),
        "set_env": chain.set_env_candidates if chain.name == "cann" else None,
        "disk": {
            "path": str(results_dir.resolve()),
            "need_bytes": world * per_rank,
            "what": f"the PROF_/OPPROF_ directories of {world} ranks",
        },
        "ports": [],
        "shared_token": str(token.resolve()) if token else None,
        "write_dirs": write_dirs(results_dir),
    }
    if node == 0 and check_ports:
        if config["launcher"] == "local":  # auto picks free ports per run: only fixed ones can be taken
            spec["ports"] = [int(cluster[k]) for k in LAUNCHER_PORTS if cluster[k] != "auto"]
        else:
            spec["ports"] = list(run_ports(config).values())
    return spec


def write_dirs(results_dir: Path, depth: int = 3) -> list[str]:
    """Where the stages will write: results/ and its directories down to results/<experiment>/<stage>/<part> (the
    raw trees below are written by the tools into directories the stages create). Preflight writes a file in each."""
    found = [results_dir.resolve()]
    level = [results_dir.resolve()]
    for _ in range(depth):
        level = [p for d in level if d.is_dir() for p in sorted(d.iterdir()) if p.is_dir() and not p.is_symlink()]
        found += level
    return [str(p) for p in found]


def profiler_findings(config: Mapping[str, Any], capture: Mapping[str, Any]) -> list[dict[str, Any]]:
    """Every option the workflow itself passes to msprof and to the op profiler appears in that tool's captured
    --help. (Configured msprof options missing from the help are dropped with a warning by the timeline stage.)"""
    findings = []
    probes = capture["probes"]
    dummy = Path("/preflight")
    form = (capture.get("msprof_form") or {}).get("form", "trailing")
    tools = {"msprof": (msprof_command(dummy, [], dummy / "probe.sh", form), "msprof_help")}
    entry = capture["op_profiler_entry"]
    if entry != "none":
        metrics = config["pmu"]["metrics"]
        help_probe = "msopprof_help" if entry == "msopprof" else "msprof_op_help"
        timelines = config.get("pipe_timeline") or {}
        extra = (
            timeline_run("instr", timelines)[1] if "InstrTimeline" in timelines.get("runs", []) else []
        )  # --instr-timeline-pipe
        tools[entry] = (
            op_profiler_command(entry, config["kernel"]["name"], metrics, dummy, config["pmu"], extra),
            help_probe,
        )
    for tool, (argv, probe_name) in tools.items():
        probe = probes.get(probe_name) or {}
        if not probe.get("available"):
            continue  # recorded as unavailable by the capture; the stage that needs the tool says so
        help_text = Path(probe["output_file"]).read_text(errors="replace")
        flags = flags_of(argv)
        missing = missing_flags(flags, help_text)
        detail = f"not in `{tool} --help`: {', '.join(missing)}" if missing else f"{len(flags)} options listed"
        findings.append({"check": f"{tool} options in its --help", "ok": not missing, "detail": detail})
    return findings


def run_node_checks(
    config: Mapping[str, Any], spec: Mapping[str, Any], spec_file: Path, timeout_s: float
) -> list[dict[str, Any]]:
    """preflight.py's checks on the node: here, or over ssh on the node's host (launcher ssh)."""
    if config["launcher"] != "ssh":
        return run_checks(spec)
    runner = launcher(with_ports(config, run_ports(config)))
    assert isinstance(runner, SshLauncher)
    forwarded = runner.forwarded()  # on the ssh session's stdin, as the collective runs get them
    write_private(spec_file, json.dumps({**spec, "forwarded_on_stdin": sorted(forwarded)}))
    host = runner.hosts[int(spec["node"])]
    argv = runner.ssh(host, [config["ssh"]["python"], str(PREFLIGHT_SCRIPT), str(spec_file.resolve())])
    result = run_command(argv, timeout_s, stdin=json.dumps(forwarded).encode())
    lines = [line for line in result.output.strip().splitlines() if line.startswith("[")]
    if not result.ok or not lines:
        return [
            {
                "check": f"preflight over ssh on {host}",
                "ok": False,
                "detail": f"exit {result.exit_code}: {result.output.strip()[-300:]}",
            }
        ]
    return json.loads(lines[-1])


def write_token(path: Path) -> Path:
    """A file the launching host writes and each node must read back: results/ is shared, or it is not."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"written_by": socket.gethostname()}))
    return path


def planned_preflight(
    config: Mapping[str, Any], chain: Toolchain, node: int, results_dir: Path, check_ports: bool
) -> list[str]:
    """What env capture's preflight will check on ``node``, in words, from the same spec the node gets (node_spec):
    what a dry run shows before the allocation. The profilers' options are checked against the --help the capture
    records there, so they are named, not their outcome."""
    token = (
        results_dir / "<experiment>/env_capture/node<k>/shared_fs_token.json" if config["launcher"] == "ssh" else None
    )
    spec = node_spec(config, chain, node, results_dir, token, 0.0, check_ports)
    disk = spec["disk"]
    lines = [
        f"the test's --help lists deepep.test_args' flags ({' '.join(spec['flags']) or 'none'})",
        f"about {disk['need_bytes'] / 2**30:.1f} GiB free at {disk['path']} "
        f"for {disk['what']} (preflight.expected_mib_per_rank)",
        "results/ and the stage directories under it writable",
        "unset: " + ", ".join(sorted(FORBIDDEN_ENV)),
        "msprof's and the op profiler's options each listed in their --help",
    ]
    if spec["set_env"]:
        lines.insert(1, "CANN set_env.sh exists: the first of " + " | ".join(spec["set_env"]))
    if spec["ports"]:
        lines.append("ports free on node 0: " + ", ".join(map(str, spec["ports"])))
    if token:
        lines.append("results/ on a filesystem every node shares (a token written here is read there)")
    return lines
