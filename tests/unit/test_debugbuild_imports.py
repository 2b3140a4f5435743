"""The DEBUG_CLOCK_ON run imports the worktree's build under every toolchain, and says which library it loaded."""

import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

from dispatchprof.tools.building import build_environment
from dispatchprof.tools.debugbuild import DebugTree, imported_from_tree, loaded_libraries
from dispatchprof.tools.toolchain import Toolchain

TEMPLATES = Path(__file__).parents[2] / "workflow/templates"


def test_the_import_root_leads_pythonpath_under_cann_as_under_sim(tmp_path):
    tree = tmp_path / "tree"
    for name in ("cann", "sim"):
        chain = Toolchain(name, tree, tmp_path, set_env="/x/set_env.sh", import_root=tree)
        sets, prepend = chain.own_env()
        assert prepend["PYTHONPATH"] == [str(tree)] and sets["DISPATCHPROF_IMPORT_ROOT"] == str(tree)
        env = chain.env(base={"PYTHONPATH": "/site/installed"})
        assert env["PYTHONPATH"].split(os.pathsep) == [str(tree), "/site/installed"]
    plain = Toolchain("cann", tree, tmp_path)
    assert "PYTHONPATH" not in plain.own_env()[1] and "DISPATCHPROF_IMPORT_ROOT" not in plain.own_env()[0]


def test_build_dir_is_inside_the_repository_being_built_unless_build_env_says_otherwise(tmp_path):
    chain = Toolchain("cann", tmp_path / "tree", tmp_path)
    assert build_environment(chain, {"DEBUG_CLOCK_ON": "ON"}) == {
        "BUILD_DIR": str(tmp_path / "tree/build"),
        "DEBUG_CLOCK_ON": "ON",
    }
    assert build_environment(chain, {"BUILD_DIR": "/mine"}, "out")["BUILD_DIR"] == "/mine"
    assert build_environment(chain, {}, "out/b")["BUILD_DIR"] == str(tmp_path / "tree/out/b")


def _package(root: Path, native: bool) -> Path:
    pkg = root / "ascend_deepep"
    pkg.mkdir(parents=True)
    (root / "build").mkdir()
    (root / "build/libascend_deepep_kernels.so").write_bytes(b"kernels of " + str(root).encode())
    line = (
        "from pathlib import Path\nKERNEL_LIBRARY = Path(__file__).resolve().parents[1] "
        "/ 'build' / 'libascend_deepep_kernels.so'\n"
    )
    (pkg / "__init__.py").write_text(line if native else "")
    return pkg


def _run_runtime(tmp_path: Path, first: Path, second: Path, root: Path | None) -> subprocess.CompletedProcess:
    """The runtime in a child whose PYTHONPATH puts ``first`` before ``second``, as CANN's set_env.sh may, with the
    driver's header line for DISPATCHPROF_IMPORT_ROOT."""
    code = (
        "import os, sys\n"
        "sys.path[:0] = [os.environ['DISPATCHPROF_IMPORT_ROOT']] "
        "if os.environ.get('DISPATCHPROF_IMPORT_ROOT') else []\n"
        f"sys.path.insert(0, {str(TEMPLATES)!r})\n"
        "import dispatchprof_perf_runtime as rt\n"
        "rt.record_library()\n"
    )
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(first), str(second)]),
        "DISPATCHPROF_OUT": str(tmp_path / "out"),
        "RANK_ID": "3",
    }
    env.pop("DISPATCHPROF_IMPORT_ROOT", None)
    if root is not None:
        env["DISPATCHPROF_IMPORT_ROOT"] = str(root)
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=60)


def test_the_runtime_names_the_package_and_library_it_loaded_with_sha256(tmp_path):
    installed, tree = tmp_path / "installed", tmp_path / "tree"
    _package(installed, True)
    _package(tree, True)
    done = _run_runtime(
        tmp_path, installed, tree, tree
    )  # the installed copy is first on PYTHONPATH: the root still wins
    assert done.returncode == 0, done.stderr
    record = json.loads((tmp_path / "out/library/rank3.json").read_text())
    assert record["file"] == str((tree / "ascend_deepep/__init__.py").resolve())
    lib = (tree / "build/libascend_deepep_kernels.so").resolve()
    digest = hashlib.sha256(lib.read_bytes()).hexdigest()
    assert {"path": str(lib), "sha256": digest} in record["files"]
    assert f"[rank 3] dispatchprof: loaded {lib} sha256 {digest}" in done.stdout
    loaded = loaded_libraries(tmp_path / "out")
    assert imported_from_tree(loaded, tree)[0]
    ok, why = imported_from_tree(loaded, installed)
    assert not ok and "not the DEBUG build's checkout" in why and digest in why


def test_without_the_import_root_the_installed_package_wins_and_the_check_fails(tmp_path):
    installed, tree = tmp_path / "installed", tmp_path / "tree"
    _package(installed, False)
    _package(tree, False)
    done = _run_runtime(tmp_path, installed, tree, None)
    assert done.returncode == 0, done.stderr
    loaded = loaded_libraries(tmp_path / "out")
    assert loaded["modules"] == [str((installed / "ascend_deepep/__init__.py").resolve())]
    ok, why = imported_from_tree(loaded, tree)
    assert not ok and str((installed / "ascend_deepep/__init__.py").resolve()) in why


def test_a_run_without_records_fails_the_check_saying_so(tmp_path):
    ok, why = imported_from_tree(loaded_libraries(tmp_path), tmp_path / "tree")
    assert not ok and "no rank named the package" in why
    (tmp_path / "library").mkdir()
    (tmp_path / "library/rank0.json").write_text(
        json.dumps({"error": "ModuleNotFoundError: No module named 'ascend_deepep'"})
    )
    ok, why = imported_from_tree(loaded_libraries(tmp_path), tmp_path / "tree")
    assert not ok and "ModuleNotFoundError" in why


def test_build_debug_gives_the_toolchain_its_import_root(tmp_path, monkeypatch):
    import dispatchprof.tools.debugbuild as debugbuild

    seen = {}
    monkeypatch.setattr(
        debugbuild,
        "run_build",
        lambda chain, command, env, timeout, log, build_dir: seen.update(chain=chain, env=env, build_dir=build_dir),
    )
    chain, _ = debugbuild.build_debug(
        Toolchain("cann", tmp_path / "repo", tmp_path),
        DebugTree(tmp_path / "tree", "copy"),
        ["true"],
        {"A": "1"},
        5,
        tmp_path / "l",
        "b",
    )
    assert (
        chain.repo == chain.import_root == tmp_path / "tree"
        and seen["env"] == {"A": "1", "DEBUG_CLOCK_ON": "ON"}
        and seen["build_dir"] == "b"
    )


def _libm() -> Path:
    """The C maths library this Python has mapped (CPython links it), found in /proc/self/maps."""
    for line in Path("/proc/self/maps").read_text().splitlines():
        path = line.split()[-1]
        if "/libm.so" in path or "/libm-" in path:
            return Path(path)
    raise AssertionError("libm is not mapped in this process")


def test_only_libraries_of_the_package_or_the_import_root_are_named(tmp_path):
    """An installed package: a shared object mapped from its own directory is named, one of another package in the
    same site-packages (torch's) is not, nor a system library."""
    libm, site = _libm(), tmp_path / "site"
    _package(site, False)
    own, other = site / "ascend_deepep/_C.so", site / "torch/lib/libtorch_stub.so"
    other.parent.mkdir(parents=True)
    for path in (own, other):
        path.write_bytes(libm.read_bytes())
    code = (
        "import ctypes, json, sys\n"
        f"sys.path[:0] = [{str(site)!r}, {str(TEMPLATES)!r}]\n"
        "import ascend_deepep\n"
        f"ctypes.CDLL({str(own)!r}); ctypes.CDLL({str(other)!r})\n"
        "import dispatchprof_perf_runtime as rt\n"
        "print(json.dumps([f['path'] for f in rt.loaded_library()['files']]))\n"
    )
    env = {k: v for k, v in os.environ.items() if k != "DISPATCHPROF_IMPORT_ROOT"} | {
        "DISPATCHPROF_OUT": str(tmp_path / "out")
    }
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=60)
    assert done.returncode == 0, done.stderr
    named = json.loads(done.stdout)
    assert (
        str(own.resolve()) in named
        and str(other.resolve()) not in named
        and not any(p.startswith(str(libm.parent)) for p in named)
    )
