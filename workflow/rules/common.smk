# Configuration loading and validation, the experiment, node and stage lists, and the includes of the helpers
# the rules use: paths.smk (status and log paths), gates.smk (inputs and params read while the DAG is built),
# fingerprints.smk (config fingerprints, RULE_KEYS), placement.smk (resources, SLURM placement) and hooks.smk
# (onstart, end of run, lock note). Top-level code here runs again in every job: keep it cheap and free of side effects.
import re
import sys
from pathlib import Path

sys.path.insert(0, str(Path(workflow.basedir) / "workflow" / "scripts"))
from dispatchprof.shell.config import (  # noqa: E402
    check_config,
    comparison_expectations,
    comparison_pairs,
    environment_problems,
    experiment_problems,
    long_waits,
    experiment_runs,
    results_of_other_mode,
    fill_defaults,
    load_schema,
    phase_view,
    analysis_settings,
    ref_sha,
    schema_problems,
    sweep_notes,
    yaml_booleans_as_words,
)
from dispatchprof.shell.compare_config import recorded_sides  # noqa: E402
from dispatchprof.shell.invocation import invocation_args  # noqa: E402
from dispatchprof.shell.snakemake_patch import tolerate_unwritable_results  # noqa: E402
from dispatchprof.shell.stage import skip_final_collection  # noqa: E402

skip_final_collection()  # ~0.2 s of every Snakemake run, dry runs included (dispatchprof.shell.stage)


# Snakemake's cleanup made to tolerate an unwritable results/ (private methods: pinned to the tested versions).
_note = tolerate_unwritable_results()
if _note and workflow.is_main_process:
    sys.stderr.write(_note + "\n")
CONFIG_SCHEMA = Path(workflow.basedir) / "workflow" / "schemas" / "config.schema.yaml"
# when this Snakemake process began: a report older than this was not rebuilt (runtable.report_line)
STARTED = __import__("time").time()


def refuse(problems, what="Configuration"):
    """Stop before the DAG is built, with messages a person can act on (no traceback)."""
    sys.stderr.write(f"{what} refused; nothing was run:\n")
    for problem in problems:
        sys.stderr.write(f"  - {problem}\n")
    if any(re.search(r": '[^']*' is not of type '(integer|number|boolean)'", p) for p in problems):
        sys.stderr.write(
            "  (a number in quotes: nested values given with --config arrive as text; put nested keys in a file and pass "
            "--configfile config/config.yaml my-overrides.yaml)\n"
        )
    sys.exit(1)


_SCHEMA = load_schema(CONFIG_SCHEMA)
yaml_booleans_as_words(config, _SCHEMA)  # crosscheck: off arrives as False from YAML
_problems = schema_problems(config, _SCHEMA)
if _problems:
    refuse(_problems)
fill_defaults(config, _SCHEMA)

_problems = experiment_problems(config, _SCHEMA)
if _problems:
    refuse(_problems)
RUNS = experiment_runs(config)  # run name -> merged config, in execution order (A1 B1 A2 B2 ...)
EXPERIMENTS = list(RUNS)
SWEEPS = list(config.get("sweep") or {})  # each point is a run of RUNS (dispatchprof.shell.sweep)
if workflow.is_main_process:
    for _note in sweep_notes(config):  # refused points, with their reasons: the rest run
        sys.stderr.write(f"Note: {_note}\n")
# each run's own output paths (the cluster, which shapes them, is the same in every run): linear in the runs
_problems = sorted({p for name, run in RUNS.items() for p in check_config(run, Path.cwd(), [name])})
_problems += environment_problems(config, __import__("os").environ)
_problems += results_of_other_mode(Path("results"), RUNS)
if _problems:
    refuse(_problems)
# deepep.ref's commit per run (checked above): a param of the rules that read the ref's files, so a moved branch rebuilds
REF_SHAS = {run: ref_sha(cfg) for run, cfg in RUNS.items()}
# compare: [a, b] or {a, b, expect}, by slug (shell/compare_config.py); RECORDED: slug -> a recorded side's directory
COMPARISONS = comparison_pairs(config)
EXPECTATIONS = comparison_expectations(config)
RECORDED = recorded_sides(config)
if workflow.is_main_process and any(
    r["mode"] == "collect" and r["toolchain"] == "cann" for r in RUNS.values()
):
    # toolchain cann: what this submit host lacks is a warning, once per run (dry runs included: Snakemake tells a dry run
    # only after parsing), never a refusal: the nodes may hold it, and env capture checks each of them
    from dispatchprof.tools.plan import submit_host_warnings  # noqa: E402

    for _note in dict.fromkeys(w for run in RUNS.values() for w in submit_host_warnings(run)):
        sys.stderr.write(f"WARNING: {_note}\n")
for _note in dict.fromkeys(n for run in RUNS.values() for n in long_waits(run)):
    sys.stderr.write(f"Note: {_note}. Lower the timeout to shorten the wait.\n")

COLLECT = config["mode"] == "collect"
# This run's --configfile and --config words: every snakemake command the report prints carries them, after its
# targets, so that it runs when copied (dispatchprof.shell.invocation). onstart records them per experiment in a file,
# not as a param of the report: a param would rebuild the report whenever the same config came by another path.
INVOCATION = invocation_args(
    workflow.config_settings.configfiles, workflow.config_settings.config_args, Path.cwd()
)
NODES = list(range(config["cluster"]["nodes"]))
STAGES = (
    "env_capture",
    "build",
    "correctness",
    "baseline",
    "timeline",
    "pmu",
    "pcsampling",
    "pipe_timeline",
    "debugclock",
    "probe",
)

# What each stage needs, by mode. A stage runs only when every needed input is ok.
if COLLECT:
    NEEDS = {
        "build": ["env_capture"],
        "correctness": ["env_capture", "build"],
        "baseline_collect": ["correctness", "baseline_driver"],
        "baseline": ["baseline_driver", "baseline_collect"],
        "timeline_collect": ["baseline"],
        "timeline_node": ["timeline_collect"],
        "timeline": ["timeline_collect"],
        "pmu_collect": ["timeline", "env_capture"],
        "pmu": ["pmu_collect"],
        "pcsampling_collect": ["pmu", "env_capture"],
        "pcsampling": ["pcsampling_collect"],
        # After the PMU replay itself: a replay that hung, corrupted or was refused there would do the same here,
        # and each timeline run would wait out its own timeout.
        "pipe_timeline_collect": ["timeline", "env_capture", "pmu_collect"],
        "probe_collect": [],  # a local program under the simulator: no NPU, no collective stage
        "probe": ["probe_collect"],
        # PMU is an optional input of debugclock_collect: its state decides debugclock.when.
        "debugclock_collect": ["correctness", "baseline"],
        "debugclock": ["debugclock_collect"],
    }
else:
    NEEDS = {
        "build": [],
        "correctness": [],
        "baseline": ["baseline_import"],
        "timeline_node": ["timeline_import"],
        "timeline": ["timeline_import"],
        "pmu": ["pmu_import"],
        "pcsampling": ["pcsampling_import"],
        "pipe_timeline": ["pipe_timeline_import"],
        "probe": ["probe_import"],
        "debugclock": [],  # reads analyze.debugclock_dir itself (skipped when not provided)
    }


wildcard_constraints:
    experiment="|".join(re.escape(e) for e in EXPERIMENTS),
    node=r"\d+",
    a="|".join(re.escape(side) for pair in COMPARISONS for side in pair) or "__none__",
    b="|".join(re.escape(side) for pair in COMPARISONS for side in pair) or "__none__",
    nodes=r"\d+-\d+",
    rank=r"\d+",
    sweep="|".join(re.escape(s) for s in SWEEPS) or "__none__",


include: "paths.smk"
include: "gates.smk"
include: "fingerprints.smk"
include: "placement.smk"
include: "hooks.smk"
