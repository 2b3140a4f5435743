# Configuration loading and validation, the node and experiment lists, and path helpers.
# Top-level code here runs again in every job: keep it cheap and free of side effects.
import re
import sys
from pathlib import Path

sys.path.insert(0, str(Path(workflow.basedir) / "workflow" / "scripts"))
from dispatchprof.shell.config import (  # noqa: E402
    check_config,
    environment_problems,
    experiment_problems,
    long_waits,
    experiment_runs,
    results_of_other_mode,
    fill_defaults,
    load_schema,
    phase_view,
    analysis_settings,
    schema_problems,
    yaml_booleans_as_words,
)
from dispatchprof.shell.invocation import invocation_args  # noqa: E402
from dispatchprof.shell.stage import skip_final_collection  # noqa: E402

skip_final_collection()  # ~0.2 s of every Snakemake run, dry runs included (dispatchprof.shell.stage)


def tolerate_unwritable_results():
    """results/ made read-only (or full) mid-run: the stage that could not write says so in one line and exits 1
    (dispatchprof.shell.stage.UNWRITABLE); Snakemake's own cleanup then fails on the same directory, removing the
    failed job's outputs (Job.cleanup, an rmtree) and the empty output directories (DAG.cleanup_workdir), with
    a traceback and no end-of-run table. Here both say one line and the run ends through onerror (the table).
    """
    import functools
    from snakemake.dag import DAG
    from snakemake.jobs import Job
    from dispatchprof.shell.stage import UNWRITABLE

    def said(exc, what):
        if exc.errno not in UNWRITABLE:
            raise exc
        print(
            f"snakemake: cannot {what} {exc.filename or ''} ({exc.strerror}): left as it is",
            file=sys.stderr,
        )

    if getattr(DAG.cleanup_workdir, "dispatchprof", False):
        return
    original_dirs, original_job = DAG.cleanup_workdir, Job.cleanup

    @functools.wraps(original_dirs)
    def cleanup_workdir(self):
        try:
            original_dirs(self)
        except OSError as exc:
            said(exc, "remove the empty output directory")

    @functools.wraps(original_job)
    async def cleanup(self, skip_outputs):
        try:
            await original_job(self, skip_outputs)
        except OSError as exc:
            said(exc, f"remove the outputs of failed job {self}:")

    cleanup_workdir.dispatchprof = True
    DAG.cleanup_workdir, Job.cleanup = cleanup_workdir, cleanup


tolerate_unwritable_results()

CONFIG_SCHEMA = Path(workflow.basedir) / "workflow" / "schemas" / "config.schema.yaml"
STARTED = __import__(
    "time"
).time()  # when this Snakemake process began: a report older than this was not rebuilt


def report_line(path):
    """The last line a person reads: the report's path, or why the one on disk is not from this run (--until, -n)."""
    html = Path(path)
    if not html.is_file():
        return f"Report: not built in this run ({path} does not exist: a job failed, or --until or a target stopped before the report)"
    if html.stat().st_mtime < STARTED:
        stamp = (
            __import__("datetime")
            .datetime.fromtimestamp(html.stat().st_mtime)
            .isoformat(timespec="seconds")
        )
        return f"Report: {path} is from an earlier run ({stamp}); this run did not rebuild it (a job failed, or --until or a target stopped before the report)"
    # the same report for a terminal, a diff or a chat: say where it is
    markdown = html.with_suffix(".md")
    return f"Report: {path}" + (f" (Markdown: {markdown})" if markdown.is_file() else "")


def release_requeue_timers():
    """Snakemake's job rate limiter (max-jobs-per-timespan, default 100/1s) re-checks the queue on a threading.Timer
    after every scheduling pass. When the run is over, the last one still waits out its second, and Python waits for
    it before the process exits: ~1-1.5 s added to every run (the timespan's 'ms' unit cannot shorten it: '100ms'
    parses as 100 minutes). Snakemake starts no other Timer."""
    import threading

    for thread in threading.enumerate():
        if isinstance(thread, threading.Timer):
            thread.cancel()


def end_of_run():
    """What a person reads last: one line per experiment and stage, then the report paths. Then fail_on (by default
    failed, timeout, invalid): the process exits 1 when a stage ended in one of those states, so that a CI job or a
    script can tell (Snakemake's exit code otherwise).
    """
    release_requeue_timers()
    from dispatchprof.shell.runtable import failing, format_lines, stage_lines

    lines = stage_lines(Path("results"), EXPERIMENTS, (*STAGES, "report"))
    print(f"\nStages ({config['toolchain'] if COLLECT else 'imported'} data):")
    print(format_lines(lines))
    for path in expand("results/{experiment}/report/report.html", experiment=EXPERIMENTS):
        print(report_line(path))
    bad = failing(lines, config["fail_on"])
    if bad:
        print(
            f"fail_on [{', '.join(config['fail_on'])}]: "
            + ", ".join(f"{b.experiment}/{b.stage} is {b.state}" for b in bad)
            + "; exit status 1 (with fail_on: [] a run exits 0, the states only in the report and the table above)",
            file=sys.stderr,
        )
        sys.exit(1)


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


RUN_STARTED = []  # onstart appends: this run got past Snakemake's lock


def note_lock_at_exit():
    """After a kill -9, Snakemake refuses the directory ("Directory cannot be locked") and suggests --unlock. At the
    exit of a run that never started while a lock is held, add whether any job of an earlier run still runs (pids on
    this host, SLURM job ids by squeue), so that --unlock is known to be safe or not (shell/lifeline.py).
    """
    if not workflow.is_main_process or workflow.dryrun or "--unlock" in sys.argv:
        return
    import atexit
    import shutil

    from dispatchprof.shell import lifeline

    def note():
        if not RUN_STARTED and lifeline.lock_held():
            squeue = lifeline.slurm_jobs_alive if shutil.which("squeue") else None
            sys.stderr.write(lifeline.live_note(slurm_alive=squeue) + "\n")

    atexit.register(note)


def record_invocation():
    """onstart (a run, not -n): results/<exp>/invocation.json, the words the report's printed commands carry."""
    from dispatchprof.shell.invocation import write_invocation

    for experiment in EXPERIMENTS:
        write_invocation(Path("results") / experiment, INVOCATION)


def refuse_unwritable_results():
    """onstart (a run, not -n): results/ and its stage directories each take a file, as preflight checks on every
    node. A read-only results/ is refused here, before any job: Snakemake would otherwise fail creating the first
    job's output directory, and env_capture's preflight could not even start."""
    from dispatchprof.node.preflight import write_probe
    from dispatchprof.tools.preflight_plan import write_dirs

    problems = [p for d in write_dirs(Path("results")) if (p := write_probe(d))]
    if problems:
        refuse(
            [
                *problems,
                "every stage writes under results/: make it writable, or run in a copy of the workflow",
            ],
            "Results directory",
        )


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
_problems = sorted({p for run in RUNS.values() for p in check_config(run, Path.cwd(), EXPERIMENTS)})
_problems += environment_problems(config, __import__("os").environ)
_problems += results_of_other_mode(Path("results"), RUNS)
if _problems:
    refuse(_problems)
COMPARISONS = [tuple(pair) for pair in config["compare"]]
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
    a="|".join(re.escape(e) for e in (config.get("experiments") or {})) or "__none__",
    b="|".join(re.escape(e) for e in (config.get("experiments") or {})) or "__none__",
    nodes=r"\d+-\d+",
    rank=r"\d+",


PARTS = ("_import", "_driver", "_collect")


def node_groups(nodes, per_job):
    """Node ranges of the timeline parse jobs, as wildcard values "<first>-<last>"."""
    return [f"{first}-{min(first + per_job, nodes) - 1}" for first in range(0, nodes, per_job)]


def node_range(group):
    first, last = (int(x) for x in group.split("-"))
    return first, last


NODE_GROUPS = node_groups(len(NODES), config["timeline"]["nodes_per_job"])


def group_of_rank(rank):
    """The parse job's node range that holds a global rank."""
    node = int(rank) // config["cluster"]["ranks_per_node"]
    for group in NODE_GROUPS:
        first, last = node_range(group)
        if first <= node <= last:
            return group
    raise ValueError(
        f"rank {rank} is outside the cluster ({len(NODES)} nodes x {config['cluster']['ranks_per_node']} ranks)"
    )


def split_part(label):
    """(stage, part) of a rule or input label: pmu_import -> (pmu, import), env_capture -> (env_capture, None)."""
    for suffix in PARTS:
        if label.endswith(suffix):
            return label[: -len(suffix)], suffix[1:]
    return label, None


def status_path(label):
    """The status file of a stage, or of one part of it (baseline_collect -> baseline/collect/)."""
    stage, part = split_part(label)
    if part:
        return f"results/{{experiment}}/{stage}/{part}/status.json"
    return f"results/{{experiment}}/{stage}/status.json"


# Stages whose status.json an analysis job writes (the stage rule itself, not its _collect or _import part).
ANALYSED_STAGES = (
    "baseline",
    "timeline",
    "pmu",
    "pcsampling",
    "pipe_timeline",
    "debugclock",
    "probe",
)


def from_analysis(label):
    """Whether a needed input's status file is written by an analysis job (a re-analysis rewrites it)."""
    return split_part(label)[1] is None and label in ANALYSED_STAGES


def needed_inputs(stage, own=None):
    """Named inputs: label -> status file, for every input the stage needs. A status written by an analysis job is
    a collect rule's gate (analysis_input, gate_states), and that stage's collect part is an input too (a
    re-collection there is a new gate). ``own``: the rule's own status file (default: the stage's).
    """
    inputs = {}
    for label in NEEDS[stage]:
        if from_analysis(label):
            inputs[label] = analysis_input(status_path(label), own or status_path(stage))
            inputs.setdefault(f"{label}_collect", status_path(f"{label}_collect"))
        else:
            inputs[label] = status_path(label)
    return inputs


def analysis_input(path, own):
    """An input function for a collect rule's input written by an analysis job: ancient() (a re-analysis rewrites
    it and must not re-collect), unless the rule's last run (its status ``own``) skipped: a skip placeholder reruns
    with its upstream's analysis, in the same `snakemake`, and collects once that is ok."""

    def pick(wildcards):
        values = dict(wildcards.items())
        concrete = path.format(**values)
        if stage_state(own.format(**values), missing="absent") == "skipped":
            return concrete
        return ancient(concrete)

    return pick


# The analysis stages whose state each stage's collection gates on (collect mode). The stage's own analysis takes
# their status as an input: Snakemake does not look at a job after a job upstream of it reruns (it expects to
# rerun it anyway), and an ancient() input then stops that rerun; this input carries it on (DESIGN.md).
GATES = (
    {
        "timeline": ("baseline",),
        "pmu": ("timeline",),
        "pcsampling": ("pmu",),
        "pipe_timeline": ("timeline",),
        "debugclock": ("baseline", "pmu"),
    }
    if COLLECT
    else {}
)


def gated_analyses(stage):
    """Named inputs of a stage's analysis rule: the status of each analysis its collection gates on."""
    return {f"{label}_analysis": status_path(label) for label in GATES.get(stage, ())}


def stage_state(path, missing="ok"):
    """The state in a status file, ``missing`` when it is not there (yet), ``unreadable`` when it is damaged
    (the stages downstream are skipped and name the file: dispatchprof.shell.status.read_input_status).
    """
    from dispatchprof.shell.status import StatusError, read_status

    if not Path(path).exists():
        return missing
    try:
        return read_status(path).state
    except StatusError:
        return "unreadable"


def gate_states(*labels):
    """A param of a collect rule: the states of the analysis stages it gates on (the needed ones and the optional
    ones that decide what it does). A re-analysis does not re-collect (analysis_input); a change of state
    (skipped -> ok) changes this param, and Snakemake reruns the collection. Snakemake evaluates params when it
    decides whether a job runs, or, for a job it runs because a job upstream runs, just before running it; a state
    that an upstream re-analysis changes is seen by the next `snakemake` (config/README.md)."""

    def states(wildcards):
        return ",".join(
            f"{label}={stage_state(status_path(label).format(experiment=wildcards.experiment))}"
            for label in labels
        )

    return states


def needed_states(stage):
    """gate_states of the analysis stages in NEEDS[stage]."""
    return gate_states(*(label for label in NEEDS[stage] if from_analysis(label)))


def timeline_kernel(wildcards):
    """A param of the op-profiler collect rules: the kernel name the timeline found (its stats.json kernel_name,
    the first of them), else kernel.name: what msopprof replays. A change of it reruns the collection, and a
    re-analysis that finds the same name does not."""
    import json

    path = Path(f"results/{wildcards.experiment}/timeline/stats.json")
    try:
        found = json.loads(path.read_text()).get("kernel_name")
    except (OSError, ValueError):
        found = None
    return (found or RUNS[wildcards.experiment]["kernel"]["name"]).split(",")[0]


def input_fingerprint(kind):
    """A rule param of the *_import rules: a hash of the imported tree's names, sizes and mtimes. Snakemake reruns
    the import, and everything after it, when a file of that tree changes (it has no declared input to compare).
    """
    from dispatchprof.stages.imports import tree_fingerprint

    return lambda wildcards: tree_fingerprint(RUNS[wildcards.experiment]["analyze"][kind])


def config_fingerprint(*keys, phase=None):
    """A rule param: a short hash of the config keys the rule depends on (sections or dotted keys, e.g.
    "timeline.waits"), for the job's experiment; with phase, only that phase's keys of them (x-phase in the schema).
    Snakemake reruns the rule when they change."""
    import hashlib
    import json

    def fingerprint(wildcards):
        run = RUNS[wildcards.experiment]
        picked = phase_view(run, _SCHEMA, keys, phase)
        picked["_repeat"] = run["_repeat"]
        return hashlib.sha256(json.dumps(picked, sort_keys=True).encode()).hexdigest()[:16]

    return fingerprint


def settings_shown(experiment):
    """A param of the report: every analysis key's value (JSON), listed in the report; a change re-renders it."""
    import json

    return json.dumps(analysis_settings(RUNS[experiment], _SCHEMA), sort_keys=True)


def collection_fingerprint(*sections):
    """The fingerprint of collect, build, env-capture and correctness rules: only the collection keys of these
    sections, so that an analysis key's change never re-collects (DESIGN.md, collection and analysis phases).
    """
    return config_fingerprint(*sections, phase="collection")


def skip_launches(experiment):
    """Timeline launches left out per rank: configured, else the driver's warm-up (collect) or 0 (import)."""
    timeline = RUNS[experiment]["timeline"]
    if timeline["skip_launches"] is not None:
        return timeline["skip_launches"]
    return timeline["warmup"] if COLLECT else 0


def previous_run(wildcards):
    """Runs execute in alternating order (A1 B1 A2 B2 ...) to reduce drift: each run's first collective stage
    waits for the previous run's last one."""
    index = EXPERIMENTS.index(wildcards.experiment)
    if index == 0 or not COLLECT:
        return []
    # The last collective stages of a run: debugclock_collect (after pcsampling) and the pipe timeline runs.
    previous = EXPERIMENTS[index - 1]
    return [  # order only: ancient, so that a re-analysis of the previous run does not re-collect this one
        ancient(f"results/{previous}/debugclock/collect/status.json"),
        ancient(f"results/{previous}/pipe_timeline/status.json"),
    ]


def previous_analysis(stage, name="status.json"):
    """An input of an analysis rule (collect mode, several runs): the same analysis of the run before, so that its
    re-analysis reruns this one. Runs are chained through ancient() inputs (previous_run), and Snakemake does not look
    at the jobs below one that reruns: without this, a changed threshold would reach the first run only.
    """

    def pick(wildcards):
        index = EXPERIMENTS.index(wildcards.experiment)
        if index == 0 or not COLLECT:
            return []
        values = {**dict(wildcards.items()), "experiment": EXPERIMENTS[index - 1]}
        return [f"results/{{experiment}}/{stage}/{name}".format(**values)]

    return pick


def collective_resources(stage):
    """What a collective rule asks the scheduler for. Under snakemake-executor-plugin-slurm: one allocation of
    every node, one task per node; mpi="srun" so the job is not wrapped in a one-task step (the plugin refuses mpi
    with one task, and then the launcher's srun uses --overlap). The SLURM runtime exceeds the stage's own
    timeout by a margin, so the workflow's timeout fires first and records `timeout`."""
    import math

    nodes = len(NODES)
    resources = {
        "npu_cluster": 1,
        "nodes": nodes,
        "tasks": nodes,
        "runtime": lambda w: math.ceil(RUNS[w.experiment]["timeouts"][stage] / 60)
        + RUNS[w.experiment]["slurm"]["runtime_margin_min"],
    }
    if nodes > 1:
        resources["mpi"] = "srun"
    if config["slurm"]["gres"]:
        resources["slurm_extra"] = f"--gres={config['slurm']['gres']}"
    return resources


def place_rules():
    """Where each job runs under an executor that submits jobs (SLURM). Only the jobs that need an NPU node go
    there: the collective stages (resource npu_cluster) and the per-node jobs marked npu_node (env capture with its
    preflight, and the build, which needs the nodes' CANN toolkit). Every other rule (parse, analysis, import,
    placeholder, report) runs in the Snakemake process itself (localrules), or on slurm.analysis_partition when
    that is set. Rules marked cann (the probe under msopprof simulator: CANN but no NPU) are submitted, to
    slurm.cann_partition when set, else to the profile's partition. Decided from the rules' own resources after every rule file is included, so a new rule is placed
    by what it declares, not by a list kept by hand."""
    from snakemake.resources import Resources

    npu = {r.name for r in workflow.rules if {"npu_cluster", "npu_node"} & set(r.resources)}
    cann = {r.name for r in workflow.rules if "cann" in r.resources}
    cpu = sorted(r.name for r in workflow.rules if r.name not in npu | cann)
    partitions = {
        **dict.fromkeys(cann, config["slurm"]["cann_partition"]),
        **dict.fromkeys(cpu, config["slurm"]["analysis_partition"]),
    }
    if config["slurm"]["analysis_partition"] is None:
        workflow.localrules(*cpu)
    for rule_ in workflow.rules:
        if partitions.get(rule_.name) is not None:
            rule_.resources.update(
                Resources.from_mapping({"slurm_partition": partitions[rule_.name]})
            )
    return sorted(npu), sorted(cann), cpu


def placement_note(npu_rules, cann_rules, cpu_rules):
    partition = config["slurm"]["analysis_partition"]
    where = (
        f"on partition {partition} (slurm.analysis_partition)"
        if partition
        else "in this Snakemake process (localrules; set slurm.analysis_partition to submit them to a CPU partition)"
    )
    cann = (
        config["slurm"]["cann_partition"]
        or "the profile's partition (slurm.cann_partition not set)"
    )
    return (
        f"Placement: submitted to the NPU nodes: {', '.join(npu_rules) or 'none'}; "
        f"needing CANN but no NPU ({', '.join(cann_rules) or 'none'}): submitted to {cann}; "
        f"jobs that need no NPU ({', '.join(cpu_rules)}) run {where}.\n"
    )


def node_resources(wildcards):
    """Per-node jobs (env capture) are pinned to their host when cluster.hosts names them."""
    hosts = config["cluster"]["hosts"]
    return f"--nodelist={hosts[int(wildcards.node)]}" if hosts else ""


def pipe_timeline_parts():
    """The parts stage pipe_timeline folds: one collect run per timeline kind (a kind not in pipe_timeline.runs writes
    `disabled`), or the import in analyze mode."""
    if COLLECT:
        return {
            f"{kind}_collect": f"results/{{experiment}}/pipe_timeline/{kind}/collect/status.json"
            for kind in ("pipe", "instr")
        }
    return {"pipe_timeline_import": status_path("pipe_timeline_import")}


def stage_log(stage, name=None):
    return f"results/{{experiment}}/{stage}/logs/{name or stage}.log"


def reported(path, category, caption, subcategory, **labels):
    """An output in Snakemake's own report (`snakemake --report report.zip`): its category (Stages, Per-rank tables,
    Heat maps and charts, Summary, Comparisons), a subcategory, a caption under workflow/report/ and labels (the
    experiment, what the file is) that tell the experiments' files apart."""
    return report(
        path,
        caption=f"../report/{caption}.rst",
        category=category,
        subcategory=subcategory,
        labels=labels,
    )
