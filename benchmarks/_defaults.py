"""The settings the benchmarks analyse with: the config schema's defaults (workflow/schemas/config.schema.yaml), filled
as the workflow fills a config that sets none of them (shell.config.fill_defaults). Read, never copied: a default
changed in the schema changes what the benchmarks, and the tests that share their settings, run with.

It imports the library only (no code of workflow/sim): second_model_score.py, which must not reach the simulator,
uses it too.
"""

from __future__ import annotations

import copy
import functools
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
SCHEMA = ROOT / "workflow" / "schemas" / "config.schema.yaml"
if str(ROOT / "workflow" / "scripts") not in sys.path:
    sys.path.insert(0, str(ROOT / "workflow" / "scripts"))

from dispatchprof.shell.config import fill_defaults, load_schema  # noqa: E402


@functools.cache
def _schema_defaults() -> dict[str, Any]:
    """Every default of the schema, at every depth (read once: every run of a benchmark uses them)."""
    config: dict[str, Any] = {}
    fill_defaults(config, load_schema(SCHEMA))
    return config


def schema_default(*keys: str) -> Any:
    """The schema's default at ``keys`` (``"timeline", "waits"``), a copy of its own: a caller may change it."""
    value = _schema_defaults()
    for key in keys:
        value = value[key]
    return copy.deepcopy(value)


def timeline_settings() -> tuple[dict[str, Any], dict[str, Any]]:
    """What the timeline stage passes ``waits.analyse`` in a run that sets neither: ``timeline.waits`` and
    ``stats.bootstrap`` (stages/timeline.py)."""
    return schema_default("timeline", "waits"), schema_default("stats", "bootstrap")
