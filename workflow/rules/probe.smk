# probe: a local piece of the kernel under `msopprof simulator` (single card, CANN but no NPU; optional).
import math

from dispatchprof.tools.simulator import PARSE_MARGIN_S

if COLLECT:
    # No npu_cluster: the simulator needs CANN, not an NPU. On SLURM it is submitted (CANN is not assumed where
    # Snakemake runs), to slurm.cann_partition when set, else to the profile's partition (place_rules). When no
    # experiment enables the probe, its job only writes "disabled": no resource, so it runs where the analysis runs
    # instead of queueing for a CANN node.
    PROBE_RESOURCES = (
        {
            "cann": 1,
            "runtime": lambda w: math.ceil(RUNS[w.experiment]["timeouts"]["probe"] / 60)
            + math.ceil(PARSE_MARGIN_S / 60)
            + RUNS[w.experiment]["slurm"]["runtime_margin_min"],
        }
        if any(run["probe"]["enabled"] for run in RUNS.values())
        else {}
    )

    rule probe_collect:
        output:
            raw=directory("results/{experiment}/probe/raw"),
            status="results/{experiment}/probe/collect/status.json",
        log:
            stage_log("probe", "collect"),
        resources:
            **PROBE_RESOURCES,
        params:
            config_fingerprint=rule_fingerprint("probe_collect"),
        script:
            "../scripts/probe_collect.py"

else:

    rule probe_import:
        output:
            manifest="results/{experiment}/probe/import/manifest.json",
            status="results/{experiment}/probe/import/status.json",
        log:
            stage_log("probe", "import"),
        params:
            config_fingerprint=rule_fingerprint("probe_import"),
            input_fingerprint=input_fingerprint("probe_dir"),
            kind="probe_dir",
        script:
            "../scripts/import_artifacts.py"


rule probe:
    input:
        **needed_inputs("probe"),
    output:
        stats=reported(
            "results/{experiment}/probe/probe.json",
            "Stages",
            "stage_stats",
            "probe",
            experiment="{experiment}",
            file="local probe",
        ),
        status="results/{experiment}/probe/status.json",
    log:
        stage_log("probe"),
    params:
        config_fingerprint=rule_fingerprint("probe"),
        needed=NEEDS["probe"],
    script:
        "../scripts/probe.py"
