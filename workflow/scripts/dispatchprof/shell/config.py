"""Checks of the configuration that a JSON schema cannot express, and the test's argument rendering.

The schema (workflow/schemas/config.schema.yaml) checks types, ranges and unknown keys and fills
defaults; these checks relate keys to each other. Every message names the key and the rule, so a
user can fix the file without reading code. They run before the DAG is built: nothing runs on a
configuration that fails them.
"""

from __future__ import annotations

import copy
import ipaddress
import re
import string
from pathlib import Path
from typing import Any, Iterable, Iterator, Mapping

from dispatchprof.shell.gitref import RefError, deepep_repo, resolve_ref
from dispatchprof.shell.sweep import expand, point_config, sweep_problems

# msopprof refuses --output paths longer than this (docs/formats.md §2).
MSOPPROF_OUTPUT_MAX = 200
ANALYZE_PATHS = (
    "latency_csv",
    "timeline_dir",
    "pmu_dir",
    "pcsampling_dir",
    "pipe_timeline_dir",
    "debugclock_dir",
    "probe_dir",
    "routing_dir",
)  # analyze.* keys that name inputs
KERNEL_NAME_RE = re.compile(r"^[A-Za-z0-9_*]+$")
_HOSTNAME_LABEL = re.compile(r"^(?!-)[A-Za-z0-9-]{1,63}(?<!-)$")

# Values the test's argument list may refer to as {placeholders}.
SHAPE_KEYS = (
    "num_tokens",
    "num_max_tokens_per_rank",
    "hidden",
    "num_topk",
    "num_experts",
    "num_aiv",
    "dtype",
    "route",
    "seed",
)
CLUSTER_KEYS = ("nodes", "ranks_per_node", "master_addr", "master_port", "shmem_port")
RUN_KEYS = ("log_dir", "run_tag", "transport", "world_ranks")
PLACEHOLDERS = frozenset(SHAPE_KEYS + CLUSTER_KEYS + RUN_KEYS)


class ConfigError(ValueError):
    """A configuration value that must be fixed before anything runs."""


def is_plain_host(value: str) -> bool:
    """A hostname (RFC 1123 labels) or an IP address; nothing a shell could interpret."""
    try:
        ipaddress.ip_address(value)
        return True
    except ValueError:
        pass
    if len(value) > 253:
        return False
    return all(_HOSTNAME_LABEL.match(label) for label in value.split("."))


def placeholders_in(template: str) -> set[str]:
    return {name for _, name, _, _ in string.Formatter().parse(template) if name is not None}


def render_args(templates: list[str], values: Mapping[str, Any]) -> list[str]:
    """Fill {placeholders} of the test's argument list; an unknown placeholder is a ConfigError."""
    rendered = []
    for template in templates:
        unknown = placeholders_in(template) - set(values)
        if unknown:
            raise ConfigError(
                f"deepep.test_args: unknown placeholder {{{sorted(unknown)[0]}}} "
                f"in {template!r}; known: {sorted(values)}"
            )
        rendered.append(template.format(**values))
    return rendered


def world_ranks(config: Mapping[str, Any]) -> int:
    return int(config["cluster"]["nodes"]) * int(config["cluster"]["ranks_per_node"])


# Characters msprof refuses in --output (docs/formats.md §1, [H8]): newline ' " % > < | & $ ; ` and \.
MSPROF_OUTPUT_REFUSED = "\n'\"%><|&$;`\\"


def msprof_output_problem(path: Path | str) -> str | None:
    """Why msprof would refuse ``path`` as --output, or None."""
    bad = sorted({c for c in str(path) if c in MSPROF_OUTPUT_REFUSED})
    if not bad:
        return None
    return (
        f"output path {path} holds {' '.join(repr(c) for c in bad)}, which "
        "msprof refuses in --output (newline ' \" % > < | & $ ; ` \\)"
    )


def msopprof_output_dirs(config: Mapping[str, Any], workdir: Path, experiment: str) -> list[Path]:
    """The --output directories the PMU and PC-sampling stages will hand to msopprof."""
    base = workdir.resolve() / "results" / experiment
    last = int(config["cluster"]["nodes"]) - 1
    return [base / stage / "raw" / f"node{last}" for stage in ("pmu", "pcsampling", "pipe_timeline/instr")]


def schema_problems(config: Mapping[str, Any], schema: Mapping[str, Any]) -> list[str]:
    """Schema violations as one line each, naming the key path (snakemake's own message dumps the schema)."""
    import jsonschema

    validator = jsonschema.Draft202012Validator(schema)
    problems = []
    for error in sorted(validator.iter_errors(config), key=lambda e: list(map(str, e.absolute_path))):
        key = ".".join(str(p) for p in error.absolute_path) or "(top level)"
        if error.validator == "additionalProperties":
            unknown = sorted(set(error.instance) - set(error.schema.get("properties", {})))
            problems.append(
                f"{key}: unknown key(s) {unknown}; known keys: {sorted(error.schema.get('properties', {}))}"
            )
        else:
            problems.append(f"{key}: {error.message}")
    return problems


def load_schema(path: Path) -> dict[str, Any]:
    """The config schema, read with libyaml when PyYAML has it (the pure-Python reader costs ~0.2 s of every
    Snakemake start on this 20 kB file)."""
    import yaml

    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    return yaml.load(path.read_text(), Loader=loader)


PHASES = ("collection", "analysis")


def _phase_nodes(
    node: Mapping[str, Any], key: str, inherited: str | None
) -> Iterator[tuple[str, Mapping[str, Any], str | None]]:
    """(dotted key, schema node, phase) of every key under ``node``: a key marked ``x-phase`` ends the walk (its keys
    are of that phase); a key of an unmarked object is walked into."""
    for name, child in node.get("properties", {}).items():
        dotted = f"{key}.{name}" if key else name
        phase = child.get("x-phase", inherited)
        yield dotted, child, phase
        if "x-phase" not in child and "properties" in child:
            yield from _phase_nodes(child, dotted, phase)


def phase_problems(schema: Mapping[str, Any]) -> list[str]:
    """Keys of the schema with no phase (neither their own ``x-phase`` nor an enclosing key's), an unknown phase, or a
    phase marked inside a key that already has one (a section is marked once, or each of its keys is)."""
    problems = []
    for key, node, phase in _phase_nodes(schema, "", None):
        if phase is None and "properties" not in node:
            problems.append(f"{key}: no x-phase (collection or analysis), on the key or on the section that holds it")
        elif phase is not None and phase not in PHASES:
            problems.append(f"{key}: x-phase {phase!r} is not one of {', '.join(PHASES)}")
        if "x-phase" in node and any("x-phase" in n for _, n, _ in _phase_nodes(node, key, None)):
            problems.append(f"{key}: marked x-phase and so are keys inside it; mark the section or its keys, not both")
    return problems


def phase_keys(schema: Mapping[str, Any]) -> dict[str, tuple[str, bool]]:
    """Every marked key, dotted, -> (phase, reruns): reruns is False for ``x-reruns: false`` (how the workflow runs,
    not what it produces: changing the key plans no job)."""
    return {
        key: (node["x-phase"], bool(node.get("x-reruns", True)))
        for key, node, _ in _phase_nodes(schema, "", None)
        if "x-phase" in node
    }


def phase_view(
    config: Mapping[str, Any], schema: Mapping[str, Any], keys: Iterable[str], phase: str | None = None
) -> dict[str, Any]:
    """The values of ``keys`` (dotted: ``timeline.waits``, or a section: ``pmu``), keeping only the keys of ``phase``
    when one is given: ``phase_view(run, schema, ["pmu"], "collection")`` is the collection keys of section pmu.
    What a rule fingerprints (Snakemake reruns it when the view changes)."""

    def pick(value: Any, node: Mapping[str, Any], inherited: str | None) -> Any:
        own = node.get("x-phase", inherited)
        if own is not None or not isinstance(value, Mapping) or "properties" not in node:
            return value if phase is None or own == phase else _DROPPED
        props = node["properties"]
        kept = {k: pick(v, props[k], own) for k, v in value.items() if k in props}
        return {k: v for k, v in kept.items() if v is not _DROPPED}

    view: dict[str, Any] = {}
    for key in keys:
        value: Any = config
        node: Mapping[str, Any] = schema
        inherited: str | None = None
        for part in key.split("."):
            inherited = node.get("x-phase", inherited)
            node, value = node["properties"][part], value[part]
        picked = pick(value, node, inherited)
        if picked is not _DROPPED:
            view[key] = picked
    return view


_DROPPED = object()


def collection_config(config: Mapping[str, Any], schema: Mapping[str, Any]) -> dict[str, Any]:
    """What a collection job (collect, driver, import, env capture, build, correctness) sees of its run's config: the
    collection keys only, and the run's own ``_`` keys. An analysis key read there is a KeyError, not a dependency
    its fingerprint misses (DESIGN.md: collection and analysis are separate phases)."""
    sections = [key for key in config if key in schema.get("properties", {})]
    return {
        **{k: v for k, v in config.items() if k.startswith("_")},
        **phase_view(config, schema, sections, "collection"),
    }


def analysis_settings(config: Mapping[str, Any], schema: Mapping[str, Any]) -> list[tuple[str, Any]]:
    """(dotted key, value) of every analysis key that changes a result (not ``x-reruns: false``), in schema order:
    what the report lists as the choices behind its numbers."""
    settings: list[tuple[str, Any]] = []

    def walk(node: Mapping[str, Any], value: Any, key: str, phase: str | None, reruns: bool) -> None:
        for name, child in node.get("properties", {}).items():
            dotted = f"{key}.{name}" if key else name
            own, again = child.get("x-phase", phase), reruns and child.get("x-reruns", True)
            held = value.get(name) if isinstance(value, Mapping) else None
            if "properties" in child and child.get("default") == {}:
                walk(child, held, dotted, own, again)
            elif own == "analysis" and again:
                settings.append((dotted, held))

    walk(schema, config, "", None, True)
    return settings


def fill_defaults(config: dict[str, Any], schema: Mapping[str, Any]) -> None:
    """Set every schema default the config leaves out, in place, at every depth: what snakemake.utils.validate does
    with set_default=True (its recipe from the jsonschema FAQ), on the schema already loaded. Snakemake's validate
    reads the schema file again with the pure-Python YAML reader: ~0.25 s of every start, dry runs included."""
    import jsonschema

    validate_properties = jsonschema.Draft202012Validator.VALIDATORS["properties"]

    def set_defaults(validator, properties, instance, subschema):  # type: ignore[no-untyped-def]
        for name, child in properties.items():
            if "default" in child:  # a copy: the default {} of a section is filled in place below
                instance.setdefault(name, copy.deepcopy(child["default"]))
        yield from validate_properties(validator, properties, instance, subschema)

    with_defaults = jsonschema.validators.extend(jsonschema.Draft202012Validator, {"properties": set_defaults})
    with_defaults(schema).validate(config)


def yaml_booleans_as_words(config: dict[str, Any], schema: Mapping[str, Any]) -> list[str]:
    """Turn YAML booleans back into the on/off words the schema documents, in place; return the keys changed.

    YAML 1.1 reads unquoted on/off/yes/no as booleans, so ``crosscheck: off`` arrives as False. A schema node
    marked ``x-yaml-boolean: [<true word>, <false word>]`` takes a boolean as that word. Experiment overrides
    are partial configurations and follow the same schema.
    """
    changed: list[str] = []

    def walk(value: Any, node: Mapping[str, Any], key: str) -> Any:
        words = node.get("x-yaml-boolean")
        if words and isinstance(value, bool):
            changed.append(key)
            return words[0] if value else words[1]
        if isinstance(value, dict):
            properties, extra = node.get("properties", {}), node.get("additionalProperties")
            for name in list(value):
                child = properties.get(name, extra if isinstance(extra, Mapping) else None)
                if child is not None:
                    value[name] = walk(value[name], child, f"{key}.{name}" if key else str(name))
        return value

    walk(config, schema, "")
    for name, override in (config.get("experiments") or {}).items():
        if isinstance(override, dict):
            walk(override, schema, f"experiments.{name}")
    return changed


# What an experiment may not override: every experiment runs on the same cluster, in the same mode.
FIXED_ACROSS_EXPERIMENTS = (
    "cluster",
    "cluster_lock",
    "mode",
    "launcher",
    "experiment",
    "experiments",
    "compare",
    "repeats",
    "fail_on",
    "sweep",
)


def comparison_pairs(config: Mapping[str, Any]) -> list[tuple[str, ...]]:
    """The (a, b) of every entry of ``compare`` (a pair [a, b] or a mapping {a, b, expect}), by slug: an
    experiment's name, a recorded side's directory made safe (shell/compare_config.py)."""
    from dispatchprof.shell import compare_config

    return list(compare_config.comparison_pairs(config))


def comparison_expectations(config: Mapping[str, Any]) -> dict[tuple[str, ...], dict[str, str]]:
    """The predictions (row key -> down, up or unchanged) of each compared pair; {} for a plain pair."""
    from dispatchprof.shell import compare_config

    return dict(compare_config.comparison_expectations(config))


def deep_merge(base: Mapping[str, Any], override: Mapping[str, Any]) -> dict[str, Any]:
    merged = copy.deepcopy(dict(base))
    for key, value in override.items():
        if (
            isinstance(value, Mapping)
            and isinstance(merged.get(key), Mapping)
            and key not in ("role_speedup", "build_env", "known_kernels", "clock_offset_us", "clock_drift_ppm")
        ):
            merged[key] = deep_merge(merged[key], value)
        else:
            merged[key] = copy.deepcopy(value)
    return merged


def run_base(config: Mapping[str, Any]) -> dict[str, Any]:
    """What every run starts from: the configuration without the keys that list runs."""
    return {k: v for k, v in config.items() if k not in ("experiments", "compare", "repeats", "sweep")}


def experiment_runs(config: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
    """Every run of the DAG: one per experiment and repeat, each with its merged config.

    Without ``experiments`` there is one run named by ``experiment``. With ``repeats`` > 1 runs are named
    ``<experiment>_r<k>`` and listed in alternating order (A1 B1 A2 B2 ...), the order they are executed in.
    Each point of a ``sweep`` is one more experiment (dispatchprof.shell.sweep), after the experiments; with sweeps
    and no ``experiments`` the runs are the sweeps' points only.
    """
    sweeps = config.get("sweep") or {}
    experiments = config.get("experiments") or ({} if sweeps else {config["experiment"]: {}})
    repeats = int(config.get("repeats", 1))
    base = run_base(config)
    runs: dict[str, dict[str, Any]] = {}
    for repeat in range(1, repeats + 1):
        for name, override in experiments.items():
            run = name if repeats == 1 else f"{name}_r{repeat}"
            merged = deep_merge(base, override or {})
            merged["experiment"] = run
            merged["_experiment"], merged["_repeat"] = name, repeat
            runs[run] = merged
    if sweeps:
        runs.update(expand(config, base)[1])
    return runs


SOURCE_OF_MODE = {"collect": "collected", "analyze": "import"}  # status.json "source" of each mode's stages


def results_of_other_mode(results: Path, runs: Mapping[str, Mapping[str, Any]]) -> list[str]:
    """Experiments whose results directory holds the other mode's stage statuses. Snakemake reruns only the jobs
    whose inputs changed, so a run in the other mode under the same experiment name would leave the earlier
    mode's stages in place and one report would mix both (an analyze run in a collected experiment kept every
    collected PMU and baseline result beside the imported timeline)."""
    from dispatchprof.shell.status import StatusError, read_status

    problems = []
    for name, run in runs.items():
        other_mode = "analyze" if run["mode"] == "collect" else "collect"
        other = []
        for status in sorted((results / name).glob("*/status.json")):
            try:
                source = read_status(status).source
            except StatusError:
                continue  # damaged: not this check's concern (the end-of-run table names the file)
            if source == SOURCE_OF_MODE[other_mode]:
                other.append(status.parent.name)
        if other:
            suggestion = f"{run.get('_experiment', name)}_{'analyzed' if run['mode'] == 'analyze' else 'collected'}"
            problems.append(
                f"experiment {name!r}: {results / name}/ holds {other_mode}-mode results ({', '.join(other)}); "
                f"{'an' if run['mode'] == 'analyze' else 'a'} {run['mode']} run under the same name would leave them "
                "beside its own and the report would mix both. Give this run's experiment its own name (e.g. "
                f"{suggestion}, as `experiment:` or as a key of `experiments:`), or move {results / name}/ away"
            )
    return problems


def sweep_notes(config: Mapping[str, Any]) -> list[str]:
    """The refused points of the sweeps, each with its reason, and how many run (for stderr at plan time)."""
    return sweep_problems(config, run_base(config))[1] if config.get("sweep") else []


def run_config(config: Mapping[str, Any], run: str) -> dict[str, Any]:
    runs = experiment_runs(config)
    if run not in runs:
        raise ConfigError(f"experiment {run!r} is not configured; configured: {sorted(runs)}")
    return runs[run]


def experiment_problems(config: Mapping[str, Any], schema: Mapping[str, Any]) -> list[str]:
    """Overrides that would change the cluster, names that do not exist, merged configs the schema refuses."""
    problems = []
    experiments = config.get("experiments") or {}
    name_re = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.-]{0,40}$")
    for name, override in experiments.items():
        if not name_re.match(name):
            problems.append(f"experiments: name {name!r} must match {name_re.pattern}")
        for key in override or {}:
            if key in FIXED_ACROSS_EXPERIMENTS:
                problems.append(
                    f"experiments.{name}: {key} cannot be overridden (every "
                    "experiment runs on the same cluster, in the same mode)"
                )
        if isinstance((override or {}).get("timeline"), dict) and "nodes_per_job" in override["timeline"]:
            problems.append(
                f"experiments.{name}: timeline.nodes_per_job cannot be "
                "overridden (it shapes the job graph of every experiment)"
            )
    from dispatchprof.shell.compare_config import comparison_problems

    problems += comparison_problems(config, Path.cwd())  # experiments, or recorded results directories
    problems += sweep_problems(config, run_base(config))[0]
    if problems:
        return problems
    for run, merged in experiment_runs(config).items():
        if merged.get("_sweep"):
            continue  # below, once per point
        check = {k: v for k, v in merged.items() if not k.startswith("_")}
        problems += [f"experiments ({run}): {p}" for p in schema_problems(check, schema)]
    base = run_base(config)
    for points in expand(config, base, with_runs=False)[0].values():
        for point in (p for p in points if p.refused is None):
            # the sections the point sets (the rest is the base, checked as the config itself)
            merged = point_config(base, point.params)
            check = {k: merged[k] for k in {key.split(".")[0] for key in point.params}}
            problems += [f"experiments ({point.name}): {p}" for p in schema_problems(check, schema)]
    return problems


def long_waits(config: Mapping[str, Any]) -> list[str]:
    """Fault knobs whose run can only end at a stage's timeout: said before anything runs, with that timeout."""
    if config["mode"] != "collect" or config["toolchain"] != "sim":
        return []
    sim, timeouts, notes = config["sim"], config["timeouts"], []

    def budget(stage: str) -> str:
        return f"timeouts.{stage} = {timeouts[stage]:g} s ({timeouts[stage] / 60:.1f} min)"

    if sim["dead_node"] is not None:
        notes.append(
            f"sim.dead_node: {sim['dead_node']}: that node never starts its ranks, "
            f"so correctness ends only at its timeout ({budget('correctness')})"
        )
    if sim["replay"] == "hang":
        notes.append(
            f"sim.replay: hang: the kernel replay never returns, so pmu ends only at its timeout ({budget('pmu')})"
        )
    return notes


def environment_problems(config: Mapping[str, Any], environ: Mapping[str, str]) -> list[str]:
    """Variables of the environment Snakemake runs in that would send results where the workflow does not look
    (the same list env capture's preflight checks on every node)."""
    from dispatchprof.node.preflight import FORBIDDEN_ENV

    if config["mode"] != "collect":
        return []
    return [
        f"environment: {name}={environ[name]!r} {why}: unset it"
        for name, why in FORBIDDEN_ENV.items()
        if environ.get(name)
    ]


def check_config(config: Mapping[str, Any], workdir: Path, experiments: list[str]) -> list[str]:
    """Return every problem found (empty when the configuration is usable)."""
    problems: list[str] = []
    cluster, shape, kernel = (config[k] for k in ("cluster", "shape", "kernel"))
    nodes, rpn = int(cluster["nodes"]), int(cluster["ranks_per_node"])
    world = nodes * rpn

    collect = config["mode"] == "collect"
    if not collect:
        for key, path in config["analyze"].items():
            if key in ANALYZE_PATHS and path is not None and not (workdir / path).exists():
                problems.append(f"analyze.{key}: {path} does not exist (relative paths are read from {workdir})")
            elif key.endswith("_dir") and path is not None and not (workdir / path).is_dir():
                layouts = {
                    "probe_dir": "an OPPROF_* tree of msopprof simulator",
                    "routing_dir": "a directory of the perf driver's routing JSON files (one per rank)",
                }
                layout = layouts.get(key, "a directory laid out as <dir>/node0/..., <dir>/node1/...")
                problems.append(f"analyze.{key}: {path} is a file; expected {layout}")
    if collect and shape["num_experts"] % world:
        problems.append(
            f"shape.num_experts ({shape['num_experts']}) must be divisible by cluster.nodes x cluster.ranks_per_node "
            f"({nodes} x {rpn} = {world}): every rank owns the same number of experts"
        )
    if collect and shape["num_topk"] > shape["num_experts"]:
        problems.append(
            f"shape.num_topk ({shape['num_topk']}) must not exceed shape.num_experts ({shape['num_experts']})"
        )
    if collect and shape["num_max_tokens_per_rank"] < shape["num_tokens"]:
        problems.append(
            f"shape.num_max_tokens_per_rank ({shape['num_max_tokens_per_rank']}) "
            f"must be at least shape.num_tokens ({shape['num_tokens']})"
        )
    roles = kernel["roles"]
    if not 1 <= shape["num_aiv"] <= kernel["max_aiv"]:
        problems.append(
            f"shape.num_aiv ({shape['num_aiv']}) is out of range: it "
            f"must be between 1 and kernel.max_aiv ({kernel['max_aiv']})"
        )
    role_total = sum(int(r["count"]) for r in roles)
    if role_total != shape["num_aiv"]:
        problems.append(
            f"kernel.roles counts sum to {role_total} but shape.num_aiv is {shape['num_aiv']}: "
            "the roles must cover every AIV core exactly once, in AIV order"
        )
    names = [r["name"] for r in roles]
    if len(set(names)) != len(names):
        problems.append(f"kernel.roles: role names must be unique, got {names}")
    if not KERNEL_NAME_RE.match(kernel["name"]):
        problems.append(f"kernel.name ({kernel['name']!r}) must match ^[A-Za-z0-9_*]+$ (msopprof --kernel-name rule)")

    outside = [r for r in config["timeline"]["detail_ranks"] if r >= world]
    if outside:
        problems.append(f"timeline.detail_ranks: {outside} outside the cluster's {world} ranks (0..{world - 1})")
    if collect:
        problems += collect_problems(config, workdir, experiments)
    return problems


def collect_problems(config: Mapping[str, Any], workdir: Path, experiments: list[str]) -> list[str]:
    """Checks that matter only when this workflow runs the collection (launch, simulator, iteration counts): an
    analyze run of someone else's data is not refused for a shape or a knob it does not use."""
    return [
        *cluster_problems(config),
        *deepep_problems(config["deepep"]),
        *ref_problems(config),
        *sim_problems(config),
        *run_problems(config),
        *probe_problems(config["probe"]),
        *output_path_problems(config, workdir, experiments),
    ]


def cluster_problems(config: Mapping[str, Any]) -> list[str]:
    """Hosts, node 0's address and ports, and the ssh user: plain names and one host per node."""
    problems: list[str] = []
    cluster = config["cluster"]
    nodes = int(cluster["nodes"])
    for i, host in enumerate(cluster["hosts"]):
        if not is_plain_host(host):
            problems.append(f"cluster.hosts[{i}] ({host!r}) is not a plain hostname or IP address")
    if cluster["hosts"] and len(cluster["hosts"]) != nodes:
        problems.append(
            f"cluster.hosts lists {len(cluster['hosts'])} hosts but "
            f"cluster.nodes is {nodes}: give one host per node, node 0 first"
        )
    if not is_plain_host(cluster["master_addr"]):
        problems.append(f"cluster.master_addr ({cluster['master_addr']!r}) is not a plain hostname or IP address")
    if cluster["master_port"] == cluster["shmem_port"] != "auto":
        problems.append(f"cluster.master_port and cluster.shmem_port must differ (both {cluster['master_port']})")

    if config["launcher"] == "ssh" and len(cluster["hosts"]) != nodes:
        problems.append(
            "launcher: ssh needs cluster.hosts with one host per node, node "
            f"0 first ({nodes} nodes, {len(cluster['hosts'])} hosts given)"
        )
    user = config["ssh"]["user"]
    if user is not None and not re.match(r"^[a-z_][a-z0-9_-]{0,31}$", user):
        problems.append(f"ssh.user ({user!r}) is not a plain user name")
    return problems


def deepep_problems(deepep: Mapping[str, Any]) -> list[str]:
    """The test's log patterns (each with its rank group) and its command line's placeholders."""
    problems: list[str] = []
    for key in ("pass_pattern", "fail_pattern", "start_pattern"):
        if deepep[key] is None:
            continue
        try:
            if "rank" not in re.compile(deepep[key]).groupindex:
                problems.append(
                    f"deepep.{key} must have a named group (?P<rank>\\d+) "
                    "holding the global rank of the process that printed it"
                )
        except re.error as exc:
            problems.append(f"deepep.{key} is not a valid regular expression: {exc}")
    for template in deepep["test_args"]:
        unknown = placeholders_in(template) - PLACEHOLDERS
        if unknown:
            problems.append(
                f"deepep.test_args: unknown placeholder {{{sorted(unknown)[0]}}} "
                f"in {template!r}; known: {sorted(PLACEHOLDERS)}"
            )
    return problems


def ref_problems(config: Mapping[str, Any]) -> list[str]:
    """deepep.ref names a commit of deepep.repo (git rev-parse --verify): checked when the config is read, so a ref
    that does not resolve is refused before any job (and any allocation), the dry run included."""
    try:
        ref_sha(config)
    except RefError as exc:
        return [str(exc)]
    return []


def ref_sha(config: Mapping[str, Any]) -> str | None:
    """The sha deepep.ref names (None without a ref, or in analyze mode, which builds nothing): a param of the rules
    that read the ref's files (build, baseline_driver), so a branch or tag that moved to another commit rebuilds."""
    ref = config["deepep"].get("ref")
    if ref is None or config["mode"] != "collect":
        return None
    return resolve_ref(deepep_repo(config), ref)


def sim_problems(config: Mapping[str, Any]) -> list[str]:
    """The simulator's fault knobs name ranks, nodes and roles the cluster has."""
    problems: list[str] = []
    cluster, roles, sim = config["cluster"], config["kernel"]["roles"], config["sim"]
    nodes, rpn = int(cluster["nodes"]), int(cluster["ranks_per_node"])
    world = nodes * rpn
    for knob in ("precision_fail_rank", "die_rank"):
        if sim[knob] is not None and sim[knob] >= world:
            problems.append(f"sim.{knob} ({sim[knob]}) must be below the number of ranks ({world})")
    for knob in ("slow_rank", "spiky_rank", "late_rank", "late_rank2"):
        if sim[knob] is not None and sim[knob] >= world:
            problems.append(f"sim.{knob} ({sim[knob]}) must be below the number of ranks ({world})")
    if sim["late_node"] is not None and sim["late_node"] >= nodes:
        problems.append(f"sim.late_node ({sim['late_node']}) must be below cluster.nodes ({nodes})")
    if sim["slow_role"] is not None and sim["slow_role"]["rank"] >= world:
        problems.append(f"sim.slow_role.rank ({sim['slow_role']['rank']}) must be below the number of ranks ({world})")
    link = sim["slow_link"]
    if link is not None and max(link["src_node"], link["dst_node"]) >= nodes:
        problems.append(f"sim.slow_link {link} names a node outside the cluster's {nodes} nodes (0..{nodes - 1})")
    for knob in ("clock_offset_us", "clock_drift_ppm"):
        outside = sorted(int(k) for k in sim[knob] if int(k) >= nodes)
        if outside:
            problems.append(f"sim.{knob}: nodes {outside} are outside the cluster's {nodes} nodes (0..{nodes - 1})")
    unknown_roles = sorted(set(sim["role_speedup"]) - {r["name"] for r in roles})
    if unknown_roles:
        problems.append(
            f"sim.role_speedup names {unknown_roles}, which are not in kernel.roles {[r['name'] for r in roles]}"
        )
    missing = sim["missing_device"]
    if missing is not None and (missing["node"] >= nodes or missing["local_rank"] >= rpn):
        problems.append(f"sim.missing_device {missing} is outside the cluster ({nodes} nodes x {rpn} ranks per node)")
    if sim["icache_hot_role"] is not None and sim["icache_hot_role"] not in [r["name"] for r in roles]:
        problems.append(
            f"sim.icache_hot_role ({sim['icache_hot_role']!r}) is not in kernel.roles {[r['name'] for r in roles]}"
        )
    if sim["dead_node"] is not None and sim["dead_node"] >= nodes:
        problems.append(f"sim.dead_node ({sim['dead_node']}) must be below cluster.nodes ({nodes})")
    return problems


def run_problems(config: Mapping[str, Any]) -> list[str]:
    """Iteration counts that measure something, and profiler options the workflow can honour."""
    problems: list[str] = []
    if config["baseline"]["iterations"] <= config["baseline"]["warmup"]:
        problems.append(
            f"baseline.iterations ({config['baseline']['iterations']}) must exceed "
            f"baseline.warmup ({config['baseline']['warmup']}): nothing would be measured"
        )
    if config["timeline"]["iterations"] <= config["timeline"]["warmup"]:
        problems.append(
            f"timeline.iterations ({config['timeline']['iterations']}) "
            f"must exceed timeline.warmup ({config['timeline']['warmup']})"
        )
    for option in config["timeline"]["msprof_options"]:
        if option.split("=")[0] in ("--hccl", "--model-execution", "--output", "--application"):
            problems.append(
                f"timeline.msprof_options: {option} is not allowed (deprecated, or set by the workflow itself)"
            )
    if config["pmu"]["timelines"]:
        problems.append(
            f"pmu.timelines ({config['pmu']['timelines']}) is no longer read: PipeTimeline and InstrTimeline are runs "
            "of their own now (stage pipe_timeline); move the list to pipe_timeline.runs and remove pmu.timelines"
        )
    if (
        config["pipe_timeline"]["instr_timeline_pipe"] is not None
        and "InstrTimeline" not in config["pipe_timeline"]["runs"]
    ):
        problems.append(
            "pipe_timeline.instr_timeline_pipe is set but pipe_timeline.runs has no InstrTimeline (msopprof accepts "
            "--instr-timeline-pipe only with InstrTimeline)"
        )
    pmu = config["pmu"]
    if not {"PipeUtilization", "Default"} & set(pmu["metrics"]):
        problems.append(
            f"pmu.metrics ({pmu['metrics']}) must include PipeUtilization "
            "or Default: the per-role table is built from PipeUtilization"
        )
    if pmu["launch_count"] > pmu["iterations"]:
        # The driver launches the kernel pmu.iterations times; msopprof cannot profile launches that never happen.
        problems.append(
            f"pmu.launch_count ({pmu['launch_count']}) exceeds pmu.iterations ({pmu['iterations']}): the perf driver "
            "launches the kernel pmu.iterations times under msopprof, so some "
            "launches asked for would never be profiled; raise pmu.iterations"
        )
    return problems


def output_path_problems(config: Mapping[str, Any], workdir: Path, experiments: list[str]) -> list[str]:
    """The profilers' --output paths under results/: characters msprof refuses, lengths msopprof refuses."""
    problems: list[str] = []
    refused = msprof_output_problem(workdir.resolve() / "results")
    if refused:  # every profiler stage writes its --output under results/
        problems.append(f"{refused}: run the workflow from a directory whose path has none of them")
    for experiment in experiments:
        for path in msopprof_output_dirs(config, workdir, experiment):
            if len(str(path)) > MSOPPROF_OUTPUT_MAX:
                problems.append(
                    f"output path {path} is {len(str(path))} characters; msopprof refuses --output longer than "
                    f"{MSOPPROF_OUTPUT_MAX}: run from a shorter directory or shorten experiment ({experiment!r})"
                )
    return problems


def probe_problems(probe: Mapping[str, Any]) -> list[str]:
    """The local probe is run only when enabled, and then only with a program and an explicit SoC: the simulator's
    --soc-version names a simulator directory (e.g. Ascend950PR_9599), and a wrong guess simulates another chip."""
    if not probe["enabled"]:
        return []
    problems = []
    if not probe["command"]:
        problems.append(
            "probe.command is empty: give the probe program as an argument "
            "list, e.g. [python3, my_probe.py] (probe.enabled is true)"
        )
    if probe["soc_version"] is None:
        problems.append(
            "probe.soc_version must be set when probe.enabled is true: "
            "the full SoC name of the simulator, e.g. Ascend950PR_9599 "
            '(python3 -c "import acl; print(acl.get_soc_name())" on the target machine); it is never guessed'
        )
    elif probe["soc_version"] == "950":
        problems.append(
            "probe.soc_version: '950' is not a SoC name: msopprof simulator needs the full name, e.g. Ascend950PR_9599 "
            '(python3 -c "import acl; print(acl.get_soc_name())" on the target machine)'
        )
    return problems
