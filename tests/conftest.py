"""Shared test helpers: the library on sys.path, a throw-away copy of the workflow, snakemake runs."""

from __future__ import annotations

import shutil
import socket
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "workflow" / "scripts"))
FIXTURES = Path(__file__).resolve().parent / "fixtures"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class WorkflowCopy:
    """A copy of the repository in a temporary directory, run with the current Python's snakemake."""

    def __init__(self, root: Path):
        self.root = root

    def overlay(self, data: dict, name: str = "overlay.yaml") -> Path:
        path = self.root / name
        path.write_text(yaml.safe_dump(data))
        return path

    def snakemake(self, *args: str, overlay: dict | None = None, timeout: float = 600) -> subprocess.CompletedProcess:
        cmd = [sys.executable, "-m", "snakemake", "--cores", "2"]
        if overlay is not None:
            cmd += ["--configfile", "config/config.yaml", str(self.overlay(overlay))]
        cmd += list(args)
        return subprocess.run(cmd, cwd=self.root, capture_output=True, text=True, timeout=timeout)

    def status(self, stage: str, experiment: str = "baseline") -> dict:
        import json

        return json.loads((self.root / "results" / experiment / stage / "status.json").read_text())


@pytest.fixture
def workflow_copy(tmp_path: Path) -> WorkflowCopy:
    dest = tmp_path / "wf"
    ignore = shutil.ignore_patterns("results", ".snakemake", ".git", "__pycache__", ".pytest_cache", ".ruff_cache", ".hypothesis", "build", ".venv")
    shutil.copytree(ROOT, dest, ignore=ignore)
    return WorkflowCopy(dest)


def base_overlay(**sections: dict) -> dict:
    """A config overlay with a port nobody else uses, so tests never collide with a leftover store."""
    port = free_port()
    shmem = free_port()
    overlay: dict = {"cluster": {"master_port": port, "shmem_port": shmem, "ready_timeout": 30, "fail_grace": 3}}
    for key, value in sections.items():
        overlay.setdefault(key, {}).update(value) if isinstance(value, dict) else overlay.__setitem__(key, value)
    return overlay
