"""The patch of Snakemake's private cleanup methods (dispatchprof.shell.snakemake_patch): applied on the tested
version only, refused with a note naming the installed version and the consequence otherwise."""

from __future__ import annotations

import errno

import pytest
import snakemake
import snakemake.api  # noqa: F401  (first: snakemake.dag alone is a circular import)
from snakemake.dag import DAG
from snakemake.jobs import Job

from dispatchprof.shell import snakemake_patch
from dispatchprof.shell.snakemake_patch import TESTED_VERSIONS, shape_problem, tolerate_unwritable_results


@pytest.fixture
def unpatched(monkeypatch: pytest.MonkeyPatch) -> None:
    """Snakemake's own methods, restored after the test (another test of this process may have patched them)."""
    for cls, name in ((DAG, "cleanup_workdir"), (Job, "cleanup")):
        method = getattr(cls, name)
        monkeypatch.setattr(cls, name, getattr(method, "__wrapped__", method))


def test_the_installed_snakemake_is_a_tested_one() -> None:
    # requirements.txt allows >=9.20,<10; the venv's is the one the patch was run on
    assert snakemake.__version__ in TESTED_VERSIONS
    assert shape_problem(DAG, Job) is None


def test_on_the_tested_version_both_methods_are_patched_once(unpatched: None) -> None:
    original = DAG.cleanup_workdir
    assert tolerate_unwritable_results() is None
    patched = DAG.cleanup_workdir
    assert patched is not original and patched.__wrapped__ is original and Job.cleanup.__wrapped__
    assert tolerate_unwritable_results() is None and DAG.cleanup_workdir is patched  # not wrapped twice


def test_an_unknown_version_is_refused_naming_it_and_the_consequence(
    unpatched: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(snakemake, "__version__", "9.99.0")
    original_dirs, original_job = DAG.cleanup_workdir, Job.cleanup
    note = tolerate_unwritable_results()
    assert note is not None
    assert "Snakemake 9.99.0 is installed" in note and "not applied" in note
    assert "tested on Snakemake 9.27.1" in note and "traceback" in note
    assert DAG.cleanup_workdir is original_dirs and Job.cleanup is original_job


def test_a_changed_method_on_a_tested_version_is_refused(unpatched: None, monkeypatch: pytest.MonkeyPatch) -> None:
    def cleanup(self, skip_outputs, extra):  # a later release's signature, and no longer async
        return None

    monkeypatch.setattr(Job, "cleanup", cleanup)
    note = tolerate_unwritable_results()
    assert note is not None and "Job.cleanup must take (self, skip_outputs)" in note
    assert Job.cleanup is cleanup and not getattr(DAG.cleanup_workdir, "dispatchprof", False)


def test_the_patched_cleanup_says_one_line_for_an_unwritable_directory_and_raises_other_errors(
    unpatched: None, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    raised: list[OSError] = []

    def failing(self):
        raise raised[0]

    monkeypatch.setattr(DAG, "cleanup_workdir", failing)
    assert tolerate_unwritable_results() is None
    raised.append(OSError(errno.EROFS, "Read-only file system", "results/x"))
    DAG.cleanup_workdir(object())
    err = capsys.readouterr().err
    assert (
        err == "snakemake: cannot remove the empty output directory results/x (Read-only file system): left as it is\n"
    )
    raised[0] = OSError(errno.ENOENT, "No such file or directory", "results/y")
    with pytest.raises(OSError, match="No such file"):
        DAG.cleanup_workdir(object())


def test_the_module_names_what_is_lost() -> None:
    assert "end-of-run table" in snakemake_patch.CONSEQUENCE
