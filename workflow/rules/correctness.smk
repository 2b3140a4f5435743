# correctness: the V2 precision test on every node and rank (collective); the gate for all measurements.


rule correctness:
    input:
        **needed_inputs("correctness"),
        previous_run=previous_run,
    output:
        ranks=reported(
            "results/{experiment}/correctness/ranks.parquet",
            "Per-rank tables",
            "per_rank",
            "correctness",
            experiment="{experiment}",
            file="precision check per rank",
        ),
        run=directory("results/{experiment}/correctness/run"),
        status="results/{experiment}/correctness/status.json",
    log:
        stage_log("correctness"),
    resources:
        **collective_resources("correctness"),
    params:
        config_fingerprint=rule_fingerprint("correctness"),
        needed=NEEDS["correctness"],
    script:
        "../scripts/correctness.py"
