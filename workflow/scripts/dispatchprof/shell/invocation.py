"""The run's own invocation, so that every command the workflow prints runs when copied.

A run started with ``--configfile config/config.yaml exp.yaml`` names its experiment in exp.yaml: a printed
``snakemake results/<exp>/...`` without those files asks for an experiment the default config does not have
(MissingRuleException). Printed commands therefore carry the run's ``--configfile`` and ``--config`` words, after the
targets: both options take every word after them, so a target placed after them is read as a config file.
"""

from __future__ import annotations

import json
import os
import shlex
from pathlib import Path
from typing import Sequence


def invocation_args(
    configfiles: Sequence[str | os.PathLike[str]], config_args: Sequence[str] | None, workdir: Path
) -> list[str]:
    """The words that made this run's config: ``--configfile`` with its files (relative to the workflow's directory
    when under it, so that the command also works in a clone
    elsewhere) and ``--config`` with its raw key=value words."""
    words: list[str] = []
    if configfiles:
        words.append("--configfile")
        for path in configfiles:
            absolute = Path(os.path.abspath(path))
            try:
                words.append(str(absolute.relative_to(workdir.resolve())))
            except ValueError:
                words.append(str(absolute))
    if config_args:
        words += ["--config", *config_args]
    return words


def snakemake_command(targets: Sequence[str], invocation: Sequence[str], cores: int = 2) -> str:
    """A shell-quoted ``snakemake`` command for ``targets`` under the run's invocation (targets first)."""
    return shlex.join(["snakemake", "--cores", str(cores), *targets, *invocation])


INVOCATION_FILE = "invocation.json"


def write_invocation(experiment_dir: Path, words: Sequence[str]) -> None:
    """Record the run's invocation words in the experiment's results directory (read by the report)."""
    from dispatchprof.shell.atomic import write_json_atomic

    write_json_atomic(experiment_dir / INVOCATION_FILE, {"invocation": list(words)})


def read_invocation(experiment_dir: Path) -> list[str]:
    """The recorded invocation words; none when no run recorded them (a report rendered outside a run)."""
    path = experiment_dir / INVOCATION_FILE
    try:
        words = json.loads(path.read_text(encoding="utf-8-sig"))["invocation"]
    except (OSError, ValueError, KeyError, TypeError):
        return []
    return [str(w) for w in words] if isinstance(words, list) else []
