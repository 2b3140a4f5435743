# Configuration loading and validation, the node and experiment lists, and path helpers.
# Top-level code here runs again in every job: keep it cheap and free of side effects.
import re
import sys
from pathlib import Path

import yaml
from snakemake.utils import validate

sys.path.insert(0, str(Path(workflow.basedir) / "workflow" / "scripts"))
from dispatchprof.config import check_config, schema_problems  # noqa: E402

CONFIG_SCHEMA = Path(workflow.basedir) / "workflow" / "schemas" / "config.schema.yaml"


def refuse(problems):
    """Stop before the DAG is built, with messages a person can act on (no traceback)."""
    sys.stderr.write("Configuration refused; nothing was run:\n")
    for problem in problems:
        sys.stderr.write(f"  - {problem}\n")
    sys.exit(1)


_problems = schema_problems(config, yaml.safe_load(CONFIG_SCHEMA.read_text()))
if _problems:
    refuse(_problems)
validate(config, str(CONFIG_SCHEMA), set_default=True)

EXPERIMENTS = [config["experiment"]]
_problems = check_config(config, Path.cwd(), EXPERIMENTS)
if _problems:
    refuse(_problems)

COLLECT = config["mode"] == "collect"
NODES = list(range(config["cluster"]["nodes"]))
STAGES = ("env_capture", "build", "correctness", "baseline", "timeline", "pmu", "pcsampling")

# What each stage needs, by mode. A stage runs only when every needed input is ok.
if COLLECT:
    NEEDS = {
        "build": ["env_capture"],
        "correctness": ["env_capture", "build"],
        "baseline_collect": ["correctness", "baseline_driver"],
        "baseline": ["baseline_driver", "baseline_collect"],
        "timeline_collect": ["baseline"],
        "timeline_node": ["timeline_collect"],
        "timeline": ["timeline_collect"],
        "pmu_collect": ["timeline", "env_capture"],
        "pmu": ["pmu_collect"],
        "pcsampling_collect": ["pmu", "env_capture"],
        "pcsampling": ["pcsampling_collect"],
    }
else:
    NEEDS = {
        "build": [],
        "correctness": [],
        "baseline": ["baseline_import"],
        "timeline_node": ["timeline_import"],
        "timeline": ["timeline_import"],
        "pmu": ["pmu_import"],
        "pcsampling": ["pcsampling_import"],
    }


wildcard_constraints:
    experiment="|".join(re.escape(e) for e in EXPERIMENTS),
    node=r"\d+",
    rank=r"\d+",


PARTS = ("_import", "_driver", "_collect")


RANKS_PER_NODE = config["cluster"]["ranks_per_node"]
RANKS = list(range(len(NODES) * RANKS_PER_NODE))


def node_of(rank):
    return int(rank) // RANKS_PER_NODE


def status_path(label):
    """The status file of a stage, or of one part of it (baseline_collect -> baseline/collect/)."""
    for suffix in PARTS:
        if label.endswith(suffix):
            return f"results/{{experiment}}/{label[: -len(suffix)]}/{suffix[1:]}/status.json"
    return f"results/{{experiment}}/{label}/status.json"


def needed_inputs(stage):
    """Named inputs: label -> status file, for every input the stage needs."""
    return {label: status_path(label) for label in NEEDS[stage]}


def config_fingerprint(*sections):
    """A short hash of the config sections a rule depends on: Snakemake reruns the rule when they change."""
    import hashlib
    import json

    picked = {k: config[k] for k in sections}
    return hashlib.sha256(json.dumps(picked, sort_keys=True).encode()).hexdigest()[:16]


def stage_log(stage, name=None):
    return f"results/{{experiment}}/{stage}/logs/{name or stage}.log"
