"""ECRM past one m x m matrix: the streaming Nystrom fit, ECRMCV's exact low-rank LOO, and
scikit-learn's Pipeline(Nystroem, Ridge) on the same features and targets; the same fit on
Dask.

Synthetic hierarchical multi-label data (``make_hmc``'s label model: a tree of ``--labels``
labels, p = ``--features``, generated in chunks of 50,000 rows with X float64 and Y uint8, so
that m = 10^6 fits in memory: 0.4 GB + 0.5 GB), M = ``--n-components`` uniform centres, RBF
kernel (gamma = 1/p). For each m every measurement runs in a fresh process, so its peak RSS
is its own:

* ``ECRM fit``: ``ECRM(solver="nystrom")`` at one alpha (centres, K_MM^{+1/2}, one streaming
  pass for F'F and F'[psi(Y), const, Y], the M x M solve);
* ``ECRMCV fit``: ``ECRMCV(solver="nystrom")`` over ``--alphas`` alphas (a streaming pass for
  the normal equations, one M x M eigendecomposition, a pass over the leave-one-out rows for
  the exact LOO task loss with the tree oracle for every alpha, a pass for the winner's LOO
  predictions); ``--loo-samples n`` averages the LOO loss over n random rows (each LOO
  prediction still exact), which bounds the second and third passes;
* ``predict``: ``ECRMCV.predict`` (features, costs and the exact oracle in row blocks), rows/s;
* ``sklearn fit``: ``Pipeline(Nystroem(n_components=M), Ridge(alpha=m*alpha))`` on the targets
  ``[psi(Y), const(Y)]`` (the same regressions as ``ECRM fit``, without the oracle or the
  marginals; it holds the m x M features, so only up to ``--sklearn-max`` rows); the ratio
  is ECRM / sklearn;
* ``max |diff|``: (smallest m only) the costs of our streaming primal solve on the very centres
  Nystroem drew against the pipeline's predictions.

With ``--dask`` each m also runs ECRM fit and ECRMCV fit on a ``distributed.LocalCluster``
(2 worker processes, 1 thread each, 4 GiB memory limit each; the chunks generated and
persisted on the workers before the clock starts); the ratio is Dask / in-memory, and the
peak RSS the largest of the client and each worker.

With ``--accuracy M1,M2,...`` it instead compares, at the first size, the test Hamming loss
of the exact dual ECRMCV with ECRMCV(solver="nystrom") for each M and each centre selection
(all with the exact leave-one-out choice of alpha); ``--plot out.png`` draws loss and fit
time against M (needs matplotlib, ``pip install 'ecrm[plot]'``).

    python benchmarks/bench_scale.py [--sizes 10000,100000] [--n-components 2000] [--quick]
    python benchmarks/bench_scale.py --sizes 100000,1000000 --loo-samples 100000 --dask
    python benchmarks/bench_scale.py --sizes 4000 --labels 100 --accuracy 250,500,1000 \
        --plot scale.png
"""

import argparse
import json
import os
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


def _estimators(M, p, n_alphas, loo_samples):
    from ecrm import ECRM, ECRMCV, NystromSolver
    from ecrm.losses import HammingLoss
    from ecrm.selection import LeaveOneOutSearch

    kw = dict(gamma=1.0 / p, solver=NystromSolver(n_components=M), random_state=0)
    return (lambda h: ECRM(HammingLoss(), h, alpha=ALPHA, **kw),
            lambda h: ECRMCV(HammingLoss(), h, alphas=np.logspace(-7, -2, n_alphas),
                             search=LeaveOneOutSearch(loo_samples=loo_samples), **kw))


def _rss():
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20


def child(task, m, M, p, labels, n_alphas, n_test, check, loo_samples):
    from ecrm.losses import HammingLoss

    if task.startswith("dask"):
        return dask_child(task, m, M, p, labels, n_alphas, n_test, loo_samples)
    X, Y, Xt, Yt, h = _data(m, n_test, p, labels)
    loss, gamma = HammingLoss(), 1.0 / p
    make_ecrm, make_cv = _estimators(M, p, n_alphas, loo_samples)
    out = {}
    t0 = time.perf_counter()
    if task == "ecrm":
        make_ecrm(h).fit(X, Y)
        out["fit_s"] = time.perf_counter() - t0
    elif task == "ecrmcv":
        est = make_cv(h).fit(X, Y)
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

        Yf = Y.astype(float)
        T = np.column_stack([loss.psi(Yf), loss.const(Yf)])
        t0 = time.perf_counter()
        pipe = make_pipeline(Nystroem(gamma=gamma, n_components=M, random_state=0),
                             Ridge(alpha=m * ALPHA)).fit(X, T)
        out["fit_s"] = time.perf_counter() - t0
        t0 = time.perf_counter()
        S = pipe.predict(Xt)
        out["predict_rows_per_s"] = len(Xt) / (time.perf_counter() - t0)
        if check:
            from ecrm.weights.kernel._solvers.features import NystromFeatures
            from ecrm.weights.kernel._solvers.normal_equations import NormalEquations

            params = {"kernel": "rbf", "gamma": gamma, "degree": 3, "coef0": 1}
            f = NystromFeatures(X[pipe[0].component_indices_], params)
            fit = NormalEquations.accumulate(f, X, T, lambda Tb: Tb).solve(m * ALPHA, True)
            ours = f.transform(Xt) @ fit.coef + fit.intercept
            out["max_abs_diff"] = float(np.abs(ours - S).max())
            out["max_abs_costs"] = float(np.abs(S).max())
    out["peak_rss_gib"] = _rss()
    print(json.dumps(out))


def dask_child(task, m, M, p, labels, n_alphas, n_test, loo_samples):
    """ECRM and ECRMCV fits on a LocalCluster; the data generated chunk by chunk on it."""
    import dask
    import dask.array as da
    from distributed import Client, LocalCluster, wait

    from ecrm.losses import HammingLoss

    model = _model(p, labels)
    parts = [dask.delayed(_chunk)(i, n, p, model) for i, n in enumerate(_sizes(m))]
    X = da.concatenate([da.from_delayed(c[0], (n, p), float) for c, n in
                        zip(parts, _sizes(m), strict=True)])
    Y = da.concatenate([da.from_delayed(c[1], (n, labels), np.uint8) for c, n in
                        zip(parts, _sizes(m), strict=True)])
    Xt, Yt = _chunk(-1 % 2**31, n_test, p, model)
    make_ecrm, make_cv = _estimators(M, p, n_alphas, loo_samples)
    out = {}
    with LocalCluster(n_workers=2, threads_per_worker=1, memory_limit="4GiB", processes=True,
                      dashboard_address=None) as cluster, Client(cluster) as client:
        X, Y = client.persist([X, Y])
        wait([X, Y])
        t0 = time.perf_counter()
        make_ecrm(model[0]).fit(X, Y)
        out["fit_s"] = time.perf_counter() - t0
        if task == "dask_cv":
            t0 = time.perf_counter()
            est = make_cv(model[0]).fit(X, Y)
            out["cv_fit_s"] = time.perf_counter() - t0
            t0 = time.perf_counter()
            P = est.predict(da.from_array(Xt, chunks=(CHUNK // 5, -1))).compute()
            out["predict_rows_per_s"] = len(Xt) / (time.perf_counter() - t0)
            out["test_hamming"] = float(np.mean(HammingLoss()(P, Yt)))
        workers = client.run(_rss)
    out["peak_rss_gib"] = max([_rss(), *workers.values()])
    out["client_rss_gib"] = _rss()
    print(json.dumps(out))


def accuracy(m, Ms, p, labels, n_alphas, n_test, plot=None):
    from ecrm import ECRMCV, NystromSolver
    from ecrm.losses import HammingLoss

    X, Y, Xt, Yt, h = _data(m, n_test, p, labels)
    loss, alphas = HammingLoss(), np.logspace(-7, -2, n_alphas)
    print(f"m={m}, p={p}, {labels}-label tree, {n_test} test rows; test Hamming (fit s)")
    t0 = time.perf_counter()
    exact = ECRMCV(loss, h, gamma=1.0 / p, alphas=alphas, solver="dual").fit(X, Y)
    ref = float(np.mean(loss(exact.predict(Xt), Yt)))
    ref_s = time.perf_counter() - t0
    print(f"  exact dual: {ref:.3f} ({ref_s:.1f} s, alpha={exact.alpha_:.0e})")
    rows = []
    for M in Ms:
        for method in ("uniform", "kmeans++", "leverage"):
            t0 = time.perf_counter()
            est = ECRMCV(loss, h, gamma=1.0 / p, alphas=alphas,
                         solver=NystromSolver(n_components=M, center_selection=method),
                         random_state=0).fit(X, Y)
            fit_s = time.perf_counter() - t0
            ham = float(np.mean(loss(est.predict(Xt), Yt)))
            rows.append((M, method, ham, fit_s))
            print(f"  M={M:>5} {method:<9}: {ham:.3f} ({100 * (ham / ref - 1):+.1f}%, "
                  f"{fit_s:.1f} s, alpha={est.alpha_:.0e})", flush=True)
    if plot:
        _plot(plot, rows, ref, ref_s, f"m={m}, p={p}, {labels} labels")


def _plot(path, rows, ref, ref_s, title):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(8, 3.2), dpi=80)
    for method in dict.fromkeys(r[1] for r in rows):
        pts = [r for r in rows if r[1] == method]
        ax1.plot([r[0] for r in pts], [r[2] for r in pts], "o-", label=method)
        ax2.plot([r[0] for r in pts], [r[3] for r in pts], "o-", label=method)
    ax1.axhline(ref, color="k", ls="--", label="exact dual")
    ax2.axhline(ref_s, color="k", ls="--", label="exact dual")
    Ms = sorted({r[0] for r in rows})
    for ax, name in ((ax1, "test Hamming loss"), (ax2, "ECRMCV fit time (s)")):
        ax.set_xscale("log")
        ax.set_xticks(Ms, [str(M) for M in Ms])
        ax.minorticks_off()
        ax.set_xlabel("Nystrom centres M")
        ax.set_ylabel(name)
    ax1.legend(fontsize=7)
    fig.suptitle(title, fontsize=9)
    fig.tight_layout()
    fig.savefig(path)


def run(task, m, args, check=False):
    cmd = [sys.executable, __file__, "--child", task, "--sizes", str(m), "--n-components",
           str(args.n_components), "--features", str(args.features), "--labels",
           str(args.labels), "--alphas", str(args.alphas), "--n-test", str(args.n_test)]
    if args.loo_samples:
        cmd += ["--loo-samples", str(args.loo_samples)]
    if check:
        cmd.append("--check")
    res = subprocess.run(cmd, capture_output=True, text=True)
    if res.returncode:
        raise RuntimeError(f"{task} at m={m} failed:\n{res.stderr[-3000:]}")
    out = json.loads(res.stdout.strip().splitlines()[-1])
    print(f"# {task} m={m} load={os.getloadavg()[0]:.2f}: {json.dumps(out)}", flush=True)
    return out


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="10000,100000")
    parser.add_argument("--n-components", type=int, default=2000)
    parser.add_argument("--features", type=int, default=50)
    parser.add_argument("--labels", type=int, default=500)
    parser.add_argument("--alphas", type=int, default=10)
    parser.add_argument("--n-test", type=int, default=10000)
    parser.add_argument("--loo-samples", type=int, default=None,
                        help="ECRMCV averages the exact LOO loss over this many rows")
    parser.add_argument("--sklearn-max", type=int, default=100_000,
                        help="largest m for the scikit-learn pipeline (it holds m x M)")
    parser.add_argument("--dask", action="store_true", help="also fit on a LocalCluster")
    parser.add_argument("--dask-cv-max", type=int, default=100_000,
                        help="largest m for ECRMCV on the LocalCluster (ECRM fit at every m)")
    parser.add_argument("--skip", default="", help="comma-separated tasks not to run "
                        "(ecrm, ecrmcv, sklearn, dask)")
    parser.add_argument("--quick", action="store_true", help="m=2000, M=200, 100 labels")
    parser.add_argument("--child", choices=("ecrm", "ecrmcv", "sklearn", "dask", "dask_cv"))
    parser.add_argument("--check", action="store_true")
    parser.add_argument("--accuracy", help="comma-separated M: exact vs Nystrom test loss")
    parser.add_argument("--plot", help="with --accuracy: save loss and fit time against M")
    args = parser.parse_args(argv)
    if args.quick:
        args.sizes, args.n_components, args.labels, args.n_test = "2000", 200, 100, 1000
    sizes = [int(s) for s in args.sizes.split(",")]
    if args.child:
        return child(args.child, sizes[0], args.n_components, args.features, args.labels,
                     args.alphas, args.n_test, args.check, args.loo_samples)
    print(f"machine: {describe()}")
    print(f"load average at start: {os.getloadavg()}")
    if args.accuracy:
        return accuracy(sizes[0], [int(M) for M in args.accuracy.split(",")], args.features,
                        args.labels, args.alphas, args.n_test, args.plot)
    skip = set(filter(None, args.skip.split(",")))
    print(f"M={args.n_components}, p={args.features}, {args.labels}-label tree, "
          f"{args.alphas} alphas, LOO over {args.loo_samples or 'all'} rows, {args.n_test} "
          f"test rows; one process per measurement; times in s, RSS in GiB")
    print(f"{'m':>8}{'ECRM fit':>10}{'sklearn':>9}{'ratio':>7}{'ECRMCV':>9}"
          f"{'pred rows/s':>13}{'skl rows/s':>12}{'RSS ECRM':>10}{'RSS CV':>8}{'RSS skl':>9}"
          f"{'Hamming':>9}{'max|diff|':>11}", flush=True)
    nan = {"fit_s": float("nan"), "predict_rows_per_s": float("nan"),
           "peak_rss_gib": float("nan"), "test_hamming": float("nan")}
    dask_rows = []
    for i, m in enumerate(sizes):
        cv = nan if "ecrmcv" in skip else run("ecrmcv", m, args)
        a = nan if "ecrm" in skip else run("ecrm", m, args)
        sk = (nan if "sklearn" in skip or m > args.sklearn_max
              else run("sklearn", m, args, i == 0))
        diff = f"{sk['max_abs_diff']:.1e}" if "max_abs_diff" in sk else "-"
        print(f"{m:>8}{a['fit_s']:>10.1f}{sk['fit_s']:>9.1f}{a['fit_s'] / sk['fit_s']:>7.2f}"
              f"{cv['fit_s']:>9.1f}{cv['predict_rows_per_s']:>13.0f}"
              f"{sk['predict_rows_per_s']:>12.0f}{a['peak_rss_gib']:>10.2f}"
              f"{cv['peak_rss_gib']:>8.2f}{sk['peak_rss_gib']:>9.2f}{cv['test_hamming']:>9.3f}"
              f"{diff:>11}", flush=True)
        if args.dask:
            with_cv = "ecrmcv" not in skip and m <= args.dask_cv_max
            dask_rows.append((m, a, cv, run("dask_cv" if with_cv else "dask", m, args)))
    if dask_rows:
        print("Dask LocalCluster (2 workers x 1 thread, 4 GiB each) against in-memory:")
        print(f"{'m':>8}{'ECRM dask':>11}{'in-mem':>8}{'ratio':>7}{'ECRMCV dask':>13}"
              f"{'in-mem':>8}{'ratio':>7}{'pred rows/s':>13}{'peak RSS':>10}{'Hamming':>9}")
        for m, a, cv, d in dask_rows:
            cv_s = d.get("cv_fit_s", float("nan"))
            print(f"{m:>8}{d['fit_s']:>11.1f}{a['fit_s']:>8.1f}{d['fit_s'] / a['fit_s']:>7.2f}"
                  f"{cv_s:>13.1f}{cv['fit_s']:>8.1f}{cv_s / cv['fit_s']:>7.2f}"
                  f"{d.get('predict_rows_per_s', float('nan')):>13.0f}"
                  f"{d['peak_rss_gib']:>10.2f}{d.get('test_hamming', float('nan')):>9.3f}",
                  flush=True)


if __name__ == "__main__":
    main()
