"""The exact fit at m = 10,000: ECRMCV's leave-one-out search against a bare
eigendecomposition of the same m x m Gram matrix, and against the previous code path.

The fit is the HMC protocol's (``ecrm.experiments.hmc``, the "paper" row of imclef07a):
the Hamming loss, the RBF kernel with gamma in {0.5, 1, 2} / p chosen on 1,500 points
(``kernel_subsample``), then 21 alphas times both intercept settings by the exact
leave-one-out loss on every point, from one eigendecomposition; then the refit. Timed side by
side in one process, interleaved (each repeat runs every variant once), medians reported:

* ``numpy.linalg.eigh``: the bare eigendecomposition of the stage-2 Gram matrix, computed
  beforehand (the reference of the ratios); ``--scipy`` adds ``scipy.linalg.eigh`` (its
  default driver);
* ``previous``: the fit through the code path before this benchmark was added
  (``numpy.linalg.eigh`` on a copy, sklearn's Gram matrix, the leave-one-out of one ridge at
  a time with a copy of Q's rows; reproduced below and patched in);
* ``current``: the fit as the package does it now.

Both fits must choose the same gamma, alpha and intercept and predict the same costs (to a
tolerance printed with the table).

    python benchmarks/bench_exact_fit.py [--m 10000] [--repeats 3] [--data-dir DIR]
                                         [--scipy] [--quick]

What it measured, and on which machine: ``docs/results/benchmarks.rst``.
"""

import argparse
import contextlib
import sys
import time
from pathlib import Path
from unittest import mock

import numpy as np
from scipy import linalg

sys.path.insert(0, str(Path(__file__).parent))
from _common import describe

import ecrm.selection._search
import ecrm.weights.kernel._solvers.dual
from ecrm import ECRMCV
from ecrm.losses import HammingLoss
from ecrm.selection import LeaveOneOutSearch
from ecrm.weights.kernel._kernels import kernel_matrix
from ecrm.weights.kernel._ridge import EigenFactor

ALPHAS = np.logspace(-8, 2, 21)  # ecrm.experiments.hmc.ALPHAS


# -- the previous code path ------------------------------------------------------------------
class PreviousEigenFactor(EigenFactor):
    """The kernel diagonal by a three-operand einsum, every time a basis asks for it."""

    def diagonal(self):
        return np.einsum("ik,k,ik->i", self.Q, self.lam, self.Q)

    def with_ridge(self, ridge):
        return PreviousEigenFactor(self.lam, self.Q, ridge)


def previous_gram_eigendecomposition(X, kernel_params):
    if kernel_params["kernel"] == "linear" and X.shape[1] < X.shape[0]:
        return ecrm.weights.kernel._solvers.dual.gram_eigendecomposition(X, kernel_params)
    lam, Q = np.linalg.eigh(kernel_matrix(X, X, **kernel_params))  # copies K inside
    return PreviousEigenFactor(np.maximum(lam, 0.0), Q)


class PreviousLeaveOneOut:
    def __init__(self, eig, T, rows=None):
        self.eig, self.T = eig, T
        self.rows = np.arange(len(T)) if rows is None else np.asarray(rows)
        self.QtT = eig.Q.T @ T
        self.Q_rows = eig.Q[self.rows]  # a copy of Q for all rows
        self._last = None

    def prepare(self, ridges):
        pass

    def _shrunk(self, ridge):
        if self._last is None or self._last[0] != ridge:
            lam, Qr = self.eig.lam, self.Q_rows
            shrink = lam / (lam + ridge)
            fitted = Qr @ (shrink[:, None] * self.QtT)
            self._last = (ridge, fitted, np.einsum("ik,k,ik->i", Qr, shrink, Qr))
        return self._last[1], self._last[2]

    def predictions(self, ridge, fit_intercept):
        fitted, h = self._shrunk(ridge)
        T = self.T[self.rows]
        if fit_intercept:
            u = self.eig.with_ridge(ridge).solve(np.ones(len(self.T)))
            s = u.sum()
            fitted = fitted + np.outer(u[self.rows], (ridge / s) * (u @ self.T))
            h = h + ridge * u[self.rows] ** 2 / s
        else:
            fitted = fitted.copy()
        fitted -= h[:, None] * T
        fitted /= (1.0 - h)[:, None]
        return fitted


@contextlib.contextmanager
def previous_code_path():
    with mock.patch.object(ecrm.selection._search, "gram_eigendecomposition",
                           previous_gram_eigendecomposition), \
            mock.patch.object(ecrm.weights.kernel._solvers.dual, "LeaveOneOut",
                              PreviousLeaveOneOut):
        yield


# -- the benchmark -----------------------------------------------------------------------------
def load(args):
    from ecrm.datasets import HMCPreprocessor, load_hmc

    data = load_hmc(args.dataset, args.data_dir)
    pre = HMCPreprocessor(data.categories).fit(data.train.X)
    X, Y = pre.transform(data.train.X), data.train.Y
    if args.m < len(X):
        keep = np.sort(np.random.default_rng(0).choice(len(X), args.m, replace=False))
        X, Y = X[keep], Y[keep]
    return np.ascontiguousarray(X, dtype=float), Y, pre.transform(data.test.X)[:500], data


def estimator(h, p):
    return ECRMCV(HammingLoss(), h, alphas=ALPHAS, search=LeaveOneOutSearch(
        fit_intercept="auto",
        kernel_grid={"kernel": ["rbf"], "gamma": [0.5 / p, 1.0 / p, 2.0 / p]},
        kernel_subsample=1500), random_state=0)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--m", type=int, default=10000)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--dataset", default="imclef07a")
    parser.add_argument("--data-dir", default=None)  # None: $ECRM_DATA
    parser.add_argument("--scipy", action="store_true",
                        help="also time a bare scipy.linalg.eigh (default driver)")
    parser.add_argument("--quick", action="store_true", help="m = 2000, 2 repeats")
    args = parser.parse_args(argv)
    if args.quick:
        args.m, args.repeats = 2000, 2
    X, Y, Xte, data = load(args)
    m, p = X.shape
    print(f"machine: {describe()}")
    print(f"data: {args.dataset}, m = {m}, p = {p}, d = {Y.shape[1]}; 3 gammas on 1500 "
          f"points, then {len(ALPHAS)} alphas x 2 intercepts on all m", flush=True)

    # the stage-2 Gram matrix, for the bare decompositions: the gamma chosen on the fits'
    # stage-1 subset (the first draw of their random state)
    sub = np.sort(np.random.RandomState(0).choice(m, 1500, replace=False))
    probe = estimator(data.hierarchy, p).fit(X[sub], Y[sub])
    K = kernel_matrix(X, X, **probe.kernel_params_)
    fits, times = {}, {}

    def bare_numpy():
        np.linalg.eigh(K)

    def bare_scipy():
        linalg.eigh(K)

    def fit_previous():
        with previous_code_path():
            fits["previous"] = estimator(data.hierarchy, p).fit(X, Y)

    def fit_current():
        fits["current"] = estimator(data.hierarchy, p).fit(X, Y)

    variants = {"numpy.linalg.eigh": bare_numpy}
    if args.scipy:
        variants["scipy.linalg.eigh"] = bare_scipy
    variants.update({"previous fit": fit_previous, "current fit": fit_current})
    for r in range(args.repeats):
        for name, fn in variants.items():
            t0 = time.perf_counter()
            fn()
            times.setdefault(name, []).append(time.perf_counter() - t0)
            print(f"  repeat {r + 1}: {name} {times[name][-1]:.1f} s", flush=True)

    old, new = fits["previous"], fits["current"]
    same = all(getattr(old, a) == getattr(new, a)
               for a in ("alpha_", "fit_intercept_", "kernel_params_"))
    C_old, C_new = old.predict_costs(Xte), new.predict_costs(Xte)
    gap = float(np.max(np.abs(C_old - C_new)) / max(np.max(np.abs(C_old)), 1e-300))
    loo_gap = float(np.max(np.abs(old.cv_results_["mean_score"]
                                  - new.cv_results_["mean_score"])))
    base = float(np.median(times["numpy.linalg.eigh"]))
    print(f"\n{'variant':<20}{'median s':>10}{'/ eigh':>8}   all runs (s)")
    for name, ts in times.items():
        med = float(np.median(ts))
        print(f"{name:<20}{med:>10.1f}{med / base:>8.2f}   {', '.join(f'{t:.1f}' for t in ts)}")
    ratio = np.median(times["current fit"]) / np.median(times["previous fit"])
    print(f"\ncurrent / previous: {ratio:.2f}")
    print(f"same choice: {same} (gamma*p = {new.kernel_params_['gamma'] * p:g}, "
          f"alpha = {new.alpha_:g}, intercept = {new.fit_intercept_}); predicted costs differ "
          f"by {gap:.1e} of their largest, leave-one-out scores by {loo_gap:.1e}")


if __name__ == "__main__":
    main()
