# Gates read while the DAG is built: a collect rule's inputs written by an analysis job (ancient() unless its last
# run skipped), the states it gates on as params, the order of runs, and the kernel name the op profilers replay.
# Included by common.smk. DESIGN.md and config/README.md explain why each one is so.

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


def previous_run(wildcards):
    """Runs execute in alternating order (A1 B1 A2 B2 ...) to reduce drift: each run's first collective stage
    waits for the previous run's last one."""
    index = EXPERIMENTS.index(wildcards.experiment)
    if index == 0 or not COLLECT:
        return []
    # The last collective stages of a run: debugclock_collect (after pcsampling) and the pipe timeline runs.
    previous = EXPERIMENTS[index - 1]
    if RUNS[wildcards.experiment].get("_sweep") and RUNS[previous].get("_sweep"):
        # sweep points: after the stages the point before is measured by (sweep.<name>.stages), not its whole DAG
        return [ancient(path) for path in sweep_collect_paths(previous)]
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


class CollectPlan:
    """A collect rule's message: "{PLAN:<rule>/{wildcards.experiment}[/<kind>]}" formats as the job's plan per node
    (dispatchprof.tools.plan), which `snakemake -n` prints. The library is imported when a job is shown, not here.
    """

    def __format__(self, spec):
        from types import SimpleNamespace
        from dispatchprof.tools.plan import PROFILERS, planned_commands, planned_env_capture

        rule_name, experiment, *kind = spec.split("/")
        if rule_name == "env_capture_node":  # kind: the node
            wildcards = {"experiment": experiment, "node": kind[0]}
            plan = planned_env_capture(
                RUNS[experiment],
                experiment,
                int(kind[0]),
                experiment == EXPERIMENTS[0],
            )
            return "\n".join([*rule_block(rule_name, wildcards), plan])
        kernel = (
            timeline_kernel(SimpleNamespace(experiment=experiment))
            if PROFILERS[rule_name] == "op"
            else None
        )
        wildcards = {"experiment": experiment, **({"kind": kind[0]} if kind else {})}
        plan = planned_commands(
            RUNS[experiment], rule_name, experiment, kernel, kind[0] if kind else None
        )
        return "\n".join([*rule_block(rule_name, wildcards), plan])


def rule_block(rule_name, wildcards):
    """The lines a message takes the place of in Snakemake's job block: the rule, its wildcards and resources (what
    a user checks placement by). A resource Snakemake evaluates from the job's inputs is left out.
    """
    from types import SimpleNamespace

    shown = []
    for name, resource in workflow.get_rule(rule_name).resources.items():
        try:
            value = resource.evaluate(SimpleNamespace(**wildcards)).value
        except Exception:  # evaluated from the job's inputs or attempt: shown as given
            value = resource.raw
        if value is not None and not name.startswith("_"):
            shown.append(f"{name}={value}")
    return [
        "what this job runs, as the config decides it:",
        f"rule {rule_name}:",
        "    wildcards: " + ", ".join(f"{k}={v}" for k, v in wildcards.items()),
        "    resources: " + ", ".join(shown),
    ]


PLAN = CollectPlan()
