"""The environment a node's command runs in: the node's own, plus what the workflow sets, plus what it forwards.

Spec files handed to nodes (launchers slurm and ssh) carry only what the workflow itself sets (rank and world
variables, ports, its paths and switches) and the PATH-like directories it puts in front of the node's own; they
never carry the caller's environment. Under ssh the caller's variables named by ``cluster.forward_env`` travel on
the ssh session's standard input, never on disk or on a command line. Names that look secret are never forwarded,
and wherever a value is written (env capture, logs) a secret-looking name's value is written as ``<redacted>``.

Standard library only: node_wrapper.py and preflight.py import it as a sibling when they run as scripts on a node.
"""

from __future__ import annotations

import os
from fnmatch import fnmatchcase
from typing import Iterable, Mapping, Sequence

# Names that look like they hold a credential (matched case-insensitively, on the whole name).
SECRET_PATTERNS = ("*TOKEN*", "*SECRET*", "*PASSWORD*", "*PASSWD*", "*CREDENTIAL*", "*_KEY", "*APIKEY*")
# CANN / torch_npu names that match a pattern above but hold no secret. None is known today: no variable of
# CANN, HCCL or torch_npu documented in docs/formats.md matches (config/README.md, section cluster).
SECRET_EXCEPTIONS: frozenset[str] = frozenset()
REDACTED = "<redacted>"
# A forwarded environment root whose bin/ goes in front of the node's PATH, as activating it does.
ACTIVATES = ("VIRTUAL_ENV", "CONDA_PREFIX")


def looks_secret(name: str) -> bool:
    upper = name.upper()
    return upper not in SECRET_EXCEPTIONS and any(fnmatchcase(upper, p) for p in SECRET_PATTERNS)


def redact(env: Mapping[str, str]) -> dict[str, str]:
    """``env`` with every secret-looking name's value replaced by ``<redacted>``: what may be written anywhere."""
    return {k: REDACTED if looks_secret(k) else v for k, v in env.items()}


def matching(names: Iterable[str], patterns: Sequence[str]) -> list[str]:
    """The names matched by any of ``patterns`` (exact names or globs, case-sensitive as variable names are)."""
    return sorted(n for n in names if any(fnmatchcase(n, p) for p in patterns))


def forwardable(environ: Mapping[str, str], patterns: Sequence[str]) -> tuple[dict[str, str], list[str]]:
    """The caller's variables ``patterns`` name, and the matched names refused because they look secret."""
    names = matching(environ, patterns)
    refused = [n for n in names if looks_secret(n)]
    return {n: environ[n] for n in names if n not in refused}, refused


def merge(
    base: Mapping[str, str],
    env: Mapping[str, str],
    prepend: Mapping[str, Sequence[str]] | None = None,
    forwarded: Mapping[str, str] | None = None,
) -> dict[str, str]:
    """The node's environment ``base``, then the forwarded variables (an activated venv's or conda env's bin/ in
    front of PATH), then the workflow's directories in front of PATH-like variables, then what it sets (which wins)."""
    out = dict(base)
    out.update(forwarded or {})
    roots = [f"{(forwarded or {})[name]}/bin" for name in ACTIVATES if (forwarded or {}).get(name)]
    for name, dirs in [("PATH", roots), *(prepend or {}).items()]:
        if dirs:
            out[name] = os.pathsep.join([*dirs, *([out[name]] if out.get(name) else [])])
    out.update(env)
    return out
