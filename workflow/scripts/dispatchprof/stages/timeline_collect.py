"""Stage timeline_collect: msprof on every node around the perf driver; export where msprof left only a db."""

from __future__ import annotations

import json
from pathlib import Path

from dispatchprof.shell.atomic import make_executable, write_text_atomic
from dispatchprof.tools.collective import run_driver
from dispatchprof.formats.msprof import discover
from dispatchprof.tools.launch import run_command
from dispatchprof.tools.profiling import msprof_application_form, msprof_command, render_probe, supported_options
from dispatchprof.shell.stage import StageRun
from dispatchprof.shell.status import Status, Validation
from dispatchprof.tools.toolchain import resolve


def timeline_collect(run: StageRun, templates: Path) -> Status:
    """The collect part; ``templates`` holds the probe script each node runs under msprof."""
    gate = run.gate({k: run.inputs[k] for k in run.params["needed"]})
    if not gate.open:
        return run.skipped(gate)
    if busy := run.hold_cluster():  # the cluster is this job's from here to its end
        return busy
    cfg, chain = run.config, resolve(run.config)
    raw, out = run.outputs["raw"].resolve(), run.outputs["run"].resolve()
    nodes = json.loads(Path(run.inputs["env"]).read_text())["nodes"]
    help_text = Path(nodes[0]["probes"]["msprof_help"]["output_file"]).read_text(errors="replace") if nodes else ""
    options, dropped = supported_options(cfg["timeline"]["msprof_options"], help_text)
    # how this msprof takes the application: env capture recorded it from the same --help (older records did not)
    recorded = nodes[0].get("msprof_form") if nodes else None
    form, form_why = (recorded["form"], recorded["why"]) if recorded else msprof_application_form(help_text)
    probes = out / "probe"

    def under_msprof(node: int, argv: list[str]) -> list[str]:
        probe = probes / f"node{node}.sh"
        write_text_atomic(
            probe,
            render_probe(templates, node, chain.repo, argv, chain.set_env_candidates if chain.name == "cann" else None),
        )
        make_executable(probe)
        return msprof_command(raw / f"node{node}", options, probe, form)

    timeline = cfg["timeline"]
    test = run_driver(
        cfg,
        chain,
        Path(run.inputs["driver"]),
        out,
        f"{run.experiment}_timeline",
        run.timeout,
        timeline["iterations"],
        timeline["warmup"],
        wrap=under_msprof,
    )

    validations = [Validation("msprof option", False, "warning", d) for d in dropped]
    exported = []
    for node_dir in sorted(raw.glob("node*")):
        for prof in discover(node_dir):
            if not (prof / "mindstudio_profiler_output").is_dir() and list(prof.glob("msprof_*.db")):
                result = run_command(
                    chain.wrap(["msprof", "--export=on", f"--output={prof}"]), 600, env=chain.env(), cwd=out
                )
                exported.append(prof.name)
                validations.append(
                    Validation(f"msprof --export=on {prof.name}", result.ok, "error", result.output.strip()[-300:])
                )
    if exported:
        validations.append(
            Validation(
                "text export",
                True,
                "warning",
                f"mindstudio_profiler_output was missing in {len(exported)} PROF_ directories; ran msprof --export=on",
            )
        )
    common = dict(
        command=test.command,
        upstream=gate.upstream,
        artifacts=[str(raw), str(out)],
        validations=validations,
        details={
            "msprof_options": options,
            "msprof_form": form,
            "msprof_form_why": form_why,
            "exported": exported,
            **test.details,
        },
    )
    if test.verdict.state != "ok":
        return run.status(test.verdict.state, f"perf driver under msprof: {test.verdict.reason}", **common)
    return run.status(
        "ok",
        f"msprof ran on {cfg['cluster']['nodes']} nodes ({timeline['iterations']} "
        f"calls per rank, options {' '.join(options)}); precision passed on every rank",
        **common,
    )
