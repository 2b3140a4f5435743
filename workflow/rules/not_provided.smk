# not_provided (analyze mode): the stages with nothing to analyse (collection-only stages, and stages whose artifacts
# were not given) are written by one job per group of experiments that lack the same stages, instead of one or two
# jobs each. Included after every other rule file: its outputs are theirs (named <rule>__<output>), and it is
# preferred over them (ruleorder) for the experiments it covers.


def rules_of_stages(stages):
    """The rules (stage and import part; analyze mode defines no collect part) of these stages."""
    return [r for r in workflow.rules if split_part(r.name)[0] in stages]


def stand_in_outputs(rules):
    """Every named output of these rules, keyed <rule>__<output>, directories kept as directories."""
    from snakemake.io import is_flagged, strip_wildcard_constraints

    outputs = {}
    for rule_ in rules:
        for name, path in rule_.output.items():
            pattern = strip_wildcard_constraints(str(path))  # ours apply, not theirs
            outputs[f"{rule_.name}__{name}"] = (
                directory(pattern) if is_flagged(path, "directory") else pattern
            )
    return outputs


def absent_groups():
    """Experiments grouped by the stages they lack (usually one group: every experiment lacks the same)."""
    from dispatchprof.stages.absent import absent_stages

    groups = {}
    for experiment, run in RUNS.items():
        stages = absent_stages(run)
        if stages:
            groups.setdefault(stages, []).append(experiment)
    return groups


if not COLLECT:
    for _index, (_stages, _experiments) in enumerate(absent_groups().items()):
        _name = "not_provided" if _index == 0 else f"not_provided_{_index + 1}"
        _rules = rules_of_stages(_stages)

        rule:
            name:
                _name
            output:
                **stand_in_outputs(_rules),
            log:
                "results/{experiment}/logs/not_provided.log",
            wildcard_constraints:
                experiment="|".join(re.escape(e) for e in _experiments),
            params:
                stages=list(_stages),
                config_fingerprint=rule_fingerprint("not_provided"),
            script:
                "../scripts/not_provided.py"

        workflow.ruleorder(_name, *[r.name for r in _rules])
