"""The structured SVM's loss-augmented oracle on an HMC data set: rows, time, pass by pass.

The SSVM's hierarchical-loss cells on the Gene Ontology DAGs (pheno_GO, spo_GO)
are bounded by the loss-augmented inference, the hierarchical MILP. This fits
:class:`ecrm.StructuredSVM` as ``ecrm reproduce hmc`` does (linear kernel, C in units of
1 / the mean kernel diagonal with the intercept, ``tol=1e-2``) on a random subset of the
training points, once with ``cached_oracle=True`` and once with ``False``, and counts every
call of the oracle (:func:`ecrm.estimators.ssvm.loss_augmented_argmax`): per pass, the rows sent and
the seconds spent, the share of negative costs; then the passes run, the relative duality gap and
the fit time. On a DAG with the hierarchical loss it also prints the oracle's own counters (rows
sent to the MILP, parts solved by the compiled branch and bound). The per-pass rows and seconds
times the protocol's points and passes (``SSVM_DAG_POINTS``, ``SSVM_DAG_PASSES``) estimate a full
``tuned_ssvm`` plus refit before running it.

With ``--baseline COMMIT`` (a DAG and the hierarchical loss), ``--replay`` random oracle calls
of each fit are then solved again, side by side in this process, by today's hierarchy oracle
and by that commit's (``bench_oracles.load_baseline``), each timed by CPU time and checked to
reach the same objective.

Run::

    OPENBLAS_NUM_THREADS=1 python benchmarks/bench_ssvm_oracle.py [--dataset pheno_GO]
        [--points 100] [--passes 3] [--C 0.1] [--loss hierarchical] [--modes cached,uncached]
        [--baseline COMMIT] [--replay 80] [--data-dir DIR]
"""

from __future__ import annotations

import argparse
import os
import time
import warnings
from pathlib import Path

import numpy as np
from _common import describe
from scipy import sparse
from sklearn.exceptions import ConvergenceWarning

from ecrm import StructuredSVM
from ecrm.datasets import HMCPreprocessor, load_hmc
from ecrm.estimators import ssvm as ssvm_module
from ecrm.losses import HammingLoss, HierarchicalLoss


def _data_dir(given: str | None) -> str:
    if given:
        return given
    default = Path(__file__).resolve().parents[1] / ".." / "shared" / "data" / "hmc"
    return os.environ.get("ECRM_DATA", str(default))


def _counted_fit(model, X, Y, costs=None) -> tuple[list, float]:
    """Fit ``model`` with every oracle call recorded as ``(rows, seconds, negative share)``;
    each call's costs are appended to the list ``costs`` when one is given."""
    calls, oracle = [], ssvm_module.loss_augmented_argmax

    def counted(loss, space, F, Psi):
        t0 = time.perf_counter()
        out = oracle(loss, space, F, Psi)
        negative = float(np.mean(-(np.asarray(Psi) + F) < 0))
        calls.append((len(F), time.perf_counter() - t0, negative))
        if costs is not None:
            costs.append(-(np.asarray(Psi) + F))
        return out

    ssvm_module.loss_augmented_argmax = counted  # the module global that fit calls
    try:
        with warnings.catch_warnings():  # the pass budget is this benchmark's, by design
            warnings.simplefilter("ignore", ConvergenceWarning)
            t0 = time.perf_counter()
            model.fit(X, Y)
            return calls, time.perf_counter() - t0
    finally:
        ssvm_module.loss_augmented_argmax = oracle


def _per_pass(calls, n: int) -> list[tuple[int, float, float]]:
    """``(rows, seconds, mean negative share)`` per pass: a pass ends with the duality gap's
    oracle call on all ``n`` rows (the visits send at most ``_BATCH < n`` rows a call)."""
    passes, current = [], []
    for call in calls:
        current.append(call)
        if call[0] == n:
            rows, secs, neg = zip(*current, strict=True)
            passes.append((sum(rows), sum(secs), float(np.mean(neg))))
            current = []
    return passes


def _replay(h, loss, old, costs, n_calls: int, seed: int) -> None:
    """``n_calls`` random oracle calls solved again by today's DAG oracle and by ``old``'s
    (same process, CPU time), their objectives compared."""
    d = h.n_labels
    h_old = old.Hierarchy(h.edges.tolist(), labels=range(d))
    picked = np.random.default_rng(seed).choice(len(costs), min(n_calls, len(costs)),
                                                replace=False)
    for i in np.argsort([-len(c) for c in costs])[:2]:  # compile every path of both, untimed
        for space in (h, h_old):
            space.argmin_products(costs[i][:, :d], costs[i][:, d:])
    new_s, old_s, rows, worst = [], [], 0, 0.0
    for i in picked:
        C, P = costs[i][:, :d], costs[i][:, d:]
        values = []
        for space, spent in ((h, new_s), (h_old, old_s)):
            t0 = time.process_time()
            Y = space.argmin_products(C, P)
            spent.append(time.process_time() - t0)
            values.append(np.einsum("ij,ij->i", costs[i], loss.phi(Y)))
        scale = np.maximum(np.abs(costs[i]).sum(axis=1), np.finfo(float).tiny)  # 0-cost rows
        worst = max(worst, float(np.max(np.abs(values[0] - values[1]) / scale)))
        rows += len(C)
    new_t, old_t = sum(new_s), sum(old_s)
    print(f"  replayed {len(picked)} random oracle calls ({rows} rows), CPU s: today "
          f"{new_t:.1f}, baseline {old_t:.1f} ({old_t / new_t:.1f}x); per call p50 / p95 / max "
          f"today {np.percentile(new_s, [50, 95, 100]).round(3).tolist()}, baseline "
          f"{np.percentile(old_s, [50, 95, 100]).round(3).tolist()}; largest objective "
          f"difference {worst:.1e} of the row's total |cost|")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dataset", default="pheno_GO")
    parser.add_argument("--data-dir", help="default: ECRM_DATA or ../shared/data/hmc")
    parser.add_argument("--points", type=int, default=100)
    parser.add_argument("--passes", type=int, default=3)
    parser.add_argument("--C", type=float, default=0.1,
                        help="in units of 1 / the mean kernel diagonal (intercept included)")
    parser.add_argument("--loss", choices=("hierarchical", "hamming"), default="hierarchical")
    parser.add_argument("--modes", default="cached,uncached")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--baseline", help="a commit whose DAG oracle replays the fits' calls")
    parser.add_argument("--replay", type=int, default=80, help="oracle calls replayed")
    args = parser.parse_args()
    print(describe())
    data = load_hmc(args.dataset, _data_dir(args.data_dir))
    h = data.hierarchy
    X = HMCPreprocessor(data.categories).fit(data.train.X).transform(data.train.X)
    rng = np.random.default_rng(args.seed)
    sub = np.sort(rng.choice(len(X), min(args.points, len(X)), replace=False))
    X, Y = X[sub], data.train.Y[sub]
    n = len(sub)
    if n <= ssvm_module._BATCH:
        parser.error(f"--points must exceed the SSVM's batch of {ssvm_module._BATCH} rows")
    norms = (np.asarray(X.multiply(X).sum(axis=1)).ravel() if sparse.issparse(X)
             else np.einsum("ij,ij->i", X, X))
    C = args.C / float(np.mean(2.0 * norms))  # as the experiment's grid
    loss = HierarchicalLoss(h) if args.loss == "hierarchical" else HammingLoss()
    print(f"{args.dataset}: {n} of {len(data.train.X)} training points, {h.n_labels} labels "
          f"({'tree' if h.is_tree else 'DAG'}), {args.loss} loss, C = {C:.3g}, at most "
          f"{args.passes} passes")
    old = None
    if args.baseline and not h.is_tree and args.loss == "hierarchical":
        from bench_oracles import load_baseline

        old = load_baseline(args.baseline)
    for mode in args.modes.split(","):
        before = dict(h._stats)
        model = StructuredSVM(loss, h, kernel="linear", C=C, tol=1e-2, max_iter=args.passes,
                              cached_oracle=mode == "cached", random_state=args.seed)
        costs: list | None = [] if old is not None else None
        calls, fit_s = _counted_fit(model, X, Y, costs)
        rows = sum(c[0] for c in calls)
        secs = sum(c[1] for c in calls)
        print(f"\n{mode}: {model.n_iter_} passes, fit {fit_s:.1f} s, relative gap "
              f"{model.duality_gap_ / model.primal_objective_:.3f}; oracle {len(calls)} calls, "
              f"{rows} rows, {secs:.1f} s ({1e3 * secs / rows:.2f} ms a row)")
        print(f"  {'pass':>4} {'rows':>7} {'rows/pt':>8} {'oracle s':>9} {'ms/row':>7} "
              f"{'neg.':>5}")
        for k, (r, s, neg) in enumerate(_per_pass(calls, n), 1):
            print(f"  {k:>4} {r:>7} {r / n:>8.2f} {s:>9.2f} {1e3 * s / r:>7.2f} {neg:>5.2f}")
        counters = {key: value - before.get(key, 0) for key, value in h._stats.items()
                    if value != before.get(key, 0)}
        if counters:
            print(f"  oracle counters: {counters}")
        if costs:
            _replay(h, loss, old, costs, args.replay, args.seed)


if __name__ == "__main__":
    main()
