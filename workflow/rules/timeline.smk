# timeline: msprof on every node around the perf driver; each node's PROF_ directories parsed by its own
# job, each rank's launch detail by a lean per-rank job, then the merge (stragglers, gaps, merged trace).

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
            config_fingerprint=config_fingerprint(
                "mode",
                "toolchain",
                "launcher",
                "cann",
                "cluster",
                "deepep",
                "shape",
                "sim",
                "timeline",
            ),
            needed=NEEDS["timeline_collect"],
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
            config_fingerprint=config_fingerprint("analyze", "cluster"),
            kind="timeline_dir",
        script:
            "../scripts/import_artifacts.py"


rule timeline_parse_node:
    input:
        **needed_inputs("timeline_node"),
    output:
        kernels="results/{experiment}/timeline/nodes/node{node}/kernels.parquet",
        coverage="results/{experiment}/timeline/nodes/node{node}/coverage.parquet",
        launches=directory("results/{experiment}/timeline/nodes/node{node}/launches"),
        status="results/{experiment}/timeline/nodes/node{node}/status.json",
    log:
        stage_log("timeline", "parse_node{node}"),
    params:
        config_fingerprint=config_fingerprint("mode", "cluster", "kernel", "timeline", "analyze"),
        needed=NEEDS["timeline_node"],
        identity="results/{experiment}/timeline/run/identity" if COLLECT else None,
    script:
        "../scripts/timeline_parse_node.py"


rule timeline_rank:
    input:
        launches=lambda w: f"results/{w.experiment}/timeline/nodes/node{node_of(w.rank)}/launches",
    output:
        detail="results/{experiment}/timeline/ranks/rank{rank}/detail.json",
        plot="results/{experiment}/timeline/ranks/rank{rank}/launches.svg",
    log:
        stage_log("timeline", "rank{rank}"),
    params:
        skip=lambda w: skip_launches(w.experiment),
        python=sys.executable,
        script=Path(workflow.basedir) / "workflow" / "scripts" / "timeline_rank.py",
    shell:
        # A lean job (standard library only): many ranks must not mean many heavy jobs.
        "{params.python} {params.script:q} {input.launches:q}/rank{wildcards.rank}.json "
        "{params.skip} {output.detail:q} {output.plot:q} > {log:q} 2>&1"


rule timeline:
    input:
        **needed_inputs("timeline"),
        nodes=expand("results/{{experiment}}/timeline/nodes/node{node}/status.json", node=NODES),
        coverage=expand(
            "results/{{experiment}}/timeline/nodes/node{node}/coverage.parquet", node=NODES
        ),
        details=expand("results/{{experiment}}/timeline/ranks/rank{rank}/detail.json", rank=RANKS),
        baseline_stats="results/{experiment}/baseline/stats.json",
    output:
        stats="results/{experiment}/timeline/stats.json",
        trace=report(
            "results/{experiment}/timeline/merged_trace.json",
            caption="../report/timeline.rst",
            category="Timeline",
        ),
        coverage="results/{experiment}/timeline/coverage.parquet",
        status="results/{experiment}/timeline/status.json",
    log:
        stage_log("timeline"),
    params:
        config_fingerprint=config_fingerprint("mode", "cluster", "kernel", "timeline", "analyze"),
        needed=NEEDS["timeline"],
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
