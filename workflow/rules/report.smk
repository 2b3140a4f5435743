# report: one self-contained HTML page, report.md with its charts in figures/, and summary.json; renders whatever
# state the stages are in. figures/ is a directory output: which charts exist depends on the data.


rule report:
    input:
        **{stage: status_path(stage) for stage in STAGES},
        env="results/{experiment}/env_capture/env.json",
        build_record="results/{experiment}/build/build.json",
        correctness_ranks="results/{experiment}/correctness/ranks.parquet",
        baseline_stats="results/{experiment}/baseline/stats.json",
        baseline_plots="results/{experiment}/baseline/plots",
        timeline_stats="results/{experiment}/timeline/stats.json",
        timeline_crosscheck=lambda w: (
            []
            if RUNS[w.experiment]["timeline"]["crosscheck"] == "off"
            else f"results/{w.experiment}/timeline/crosscheck.json"
        ),
        timeline_ranks=lambda w: expand(
            "results/{experiment}/timeline/ranks/rank{rank}/detail.json",
            experiment=w.experiment,
            rank=RUNS[w.experiment]["timeline"]["detail_ranks"],
        ),
        pmu_stats="results/{experiment}/pmu/roles.json",
        pcsampling_stats="results/{experiment}/pcsampling/stalls.json",
        probe_stats="results/{experiment}/probe/probe.json",
        debugclock_stats="results/{experiment}/debugclock/stats.json",
        pipe_timeline_stats="results/{experiment}/pipe_timeline/pipe_timeline.json",
        comparisons=lambda w: comparisons_of(w.experiment),
        history="results/{experiment}/history/history.json",
    output:
        html=reported(
            "results/{experiment}/report/report.html",
            "Report",
            "report",
            "{experiment}",
            file="report.html",
        ),
        markdown="results/{experiment}/report/report.md",
        figures=report(
            directory("results/{experiment}/report/figures"),
            patterns=["{name}.svg", "{name}.png"],
            caption="../report/figures.rst",
            category="Heat maps and charts",
            subcategory="{experiment}",
            labels={"figure": "{name}"},
        ),
        summary=reported(
            "results/{experiment}/report/summary.json",
            "Summary",
            "summary",
            "{experiment}",
            file="summary.json",
        ),
        # the run's config in the report's sections: what a comparison with this directory as a recorded side reads
        config="results/{experiment}/config.json",
        status="results/{experiment}/report/status.json",
    log:
        stage_log("report"),
    params:
        config_fingerprint=rule_fingerprint("report"),
        stages=STAGES,
        analysis_settings=lambda w: settings_shown(w.experiment),
    script:
        "../scripts/report.py"
