"""requirements.txt holds what the workflow's own commands import, beyond what snakemake itself requires."""

import ast
import re
from importlib.metadata import requires
from pathlib import Path

import snakemake

from conftest import ROOT


def listed_requirements() -> set[str]:
    names = set()
    for line in (ROOT / "requirements.txt").read_text().splitlines():
        line = line.split("#", 1)[0].strip()
        if line:
            names.add(re.split(r"[<>=!~\[ ]", line, maxsplit=1)[0].lower())
    return names


def top_level_imports(directory: Path) -> set[str]:
    found = set()
    for path in directory.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                found |= {alias.name.split(".")[0] for alias in node.names}
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                found.add(node.module.split(".")[0])
    return found


def test_snakemakes_report_imports_are_installed_by_requirements_txt():
    # `snakemake --report` failed on a fresh install: its HTML reporter imports pygments, which snakemake
    # does not require (pytest pulled it into the test environment only).
    unconditional = [
        r for r in requires("snakemake") or [] if "extra ==" not in r
    ]  # pygments is only in its "reports" extra
    snakemake_requires = {re.split(r"[<>=!~\[ ;]", r, maxsplit=1)[0].lower() for r in unconditional}
    reporter = Path(snakemake.__file__).parent / "report" / "html_reporter"
    third_party = {"pygments"} & top_level_imports(reporter)
    assert third_party, "the reporter no longer imports pygments: revisit this test"
    assert third_party - snakemake_requires <= listed_requirements()
