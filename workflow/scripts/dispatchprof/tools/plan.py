"""The plan of a collect job, per node, as `snakemake -n` prints it (the collect rules' ``message:``): each command line
as far as the config decides it, built by the same functions the collect stages build their argv with.

What env capture settles on the nodes (the msprof options their --help lists, the form msprof takes the application
in, the op-profiler entry, ports picked at run time) is marked ``<decided on the node: ...>``. Environment variables
are named, never valued. Nothing here runs a tool or reads a node: it is cheap enough for every dry run.
"""

from __future__ import annotations

import shlex
import shutil
from pathlib import Path
from typing import Any, Mapping

from dispatchprof.tools.collective import LAUNCHER_PORTS, driver_environment, node_environment, test_command, with_ports
from dispatchprof.tools.opprofiler import ENTRIES, op_profiler_command, op_profiler_run
from dispatchprof.tools.profiling import msprof_command
from dispatchprof.tools.toolchain import Toolchain, resolve

ON_NODE = "<decided on the node: {}>"
# The collect rules whose plan is their profiler around the perf driver (None: the driver alone).
PROFILERS = {
    "baseline_collect": None,
    "timeline_collect": "msprof",
    "pmu_collect": "op",
    "pcsampling_collect": "op",
    "pipe_timeline_collect": "op",
}


def decided(what: str) -> str:
    return ON_NODE.format(what)


def planned_ports(config: Mapping[str, Any]) -> dict[str, Any]:
    """The config with ``auto`` ports marked: they are picked when
    the run starts (launcher local) or are the launcher's."""
    ports = {
        k: (
            decided(f"{k}, a free port picked when the run starts")
            if config["cluster"][k] == "auto"
            else config["cluster"][k]
        )
        for k in LAUNCHER_PORTS
    }
    return with_ports(config, ports)


def environment_script(chain: Toolchain) -> str:
    if chain.name == "cann" and chain.set_env_candidates:
        return (
            "source the first existing of "
            + " | ".join(chain.set_env_candidates)
            + " "
            + decided("which one exists there")
        )
    return f"none (toolchain {chain.name}: the stand-ins' directory first on PATH)" if chain.name == "sim" else "none"


def variable_names(config: Mapping[str, Any], chain: Toolchain, node: int, run_dir: Path, iterations: int) -> list[str]:
    """The names of the variables the job sets or prepends to on ``node`` (its own, the driver's, the toolchain's)."""
    sets, prepend = chain.own_env(extra=node_environment(config, node))
    driver = {**driver_environment(config, run_dir, iterations, 0), **chain.driver_env()}
    return sorted({*sets, *prepend, *driver})


def profiler_argv(
    config: Mapping[str, Any], rule: str, experiment: str, node: int, kernel: str, kind: str | None
) -> list[str]:
    """The profiler's part of the node's command, as the stage builds it, with the node's decisions marked."""
    stage = rule.removesuffix("_collect")
    if PROFILERS[rule] == "msprof":
        raw = Path("results", experiment, "timeline", "raw", f"node{node}").resolve()
        probe = Path("results", experiment, "timeline", "run", "probe", f"node{node}.sh").resolve()
        options = list(config["timeline"]["msprof_options"])
        kept = decided(f"of {' '.join(options)}, those the node's msprof --help lists") if options else None
        argv = msprof_command(raw, [kept] if kept else [], probe, "trailing")
        return [*argv[:-2], decided(f'`bash {probe}` or --application="bash {probe}", the form its --help shows')]
    if PROFILERS[rule] == "op":
        base = Path("results", experiment, stage, *([kind] if kind else []), "raw", f"node{node}").resolve()
        metrics, extra = op_profiler_run(config, stage, kind)
        argv = op_profiler_command("msopprof", kernel, metrics, base, config["pmu"], extra)
        entries = " or ".join(f"`{e}`" for e in ENTRIES)
        return [decided(f"{entries}, the entry env capture found"), *argv[len(ENTRIES["msopprof"]) :]]
    return []


def planned_commands(
    config: Mapping[str, Any], rule: str, experiment: str, kernel: str | None = None, kind: str | None = None
) -> str:
    """What ``rule``'s job of ``experiment`` will run on every node: environment script, variable names, profiler and
    test command lines. ``kernel``: the kernel the op profiler replays (the rule's param); ``kind``: pipe | instr."""
    chain = resolve(config)
    planned = planned_ports(config)
    stage = rule.removesuffix("_collect")
    run_dir = Path("results", experiment, stage, *([kind] if kind else []), "run").resolve()
    driver = Path("results", experiment, "baseline", "perf_driver.py").resolve()
    iterations = int(config["pmu"]["iterations"] if PROFILERS[rule] == "op" else config[stage]["iterations"])
    test = shlex.join(
        test_command(
            planned, chain, run_dir / "deepep", f"{experiment}_{stage}" + (f"_{kind}" if kind else ""), str(driver)
        )
    )
    lines = [
        f"plan of {rule} ({experiment}{', ' + kind if kind else ''}) "
        f"on {config['cluster']['nodes']} node(s), in {chain.repo}:"
    ]
    for node in range(int(config["cluster"]["nodes"])):
        profiler = profiler_argv(config, rule, experiment, node, kernel or config["kernel"]["name"], kind)
        lines += [
            f"  node {node}:",
            f"    environment script: {environment_script(chain)}",
            f"    variables set: {' '.join(variable_names(planned, chain, node, run_dir, iterations))}",
        ]
        if profiler:
            lines.append(f"    profiler: {' '.join(profiler)}")
        lines.append(f"    test: {test}")
    return "\n".join(lines)


def submit_host_warnings(config: Mapping[str, Any]) -> list[str]:
    """What a dry run with ``toolchain: cann`` cannot find on this (submit) host: CANN's set_env.sh, msprof, the
    repository. Warnings, never refusals: the nodes may hold what this host does not (env capture checks there)."""
    if config["mode"] != "collect" or config["toolchain"] != "cann":
        return []
    chain = resolve(config, built=False)  # deepep.repo itself: deepep.ref's checkout is made by the build stage
    where = "this host; the nodes may differ, env capture checks each of them"
    warnings = []
    if not any(Path(c).is_file() for c in chain.set_env_candidates):
        warnings.append(f"cann.set_env: none of {' | '.join(chain.set_env_candidates)} exists on {where}")
    root = chain.install_root
    if not (shutil.which("msprof") or any(root.glob("*/bin/msprof")) or any(root.glob("*/latest/bin/msprof"))):
        warnings.append(f"msprof: neither on PATH nor under {root}/*/bin or {root}/*/latest/bin on {where}")
    if not config["deepep"]["repo"] or not (chain.repo / config["deepep"]["test"]).is_file():
        warnings.append(f"deepep: the test {config['deepep']['test']} is not in the repository {chain.repo} on {where}")
    return warnings


def planned_env_capture(config: Mapping[str, Any], experiment: str, node: int, first_experiment: bool) -> str:
    """What env capture will do on ``node``: probe the node's tools and settle what the collect plans mark as
    decided on the node, then run preflight's checks (tools/preflight_plan.planned_preflight)."""
    from dispatchprof.tools.preflight_plan import planned_preflight  # the launcher it imports is only needed here

    chain = resolve(config, built=False)  # env capture runs before the build: deepep.repo itself
    checks = planned_preflight(config, chain, node, Path("results").resolve(), first_experiment)
    lines = [
        f"plan of env_capture_node ({experiment}) on node {node}: probes msprof, the op profiler, npu-smi and the "
        "repository, and settles what the collect plans mark <decided on "
        "the node>; then preflight checks, before any collective runs:",
        *(f"  - {check}" for check in checks),
    ]
    return "\n".join(lines)
