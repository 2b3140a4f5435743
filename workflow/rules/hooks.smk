# Run hooks: what onstart, onsuccess and onerror call (the end-of-run table, the report line, the lock note,
# the invocation record, the results/ write check). Included by common.smk; nothing here runs at load time.


def end_of_run(nothing_to_do=False):
    """What a person reads last: one line per experiment and stage, then the report paths. Then fail_on (by default
    failed, timeout, invalid, unreadable): the process exits 1 when a stage ended in one of those states, so that a
    CI job or a script can tell (Snakemake's exit code otherwise). Also after a run with nothing to do (the states on
    disk are this run's answer too: run_from_disk).
    """
    from dispatchprof.shell.runtable import (
        failing,
        format_lines,
        history_lines,
        release_requeue_timers,
        report_line,
        stage_lines,
        sweep_lines,
    )

    release_requeue_timers()

    # a sweep's points are listed by the stages that measure them (sweep.<name>.stages), without a report
    plain = [run for run in EXPERIMENTS if not RUNS[run].get("_sweep")]
    lines = stage_lines(Path("results"), plain, (*STAGES, "report"))
    for run in EXPERIMENTS:
        if RUNS[run].get("_sweep"):
            lines += stage_lines(
                Path("results"), [run], ("env_capture", "build", "correctness", *sweep_stages(run))
            )
    lines += history_lines(Path("results"), plain)
    lines += sweep_lines(Path("results"), SWEEPS)
    print(f"\nStages ({config['toolchain'] if COLLECT else 'imported'} data):")
    print(format_lines(lines))
    for path in expand("results/{experiment}/report/report.html", experiment=plain):
        print(report_line(path, STARTED, nothing_to_do))
    for name in SWEEPS:
        print(f"Sweep {name}: results/sweep/{name}/sweep.html (and sweep.md, sweep.json)")
    bad = failing(lines, config["fail_on"])
    if bad:
        print(
            f"fail_on [{', '.join(config['fail_on'])}]: "
            + ", ".join(f"{b.experiment}/{b.stage} is {b.state}" for b in bad)
            + "; exit status 1 (with fail_on: [] a run exits 0, the states only in the report and the table above)",
            file=sys.stderr,
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


def run_from_disk():
    """Snakemake reruns a job when an output is missing and something needs it, or its inputs, params or code
    changed. What it does not see: a status whose cause may be gone by itself (a port in use, a busy cluster), an
    intermediate damaged after it was written, a collection whose raw data a killed job took with it, a drill-down
    older than what it drills into. Before the DAG is built (Snakemake calls execute with its settings in place),
    those jobs are forced, each with its reason (dispatchprof.shell.disk_state); a dry run shows them as "Forced
    execution". After a run with nothing to do, which calls no hook, the end-of-run table and fail_on still apply.
    """
    if not workflow.is_main_process:
        return
    execute = workflow.execute

    def execute_from_disk(*args, **kwargs):
        from dispatchprof.shell.disk_state import reruns

        found = reruns(Path("results"), EXPERIMENTS)
        for rerun in found:
            sys.stderr.write(f"Runs again: {rerun.status}: {rerun.why}\n")
        if found:
            forced = {str(rerun.status) for rerun in found}
            workflow.dag_settings.forcerun = frozenset(workflow.dag_settings.forcerun) | forced
        if workflow.dryrun:
            sys.stderr.write(lock_note())
        result = execute(*args, **kwargs)
        nothing_ran = not RUN_STARTED and not len(workflow.dag)
        if nothing_ran and not workflow.dryrun and not workflow.execution_settings.no_hooks:
            end_of_run(nothing_to_do=True)
        return result

    workflow.execute = execute_from_disk


def lock_note():
    """What a dry run says of the cluster lock: which rules take it, where, how long a second run waits."""
    from dispatchprof.shell.cluster_lock import scope

    if not COLLECT:
        return ""
    collective = sorted(r.name for r in workflow.rules if "npu_cluster" in r.resources)
    held_by = scope(config, Path.cwd()).describe()
    return (
        f"Cluster lock: {', '.join(collective)} hold the cluster while they run: {held_by}; a job that finds it "
        f"held waits up to {config['cluster_lock']['wait']:g} s (cluster_lock.wait), not counted in its timeout.\n"
    )
