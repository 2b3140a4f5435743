"""Which config keys a job's script reads: a check of RULE_KEYS (dispatchprof.shell.rule_keys), on by an
environment variable only (tests/workflow/test_phases.py sets it for its complete run).

With DISPATCHPROF_CONFIG_READS=<directory>, the config a script gets is a dict that notes every key read (a value
taken by [] or get; a section whose items or values are walked counts as the whole section) and, when the job's
process exits, writes them to <directory>/<rule>.<pid>.json. Without the variable the config is returned as it is.
"""

from __future__ import annotations

import atexit
import copy
import json
import os
from pathlib import Path
from typing import Any, Iterable, Mapping

ENV = "DISPATCHPROF_CONFIG_READS"


class ReadKeys(dict):  # type: ignore[type-arg]
    """A config dict that adds the dotted name of each value read to ``log`` (sections are ReadKeys too)."""

    def __init__(self, data: Mapping[str, Any], path: str, log: set[str]):
        pairs = dict.items(data) if isinstance(data, dict) else data.items()  # a copy is not a read
        super().__init__({k: ReadKeys(v, f"{path}{k}.", log) if isinstance(v, dict) else v for k, v in pairs})
        self._path, self._log = path, log

    def __deepcopy__(self, memo: dict[int, Any]) -> ReadKeys:
        # a copy's reads are the job's too (collective.with_ports deep-copies the config before the launch)
        return ReadKeys({k: copy.deepcopy(v, memo) for k, v in dict.items(self)}, self._path, self._log)

    def __copy__(self) -> ReadKeys:
        return ReadKeys(self, self._path, self._log)

    def _note(self, key: Any) -> None:
        self._log.add(f"{self._path}{key}")

    def __getitem__(self, key: Any) -> Any:
        value = super().__getitem__(key)
        if not isinstance(value, ReadKeys):
            self._note(key)
        return value

    def get(self, key: Any, default: Any = None) -> Any:
        return self[key] if key in self else (self._note(key), default)[1]

    def _whole(self) -> None:
        self._log.add(self._path.removesuffix(".") or "*")

    def items(self):  # type: ignore[no-untyped-def]
        self._whole()
        return super().items()

    def values(self):  # type: ignore[no-untyped-def]
        self._whole()
        return super().values()


def recorded(config: Mapping[str, Any], rule: str) -> Mapping[str, Any]:
    """``config`` itself, or with DISPATCHPROF_CONFIG_READS set a ReadKeys of it whose reads are written at exit."""
    folder = os.environ.get(ENV)
    if not folder:
        return config
    log: set[str] = set()
    atexit.register(_write, Path(folder), rule, log)
    return ReadKeys(config, "", log)


def _write(folder: Path, rule: str, log: set[str]) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{rule}.{os.getpid()}.{id(log)}.json"
    path.write_text(json.dumps({"rule": rule, "keys": sorted(log)}))


def outside_row(read: Iterable[str], row: Iterable[str], allowed: Iterable[str]) -> list[str]:
    """The keys read that no entry of the row covers (the entry itself or a key inside it), leaving out the
    ``allowed`` keys (those that change no result: x-reruns false) and a run's own ``_`` keys."""
    covering = [*row, *allowed]
    return sorted(
        key
        for key in read
        if not key.startswith("_") and not any(key == entry or key.startswith(entry + ".") for entry in covering)
    )
