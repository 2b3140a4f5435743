# Placement: what each rule asks the scheduler for, and where each job runs under SLURM (NPU nodes, CANN
# partition, CPU partition or this process). Included by common.smk; place_rules runs in the Snakefile after every include.


def collective_resources(stage):
    """What a collective rule asks the scheduler for. Under snakemake-executor-plugin-slurm: one allocation of
    every node, one task per node; mpi="srun" so the job is not wrapped in a one-task step (the plugin refuses mpi
    with one task, and then the launcher's srun uses --overlap). The SLURM runtime exceeds the stage's own
    timeout by a margin, so the workflow's timeout fires first and records `timeout`. Whole nodes (--exclusive,
    slurm.exclusive): under toolchain cann the allocation is the cluster lock; where the job waits for a file lock
    instead (the simulated cluster), that wait (cluster_lock.wait) is added: it is no part of the stage's budget.
    """
    import math

    nodes = len(NODES)
    lock_wait_min = (
        math.ceil(config["cluster_lock"]["wait"] / 60) if config["toolchain"] == "sim" else 0
    )
    resources = {
        "npu_cluster": 1,
        "nodes": nodes,
        "tasks": nodes,
        "runtime": lambda w: math.ceil(RUNS[w.experiment]["timeouts"][stage] / 60)
        + RUNS[w.experiment]["slurm"]["runtime_margin_min"]
        + lock_wait_min,
    }
    if nodes > 1:
        resources["mpi"] = "srun"
    extra = [f"--gres={config['slurm']['gres']}"] if config["slurm"]["gres"] else []
    extra += ["--exclusive"] if config["slurm"]["exclusive"] else []
    if extra:
        resources["slurm_extra"] = " ".join(extra)
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
