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
        lines = [
            line for line in help_text.splitlines() if re.match(rf"\s*(?:-\w,\s*)?{re.escape(name)}(?![\w-])", line)
        ]
        if not lines:
            dropped.append(f"{option} (not in this msprof's --help)")
        elif any("deprecat" in line.lower() for line in lines):
            dropped.append(f"{option} (marked deprecated in --help)")
        else:
            kept.append(option)
    return kept, dropped


def render_probe(
    template_dir: Path, node: int, repo: Path, argv: Sequence[str], set_env: Sequence[str] | str | None
) -> str:
    """The script msprof runs; ``set_env``: the set_env.sh candidates, the first existing one is sourced."""
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(str(template_dir)),
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    candidates = [set_env] if isinstance(set_env, str) else list(set_env or [])
    return env.get_template("probe.sh.j2").render(
        node=node,
        repo=shlex.quote(str(repo)),
        command=shlex.join(argv),
        set_env=[shlex.quote(c) for c in candidates] or None,
    )


TRAILING, APPLICATION = "trailing", "application"
# A usage line with the application after the options: "msprof [options] <app> [args]" (CANN 8.1.RC1 on).
_TRAILING_USAGE = re.compile(r"msprof\s+\[-{0,2}options\]\s+(?!--application)[<\[]?\w", re.IGNORECASE)


def msprof_application_form(help_text: str) -> tuple[str, str]:
    """How this msprof takes the application, from its captured --help, and why. ``trailing`` (``msprof [options]
    <app> [args]``) is documented only from CANN 8.1.RC1 (docs/formats.md §1); 6.x/7.x print ``Usage: ./msprof
    [--options]`` and take the application only as ``--application``. No help captured: trailing, said so."""
    if any(_TRAILING_USAGE.search(line) for line in help_text.splitlines()):
        return TRAILING, "the captured msprof --help shows the application after the options (msprof [options] <app>)"
    if re.search(r"^\s*--application(?![\w-])", help_text, re.MULTILINE):
        return (
            APPLICATION,
            "the captured msprof --help lists --application and no "
            "usage with a trailing application (CANN before 8.1.RC1)",
        )
    if help_text.strip():
        return TRAILING, "the captured msprof --help shows neither form: the trailing one (CANN 8.1.RC1 on) is used"
    return TRAILING, "no msprof --help was captured: the trailing form (CANN 8.1.RC1 on) is used"


def msprof_command(output: Path, options: Sequence[str], probe: Path, form: str = TRAILING) -> list[str]:
    """msprof [options] bash <probe> (``trailing``, the form docs/formats.md §1 recommends: the probe is its own
    argument, so any path reaches msprof whole), or msprof [options] --application="bash <probe>" (``application``, the
    only form before CANN 8.1.RC1: msprof splits the string at its first space, so a probe path holding whitespace
    is refused here). An --output msprof refuses is refused here (check_config refuses it before the DAG)."""
    problem = msprof_output_problem(output)
    if problem:
        raise ValueError(problem)
    if form == APPLICATION:
        if re.search(r"\s", str(probe)):
            raise ValueError(
                f"the probe path {str(probe)!r} holds whitespace: this msprof takes "
                "the application only as --application, which it splits at spaces"
            )
        return ["msprof", f"--output={output}", *options, f"--application=bash {probe}"]
    return ["msprof", f"--output={output}", *options, "bash", str(probe)]
