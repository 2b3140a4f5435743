# timeline: msprof on every node around the perf driver; the PROF_ directories parsed by jobs of
# timeline.nodes_per_job nodes each (every rank's launch table and summary), then the merge (stragglers,
# gaps, call chain, merged trace).

if COLLECT:

    rule timeline_collect:
        input:
            **needed_inputs("timeline_collect"),
            driver="results/{experiment}/baseline/perf_driver.py",
            env="results/{experiment}/env_capture/env.json",
        output:
            raw=directory("results/{experiment}/timeline/raw"),
            run=directory("results/{experiment}/timeline/run"),
            status="results/{experiment}/timeline/collect/status.json",
        log:
            stage_log("timeline", "collect"),
        resources:
            **collective_resources("timeline"),
        params:
            config_fingerprint=rule_fingerprint("timeline_collect"),
            needed=NEEDS["timeline_collect"],
            gate=needed_states("timeline_collect"),
        message:
            "{PLAN:timeline_collect/{wildcards.experiment}}"
        script:
            "../scripts/timeline_collect.py"

else:

    rule timeline_import:
        output:
            manifest="results/{experiment}/timeline/import/manifest.json",
            status="results/{experiment}/timeline/import/status.json",
        log:
            stage_log("timeline", "import"),
        params:
            config_fingerprint=rule_fingerprint("timeline_import"),
            input_fingerprint=input_fingerprint("timeline_dir"),
            kind="timeline_dir",
        script:
            "../scripts/import_artifacts.py"


rule timeline_parse:
    input:
        **needed_inputs("timeline_node"),
        previous_run=previous_analysis("timeline", "nodes/nodes{nodes}/status.json"),
    output:
        coverage="results/{experiment}/timeline/nodes/nodes{nodes}/coverage.parquet",
        launches="results/{experiment}/timeline/nodes/nodes{nodes}/launches.parquet",
        ranks="results/{experiment}/timeline/nodes/nodes{nodes}/ranks.json",
        plots=directory("results/{experiment}/timeline/nodes/nodes{nodes}/plots"),
        status="results/{experiment}/timeline/nodes/nodes{nodes}/status.json",
    log:
        stage_log("timeline", "parse_nodes{nodes}"),
    params:
        config_fingerprint=rule_fingerprint("timeline_parse"),
        needed=NEEDS["timeline_node"],
        identity="results/{experiment}/timeline/run/identity" if COLLECT else None,
        nodes=lambda w: node_range(w.nodes),
        skip=lambda w: skip_launches(w.experiment),
    script:
        "../scripts/timeline_parse.py"


rule timeline_rank:
    input:
        part_status=lambda w: f"results/{w.experiment}/timeline/nodes/nodes{group_of_rank(w.rank)}/status.json",
        ranks=lambda w: f"results/{w.experiment}/timeline/nodes/nodes{group_of_rank(w.rank)}/ranks.json",
    output:
        detail="results/{experiment}/timeline/ranks/rank{rank}/detail.json",
        table=reported(
            "results/{experiment}/timeline/ranks/rank{rank}/launches.csv",
            "Per-rank tables",
            "per_rank",
            "timeline drill-down",
            experiment="{experiment}",
            file="launches of rank {rank}",
        ),
        plot="results/{experiment}/timeline/ranks/rank{rank}/launches.svg",
        status="results/{experiment}/timeline/ranks/rank{rank}/status.json",
    log:
        stage_log("timeline", "rank{rank}"),
    params:
        config_fingerprint=rule_fingerprint("timeline_rank"),
        rank=lambda w: int(w.rank),
        skip=lambda w: skip_launches(w.experiment),
        on_demand=True,  # a drill-down outside `all`: a plain run refreshes it when the parts it reads change
    script:
        "../scripts/timeline_rank.py"


def timeline_parts(name):
    return expand(
        "results/{{experiment}}/timeline/nodes/nodes{group}/{name}",
        group=NODE_GROUPS,
        name=name,
    )


rule timeline:
    input:
        **needed_inputs("timeline"),
        previous_run=previous_analysis("timeline"),
        parts=timeline_parts("status.json"),
        coverage=timeline_parts("coverage.parquet"),
        launches=timeline_parts("launches.parquet"),
        ranks=timeline_parts("ranks.json"),
        baseline_stats="results/{experiment}/baseline/stats.json",
    output:
        stats=reported(
            "results/{experiment}/timeline/stats.json",
            "Stages",
            "stage_stats",
            "timeline",
            experiment="{experiment}",
            file="statistics and causes",
        ),
        trace=reported(
            "results/{experiment}/timeline/merged_trace.json",
            "Stages",
            "timeline",
            "timeline",
            experiment="{experiment}",
            file="merged Chrome trace",
        ),
        replay=reported(
            "results/{experiment}/timeline/replay_without_top_cause.json",
            "Stages",
            "timeline",
            "timeline",
            experiment="{experiment}",
            file="the launches replayed without the top cause (Chrome trace)",
        ),
        coverage="results/{experiment}/timeline/coverage.parquet",
        status="results/{experiment}/timeline/status.json",
    log:
        stage_log("timeline"),
    params:
        config_fingerprint=rule_fingerprint("timeline"),
        needed=NEEDS["timeline"],
        groups=NODE_GROUPS,
    script:
        "../scripts/timeline.py"


rule timeline_crosscheck:
    input:
        status="results/{experiment}/timeline/status.json",
        stats="results/{experiment}/timeline/stats.json",
    output:
        json="results/{experiment}/timeline/crosscheck.json",
    log:
        stage_log("timeline", "crosscheck"),
    params:
        raw="results/{experiment}/timeline/raw",
    script:
        "../scripts/timeline_crosscheck.py"
