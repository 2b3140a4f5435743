"""deepep.ref: a commit, tag or branch of deepep.repo resolves to its sha (git rev-parse --verify, an argument list);
one that does not is refused with a message naming the ref and the repository, when the config is read."""

from pathlib import Path

import pytest

from conftest import git
from dispatchprof.shell.config import ref_problems
from dispatchprof.shell.gitref import RefError, diff_stat, file_at, repo_prefix, resolve_ref
from dispatchprof.tools.debugbuild import imported_own_build, make_tree


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    """A repository whose deepep.repo is a subdirectory (as the stand-in is in the workflow's own repository)."""
    top = tmp_path / "top"
    (top / "pkg").mkdir(parents=True)
    git(top, "init", "-q", "-b", "main")
    (top / "pkg" / "k.cpp").write_text("constexpr float WORK_URMASendToken = 1.0f;\n")
    git(top, "add", ".")
    git(top, "commit", "-q", "-m", "one")
    git(top, "tag", "v1")
    git(top, "branch", "first")
    (top / "pkg" / "k.cpp").write_text("constexpr float WORK_URMASendToken = 0.8f;\n")
    git(top, "commit", "-q", "-am", "two")
    return top / "pkg"


def test_a_commit_a_tag_and_a_branch_resolve_to_their_sha(repo: Path) -> None:
    first, second = git(repo, "rev-parse", "HEAD~1"), git(repo, "rev-parse", "HEAD")
    assert first != second
    assert resolve_ref(repo, "HEAD") == second
    assert resolve_ref(repo, first[:10]) == first  # an abbreviated commit
    assert resolve_ref(repo, "v1") == first  # a tag (lightweight)
    assert resolve_ref(repo, "first") == first  # a branch
    assert resolve_ref(repo, "main") == second
    git(repo, "tag", "-a", "v2", "-m", "annotated")
    assert resolve_ref(repo, "v2") == second  # an annotated tag names its commit, not the tag object


@pytest.mark.parametrize("ref", ["no-such-branch", "0123456789abcdef0123", "HEAD~9", "--all", "main; rm -rf /"])
def test_a_ref_that_does_not_resolve_is_named_with_the_repo(repo: Path, ref: str) -> None:
    with pytest.raises(RefError) as caught:
        resolve_ref(repo, ref)
    assert repr(ref) in str(caught.value) and str(repo) in str(caught.value)


def test_a_repo_outside_git_is_said_so(tmp_path: Path) -> None:
    with pytest.raises(RefError, match="not in a git repository"):
        resolve_ref(tmp_path, "HEAD")


def test_the_config_check_refuses_a_bad_ref_naming_it_and_passes_a_good_one(repo: Path) -> None:
    config = {"mode": "collect", "toolchain": "sim", "deepep": {"repo": str(repo), "ref": "nope"}}
    (problem,) = ref_problems(config)
    assert "deepep.ref 'nope'" in problem and str(repo) in problem
    assert ref_problems({**config, "deepep": {"repo": str(repo), "ref": "v1"}}) == []
    assert ref_problems({**config, "deepep": {"repo": str(repo), "ref": None}}) == []


def test_the_worktree_of_a_ref_holds_the_subdirectory_at_that_commit(repo: Path, tmp_path: Path) -> None:
    sha = resolve_ref(repo, "v1")
    assert repo_prefix(repo) == "pkg/"
    assert file_at(repo, sha, "k.cpp") == "constexpr float WORK_URMASendToken = 1.0f;\n"
    tree = make_tree(repo, tmp_path / "results" / "tree", ref=sha)
    assert tree.path == (tmp_path / "results" / "tree" / "pkg").resolve() and tree.how == "git worktree"
    assert "1.0f" in (tree.path / "k.cpp").read_text()  # the ref's commit, not HEAD
    assert git(tree.path, "rev-parse", "HEAD") == sha
    again = make_tree(repo, tmp_path / "results" / "tree", ref=resolve_ref(repo, "HEAD"))  # replaced, not stacked
    assert "0.8f" in (again.path / "k.cpp").read_text()
    stat = diff_stat(repo, sha, resolve_ref(repo, "HEAD"))
    assert (stat["files_changed"], stat["insertions"], stat["deletions"]) == (1, 1, 1)
    assert stat["files"][0]["path"] == "pkg/k.cpp"


def test_a_run_proves_it_imported_its_own_build(tmp_path: Path) -> None:
    tree = tmp_path / "tree"
    (tree / "build").mkdir(parents=True)
    record = {"ref": "v1", "sha": "a" * 40, "libraries": [{"path": "build/lib.so", "sha256": "1" * 64}]}

    def loaded(sha256: str, module: Path = tree / "pkg" / "__init__.py") -> dict:
        return {
            "modules": [str(module)],
            "files": {str(tree / "build" / "lib.so"): {"sha256": [sha256], "ranks": 2}},
            "unknown": [],
        }

    ok, why = imported_own_build(loaded("1" * 64), record, tree)
    assert ok and "build/lib.so" in why
    ok, why = imported_own_build(loaded("2" * 64), record, tree)
    assert not ok and "other than deepep.ref 'v1'" in why and "2" * 64 in why
    ok, why = imported_own_build(loaded("1" * 64, tmp_path / "elsewhere" / "__init__.py"), record, tree)
    assert not ok and "the run imported" in why and "not deepep.ref 'v1''s checkout" in why
    ok, why = imported_own_build(loaded("1" * 64), {**record, "libraries": []}, tree)
    assert not ok and "cannot prove" in why


def test_the_workflow_commit_is_its_head_dirty_when_a_tracked_file_changed_and_none_outside_git(repo: Path, tmp_path):
    from dispatchprof.shell.gitref import workflow_commit

    top = repo.parent
    head = git(top, "rev-parse", "HEAD").strip()
    assert workflow_commit(top) == head
    (top / "untracked.txt").write_text("not part of the checkout\n")
    assert workflow_commit(top) == head  # an untracked file changes no tracked code
    (top / "pkg" / "k.cpp").write_text("constexpr float WORK_URMASendToken = 2.0f;\n")
    assert workflow_commit(top) == f"{head}-dirty"
    outside = tmp_path / "plain"
    outside.mkdir()
    assert workflow_commit(outside) is None
