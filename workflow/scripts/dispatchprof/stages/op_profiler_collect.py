"""The collect part of rules pmu_collect, pcsampling_collect and pipe_timeline_collect (one run per timeline kind): the
perf driver under msopprof on every node.

Kernel replay of a cross-rank kernel may hang or corrupt results: every run has a timeout (msopprof has none on
the device side), the process groups are ended on expiry, and after a finished run every rank must still pass
the precision check.
"""

from __future__ import annotations

import json
from pathlib import Path

from dispatchprof.tools.collective import run_driver
from dispatchprof.formats.msopprof import discover
from dispatchprof.tools.opprofiler import (
    REPLAY_TIMEOUT_REASON,
    TIMELINE_KINDS,
    log_findings,
    op_profiler_command,
    op_profiler_run,
)
from dispatchprof.shell.stage import StageRun
from dispatchprof.shell.status import Status, Validation
from dispatchprof.tools.launch import NodeResult
from dispatchprof.tools.toolchain import resolve


def op_profiler_collect(run: StageRun, kind: str | None = None) -> Status:
    """The collect part of run.stage (pmu, pcsampling, pipe_timeline); ``kind`` is the timeline kind (pipe | instr)
    of a pipe_timeline run, None otherwise."""
    if kind is not None and TIMELINE_KINDS[kind] not in run.config["pipe_timeline"]["runs"]:
        return run.status("disabled", f"{TIMELINE_KINDS[kind]} is not in pipe_timeline.runs")
    gate = run.gate({k: run.inputs[k] for k in run.params["needed"]})
    if not gate.open:
        return run.skipped(gate)
    cfg, chain = run.config, resolve(run.config)
    entry = json.loads(Path(run.inputs["env"]).read_text()).get("op_profiler_entry", "none")
    if entry == "none":
        return run.status(
            "skipped",
            "env capture found no usable op profiler on every node (neither msopprof nor `msprof op`)",
            upstream=gate.upstream,
        )
    if busy := run.hold_cluster():  # the cluster is this job's from here to its end
        return busy
    timeline = json.loads(Path(run.inputs["timeline_stats"]).read_text())
    kernel = (timeline.get("kernel_name") or cfg["kernel"]["name"]).split(",")[0]
    metrics, extra = op_profiler_run(cfg, run.stage, kind)
    raw, out = run.outputs["raw"].resolve(), run.outputs["run"].resolve()

    def under_profiler(node: int, argv: list[str]) -> list[str]:
        return op_profiler_command(entry, kernel, metrics, raw / f"node{node}", cfg["pmu"], extra) + argv

    test = run_driver(
        cfg,
        chain,
        Path(run.inputs["driver"]),
        out,
        f"{run.experiment}_{run.stage}" + (f"_{kind}" if kind else ""),
        run.timeout,
        cfg["pmu"]["iterations"],
        0,
        wrap=under_profiler,
    )
    failures = log_failures(test.result.nodes)
    found = {f"node{n}": len(discover(raw / f"node{n}")) for n in range(cfg["cluster"]["nodes"])}
    validations = [
        Validation("op-profiler log has no failure line", not failures, "error", "; ".join(failures[:4]) or "clean"),
        Validation("OPPROF_ directory on every node", all(found.values()), "error", str(found)),
        Validation("entry", True, "warning", f"{entry} (chosen by env capture)"),
    ]
    common = dict(
        command=test.command,
        upstream=gate.upstream,
        artifacts=[str(raw), str(out)],
        validations=validations,
        details={"entry": entry, "kernel": kernel, "metrics": metrics, "options": extra, **test.details},
    )
    if test.result.timed_out:
        return run.status("timeout", f"{REPLAY_TIMEOUT_REASON}: {test.result.problem}", **common)
    if test.verdict.state != "ok":
        tool_errors = [f for f in failures if "[ERROR]" in f]
        if tool_errors and not any(n.exit_code == 0 for n in test.result.nodes):
            return run.status("failed", f"{entry} refused to run: {tool_errors[0]}", **common)
        return run.status("invalid", f"replay changed the results: {test.verdict.reason}", **common)
    if failures or not all(found.values()):
        return run.status(
            "invalid",
            f"{entry} exited 0 but its output is incomplete: "
            + ("; ".join(failures[:2]) or f"OPPROF_ per node {found}"),
            **common,
        )
    return run.status(
        "ok",
        f"{entry} profiled {kernel} on every rank ({','.join(metrics)}); precision still passed everywhere",
        **common,
    )


def log_failures(nodes: list[NodeResult]) -> list[str]:
    """The op profiler's failure lines in every node's log, each with its node."""
    failures: list[str] = []
    for node in nodes:
        text = node.log_path.read_text(errors="replace") if node.log_path.is_file() else ""
        f, _ = log_findings(text)
        failures += [f"node {node.node}: {line}" for line in f]
    return failures
