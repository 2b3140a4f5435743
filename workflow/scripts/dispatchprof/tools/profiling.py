"""Profiler command lines: msprof options chosen from the captured --help, the probe script it runs."""

from __future__ import annotations

import re
import shlex
from pathlib import Path
from typing import Sequence

import jinja2

from dispatchprof.shell.config import msprof_output_problem


def supported_options(options: Sequence[str], help_text: str) -> tuple[list[str], list[str]]:
    """Keep the options the installed msprof lists in its --help; drop (and report) the others and any the
    help marks as deprecated ("to be deprecated; use --task-time")."""
    kept, dropped = [], []
    for option in options:
        name = option.split("=", 1)[0]
        # The option's own line(s): where it is defined, not where another option's text refers to it.
        lines = [line for line in help_text.splitlines() if re.match(rf"\s*(?:-\w,\s*)?{re.escape(name)}(?![\w-])", line)]
        if not lines:
            dropped.append(f"{option} (not in this msprof's --help)")
        elif any("deprecat" in line.lower() for line in lines):
            dropped.append(f"{option} (marked deprecated in --help)")
        else:
            kept.append(option)
    return kept, dropped


def render_probe(template_dir: Path, node: int, repo: Path, argv: Sequence[str], set_env: str | None) -> str:
    env = jinja2.Environment(loader=jinja2.FileSystemLoader(str(template_dir)), undefined=jinja2.StrictUndefined, trim_blocks=True, lstrip_blocks=True)
    return env.get_template("probe.sh.j2").render(
        node=node, repo=shlex.quote(str(repo)), command=shlex.join(argv), set_env=shlex.quote(set_env) if set_env else None
    )


def msprof_command(output: Path, options: Sequence[str], probe: Path) -> list[str]:
    """msprof [options] bash <probe>: the form msprof.md §1.1 recommends. The probe is its own argument, so a path
    with spaces (or any character) reaches msprof whole, where --application would be split at the first space.
    An --output msprof refuses is refused here (check_config refuses it before the DAG)."""
    problem = msprof_output_problem(output)
    if problem:
        raise ValueError(problem)
    return ["msprof", f"--output={output}", *options, "bash", str(probe)]
