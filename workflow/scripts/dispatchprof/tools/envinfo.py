"""Environment capture on one node, and the comparison of nodes.

A probe that fails is recorded as unavailable with its error; it never stops the capture. The
capture records which operator-profiler entry is usable (msopprof, `msprof op`, or none).
"""

from __future__ import annotations

import os
import re
import socket
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Mapping, Sequence

from dispatchprof.tools.launch import run_command
from dispatchprof.node.nodeenv import forwardable, redact
from dispatchprof.tools.profiling import msprof_application_form
from dispatchprof.tools.toolchain import Toolchain

VERSION_FILES = {
    # CANN 8.5+ keeps its version in <install_root>/cann/version.info (its runtime/ and compiler/ have one each too);
    # older toolkits in ascend-toolkit/latest/version.cfg or <arch>-linux/ascend_toolkit_install.info ("version=").
    "cann": (
        "cann/version.info",
        "cann/runtime/version.info",
        "ascend-toolkit/latest/version.cfg",
        "cann/version.cfg",
        "latest/version.cfg",
        "ascend-toolkit/latest/version.info",
        "ascend-toolkit/latest/*/ascend_toolkit_install.info",
    ),
    "driver": ("driver/version.info",),
    "firmware": ("firmware/version.info",),
}
CMAKE_FILE = "cmake/AscendDeepEPKernel.cmake"
BUILD_SCRIPT = "scripts/build.sh"
_VERSION_RE = re.compile(r"(?:^[Vv]ersion=|runtime_running_version=\[)([^\]:\s]+)", re.MULTILINE)
# Evidence that an op-profiler entry is the real one and not some other program of that name.
_OP_PROFILER_MARK = "--aic-metrics"


@dataclass
class ProbeRecord:
    name: str
    command: list[str]
    available: bool
    exit_code: int | None
    output_file: str | None
    error: str | None = None
    value: str | None = None


def _probe(
    name: str, argv: list[str], chain: Toolchain, out_dir: Path, timeout_s: float, cwd: Path | None = None
) -> ProbeRecord:
    result = run_command(chain.wrap(argv), timeout_s, env=chain.env(), cwd=cwd)
    out_file = out_dir / f"{name}.txt"
    out_file.write_text(result.output)
    error = result.error or ("timed out" if result.timed_out else None)
    if error is None and result.exit_code != 0:
        error = (
            f"exit code {result.exit_code}: "
            f"{result.output.strip().splitlines()[-1] if result.output.strip() else 'no output'}"
        )
    first = result.output.strip().splitlines()[0] if result.output.strip() else None
    return ProbeRecord(name, argv, result.ok, result.exit_code, str(out_file), error, first if result.ok else None)


def _read_version(root: Path, candidates: tuple[str, ...]) -> dict[str, Any]:
    for rel in candidates:
        for path in sorted(root.glob(rel)) if "*" in rel else [root / rel]:
            if not path.is_file():
                continue
            text = path.read_text(errors="replace")
            match = _VERSION_RE.search(text)
            return {"available": True, "file": str(path), "version": match.group(1) if match else text.strip()[:80]}
    return {"available": False, "error": f"none of {[str(root / c) for c in candidates]} exists"}


# bash: $0 = the number of candidates, then the candidates; sources the first existing one with its stderr shown
# (stdout dropped) between two marker lines, then prints the exit status and where CANN says it lives.
_SET_ENV_PROBE = (
    'n=$0; f=; while [ "$n" -gt 0 ]; do if [ -z "$f" ] && [ -f "$1" ]; then f=$1; fi; shift; n=$((n-1)); done; '
    '[ -n "$f" ] || { echo "dispatchprof-set-env: none"; exit 127; }; echo "dispatchprof-set-env: sourcing $f"; '
    'source "$f" 2>&1 >/dev/null; code=$?; echo "dispatchprof-set-env: exit $code"; '
    'echo "dispatchprof-set-env: ASCEND_HOME_PATH=${ASCEND_HOME_PATH:-}"; echo '
    '"dispatchprof-set-env: ASCEND_TOOLKIT_HOME=${ASCEND_TOOLKIT_HOME:-}"; exit $code'
)


def set_env_record(chain: Toolchain, out_dir: Path, timeout_s: float) -> dict[str, Any]:
    """Which set_env.sh the node sources (the first existing candidate), what it printed on stderr (the wrapped
    commands drop it), its exit status and the CANN home it set; the output is kept in cann_set_env.txt."""
    candidates = chain.set_env_candidates
    if chain.name != "cann" or not candidates:
        return {"used": False, "candidates": candidates}
    result = run_command(["bash", "-c", _SET_ENV_PROBE, str(len(candidates)), *candidates], timeout_s, env=chain.env())
    out_file = out_dir / "cann_set_env.txt"
    out_file.write_text(result.output)
    record: dict[str, Any] = {
        "used": True,
        "candidates": candidates,
        "sourced": None,
        "exit_code": result.exit_code,
        "output_file": str(out_file),
    }
    stderr = []
    for line in result.output.splitlines():
        said = line.removeprefix("dispatchprof-set-env: ")
        if said == line:
            stderr.append(line)  # set_env.sh's own stderr
        elif said.startswith("sourcing "):
            record["sourced"] = said.removeprefix("sourcing ")
        elif said.startswith("ASCEND_"):
            name, _, value = said.partition("=")
            record[name] = value or None
    record["stderr"] = stderr[-40:]
    sourced = record["sourced"]
    if sourced is None:
        record["error"] = f"none of {', '.join(candidates)} exists (cann.set_env)"
    elif result.exit_code != 0 or result.timed_out:
        record["error"] = f"sourcing {sourced} ended with exit code {result.exit_code}" + (
            f": {stderr[-1]}" if stderr else ""
        )
    return record


def compile_flags(repo: Path) -> dict[str, Any]:
    """The device-kernel flags the repository's cmake file sets: optimisation level, -g, DEBUG_CLOCK."""
    path = repo / CMAKE_FILE
    if not path.is_file():
        return {"available": False, "error": f"{path} not found"}
    text = path.read_text(errors="replace")
    code = "\n".join(line.split("#", 1)[0] for line in text.splitlines())
    return {
        "available": True,
        "file": str(path),
        "optimization": sorted(set(re.findall(r"(?<![\w-])-O[0-3sz]?(?![\w-])", code))),
        "debug_info": bool(re.search(r"(?<![\w-])-g(?![\w-])", code)),
        "debug_info_lines": [line.strip() for line in code.splitlines() if re.search(r"(?<![\w-])-g(?![\w-])", line)],
    }


def debug_clock_switches(repo: Path, env: Mapping[str, str]) -> dict[str, Any]:
    found = {}
    for rel in (CMAKE_FILE, BUILD_SCRIPT):
        path = repo / rel
        if path.is_file():
            lines = [line.strip() for line in path.read_text(errors="replace").splitlines() if "DEBUG_CLOCK" in line]
            if lines:
                found[rel] = lines
    return {"mentions": found, "environment": redact({k: v for k, v in env.items() if "DEBUG_CLOCK" in k})}


def op_profiler_entry(probes: Mapping[str, ProbeRecord]) -> str:
    """msopprof when usable, else `msprof op`, else none (the PMU stage records the choice)."""
    for entry, name in (("msopprof", "msopprof_help"), ("msprof op", "msprof_op_help")):
        probe = probes.get(name)
        if probe and probe.available and _OP_PROFILER_MARK in Path(probe.output_file or "").read_text(errors="replace"):
            return entry
    return "none"


def forward_record(environ: Mapping[str, str], patterns: Sequence[str]) -> dict[str, Any]:
    """Which of the caller's variables ``cluster.forward_env`` matches: names only, never values."""
    forwarded, refused = forwardable(environ, patterns)
    return {"patterns": list(patterns), "set": sorted(forwarded), "refused": refused}


def capture_node(
    node: int, chain: Toolchain, python: str, out_dir: Path, timeout_s: float, forward_env: Sequence[str] = ()
) -> dict[str, Any]:
    """Run every probe on this node; each records its output file, availability and error, and which forwarded
    variables are set (names only)."""
    out_dir.mkdir(parents=True, exist_ok=True)
    per_probe = max(5.0, timeout_s / 12)
    commands = {
        "npu_smi_info": ["npu-smi", "info"],
        "npu_smi_topology": ["npu-smi", "info", "-t", "topo"],
        "msprof_path": ["sh", "-c", "command -v msprof"],
        "msopprof_path": ["sh", "-c", "command -v msopprof"],
        "msprof_help": ["msprof", "--help"],
        "msopprof_help": ["msopprof", "--help"],
        "msprof_op_help": ["msprof", "op", "--help"],
        "repo_commit": ["git", "-C", str(chain.repo), "rev-parse", "HEAD"],
        "torch_version": [python, "-c", "import torch; print(torch.__version__)"],
        "torch_npu_version": [python, "-c", "import torch_npu; print(torch_npu.__version__)"],
        # Node clocks: the timeline estimates offsets and drift
        # itself; what synchronises the hosts is recorded beside it.
        "clock_chrony": ["chronyc", "-n", "tracking"],
        "clock_ntp_synchronized": ["timedatectl", "show", "--property=NTPSynchronized"],
        "clock_ptp": ["pmc", "-u", "-b", "0", "GET TIME_STATUS_NP"],
    }
    probes = {name: _probe(name, argv, chain, out_dir, per_probe) for name, argv in commands.items()}
    msprof_help = probes["msprof_help"]
    help_text = (
        Path(msprof_help.output_file).read_text(errors="replace")
        if msprof_help.available and msprof_help.output_file
        else ""
    )
    form, form_why = msprof_application_form(help_text)
    return {
        "node": node,
        "hostname": socket.gethostname(),
        "toolchain": chain.name,
        "repo": str(chain.repo),
        "probes": {name: asdict(p) for name, p in probes.items()},
        "versions": {name: _read_version(chain.install_root, files) for name, files in VERSION_FILES.items()},
        "compile_flags": compile_flags(chain.repo),
        "debug_clock": debug_clock_switches(chain.repo, chain.env()),
        "op_profiler_entry": op_profiler_entry(probes),
        "msprof_form": {"form": form, "why": form_why},
        "set_env": set_env_record(chain, out_dir, per_probe),
        "clock_sync": clock_sync(probes),
        "forward_env": forward_record(os.environ, forward_env),
    }


def clock_sync(probes: Mapping[str, ProbeRecord]) -> str:
    """One line on what keeps this host's clock in step: chrony, systemd's NTP flag, PTP, or nothing found."""
    found = []
    chrony = probes.get("clock_chrony")
    if chrony is not None and chrony.available and chrony.output_file:
        text = Path(chrony.output_file).read_text(errors="replace")
        offset = re.search(r"System time\s*:\s*([0-9.]+ seconds (?:fast|slow))", text)
        found.append("chrony" + (f" ({offset.group(1)} of NTP time)" if offset else ""))
    ntp = probes.get("clock_ntp_synchronized")
    if ntp is not None and ntp.available and ntp.value:
        found.append(ntp.value.strip())
    ptp = probes.get("clock_ptp")
    if ptp is not None and ptp.available:
        found.append("PTP (pmc answered)")
    return "; ".join(found) or "not found (no chrony, timedatectl or pmc answered)"


def compare_nodes(envs: list[Mapping[str, Any]]) -> list[str]:
    """Differences across nodes that can make results incomparable (warnings, not errors)."""
    checks = {
        "CANN version": lambda e: e["versions"]["cann"].get("version"),
        "driver version": lambda e: e["versions"]["driver"].get("version"),
        "repo commit": lambda e: e["probes"]["repo_commit"]["value"],
        "device compile flags": lambda e: (
            str(e["compile_flags"].get("optimization")) + str(e["compile_flags"].get("debug_info"))
        ),
        "op-profiler entry": lambda e: e["op_profiler_entry"],
        "msprof application form": lambda e: (e.get("msprof_form") or {}).get("form"),
        "CANN set_env.sh": lambda e: (e.get("set_env") or {}).get("sourced"),
    }
    warnings = []
    for label, get in checks.items():
        values = {e["node"]: get(e) for e in envs}
        if len(set(values.values())) > 1:
            warnings.append(f"{label} differs across nodes: " + ", ".join(f"node {n}: {v}" for n, v in values.items()))
    return warnings


def common_op_entry(envs: list[Mapping[str, Any]]) -> str:
    """The op-profiler entry every node can use (a collective run needs the same tool everywhere)."""
    entries = {e["op_profiler_entry"] for e in envs}
    return entries.pop() if len(entries) == 1 else "none"
