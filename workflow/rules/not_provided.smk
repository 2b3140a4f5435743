# not_provided (analyze mode): the stages with nothing to analyse (collection-only stages, and stages whose artifacts
# were not given) are written by one job per group of experiments that lack the same stages, instead of one or two
# jobs each. Included after every other rule file: its outputs are theirs (named <rule>__<output>), and it is
# preferred over them (ruleorder) for the experiments it covers.


def stage_of_rule(name):
    """The stage a rule belongs to: pmu_import -> pmu, env_capture -> env_capture."""
    for suffix in PARTS:
        if name.endswith(suffix):
            return name[: -len(suffix)]
    return name


def stand_in_outputs(stages):
    """Every named output of the rules of these stages, keyed <rule>__<output>, directories kept as directories."""
    from snakemake.io import is_flagged, strip_wildcard_constraints

    outputs = {}
    for rule_ in workflow.rules:
        if (
            stage_of_rule(rule_.name) in stages
            and rule_.name != stage_of_rule(rule_.name) + "_collect"
        ):
            for name, path in rule_.output.items():
                pattern = strip_wildcard_constraints(str(path))  # ours apply, not theirs
                outputs[f"{rule_.name}__{name}"] = (
                    directory(pattern) if is_flagged(path, "directory") else pattern
                )
    return outputs


def absent_groups():
    """Experiments grouped by the stages they lack (usually one group: every experiment lacks the same)."""
    from dispatchprof.absent import absent_stages

    groups = {}
    for experiment, run in RUNS.items():
        stages = absent_stages(run)
        if stages:
            groups.setdefault(stages, []).append(experiment)
    return groups


if not COLLECT:
    for _index, (_stages, _experiments) in enumerate(absent_groups().items()):
        _name = "not_provided" if _index == 0 else f"not_provided_{_index + 1}"

        rule:
            name:
                _name
            output:
                **stand_in_outputs(_stages),
            log:
                "results/{experiment}/logs/not_provided.log",
            wildcard_constraints:
                experiment="|".join(re.escape(e) for e in _experiments),
            params:
                stages=list(_stages),
                config_fingerprint=config_fingerprint("mode", "analyze", "cluster"),
            script:
                "../scripts/not_provided.py"

        workflow.ruleorder(
            _name,
            *[
                r.name
                for r in workflow.rules
                if stage_of_rule(r.name) in _stages and r.name != _name
            ],
        )
