"""ECRM with forest weights at scale, beside the kernel's streaming Nystrom fit.

The synthetic hierarchical multi-label data of ``bench_scale.py`` (make_hmc's label model,
generated in chunks: X float64, Y uint8), the Hamming loss. For each m, in a fresh process
each (so that its peak RSS is its own):

* ``forest``: ``ForestECRM(n_estimators=--trees, max_samples=min(m, --max-draws),
  min_samples_leaf=--min-leaf, n_jobs=--n-jobs)``: fit (the trees, the training leaves, the
  out-of-bag criterion), predict on the test rows, the model file written and its size;
* ``nystrom``: ``ECRM(solver=NystromSolver(n_components=--n-components))`` at one alpha, RBF
  gamma = 1/p (``bench_scale.py``'s fit), predict, the model file.

The ratio is forest / Nystrom fit time; test Hamming loss of both.

With ``--scheduler local`` the second row is the same forest fitted on Dask arrays
(``forest-dask``) instead of the Nystrom fit: a ``LocalCluster`` of ``--workers``
single-thread worker processes, each with ``--memory-limit``. The training rows are generated
there, chunk by chunk (the same rows as in memory), and never come to the client: each tree
grows on a worker from its drawn rows, the training leaves are found there, and the test
rows are predicted there. The client holds the model (the packed trees, the bootstrap counts
and leaves, m x trees each), ``Y`` and the targets. Its line adds every worker's peak RSS
(``worker GB``, the largest, and whether one went over its limit) and the client's peak
after writing the model file (``save GB``: the file holds the training rows, which are
gathered for it); ``peak GB`` is the client's peak through the fit and the prediction. The
ratio is cluster / in-memory fit time.

    python benchmarks/bench_forest.py [--sizes 10000,100000,1000000] [--quick]
    python benchmarks/bench_forest.py --scheduler local --workers 2 --memory-limit 3GiB
"""

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).parent))
from _common import describe
from bench_scale import ALPHA, _chunk, _data, _model, _sizes


def child(task, m, p, labels, n_test, args) -> dict:
    from ecrm import ECRM, ForestECRM, NystromSolver, save
    from ecrm.losses import HammingLoss

    if task == "forest-dask":
        return _on_cluster(m, p, labels, n_test, args)
    X, Y, Xt, Yt, h = _data(m, n_test, p, labels)
    if task == "forest":
        est = ForestECRM(HammingLoss(), h, n_estimators=args.trees,
                         max_samples=min(m, args.max_draws), min_samples_leaf=args.min_leaf,
                         n_jobs=args.n_jobs, random_state=0)
    else:
        est = ECRM(HammingLoss(), h, alpha=ALPHA, gamma=1.0 / p,
                   solver=NystromSolver(n_components=args.n_components), random_state=0)
    t0 = time.perf_counter()
    est.fit(X, Y)
    out = {"fit_s": time.perf_counter() - t0}
    t0 = time.perf_counter()
    P = est.predict(Xt)
    out["predict_rows_per_s"] = len(Xt) / (time.perf_counter() - t0)
    out["test_hamming"] = float(np.mean(HammingLoss()(P, Yt)))
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "m.ecrm")
        save(est, path)
        out["file_mb"] = os.path.getsize(path) / 2**20
    out["peak_rss_gb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20
    return out


def _worker_peak_gb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20


def _on_cluster(m, p, labels, n_test, args) -> dict:
    """The forest fitted on Dask arrays generated and held by a LocalCluster (module
    docstring)."""
    import dask
    import dask.array as da
    from dask.utils import parse_bytes
    from distributed import Client, LocalCluster, wait

    from ecrm import ForestECRM, save
    from ecrm.losses import HammingLoss

    model = _model(p, labels)
    h, sizes = model[0], _sizes(m)
    parts = [dask.delayed(_chunk)(i, n, p, model) for i, n in enumerate(sizes)]
    X = da.concatenate([da.from_delayed(c[0], (n, p), float)
                        for c, n in zip(parts, sizes, strict=True)])
    Y = da.concatenate([da.from_delayed(c[1], (n, labels), np.uint8)
                        for c, n in zip(parts, sizes, strict=True)])
    Xt, Yt = _chunk(-1 % 2**31, n_test, p, model)
    with LocalCluster(n_workers=args.workers, threads_per_worker=1,
                      memory_limit=args.memory_limit, dashboard_address=None) as cluster, \
            Client(cluster) as client:
        Xd, Yd = client.persist([X, Y])
        wait([Xd, Yd])  # the rows live on the workers before the clock starts
        est = ForestECRM(HammingLoss(), h, n_estimators=args.trees,
                         max_samples=min(m, args.max_draws), min_samples_leaf=args.min_leaf,
                         random_state=0)
        t0 = time.perf_counter()
        est.fit(Xd, Yd)
        out = {"fit_s": time.perf_counter() - t0}
        t0 = time.perf_counter()
        P = est.predict(da.from_array(Xt, chunks=(-(-len(Xt) // args.workers), -1))).compute()
        out["predict_rows_per_s"] = len(Xt) / (time.perf_counter() - t0)
        out["peak_rss_gb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20
        peaks = client.run(_worker_peak_gb)
        out["worker_peak_gb"] = sorted(peaks.values())
        out["worker_limit_gb"] = parse_bytes(args.memory_limit) / 2**30
        out["workers_lost"] = args.workers - len(client.scheduler_info()["workers"])
        out["test_hamming"] = float(np.mean(HammingLoss()(P, Yt)))
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "m.ecrm")
            save(est, path)  # gathers the training rows: a model file holds them
            out["file_mb"] = os.path.getsize(path) / 2**20
    out["save_peak_gb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sizes", default="10000,100000,1000000")
    ap.add_argument("--features", type=int, default=20)
    ap.add_argument("--labels", type=int, default=50)
    ap.add_argument("--n-test", type=int, default=10000)
    ap.add_argument("--trees", type=int, default=100)
    ap.add_argument("--max-draws", type=int, default=100000)
    ap.add_argument("--min-leaf", type=int, default=5)
    ap.add_argument("--n-jobs", type=int, default=2)
    ap.add_argument("--n-components", type=int, default=500)
    ap.add_argument("--scheduler", choices=("local",), default=None,
                    help="compare the in-memory forest with the same forest on a LocalCluster")
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--memory-limit", default="3GiB", help="of each worker")
    ap.add_argument("--quick", action="store_true", help="sizes 2000,10000, 20 trees")
    ap.add_argument("--child", nargs=2, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.quick:
        args.sizes, args.trees = "2000,10000", 20
    if args.child:
        task, m = args.child
        print(json.dumps(child(task, int(m), args.features, args.labels, args.n_test, args)))
        return
    print(describe())
    print(f"load average {' '.join(f'{v:.1f}' for v in os.getloadavg())}")
    tasks = ("forest", "nystrom") if args.scheduler is None else ("forest", "forest-dask")
    print(f"p={args.features}, {args.labels} labels, {args.trees} trees, at most "
          f"{args.max_draws} draws a tree, min_samples_leaf={args.min_leaf}, "
          f"n_jobs={args.n_jobs}; " + (f"Nystrom M={args.n_components}" if args.scheduler
                                       is None else f"LocalCluster of {args.workers} "
                                       f"single-thread workers, {args.memory_limit} each"))
    print(f"{'m':>9} {'method':<12}{'fit s':>9}{'rows/s':>10}{'Hamming':>9}{'file MB':>9}"
          f"{'peak GB':>9}")
    passthrough = [a for a in sys.argv[1:] if a != "--quick"]
    if args.quick:
        passthrough += ["--trees", str(args.trees)]
    for m in map(int, args.sizes.split(",")):
        rows = {}
        for task in tasks:
            cmd = [sys.executable, __file__, *passthrough, "--child", task, str(m)]
            res = subprocess.run(cmd, capture_output=True, text=True, check=True)
            rows[task] = r = json.loads(res.stdout.strip().splitlines()[-1])
            workers = "" if "worker_peak_gb" not in r else (
                f"  worker GB {', '.join(f'{g:.2f}' for g in r['worker_peak_gb'])} "
                f"(limit {r['worker_limit_gb']:g}; lost {r['workers_lost']}); "
                f"save GB {r['save_peak_gb']:.2f}")
            print(f"{m:>9} {task:<12}{r['fit_s']:>9.1f}{r['predict_rows_per_s']:>10.0f}"
                  f"{r['test_hamming']:>9.3f}{r['file_mb']:>9.1f}{r['peak_rss_gb']:>9.2f}"
                  + workers, flush=True)
        first, second = tasks
        print(f"{'':>9} {second} / {first} fit time: "
              f"{rows[second]['fit_s'] / rows[first]['fit_s']:.2f}; load average "
              f"{os.getloadavg()[0]:.1f}", flush=True)


if __name__ == "__main__":
    main()
