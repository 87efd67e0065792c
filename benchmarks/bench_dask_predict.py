"""Prediction on a Dask cluster beside prediction in memory, for a model fitted once.

The synthetic hierarchical multi-label data of ``bench_scale.py`` (make_hmc's label model:
X float64, Y uint8), the Hamming loss. Each family is fitted once in memory on ``--m`` rows:

* ``forest``: ``ForestECRM(n_estimators=--trees, min_samples_leaf=--min-leaf)``;
* ``nystrom``: ``ECRM(solver=NystromSolver(n_components=--n-components))``, RBF gamma = 1/p.

The same ``--n-test`` test rows are then predicted ``--repeats`` times in memory (a NumPy
array) and on a ``LocalCluster`` of ``--workers`` single-thread worker processes, one call of
each in turn (the load of a shared machine changes from minute to minute). On the cluster the
rows are persisted as a Dask array of ``--chunk-rows`` rows a chunk before the clock starts;
each call is ``predict(X).compute()``: the model shipped to the workers, the chunks
predicted there and the predictions gathered on the client. A record per family gives the
median rows/s of both, their ratio (cluster / in memory), the first cluster call's time,
the pickled size of the prediction graph (``graph_mb``: at ``--chunk-rows`` and at half of
it, which shows whether the model is held once, per chunk or not at all) and the load
average through the calls. The predictions of both are checked equal.

    python benchmarks/bench_dask_predict.py [--m 100000] [--n-test 100000] [--json OUT]
"""

import argparse
import json
import os
import pickle
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).parent))
from _common import describe
from bench_scale import ALPHA, _data


def _estimator(family, p, h, args):
    from ecrm import ECRM, ForestECRM, NystromSolver
    from ecrm.losses import HammingLoss

    if family == "forest":
        return ForestECRM(HammingLoss(), h, n_estimators=args.trees,
                          min_samples_leaf=args.min_leaf, n_jobs=args.n_jobs, random_state=0)
    return ECRM(HammingLoss(), h, alpha=ALPHA, gamma=1.0 / p,
                solver=NystromSolver(n_components=args.n_components), random_state=0)


def _times(fn, repeats):
    out, times = None, []
    for _ in range(repeats):
        t0 = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - t0)
    return out, times


def _graph_mb(lazy) -> float:
    """The pickled size of a lazy result's task graph, in MB (as the client ships it)."""
    import cloudpickle

    return len(cloudpickle.dumps(dict(lazy.__dask_graph__()), protocol=pickle.HIGHEST_PROTOCOL)
               ) / 2**20


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--families", default="forest,nystrom")
    ap.add_argument("--m", type=int, default=100_000, help="training rows")
    ap.add_argument("--n-test", type=int, default=100_000)
    ap.add_argument("--features", type=int, default=20)
    ap.add_argument("--labels", type=int, default=50)
    ap.add_argument("--trees", type=int, default=100)
    ap.add_argument("--min-leaf", type=int, default=5)
    ap.add_argument("--n-jobs", type=int, default=2, help="of the forest's fit")
    ap.add_argument("--n-components", type=int, default=500)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--memory-limit", default="3GiB", help="of each worker")
    ap.add_argument("--chunk-rows", type=int, default=10_000)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--json", help="write the records (a list) to this file")
    args = ap.parse_args()

    import dask.array as da
    from distributed import Client, LocalCluster, wait

    print(describe())
    print(f"load average {' '.join(f'{v:.1f}' for v in os.getloadavg())}", flush=True)
    X, Y, Xt, _, h = _data(args.m, args.n_test, args.features, args.labels)
    families = args.families.split(",")
    fitted, records = {}, []
    for family in families:
        est = _estimator(family, args.features, h, args)
        t0 = time.perf_counter()
        fitted[family] = est.fit(X, Y)
        print(f"{family}: fit in {time.perf_counter() - t0:.1f} s", flush=True)
    with LocalCluster(n_workers=args.workers, threads_per_worker=1, processes=True,
                      memory_limit=args.memory_limit, dashboard_address=None) as cluster, \
            Client(cluster):
        Xd = da.from_array(Xt, chunks=(args.chunk_rows, -1)).persist()
        Xh = da.from_array(Xt, chunks=(max(1, args.chunk_rows // 2), -1)).persist()
        wait([Xd, Xh])
        for family, est in fitted.items():
            memory, dask_times, loads = [], [], []
            for _ in range(args.repeats):  # side by side: the load of the machine varies
                P, t = _times(lambda e=est: e.predict(Xt), 1)
                memory += t
                Pd, t = _times(lambda e=est: e.predict(Xd).compute(), 1)
                dask_times += t
                np.testing.assert_array_equal(Pd, P)
                loads.append(os.getloadavg()[0])
            mem_rate = args.n_test / np.median(memory)
            dask_rate = args.n_test / np.median(dask_times)
            records.append({
                "family": family, "m": args.m, "n_test": args.n_test,
                "chunk_rows": args.chunk_rows, "workers": args.workers,
                "memory_rows_per_s": round(mem_rate), "dask_rows_per_s": round(dask_rate),
                "dask_over_memory": round(dask_rate / mem_rate, 2),
                "dask_first_seconds": round(dask_times[0], 2),
                "graph_mb": round(_graph_mb(est.predict(Xd)), 2),
                "graph_mb_half_chunks": round(_graph_mb(est.predict(Xh)), 2),
                "load_average": f"{min(loads):.1f} to {max(loads):.1f}"})
            print(json.dumps(records[-1]), flush=True)
    if args.json:
        Path(args.json).write_text(json.dumps(records, indent=1) + "\n")


if __name__ == "__main__":
    main()
