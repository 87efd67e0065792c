"""What is already at an output path: one rule for ``ecrm.save`` and the commands' outputs.

A FIFO or a character device is written through and stays what it is; a symbolic link is
followed and stays a link; a directory or a socket is refused; a special file is never
replaced by a regular one.
"""

from __future__ import annotations

import errno
import os
import socket
import stat
import threading

import numpy as np
import pytest

import ecrm
from _shapes import TREE7 as TREE
from ecrm import ECRM, save
from ecrm.losses import HammingLoss
from ecrm.model_files._atomic import OutputError, atomic_path, write_text

pytestmark = pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="POSIX special files")


@pytest.fixture(scope="module")
def model():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(30, 3))
    Y = TREE.close(X @ rng.normal(size=(3, TREE.n_outputs)) > 0.3)
    return ECRM(HammingLoss(), TREE, gamma=0.3).fit(X, Y)


def _read_fifo_while(fifo, run) -> bytes:
    """``run()`` while a thread reads ``fifo`` to its end; the bytes read."""
    got: list[bytes] = []

    def reader():
        with open(fifo, "rb") as fh:  # blocks until the writer opens the FIFO
            got.append(fh.read())

    thread = threading.Thread(target=reader, daemon=True)
    thread.start()
    try:
        run()
    finally:
        thread.join(timeout=30)
        if thread.is_alive():  # the writer never opened it: release the reader
            os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))
            thread.join(timeout=5)
    return got[0] if got else b""


def test_save_onto_a_fifo_writes_the_model_through_it(model, tmp_path):
    fifo = tmp_path / "m.ecrm"
    os.mkfifo(fifo)
    data = _read_fifo_while(fifo, lambda: save(model, fifo))
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)  # still the FIFO
    assert sorted(p.name for p in tmp_path.iterdir()) == ["m.ecrm"]  # no temporary file
    (tmp_path / "read.ecrm").write_bytes(data)
    X = np.random.default_rng(1).normal(size=(7, 3))
    np.testing.assert_array_equal(ecrm.load(tmp_path / "read.ecrm").predict(X),
                                  model.predict(X))


def _null_device(path) -> None:
    """A character device like /dev/null at ``path`` (needs the right to make devices)."""
    try:
        os.mknod(path, stat.S_IFCHR | 0o666, os.makedev(1, 3))
    except OSError as exc:  # not root, or a container without CAP_MKNOD
        pytest.skip(f"cannot make a character device here ({exc.strerror})")
    try:
        with open(path, "wb") as fh:  # a file system mounted nodev refuses to open it
            fh.write(b"")
    except OSError as exc:
        pytest.skip(f"cannot open a character device made here ({exc.strerror})")


def test_save_onto_a_character_device_writes_through_and_keeps_the_device(model, tmp_path):
    device = tmp_path / "null"
    _null_device(device)
    before = os.lstat(device)
    save(model, device)
    after = os.lstat(device)
    assert stat.S_ISCHR(after.st_mode) and after.st_rdev == before.st_rdev
    assert after.st_ino == before.st_ino  # the same device node, not a new file
    assert sorted(p.name for p in tmp_path.iterdir()) == ["null"]


def test_save_through_a_symlink_replaces_the_target_and_keeps_the_link(model, tmp_path):
    target = tmp_path / "models" / "real.ecrm"
    target.parent.mkdir()
    target.write_bytes(b"the old model")
    link = tmp_path / "current.ecrm"
    link.symlink_to(target)
    save(model, link)
    assert link.is_symlink() and os.readlink(link) == str(target)
    assert ecrm.load(target).n_features_in_ == 3
    assert sorted(p.name for p in tmp_path.iterdir()) == ["current.ecrm", "models"]
    assert sorted(p.name for p in target.parent.iterdir()) == ["real.ecrm"]


def test_save_through_a_dangling_symlink_makes_its_target(model, tmp_path):
    link = tmp_path / "current.ecrm"
    link.symlink_to(tmp_path / "new.ecrm")
    save(model, link)
    assert link.is_symlink() and ecrm.load(tmp_path / "new.ecrm").n_features_in_ == 3


def test_save_through_a_symlink_to_a_fifo_writes_through_the_fifo(model, tmp_path):
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    link = tmp_path / "m.ecrm"
    link.symlink_to(fifo)
    data = _read_fifo_while(fifo, lambda: save(model, link))
    assert link.is_symlink() and stat.S_ISFIFO(os.stat(link).st_mode)
    assert data.startswith(b"PK")


def test_save_refuses_a_socket_and_a_directory(model, tmp_path):
    with socket.socket(socket.AF_UNIX) as sock:
        sock.bind(str(tmp_path / "s.ecrm"))
        with pytest.raises(ValueError, match=r"'.*s\.ecrm': it is a socket; expected a "
                                              "regular file, a FIFO or a character device"):
            save(model, tmp_path / "s.ecrm")
        assert stat.S_ISSOCK(os.lstat(tmp_path / "s.ecrm").st_mode)
    (tmp_path / "d.ecrm").mkdir()
    with pytest.raises(ValueError, match="it is a directory"):
        save(model, tmp_path / "d.ecrm")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["d.ecrm", "s.ecrm"]


def test_a_failed_write_leaves_a_fifo_untouched_and_nothing_beside_it(tmp_path):
    fifo = tmp_path / "p"
    os.mkfifo(fifo)
    with pytest.raises(OSError, match="disk full"), atomic_path(fifo) as tmp:
        with open(tmp, "w") as fh:
            fh.write("half")
        raise OSError(errno.ENOSPC, "disk full")
    # the FIFO was never opened for writing (a reader would have blocked the test) and stays
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["p"]


def test_write_text_refuses_a_loop_of_links(tmp_path):
    (tmp_path / "a").symlink_to(tmp_path / "b")
    (tmp_path / "b").symlink_to(tmp_path / "a")
    with pytest.raises(OutputError, match="cannot be looked up"):
        write_text(tmp_path / "a", "x")
