"""Fixtures of the weight families' tests."""

import numpy as np
import pytest


@pytest.fixture(scope="module")
def client():
    """A LocalCluster of two single-thread workers in this process (no process start-up); the
    Client is the default scheduler of every compute while it is open."""
    distributed = pytest.importorskip("distributed", reason="the Dask tests need distributed "
                                      "(pip install 'ecrm[dask]')")
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=False,
                                  dashboard_address=None) as cluster, \
            distributed.Client(cluster) as c:
        yield c


@pytest.fixture(scope="module")
def hmc_csv(tmp_path_factory):
    """A make_hmc CSV (labels as paths) of 300 rows, 4 features."""
    from ecrm.datasets import make_hmc

    X, Y, h = make_hmc(300, n_features=4, n_labels=10, random_state=0)
    names = np.asarray(h.labels, dtype=object)
    lines = ["x0,x1,x2,x3,labels"] + [",".join(f"{v:.6g}" for v in x) + "," + ";".join(
        names[y > 0.5]) for x, y in zip(X, Y, strict=True)]
    path = tmp_path_factory.mktemp("hmc_csv") / "train.csv"
    path.write_text("\n".join(lines) + "\n")
    return path


@pytest.fixture(scope="module")
def ecrm_run(ecrm_cmd):
    """``ecrm_run(*args, cwd, code=0)``: the real ``ecrm`` command (``--quiet`` for fit and
    predict), its output as text, its exit status checked against ``code``."""
    def run(*args, cwd, code=0):
        quiet = ["--quiet"] if args[0] in ("fit", "predict") else []
        out = ecrm_cmd(*map(str, args), *quiet, cwd=cwd, text=True)
        assert out.returncode == code, out.stderr
        return out

    return run


@pytest.fixture(scope="module")
def fit_and_predict_on_dask(ecrm_run, hmc_csv):
    """``fit_and_predict_on_dask(name, options, scheduler, predict_scheduler, cwd)``: ``ecrm fit``
    of ``hmc_csv`` with ``options`` in memory (``{name}.ecrm``) and on ``scheduler``
    (``{name}-dask.ecrm``), then ``ecrm predict --scores`` of ``hmc_csv`` by each, the second
    on ``predict_scheduler`` (``{name}.csv``, ``{name}-dask.csv``). Returns the Dask fit's
    run and the lines of the two prediction files (in memory, on Dask)."""
    def run(name, options, scheduler, predict_scheduler, cwd):
        ecrm_run("fit", hmc_csv, "--path-sep", "/", *options, "-o", f"{name}.ecrm", cwd=cwd)
        fit = ecrm_run("fit", hmc_csv, "--path-sep", "/", *options, "--scheduler", scheduler,
                       "-o", f"{name}-dask.ecrm", cwd=cwd)
        ecrm_run("predict", f"{name}.ecrm", hmc_csv, "--scores", "-o", f"{name}.csv", cwd=cwd)
        ecrm_run("predict", f"{name}-dask.ecrm", hmc_csv, "--scores", "--scheduler",
                 predict_scheduler, "-o", f"{name}-dask.csv", cwd=cwd)
        ref, got = ((cwd / f"{name}{s}.csv").read_text().splitlines() for s in ("", "-dask"))
        return fit, ref, got

    return run
