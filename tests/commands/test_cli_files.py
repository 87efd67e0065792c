"""Safe files, run through the real ``ecrm`` entry point (``python -m ecrm`` in a child process).

Inputs are never written over, outputs are checked before any work and written atomically,
interrupts end with one line and no leftovers, ``-o -`` is standard output, a closed pipe
ends quietly; a FIFO or a device is written through, never replaced.
"""

from __future__ import annotations

import csv
import errno
import io
import os
import signal
import socket
import stat
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

import ecrm
from _ids import named, readable
from ecrm.cli import main


def _one_error_line(proc, message: str, status: int = 2) -> None:
    err = proc.stderr.decode()
    assert proc.returncode == status, err
    assert message in err and "Traceback" not in err
    assert len(err.strip().splitlines()) == 1, err


@pytest.fixture(scope="module")
def model_file(train_csv, tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("model") / "m.ecrm"
    assert main(["fit", str(train_csv), "--path-sep", "/", "-o", str(path), "--quiet"]) == 0
    return path


@pytest.fixture
def train(train_csv, tmp_path) -> Path:
    path = tmp_path / "train.csv"
    path.write_bytes(train_csv.read_bytes())
    return path


# -- never write over an input ---------------------------------------------------------------
@pytest.mark.parametrize("link", ["same", "symlink", "hardlink"])
def test_fit_refuses_to_write_over_its_training_file(ecrm_cmd, tmp_path, train, link):
    before = train.read_bytes()
    out = train
    if link == "symlink":
        out = tmp_path / "link.csv"
        out.symlink_to(train)
    elif link == "hardlink":
        out = tmp_path / "hard.csv"
        os.link(train, out)
    proc = ecrm_cmd("fit", train.name, "-o", out.name, "--quiet", cwd=tmp_path)
    _one_error_line(proc, "is the input file")
    assert train.read_bytes() == before and not proc.stdout


def test_fit_refuses_to_write_over_its_hierarchy_file(ecrm_cmd, tmp_path, train):
    (tmp_path / "h.tsv").write_text("science\tscience/physics\n")
    proc = ecrm_cmd("fit", "train.csv", "--hierarchy", "h.tsv", "-o", "h.tsv", cwd=tmp_path)
    _one_error_line(proc, "-o 'h.tsv' is the input file 'h.tsv'")
    assert (tmp_path / "h.tsv").read_text() == "science\tscience/physics\n"


@pytest.mark.parametrize("target", ["model", "data"])
def test_predict_refuses_to_write_over_its_inputs(ecrm_cmd, test_csv, tmp_path, model_file, target):
    data = tmp_path / "test.csv"
    data.write_bytes(test_csv.read_bytes())
    out = model_file if target == "model" else data
    before = out.read_bytes()
    proc = ecrm_cmd("predict", str(model_file), str(data), "-o", str(out),
                    "--output-format", "csv", "--quiet", cwd=tmp_path)
    _one_error_line(proc, "is the input file")
    assert out.read_bytes() == before


# -- outputs checked before the work ----------------------------------------------------------
def _unwritable_dir(tmp_path) -> Path:
    if os.geteuid() == 0:  # root writes anywhere chmod forbids; /proc takes no new files
        if not os.path.isdir("/proc/self"):
            pytest.skip("needs a directory that refuses new files")
        return Path("/proc")
    folder = tmp_path / "ro"
    folder.mkdir()
    folder.chmod(0o500)
    return folder


def test_unwritable_output_directory_is_refused_before_reading_the_data(ecrm_cmd, tmp_path):
    # the data file is malformed: an error about it would mean the data was read first
    (tmp_path / "bad.csv").write_text("x,labels\nfoo,a\n")
    folder = _unwritable_dir(tmp_path)
    proc = ecrm_cmd("fit", "bad.csv", "-o", str(folder / "m.ecrm"), "--quiet", cwd=tmp_path)
    _one_error_line(proc, f"cannot create a file in '{folder}'")


def test_predict_unwritable_output_is_refused_before_loading(ecrm_cmd, tmp_path, train):
    folder = _unwritable_dir(tmp_path)
    # the model is not a model file: the output is checked first
    proc = ecrm_cmd("predict", "train.csv", "train.csv", "-o", str(folder / "p.csv"),
                    cwd=tmp_path)
    _one_error_line(proc, "cannot create a file in")


# -- standard output, closed pipes ---------------------------------------------------------------
def test_predict_dash_o_dash_writes_to_standard_output(ecrm_cmd, test_csv, tmp_path, model_file):
    proc = ecrm_cmd("predict", str(model_file), str(test_csv), "-o", "-", "--quiet", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert not (tmp_path / "-").exists()
    assert "100 predictions written to standard output" in proc.stderr.decode()
    assert main(["predict", str(model_file), str(test_csv), "-o", str(tmp_path / "p.csv"),
                 "--quiet"]) == 0
    assert proc.stdout == (tmp_path / "p.csv").read_bytes()
    rows = list(csv.DictReader(io.StringIO(proc.stdout.decode())))
    assert len(rows) == 100


def test_fit_dash_o_dash_writes_the_model_to_standard_output(ecrm_cmd, tmp_path, train):
    proc = ecrm_cmd("fit", "train.csv", "--path-sep", "/", "-o", "-", "--quiet", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["train.csv"]
    assert "model written to standard output" in proc.stderr.decode()
    (tmp_path / "piped.ecrm").write_bytes(proc.stdout)
    model = ecrm.load(tmp_path / "piped.ecrm")
    assert model.n_features_in_ == 6


@pytest.mark.parametrize("argv", [["info", "--json", "{model}"],
                                  ["predict", "{model}", "{data}", "-o", "-", "--scores"]],
                         ids=readable)
def test_closed_standard_output_ends_quietly(test_csv, subprocess_env, tmp_path, model_file, argv):
    data = tmp_path / "many.csv"
    lines = test_csv.read_text().splitlines()
    data.write_text("\n".join(lines[:1] + lines[1:] * 30) + "\n")
    argv = [a.format(model=model_file, data=data) for a in argv]
    argv += ["--quiet"] if argv[0] == "predict" else []
    proc = subprocess.Popen([sys.executable, "-m", "ecrm", *argv], cwd=tmp_path, env=subprocess_env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    proc.stdout.close()  # as `| head -c 0` would, before the command writes
    err = proc.stderr.read().decode()
    assert proc.wait(timeout=300) == 141
    assert err == ""


@pytest.mark.parametrize("argv, message", named([
    (["info", "{model}"], "ecrm: error: standard output is closed: nothing can be printed"),
    (["info", "--json", "{model}"], "ecrm: error: standard output is closed"),
    (["predict", "{model}", "{data}", "-o", "-", "--quiet"],
     "ecrm: error: -o -: standard output is closed; give a file path"),
    (["fit", "{data}", "-o", "-", "--quiet"], "ecrm: error: -o -: standard output is closed"),
    # the commands that print their results or a summary there refuse before any work
    (["evaluate", "{model}", "{data}", "--path-sep", "/", "--quiet"],
     "ecrm: error: standard output is closed: nothing can be printed (ecrm evaluate prints "
     "there; redirect it to a file or /dev/null instead)"),
    (["predict", "{model}", "{data}", "-o", "p.csv", "--quiet"],
     "ecrm: error: standard output is closed: nothing can be printed (ecrm predict"),
    (["fit", "{data}", "-o", "m.ecrm", "--quiet"],
     "ecrm: error: standard output is closed: nothing can be printed (ecrm fit"),
    (["reproduce", "flow", "--trials", "1", "--n-train", "5", "--n-test", "5", "--n-val", "5",
      "--jobs", "1", "--quiet"],
     "ecrm: error: standard output is closed: nothing can be printed (ecrm reproduce flow")]))
def test_standard_output_closed_from_the_start_is_one_error_line(test_csv, subprocess_env,
                                                                  tmp_path, model_file, argv,
                                                                  message):
    argv = [a.format(model=model_file, data=test_csv) for a in argv]
    proc = subprocess.run([sys.executable, "-m", "ecrm", *argv], cwd=tmp_path,
                          env=subprocess_env, stderr=subprocess.PIPE, timeout=300,
                          preexec_fn=lambda: os.close(1))  # as `ecrm ... >&-`
    _one_error_line(proc, message)
    assert sorted(p.name for p in tmp_path.iterdir()) == []


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="needs /dev/full")
@pytest.mark.parametrize("argv", [["info", "{model}"], ["info", "--json", "{model}"],
                                  ["predict", "{model}", "{data}", "-o", "-", "--quiet"],
                                  ["evaluate", "{model}", "{data}", "--path-sep", "/",
                                   "--quiet"]], ids=readable)
def test_standard_output_that_refuses_the_text_is_one_error_line(test_csv, subprocess_env,
                                                                 tmp_path, model_file, argv):
    argv = [a.format(model=model_file, data=test_csv) for a in argv]
    with open("/dev/full", "w") as full:  # every write: "No space left on device"
        proc = subprocess.run([sys.executable, "-m", "ecrm", *argv], cwd=tmp_path,
                              env=subprocess_env, stdout=full, stderr=subprocess.PIPE,
                              timeout=300)
    _one_error_line(proc, os.strerror(errno.ENOSPC))


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="needs /dev/full")
def test_a_report_the_disk_refuses_is_one_error_line(ecrm_cmd, test_csv, tmp_path, model_file):
    proc = ecrm_cmd("evaluate", str(model_file), str(test_csv), "--path-sep", "/", "--report",
                    "/dev/full", "--quiet", cwd=tmp_path)
    _one_error_line(proc, f"ecrm: error: cannot write the output: {os.strerror(errno.ENOSPC)}")
    assert stat.S_ISCHR(os.stat("/dev/full").st_mode)  # written through, not replaced


# -- special files: written directly, never replaced ------------------------------------------
def _read_fifo_while(fifo: Path, run) -> tuple[object, bytes]:
    """``run()`` while a thread reads ``fifo`` to its end; its result and the bytes read."""
    got: list[bytes] = []

    def reader():
        with open(fifo, "rb") as fh:  # blocks until the command opens the FIFO
            got.append(fh.read())

    thread = threading.Thread(target=reader, daemon=True)
    thread.start()
    result = run()
    thread.join(timeout=5)
    if thread.is_alive():  # the command never opened it: release the reader
        os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))
        thread.join(timeout=5)
    return result, got[0] if got else b""


def test_predict_into_a_fifo_writes_through_it_and_leaves_it(ecrm_cmd, test_csv, tmp_path,
                                                              model_file):
    fifo = tmp_path / "p.csv"
    os.mkfifo(fifo)
    proc, data = _read_fifo_while(fifo, lambda: ecrm_cmd(
        "predict", str(model_file), str(test_csv), "-o", "p.csv", "--quiet", cwd=tmp_path))
    assert proc.returncode == 0, proc.stderr
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)  # still the FIFO, not a regular file
    assert sorted(p.name for p in tmp_path.iterdir()) == ["p.csv"]  # no temporary file
    assert "100 predictions written to p.csv" in proc.stderr.decode() and not proc.stdout
    assert main(["predict", str(model_file), str(test_csv), "-o", str(tmp_path / "q.csv"),
                 "--quiet"]) == 0
    assert data == (tmp_path / "q.csv").read_bytes()


def test_fit_into_a_fifo_writes_the_model_through_it(ecrm_cmd, tmp_path, train):
    fifo = tmp_path / "m.ecrm"
    os.mkfifo(fifo)
    proc, data = _read_fifo_while(fifo, lambda: ecrm_cmd(
        "fit", "train.csv", "--path-sep", "/", "-o", "m.ecrm", "--quiet", cwd=tmp_path))
    assert proc.returncode == 0, proc.stderr
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode) and not proc.stdout
    assert sorted(p.name for p in tmp_path.iterdir()) == ["m.ecrm", "train.csv"]
    (tmp_path / "read.ecrm").write_bytes(data)
    assert ecrm.load(tmp_path / "read.ecrm").n_features_in_ == 6


def test_dash_o_dev_stdout_onto_a_pipe_writes_the_predictions(ecrm_cmd, test_csv, tmp_path,
                                                               model_file):
    if not os.path.exists("/dev/stdout"):
        pytest.skip("no /dev/stdout")
    proc = ecrm_cmd("predict", str(model_file), str(test_csv), "-o", "/dev/stdout",
                    "--output-format", "csv", "--quiet", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "100 predictions written to /dev/stdout" in proc.stderr.decode()
    assert len(list(csv.DictReader(io.StringIO(proc.stdout.decode())))) == 100


@pytest.mark.parametrize("how", ["dash", "path"])
def test_fit_refuses_to_write_the_binary_model_onto_a_terminal(subprocess_env, tmp_path, train,
                                                              how):
    pty = pytest.importorskip("pty")
    main_fd, terminal_fd = pty.openpty()
    try:
        terminal = os.ttyname(terminal_fd)
        out, stdout = ("-", terminal_fd) if how == "dash" else (terminal, subprocess.PIPE)
        proc = subprocess.run([sys.executable, "-m", "ecrm", "fit", "train.csv", "-o", out,
                               "--quiet"], cwd=tmp_path, env=subprocess_env, stdout=stdout,
                              stderr=subprocess.PIPE, timeout=300)
    finally:
        os.close(terminal_fd)
        os.close(main_fd)
    _one_error_line(proc, f"-o {out} writes the binary model file to a terminal")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["train.csv"]


def test_a_socket_as_output_is_refused(ecrm_cmd, test_csv, tmp_path, model_file):
    with socket.socket(socket.AF_UNIX) as sock:
        sock.bind(str(tmp_path / "p.csv"))
        proc = ecrm_cmd("predict", str(model_file), str(test_csv), "-o", "p.csv", "--quiet",
                        cwd=tmp_path)
        _one_error_line(proc, "-o 'p.csv' is a socket; expected a regular file, a FIFO or a "
                              "character device")
        assert stat.S_ISSOCK(os.lstat(tmp_path / "p.csv").st_mode)


# -- atomic writes, interrupts ---------------------------------------------------------------
def _slow_training_file(train_csv, tmp_path) -> Path:
    lines = train_csv.read_text().splitlines()
    path = tmp_path / "slow.csv"
    # 3,000 rows: the exact leave-one-out search's eigendecomposition takes seconds, so the
    # signal sent when the progress bar says "fitting" always arrives before the fit ends
    path.write_text("\n".join(lines[:1] + lines[1:] * 10) + "\n")
    return path


@pytest.mark.parametrize("sig, status, line", [(signal.SIGTERM, 143, "ecrm: terminated"),
                                                (signal.SIGHUP, 129, "ecrm: hung up"),
                                                (signal.SIGINT, 130, "ecrm: interrupted")])
def test_interrupted_fit_leaves_the_old_model_and_no_temporary_file(subprocess_env, train_csv,
                                                                    tmp_path, sig, status, line):
    _slow_training_file(train_csv, tmp_path)
    (tmp_path / "m.ecrm").write_bytes(b"the old model")
    # SIGINT and SIGHUP as in a terminal: a test run started in the background (``make test
    # &``, ``nohup``) has them ignored, and a child would inherit that;
    # standard error on a pseudo-terminal of 100 columns: the progress bar shows on a
    # terminal only
    import fcntl
    import pty
    import struct
    import termios

    leader, follower = pty.openpty()
    fcntl.ioctl(follower, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 100, 0, 0))
    proc = subprocess.Popen(
        [sys.executable, "-m", "ecrm", "fit", "slow.csv", "--cv", "-o", "m.ecrm"],
        cwd=tmp_path, env=subprocess_env, stdout=subprocess.PIPE, stderr=follower,
        preexec_fn=_default_signals)
    os.close(follower)

    def read() -> bytes:
        try:
            return os.read(leader, 4096)
        except OSError:  # the other end closed (Linux: EIO)
            return b""

    seen = b""
    deadline = time.monotonic() + 120
    while b"fitting" not in seen and time.monotonic() < deadline:  # the progress bar says so
        chunk = read()
        if not chunk:
            break
        seen += chunk
    assert b"fitting" in seen, seen
    proc.send_signal(sig)
    out, _ = proc.communicate(timeout=120)
    while chunk := read():
        seen += chunk
    os.close(leader)
    err = seen.decode().replace("\r\n", "\n")
    assert proc.returncode == status, err
    assert err.rstrip().endswith(line) and "Traceback" not in err
    assert not out
    assert sorted(p.name for p in tmp_path.iterdir()) == ["m.ecrm", "slow.csv"]
    assert (tmp_path / "m.ecrm").read_bytes() == b"the old model"


def _default_signals() -> None:
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    signal.signal(signal.SIGHUP, signal.SIG_DFL)


@pytest.mark.parametrize("sig, status, line", [("SIGTERM", 143, "ecrm: terminated"),
                                                ("SIGHUP", 129, "ecrm: hung up")])
def test_a_signal_while_the_model_is_saved_leaves_no_temporary_file(subprocess_env, tmp_path,
                                                                    train, sig, status, line):
    # the signal arrives right after ecrm.save wrote the complete temporary model file
    script = (
        "import os, signal, sys\n"
        "import ecrm.model_files.io\n"
        "from ecrm.cli import main\n"
        "save = ecrm.model_files.io.save\n"
        "def slow_save(model, path):\n"
        "    save(model, path)\n"
        f"    os.kill(os.getpid(), signal.{sig})\n"
        "    raise AssertionError('not reached')\n"
        "ecrm.model_files.io.save = slow_save\n"
        "sys.exit(main(['fit', 'train.csv', '-o', 'm.ecrm', '--quiet']))\n")
    proc = subprocess.run([sys.executable, "-c", script], cwd=tmp_path, env=subprocess_env,
                          capture_output=True, timeout=300, preexec_fn=_default_signals)
    _one_error_line(proc, line, status=status)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["train.csv"]


class _FullDisk(io.StringIO):
    """A text file that runs out of space after 200 characters."""

    def __init__(self, real):
        super().__init__()
        self.real = real

    def write(self, text):
        if self.tell() + len(text) > 200:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        self.real.write(text)
        return super().write(text)

    def __exit__(self, *exc):
        self.real.close()
        return super().__exit__(*exc)


def test_predict_on_a_full_disk_keeps_the_old_output(test_csv, tmp_path, model_file, monkeypatch,
                                                     capsys):
    from ecrm.commands import _files

    out = tmp_path / "p.csv"
    out.write_text("the old predictions\n")
    monkeypatch.setattr(_files, "open", lambda *a, **k: _FullDisk(open(*a, **k)),
                        raising=False)
    assert main(["predict", str(model_file), str(test_csv), "-o", str(out), "--quiet"]) == 2
    err = capsys.readouterr().err
    assert "cannot write the predictions" in err and "No space left on device" in err
    assert out.read_text() == "the old predictions\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["p.csv"]


def test_output_keeps_the_permissions_of_the_file_it_replaces(test_csv, tmp_path, model_file):
    out = tmp_path / "p.csv"
    out.write_text("old\n")
    out.chmod(0o640)
    assert main(["predict", str(model_file), str(test_csv), "-o", str(out), "--quiet"]) == 0
    assert out.stat().st_mode & 0o777 == 0o640 and out.read_text().startswith("row,labels")
