# Path helpers: status and log paths of stages and their parts, the timeline's node groups, report() marks.
# Included by common.smk, after the config is loaded (NODE_GROUPS reads it).

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
