"""ECRM past one m x m matrix: the streaming Nystrom fit, ECRMCV's exact low-rank LOO, and
scikit-learn's Pipeline(Nystroem, Ridge) on the same features and targets.

Synthetic hierarchical multi-label data (``make_hmc``: a tree of ``--labels`` labels, p =
``--features``), M = ``--n-components`` uniform centres, RBF kernel (gamma = 1/p). For each m
every measurement runs in a fresh process, so its peak RSS is its own:

* ``ECRM fit``: ``ECRM(solver="nystrom")`` at one alpha (centres, K_MM^{+1/2}, one streaming
  pass for F'F and F'[psi(Y), const, Y], the M x M solve);
* ``ECRMCV fit``: ``ECRMCV(solver="nystrom")`` over ``--alphas`` alphas (two streaming passes,
  one M x M eigendecomposition, the exact LOO task loss with the tree oracle for every alpha,
  a third pass for the winner's LOO predictions);
* ``predict``: ``ECRMCV.predict`` (features, costs and the exact oracle in row blocks), rows/s;
* ``sklearn fit``: ``Pipeline(Nystroem(n_components=M), Ridge(alpha=m*alpha))`` on the targets
  ``[psi(Y), const(Y)]`` (the same regressions as ``ECRM fit``, without the oracle or the
  marginals); the ratio is ECRM / sklearn;
* ``max |diff|``: (smallest m only) the costs of our streaming primal solve on the very centres
  Nystroem drew against the pipeline's predictions.

With ``--accuracy M1,M2,...`` it instead compares, at the first size, the test Hamming loss
of the exact dual ECRMCV with ECRMCV(solver="nystrom") for each M and each centre selection
(all with the exact leave-one-out choice of alpha).

    python benchmarks/bench_scale.py [--sizes 10000,100000] [--n-components 2000] [--quick]
    python benchmarks/bench_scale.py --sizes 4000 --labels 100 --accuracy 250,500,1000
"""

import argparse
import json
import resource
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).parent))
from _common import describe

ALPHA = 1e-4


CHUNK = 50_000  # rows per generated chunk: the first m rows do not depend on the largest m


def _model(p, labels):
    """``make_hmc``'s label model (random tree, directions, thresholds), drawn once."""
    from ecrm.datasets.synthetic import random_tree

    rng = np.random.RandomState(0)
    h = random_tree(labels, n_top=min(3, labels), random_state=rng)
    A = rng.normal(scale=1.0 / np.sqrt(p), size=(p, labels)) * 2.0
    B = rng.normal(scale=1.0 / np.sqrt(p), size=(p, labels))
    return h, A, B, rng.uniform(-0.3, 0.5, size=labels)


def _chunk(i, n, p, model):
    """Rows of chunk ``i`` (seeded by i): X float64, Y uint8 (compact; 1 byte a label)."""
    h, A, B, thresholds = model
    rng = np.random.RandomState(1000 + i)
    X = rng.normal(size=(n, p))
    score = np.sin(X @ A) + 0.5 * X @ B + rng.normal(scale=0.5, size=(n, A.shape[1]))
    Y = np.zeros((n, A.shape[1]), dtype=np.uint8)
    for j in h.order:  # parents first, as make_hmc
        parents = h.parents[j]
        on = score[:, j] > thresholds[j]
        Y[:, j] = (on & (Y[:, parents[0]] == 1)) if len(parents) else on
    return X, Y


def _sizes(m):
    return [min(CHUNK, m - s) for s in range(0, m, CHUNK)]


def _data(m, n_test, p, labels):
    """make_hmc's model generated in chunks (X float64, Y uint8) and a test set."""
    model = _model(p, labels)
    parts = [_chunk(i, n, p, model) for i, n in enumerate(_sizes(m))]
    Xt, Yt = _chunk(-1 % 2**31, n_test, p, model)
    return (np.concatenate([a for a, _ in parts]), np.concatenate([b for _, b in parts]), Xt,
            Yt, model[0])


def child(task, m, M, p, labels, n_alphas, n_test, check):
    from ecrm import ECRM, ECRMCV
    from ecrm.losses import HammingLoss

    X, Y, Xt, Yt, h = _data(m, n_test, p, labels)
    loss, gamma = HammingLoss(), 1.0 / p
    out = {}
    t0 = time.perf_counter()
    if task == "ecrm":
        ECRM(loss, h, gamma=gamma, alpha=ALPHA, solver="nystrom", n_components=M,
             random_state=0).fit(X, Y)
        out["fit_s"] = time.perf_counter() - t0
    elif task == "ecrmcv":
        est = ECRMCV(loss, h, gamma=gamma, alphas=np.logspace(-7, -2, n_alphas),
                     solver="nystrom", n_components=M, random_state=0).fit(X, Y)
        out["fit_s"] = time.perf_counter() - t0
        t0 = time.perf_counter()
        P = est.predict(Xt)
        out["predict_rows_per_s"] = len(Xt) / (time.perf_counter() - t0)
        out["test_hamming"] = float(np.mean(loss(P, Yt)))
        out["alpha"] = est.alpha_
    else:
        from sklearn.kernel_approximation import Nystroem
        from sklearn.linear_model import Ridge
        from sklearn.pipeline import make_pipeline

        T = np.column_stack([loss.psi(Y), loss.const(Y)])
        pipe = make_pipeline(Nystroem(gamma=gamma, n_components=M, random_state=0),
                             Ridge(alpha=m * ALPHA)).fit(X, T)
        out["fit_s"] = time.perf_counter() - t0
        t0 = time.perf_counter()
        S = pipe.predict(Xt)
        out["predict_rows_per_s"] = len(Xt) / (time.perf_counter() - t0)
        if check:
            from ecrm.solvers import NormalEquations, NystromFeatures

            params = {"kernel": "rbf", "gamma": gamma, "degree": 3, "coef0": 1}
            f = NystromFeatures(X[pipe[0].component_indices_], params)
            fit = NormalEquations.accumulate(f, X, T, lambda Tb: Tb).solve(m * ALPHA, True)
            ours = f.transform(Xt) @ fit.coef + fit.intercept
            out["max_abs_diff"] = float(np.abs(ours - S).max())
            out["max_abs_costs"] = float(np.abs(S).max())
    out["peak_rss_gib"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20
    print(json.dumps(out))


def accuracy(m, Ms, p, labels, n_alphas, n_test):
    from ecrm import ECRMCV
    from ecrm.losses import HammingLoss

    X, Y, Xt, Yt, h = _data(m, n_test, p, labels)
    loss, alphas = HammingLoss(), np.logspace(-7, -2, n_alphas)
    print(f"m={m}, p={p}, {labels}-label tree, {n_test} test rows; test Hamming (fit s)")
    t0 = time.perf_counter()
    exact = ECRMCV(loss, h, gamma=1.0 / p, alphas=alphas, solver="dual").fit(X, Y)
    ref = float(np.mean(loss(exact.predict(Xt), Yt)))
    print(f"  exact dual: {ref:.3f} ({time.perf_counter() - t0:.1f} s, alpha={exact.alpha_:.0e})")
    for M in Ms:
        for method in ("uniform", "kmeans++", "leverage"):
            t0 = time.perf_counter()
            est = ECRMCV(loss, h, gamma=1.0 / p, alphas=alphas, solver="nystrom",
                         n_components=M, center_selection=method, random_state=0).fit(X, Y)
            fit_s = time.perf_counter() - t0
            ham = float(np.mean(loss(est.predict(Xt), Yt)))
            print(f"  M={M:>5} {method:<9}: {ham:.3f} ({100 * (ham / ref - 1):+.1f}%, "
                  f"{fit_s:.1f} s, alpha={est.alpha_:.0e})", flush=True)


def run(task, m, args, check=False):
    cmd = [sys.executable, __file__, "--child", task, "--sizes", str(m), "--n-components",
           str(args.n_components), "--features", str(args.features), "--labels",
           str(args.labels), "--alphas", str(args.alphas), "--n-test", str(args.n_test)]
    if check:
        cmd.append("--check")
    res = subprocess.run(cmd, capture_output=True, text=True, check=True)
    return json.loads(res.stdout.strip().splitlines()[-1])


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="10000,100000")
    parser.add_argument("--n-components", type=int, default=2000)
    parser.add_argument("--features", type=int, default=50)
    parser.add_argument("--labels", type=int, default=500)
    parser.add_argument("--alphas", type=int, default=10)
    parser.add_argument("--n-test", type=int, default=10000)
    parser.add_argument("--quick", action="store_true", help="m=2000, M=200, 100 labels")
    parser.add_argument("--child", choices=("ecrm", "ecrmcv", "sklearn"))
    parser.add_argument("--check", action="store_true")
    parser.add_argument("--accuracy", help="comma-separated M: exact vs Nystrom test loss")
    args = parser.parse_args(argv)
    if args.quick:
        args.sizes, args.n_components, args.labels, args.n_test = "2000", 200, 100, 1000
    sizes = [int(s) for s in args.sizes.split(",")]
    if args.child:
        return child(args.child, sizes[0], args.n_components, args.features, args.labels,
                     args.alphas, args.n_test, args.check)
    print(f"machine: {describe()}")
    if args.accuracy:
        return accuracy(sizes[0], [int(M) for M in args.accuracy.split(",")], args.features,
                        args.labels, args.alphas, args.n_test)
    print(f"M={args.n_components}, p={args.features}, {args.labels}-label tree, "
          f"{args.alphas} alphas, {args.n_test} test rows; one process per measurement")
    print(f"{'m':>8}{'ECRM fit s':>12}{'sklearn s':>11}{'ratio':>7}{'ECRMCV s':>10}"
          f"{'pred rows/s':>13}{'skl rows/s':>12}{'RSS ECRM':>10}{'RSS CV':>8}{'RSS skl':>9}"
          f"{'Hamming':>9}{'max|diff|':>11}")
    for i, m in enumerate(sizes):
        a, cv, sk = run("ecrm", m, args), run("ecrmcv", m, args), run("sklearn", m, args, i == 0)
        diff = f"{sk['max_abs_diff']:.1e}" if "max_abs_diff" in sk else "-"
        print(f"{m:>8}{a['fit_s']:>12.1f}{sk['fit_s']:>11.1f}{a['fit_s'] / sk['fit_s']:>7.2f}"
              f"{cv['fit_s']:>10.1f}{cv['predict_rows_per_s']:>13.0f}"
              f"{sk['predict_rows_per_s']:>12.0f}{a['peak_rss_gib']:>10.2f}"
              f"{cv['peak_rss_gib']:>8.2f}{sk['peak_rss_gib']:>9.2f}{cv['test_hamming']:>9.2f}"
              f"{diff:>11}", flush=True)


if __name__ == "__main__":
    main()
