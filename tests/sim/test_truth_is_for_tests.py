"""The simulator's ground truth is for tests: nothing the workflow runs for its analysis may read it."""

from conftest import ROOT

ANALYSIS_SIDE = ["Snakefile", "workflow/rules", "workflow/scripts", "workflow/templates", "workflow/schemas"]


def test_no_rule_script_library_or_template_mentions_the_truth_file():
    readers = []
    for top in ANALYSIS_SIDE:
        path = ROOT / top
        files = (
            [path] if path.is_file() else [p for p in path.rglob("*") if p.is_file() and "__pycache__" not in p.parts]
        )
        assert files, top
        readers += [str(f.relative_to(ROOT)) for f in files if "sim_truth" in f.read_text(errors="replace")]
    assert readers == []


def test_the_simulator_documents_the_truth_schema():
    readme = (ROOT / "workflow" / "sim" / "README.md").read_text()
    assert "dispatchprof.sim_truth/2" in readme and "never reads it" in readme
