"""Which tools and repository the stages drive: the simulated cluster, a real CANN install, or none.

With ``toolchain: sim`` the stand-in executables in workflow/sim/bin come first on PATH and the
stand-in repository is used; with ``toolchain: cann`` every command runs after sourcing CANN's
set_env.sh: the first of ``cann.set_env``'s candidates that exists on the node (``auto``: the CANN 8.5+ layout
``<install_root>/cann/set_env.sh``, then the older ``<install_root>/ascend-toolkit/set_env.sh``). The rules cannot
tell the difference.
"""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Mapping, Sequence

from dispatchprof.node.nodeenv import merge
from dispatchprof.shell.gitref import deepep_repo, repo_prefix


def sim_link_peaks(sim: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
    """Per link class, the simulated cluster's capacity (sim.link_gbps: GB/s of one rank's send port and of its receive
    port, one direction; the stand-in reads it from DEEPEP_SIM_LINK_GBPS) with where it comes from: the peak under
    ``toolchain: sim``, in place of hardware.links (a simulated run has no hardware to configure). The stand-in's ports
    never run above it, so the bound it gives is a real bound of the simulated kernel."""
    return {
        c: {
            "peak_gbps": float(gbps),
            "source": (
                f"simulator capacity (sim.link_gbps.{c}: each rank's send port and "
                "receive port of this class, one direction), not a hardware figure"
            ),
            "kind": "simulator",
        }
        for c, gbps in sim["link_gbps"].items()
    }


def configured_link_peaks(hardware: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
    """hardware.links as the bound reads it: the configured peak with its source, or null ("peak not configured")."""
    return {
        c: {"peak_gbps": v.get("peak_gbps"), "source": v.get("source"), "kind": "configured"}
        for c, v in hardware["links"].items()
    }


# Environment variables through which the simulated cluster receives its fault knobs.
SIM_ENV = {
    "precision_fail_rank": "DEEPEP_SIM_PRECISION_FAIL_RANK",
    "dead_node": "DEEPEP_SIM_DEAD_NODE",
    "die_rank": "DEEPEP_SIM_DIE_RANK",
    "die_after_launches": "DEEPEP_SIM_DIE_AFTER_LAUNCHES",
    "late_node_s": "DEEPEP_SIM_LATE_NODE_S",
    "slow_rank": "DEEPEP_SIM_SLOW_RANK",
    "slow_factor": "DEEPEP_SIM_SLOW_FACTOR",
    "spiky_rank": "DEEPEP_SIM_SPIKY_RANK",
    "noise_seed": "DEEPEP_SIM_NOISE_SEED",
    "role_speedup": "DEEPEP_SIM_ROLE_SPEEDUP",
    "missing_device": "DEEPEP_SIM_MISSING_DEVICE",
    "export_missing": "DEEPEP_SIM_EXPORT_MISSING",
    "profiler_error": "DEEPEP_SIM_PROFILER_ERROR",
    "replay": "DEEPEP_SIM_REPLAY",
    "op_entry": "DEEPEP_SIM_OP_ENTRY",
    "pcsampling": "DEEPEP_SIM_PCSAMPLING",
    "pipe_timeline": "DEEPEP_SIM_PIPE_TIMELINE",
    "probe": "DEEPEP_SIM_PROBE",
    "debugclock": "DEEPEP_SIM_DEBUGCLOCK",
    "icache_hot_role": "DEEPEP_SIM_ICACHE_HOT_ROLE",
    "late_rank": "DEEPEP_SIM_LATE_RANK",
    "late_node": "DEEPEP_SIM_LATE_NODE",
    "late_us": "DEEPEP_SIM_LATE_US",
    "late_prob": "DEEPEP_SIM_LATE_PROB",
    "late_rank2": "DEEPEP_SIM_LATE_RANK2",
    "late_us2": "DEEPEP_SIM_LATE_US2",
    "late_prob2": "DEEPEP_SIM_LATE_PROB2",
    "slow_role": "DEEPEP_SIM_SLOW_ROLE",
    "slow_link": "DEEPEP_SIM_SLOW_LINK",
    "clock_offset_us": "DEEPEP_SIM_CLOCK_OFFSET_US",
    "clock_drift_ppm": "DEEPEP_SIM_CLOCK_DRIFT_PPM",
    "poll_pipe_share": "DEEPEP_SIM_POLL_PIPE_SHARE",
    "pre_kernels": "DEEPEP_SIM_PRE_KERNELS",
    "link_gbps": "DEEPEP_SIM_LINK_GBPS",
}
# The stand-in's modelled host clock: the full-API scope of the simulated cluster is its host path, not the
# stand-in store's TCP round trips (the driver records which clock it used in api/clock.json).
SIM_HOST_CLOCK = "ascend_deepep.elastic:host_clock"


def noise_seed(config: Mapping[str, Any]) -> int:
    """Simulated noise is seeded per experiment and repeat: two identical experiments differ by noise, as on
    hardware, and a rerun of the same experiment reproduces its numbers."""
    key = f"{config['sim']['noise_seed']}/{config.get('_experiment', config['experiment'])}/{config.get('_repeat', 1)}"
    return int(hashlib.sha256(key.encode()).hexdigest()[:8], 16)


def _sim_value(value: Any) -> str:
    if isinstance(value, bool):
        return "1" if value else "0"
    if isinstance(value, dict) and set(value) == {"node", "local_rank"}:
        return f"{value['node']}:{value['local_rank']}"
    if isinstance(value, dict):
        return ",".join(f"{k}={v}" for k, v in value.items())
    return str(value)


@dataclass
class Toolchain:
    name: str  # sim | cann | none
    repo: Path
    install_root: Path
    set_env: tuple[str, ...] | str | None = None  # candidates, tried in order on each node (a str is one candidate)
    bin_dir: Path | None = None
    sim_env: dict[str, str] = field(default_factory=dict)
    # A checkout whose package the test must import (the DEBUG_CLOCK_ON worktree) under every toolchain: in front of
    # PYTHONPATH and named in DISPATCHPROF_IMPORT_ROOT, which the perf driver puts first on sys.path (set_env.sh may
    # put CANN's directories in front of PYTHONPATH after us). None = whatever the environment imports.
    import_root: Path | None = None

    @property
    def set_env_candidates(self) -> list[str]:
        if not self.set_env:
            return []
        return [self.set_env] if isinstance(self.set_env, str) else list(self.set_env)

    def own_env(self, extra: Mapping[str, str] | None = None) -> tuple[dict[str, str], dict[str, list[str]]]:
        """What the toolchain adds to a command's environment: variables it sets (``extra`` last), and directories
        it puts in front of PATH-like variables. Never anything of the parent's environment (nodeenv.py)."""
        sets: dict[str, str] = {}
        prepend: dict[str, list[str]] = {}
        if self.bin_dir is not None:
            prepend["PATH"] = [str(self.bin_dir)]
        if self.name == "sim":
            # The stand-in package is importable as if installed; only for the stand-in's own processes.
            prepend["PYTHONPATH"] = [str(self.repo)]
            sets.update(self.sim_env)
        if self.import_root is not None:
            prepend["PYTHONPATH"] = [
                str(self.import_root),
                *(p for p in prepend.get("PYTHONPATH", []) if p != str(self.import_root)),
            ]
            sets["DISPATCHPROF_IMPORT_ROOT"] = str(self.import_root)
        sets.update(extra or {})
        return sets, prepend

    def env(self, base: Mapping[str, str] | None = None, extra: Mapping[str, str] | None = None) -> dict[str, str]:
        """The environment a command of this toolchain runs in here: the parent's, plus what the toolchain adds."""
        sets, prepend = self.own_env(extra)
        return merge(os.environ if base is None else base, sets, prepend)

    def driver_env(self) -> dict[str, str]:
        """What the generated perf driver needs beyond the test's environment: on the simulated cluster,
        the minimal torch shim (only for these runs, never installed)."""
        if self.name != "sim" or self.bin_dir is None:
            return {}
        shim = self.bin_dir.parent / "shims"
        return {"PYTHONPATH": os.pathsep.join([str(self.repo), str(shim)]), "DISPATCHPROF_HOST_CLOCK": SIM_HOST_CLOCK}

    def wrap(self, argv: Sequence[str]) -> list[str]:
        """A command line that runs ``argv`` with the toolchain's environment sourced (CANN)."""
        candidates = self.set_env_candidates
        if self.name != "cann" or not candidates:
            return list(argv)
        # The candidates' count is $0, then the candidates, then the command: nothing from config is parsed by a shell.
        return ["bash", "-c", SOURCE_FIRST + 'exec "$@"', str(len(candidates)), *candidates, *argv]


WORKFLOW_ROOT = Path(__file__).resolve().parents[4]
# bash: source the first existing of the $0 candidates that follow (shifted off); set_env.sh's stdout is dropped, its
# stderr kept in a file and shown when sourcing fails, so a broken install says why instead of "cannot source".
SOURCE_FIRST = (
    'n=$0; f=; tried=; while [ "$n" -gt 0 ]; do if [ -z "$f" ] && [ -f "$1" ]; then f=$1; fi; tried="$tried $1"; '
    'shift; n=$((n-1)); done; if [ -z "$f" ]; then echo "dispatchprof: no CANN set_env.sh: none of$tried exists '
    '(cann.set_env)" >&2; exit 127; fi; e=$(mktemp); if ! source "$f" >/dev/null 2>"$e"; then cat '
    '"$e" >&2; rm -f "$e"; echo "dispatchprof: cannot source $f" >&2; exit 127; fi; rm -f "$e"; '
)
# CANN 8.5+ installs under <install_root>/cann/; older releases under <install_root>/ascend-toolkit/ (latest/ links).
AUTO_SET_ENV = ("cann/set_env.sh", "ascend-toolkit/set_env.sh")


def set_env_candidates(setting: str | list[str], install_root: Path) -> tuple[str, ...]:
    """cann.set_env as the candidates tried in order: ``auto``
    (AUTO_SET_ENV under install_root), one path, or a list."""
    if setting == "auto":
        return tuple(str(install_root / rel) for rel in AUTO_SET_ENV)
    return (setting,) if isinstance(setting, str) else tuple(setting)


def source_repo(config: Mapping[str, Any], basedir: Path = WORKFLOW_ROOT) -> Path:
    """deepep.repo as configured, never the build tree (shell.gitref.deepep_repo)."""
    return deepep_repo(config, basedir)


def build_worktree(config: Mapping[str, Any]) -> Path:
    """Where the build stage checks deepep.ref out: results/<experiment>/build/tree (absolute, from the working
    directory of the workflow). The repository is at ``<tree>/<prefix>`` (tools.gitref.repo_prefix)."""
    return (Path("results") / config["experiment"] / "build" / "tree").resolve()


def built_repo(config: Mapping[str, Any], basedir: Path = WORKFLOW_ROOT) -> Path:
    """The checkout of deepep.ref the build stage made: deepep.repo's place inside build_worktree."""
    return build_worktree(config) / repo_prefix(source_repo(config, basedir))


def resolve(config: Mapping[str, Any], basedir: Path = WORKFLOW_ROOT, built: bool = True) -> Toolchain:
    """Build the toolchain of this configuration; ``basedir`` is the workflow's root directory.

    With deepep.ref set (collect mode) the repository is the build stage's checkout of that ref
    (results/<experiment>/build/tree), and its package is the one every run imports (import_root), under every
    toolchain; ``built=False`` gives deepep.repo itself (what the stages before the build read: env capture, the
    driver's patch, which takes the test from the ref's commit)."""
    name = "none" if config["mode"] == "analyze" else config["toolchain"]
    chain = _resolve(config, name, basedir)
    if name != "none" and built and config["deepep"].get("ref"):
        tree = built_repo(config, basedir)
        chain = replace(chain, repo=tree, import_root=tree)
    return chain


def _resolve(config: Mapping[str, Any], name: str, basedir: Path) -> Toolchain:
    sim_root = basedir / "workflow" / "sim"
    if name == "sim":
        repo = Path(config["deepep"]["repo"] or sim_root / "ascend_deepep")
        # unset (None), empty or off knobs stay out of the environment; 0 is a value (rank 0, node 0, late_us 0, a
        # probability 0) and must reach the stand-in, whose own defaults would otherwise apply
        sim_env = {
            SIM_ENV[k]: _sim_value(v)
            for k, v in config["sim"].items()
            if k in SIM_ENV and v is not None and v is not False and v != {}
        }
        sim_env[SIM_ENV["noise_seed"]] = str(noise_seed(config))
        return Toolchain("sim", repo.resolve(), sim_root / "Ascend", bin_dir=sim_root / "bin", sim_env=sim_env)
    repo = Path(config["deepep"]["repo"]) if config["deepep"]["repo"] else Path(".")
    root = Path(config["cann"]["install_root"])
    return Toolchain(name, repo.resolve(), root, set_env=set_env_candidates(config["cann"]["set_env"], root))
