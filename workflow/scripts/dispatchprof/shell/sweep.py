"""Parameter sweeps (config ``sweep:``, issue 61): each point of a named sweep is one experiment run.

``sweep: {<name>: {axes: {<dotted key>: [values]}}}`` is the grid of the lists (itertools.product, axes in the order
given, the last axis fastest); ``{<name>: {rows: [{<dotted key>: value}, ...]}}`` is the listed points. A point is the
base configuration with each dotted key set to its value (only that leaf: ``sim.role_speedup.URMASendToken`` keeps
the other roles' speed-ups), run as experiment ``sweep_<name>_<n>`` (n = the point's 1-based position in that list,
refused points keeping theirs, so a name never moves to another point), ``sweep_<name>_<n>_r<k>`` with repeats.

Names and paths. A point's results are ``results/sweep_<name>_<n>/`` as any experiment's; its label (sweep.json,
the tables) is Paramspace-like, one ``<key>~<value>`` part per key joined by ``/``, where a dotted key's dots become
``__`` (``sim__role_speedup__URMASendToken~0.8``) and a value's characters outside ``[A-Za-z0-9_.+-]`` become
``%XX``. Snakemake's ``Paramspace`` is not used as is: it turns each column into a wildcard named by the column, and
a dotted column is no regex group name ("bad character in group name"); its paths hold ``~`` and ``/``, which the
experiment names (``^[A-Za-z0-9_][A-Za-z0-9_.-]*$``) and every per-experiment rule (``results/{experiment}/...``)
do not take.

Refusals, at plan time (config load): a point that sets a key no experiment may vary (``cluster``, ``mode``, ...),
whose experts do not divide over the ranks, whose ``num_aiv`` is not what its ``kernel.roles`` sum to (give both in
one row), whose top-k exceeds its experts or whose speed-up names a role it does not have, is refused with its reason;
the sweep's other points run. A sweep with no point left refuses the configuration.

Order. ``repeats`` (the sweep's own, else the top-level one) rounds; each round runs every point once, in a
permutation drawn from ``random.Random("<name>/<seed>/<round>")`` (a string seed: the same order in every process
and every Python), so drift and heat favour no point.
"""

from __future__ import annotations

import copy
import itertools
import random
import re
from dataclasses import dataclass, field
from typing import Any, Mapping

# Keys no point may set: what every experiment shares (config.FIXED_ACROSS_EXPERIMENTS), and the job graph's shape.
FIXED_KEYS = (
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
    "timeline.nodes_per_job",
)
MAX_POINTS = 500  # points per sweep
STAGES = ("baseline", "timeline")  # what a point may be measured by (sweep.<name>.stages)
_SAFE_VALUE = re.compile(r"[^A-Za-z0-9_.+-]")


@dataclass
class Point:
    """One point of a sweep: its number, its values, its experiment name, and why it is refused (None: it runs)."""

    sweep: str
    number: int
    params: dict[str, Any]
    refused: str | None = None
    runs: list[str] = field(default_factory=list)

    @property
    def name(self) -> str:
        return f"sweep_{self.sweep}_{self.number}"

    @property
    def label(self) -> str:
        return point_label(self.params)


def key_part(dotted: str) -> str:
    """A dotted key as a path part: dots become ``__`` (the keys themselves hold single underscores only)."""
    return dotted.replace(".", "__")


def value_part(value: Any) -> str:
    text = str(value).lower() if isinstance(value, bool) or value is None else str(value)
    return _SAFE_VALUE.sub(lambda m: "".join(f"%{b:02X}" for b in m.group().encode()), text)


def point_label(params: Mapping[str, Any]) -> str:
    return "/".join(f"{key_part(k)}~{value_part(v)}" for k, v in params.items())


def points_of(name: str, spec: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The parameter maps of a sweep, in order: the grid of ``axes``, or ``rows``."""
    if spec.get("axes"):
        keys = list(spec["axes"])
        return [dict(zip(keys, values)) for values in itertools.product(*(spec["axes"][k] for k in keys))]
    return [dict(row) for row in spec.get("rows") or []]


def set_dotted(config: dict[str, Any], dotted: str, value: Any) -> None:
    *parents, last = dotted.split(".")
    node = config
    for part in parents:
        if not isinstance(node.get(part), dict):
            node[part] = {}
        node = node[part]
    node[last] = copy.deepcopy(value)


def point_config(base: Mapping[str, Any], params: Mapping[str, Any]) -> dict[str, Any]:
    """The base with each dotted key set; only the sections the point sets are copied (the others are the base's
    own: copy the result before changing it elsewhere)."""
    merged = dict(base)
    for section in {key.split(".")[0] for key in params}:
        if section in merged:
            merged[section] = copy.deepcopy(merged[section])
    for key, value in params.items():
        set_dotted(merged, key, value)
    return merged


def point_problem(params: Mapping[str, Any], merged: Mapping[str, Any]) -> str | None:
    """Why this point cannot run (a constraint between keys, or a key no experiment varies), or None. Cheap: every
    job's process expands the sweeps again (run_config)."""
    fixed = [k for k in params if any(k == f or k.startswith(f + ".") for f in FIXED_KEYS)]
    if fixed:
        return f"{', '.join(fixed)} cannot vary per experiment (every point runs on the same cluster, in the same mode)"
    try:
        shape, kernel, cluster = merged["shape"], merged["kernel"], merged["cluster"]
        world = int(cluster["nodes"]) * int(cluster["ranks_per_node"])
        if int(shape["num_experts"]) % world:
            return f"shape.num_experts ({shape['num_experts']}) is not divisible by the {world} ranks of the cluster"
        if int(shape["num_topk"]) > int(shape["num_experts"]):
            return f"shape.num_topk ({shape['num_topk']}) exceeds shape.num_experts ({shape['num_experts']})"
        total = sum(int(r["count"]) for r in kernel["roles"])
        if total != int(shape["num_aiv"]):
            given = (
                ""
                if "kernel.roles" in params
                else " (sweep num_aiv with its roles: rows: [{shape.num_aiv, kernel.roles}])"
            )
            return f"shape.num_aiv ({shape['num_aiv']}) is not what kernel.roles sum to ({total}){given}"
        unknown = sorted(
            set((merged.get("sim") or {}).get("role_speedup") or {}) - {r["name"] for r in kernel["roles"]}
        )
        if unknown:
            return f"sim.role_speedup names {unknown}, which are not roles of kernel.roles"
    except (KeyError, TypeError, ValueError) as exc:
        return f"the point's configuration cannot be checked ({type(exc).__name__}: {exc})"
    return None


def expand(
    config: Mapping[str, Any], base: Mapping[str, Any], with_runs: bool = True
) -> tuple[dict[str, list[Point]], list[tuple[str, dict]]]:
    """Every sweep's points (refused ones with their reason) and the runs of the accepted ones, in execution order:
    (run name, merged config with ``_experiment``, ``_repeat``, ``_sweep``; each run its own deep copy). Without
    ``with_runs`` the points only (no run's config is copied)."""
    sweeps: dict[str, list[Point]] = {}
    runs: list[tuple[str, dict]] = []
    for name, spec in (config.get("sweep") or {}).items():
        points = [Point(name, i, params) for i, params in enumerate(points_of(name, spec), 1)]
        configs = {}
        for point in points:
            merged = point_config(base, point.params)
            point.refused = point_problem(point.params, merged)
            if point.refused is None:
                configs[point.number] = merged
        sweeps[name] = points
        if not with_runs:
            continue
        accepted = [p for p in points if p.refused is None]
        repeats = int(spec.get("repeats") or config.get("repeats") or 1)
        for round_ in range(1, repeats + 1):
            order = list(accepted)
            random.Random(f"{name}/{int(spec.get('seed') or 0)}/{round_}").shuffle(order)
            for point in order:
                run = point.name if repeats == 1 else f"{point.name}_r{round_}"
                merged = copy.deepcopy(configs[point.number])
                merged["experiment"] = run
                merged["_experiment"], merged["_repeat"], merged["_sweep"] = point.name, round_, name
                point.runs.append(run)
                runs.append((run, merged))
    return sweeps, runs


def sweep_problems(config: Mapping[str, Any], base: Mapping[str, Any]) -> tuple[list[str], list[str]]:
    """(problems that refuse the configuration, notes for stderr): a sweep too large or with no point left, each
    refused point with its reason."""
    problems, notes = [], []
    sweeps = config.get("sweep") or {}
    for name, spec in sweeps.items():
        count = len(points_of(name, spec))
        if count > MAX_POINTS:
            problems.append(f"sweep.{name}: {count} points, more than {MAX_POINTS}")
        clash = [e for e in config.get("experiments") or {} if e == name or e.startswith(f"sweep_{name}_")]
        if clash:
            problems.append(f"sweep.{name}: experiments {clash} would share its name or its points' names")
    if problems:
        return problems, notes
    for name, points in expand(config, base, with_runs=False)[0].items():
        refused = [p for p in points if p.refused]
        for p in refused:
            notes.append(f"sweep {name}: point {p.number} ({p.name}: {p.label}) refused: {p.refused}")
        if refused and len(refused) == len(points):
            problems += [f"sweep.{name}: no point is left to run: " + "; ".join(notes[-len(refused) :])]
        elif refused:
            notes.append(f"sweep {name}: the other {len(points) - len(refused)} of {len(points)} points run")
    return problems, notes
