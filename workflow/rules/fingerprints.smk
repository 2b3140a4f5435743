# Params computed from the config: each rule's config fingerprint (its row of RULE_KEYS in
# dispatchprof.shell.rule_keys), the imported trees' fingerprints, the settings the report lists. Included by
# common.smk.
from dispatchprof.shell.rule_keys import RULE_KEYS, config_hash, fingerprint_phase, row_of


def rule_fingerprint(rule_name):
    """The param config_fingerprint of a rule: a short hash of its row of RULE_KEYS (sections or dotted keys, e.g.
    "timeline.waits") for the job's experiment; a collection rule's holds only the collection keys of its row
    (x-phase in the schema), so that an analysis key's change never re-collects (DESIGN.md). Snakemake reruns the
    rule when they change."""
    keys, phase = RULE_KEYS[row_of(rule_name)], fingerprint_phase(rule_name)

    def fingerprint(wildcards):
        run = RUNS[wildcards.experiment]
        return config_hash(phase_view(run, _SCHEMA, keys, phase), run["_repeat"])

    fingerprint.row = row_of(rule_name)
    return fingerprint


def check_fingerprints():
    """After every include: each rule's config_fingerprint is made from its own row (a copied rule that kept
    another rule's name would hash the wrong keys)."""
    for rule_ in workflow.rules:
        made = getattr(rule_.params.get("config_fingerprint"), "row", row_of(rule_.name))
        if made != row_of(rule_.name):
            raise ValueError(
                f"rule {rule_.name}: config_fingerprint=rule_fingerprint({made!r}) names another rule's row "
                f"of RULE_KEYS (dispatchprof/shell/rule_keys.py); use rule_fingerprint({rule_.name!r})"
            )


def input_fingerprint(kind):
    """A rule param of the *_import rules: a hash of the imported tree's names, sizes and mtimes. Snakemake reruns
    the import, and everything after it, when a file of that tree changes (it has no declared input to compare).
    """
    from dispatchprof.stages.imports import tree_fingerprint

    return lambda wildcards: tree_fingerprint(RUNS[wildcards.experiment]["analyze"][kind])


def settings_shown(experiment):
    """A param of the report: every analysis key's value (JSON), listed in the report; a change re-renders it."""
    import json

    return json.dumps(analysis_settings(RUNS[experiment], _SCHEMA), sort_keys=True)


def skip_launches(experiment):
    """Timeline launches left out per rank: configured, else the driver's warm-up (collect) or 0 (import)."""
    timeline = RUNS[experiment]["timeline"]
    if timeline["skip_launches"] is not None:
        return timeline["skip_launches"]
    return timeline["warmup"] if COLLECT else 0
