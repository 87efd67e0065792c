"""The compiled oracles work from an install the user cannot write.

A copy of the package in a read-only directory, first on the path of a child process whose
home directory is read-only too, as for a service account running a system-wide install or
a read-only container: numba finds neither ``__pycache__`` beside the modules nor
``~/.cache/numba``. The child runs with the permission bits enforced: as an ordinary user
they are; as root (who ignores them) the child runs without the capabilities that bypass
them (``setpriv``), so that the directories are as unwritable to it as to anyone.
"""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
import sys
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[2] / "src"  # not from conftest: a sibling's wins

pytest.importorskip("numba", reason="the compiled oracles need numba (the fast extra)")
pytestmark = pytest.mark.skipif(not hasattr(os, "geteuid"), reason="POSIX permissions")

#: The capabilities that let root read and write whatever the permission bits say.
_BYPASS = "-dac_override,-dac_read_search"

#: Import the hierarchy package (numba sets up the caches of its compiled functions then),
#: compile and run one compiled oracle and one branch and bound; print where they came from.
_CHILD = """
import numpy as np
import ecrm
from ecrm.spaces.hierarchy import _branch, _compiled
tail, head = np.array([0, 0, 1, 2]), np.array([1, 2, 3, 3])
flow, reach = _compiled.max_flow(4, 0, 3, tail, head, np.array([3, 2, 2, 5]))
mask, solved = _branch.search(np.array([-1.0, 2.0]), np.array([0, 1], np.uint64),
                              np.zeros(0, np.uint64), np.zeros(0), 1000)
print(ecrm.__file__)
print(int(flow[tail == 0].sum()), int(mask), bool(solved))
"""


def _unprivileged(tmp_path) -> list[str]:
    """The command prefix that makes a child obey the permission bits; skips if none works."""
    if os.geteuid() != 0:
        return []
    setpriv = shutil.which("setpriv")
    if setpriv is None:
        pytest.skip("running as root and no setpriv to drop the capabilities that ignore "
                    "permission bits")
    prefix = [setpriv, f"--inh-caps={_BYPASS}", f"--bounding-set={_BYPASS}"]
    locked = tmp_path / "locked"
    locked.mkdir(mode=0o555)
    probe = subprocess.run([*prefix, sys.executable, "-c",
                            f"open({str(locked / 'x')!r}, 'w')"], capture_output=True)
    locked.rmdir()
    if probe.returncode == 0 or b"PermissionError" not in probe.stderr:
        pytest.skip(f"setpriv cannot drop the capabilities here: {probe.stderr[-200:]!r}")
    return prefix


def _read_only_copy(tmp_path):
    """The package copied to ``tmp_path/install`` (no byte-code or numba cache), every
    directory and file read-only."""
    install = tmp_path / "install"
    shutil.copytree(SRC / "ecrm", install / "ecrm",
                    ignore=shutil.ignore_patterns("__pycache__"))
    for folder, _, files in os.walk(install, topdown=False):
        for name in files:
            os.chmod(os.path.join(folder, name), 0o444)
        os.chmod(folder, 0o555)
    return install


def _writable_again(path) -> None:
    for folder, _, _ in os.walk(path):
        os.chmod(folder, 0o755)


@pytest.mark.parametrize("scratch", ["writable", "read-only"])
def test_compiled_oracles_run_from_a_read_only_install(tmp_path, scratch):
    prefix = _unprivileged(tmp_path)
    install = _read_only_copy(tmp_path)
    home = tmp_path / "home"
    home.mkdir(mode=0o555)
    temporary = tmp_path / "tmp"
    temporary.mkdir(mode=0o755 if scratch == "writable" else 0o555)
    env = {k: v for k, v in os.environ.items()
           if k not in ("NUMBA_CACHE_DIR", "XDG_CACHE_HOME", "PYTHONSTARTUP")}
    env.update(HOME=str(home), TMPDIR=str(temporary), PYTHONPATH=str(install),
               OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1")
    try:
        proc = subprocess.run([*prefix, sys.executable, "-c", _CHILD], cwd=tmp_path, env=env,
                              capture_output=True, text=True, timeout=600)
    finally:
        _writable_again(install)
    assert proc.returncode == 0, proc.stderr
    where, result = proc.stdout.splitlines()
    assert where == str(install / "ecrm" / "__init__.py")  # the read-only copy ran
    assert result == "4 1 True"  # max flow 2 + 2; the first label alone (cost -1)
    assert not any(p.name == "__pycache__" for p in install.rglob("*"))  # nothing written there
    assert list(home.iterdir()) == []
    cache = list(temporary.glob("ecrm-numba-*"))
    if scratch == "writable":  # cached in a private directory of this user's
        assert len(cache) == 1 and stat.S_IMODE(cache[0].stat().st_mode) == 0o700
        assert any(p.suffix == ".nbi" for p in cache[0].rglob("*"))
    else:  # nowhere to cache: compiled in the process
        assert cache == []


def test_a_cache_directory_others_can_write_is_not_used(tmp_path, monkeypatch):
    from ecrm.spaces.hierarchy._jit import private_cache_dir

    monkeypatch.setattr("tempfile.tempdir", str(tmp_path))
    private_cache_dir.cache_clear()
    try:
        mine = private_cache_dir()
        assert mine == str(tmp_path / f"ecrm-numba-{os.getuid()}")
        assert stat.S_IMODE(os.lstat(mine).st_mode) == 0o700
        private_cache_dir.cache_clear()
        os.chmod(mine, 0o777)  # planted or loosened: another user could put code there
        assert private_cache_dir() is None
        private_cache_dir.cache_clear()
        os.rmdir(mine)
        os.symlink(tmp_path, mine)  # a link to somewhere else
        assert private_cache_dir() is None
    finally:
        private_cache_dir.cache_clear()
