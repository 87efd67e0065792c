"""``ecrm fit --solver nystrom`` and ``ecrm predict`` on a large CSV: wall time and peak memory.

Writes a synthetic CSV (the :func:`ecrm.datasets.make_hmc` model: 50 standard-normal
features, a random 500-label tree, labels ``L3;L17;...`` with a hierarchy TSV), drawn in
chunks of rows so that the benchmark itself stays small (``make_hmc`` returns the whole
float label matrix: 4 GB at a million rows), then runs the real ``ecrm`` command on it:

* ``ecrm fit --solver nystrom --n-components M --standardize no`` (the CSV is read in row
  chunks, the labels kept as bool, the Nystrom normal equations summed over row blocks);
* ``ecrm predict`` (reads, predicts and writes the predictions in row chunks);
* with ``--scheduler local``, also ``ecrm fit --scheduler ADDRESS`` on a
  :class:`distributed.LocalCluster` started here (the CSV read by ``dask.dataframe``), and
  whether it gives the same predictions.

Each command's wall time and peak resident memory (its own process, from ``wait4``; the
Dask workers' memory is not counted) are printed with the file sizes. Run::

    python benchmarks/bench_cli_scale.py                       # 100,000 rows
    python benchmarks/bench_cli_scale.py --rows 1000000        # the full run
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).parent))
from _common import describe  # noqa: E402

from ecrm.datasets import random_tree  # noqa: E402


def write_csv(path: str, rows: int, *, n_features: int = 50, n_labels: int = 500,
              seed: int = 0, chunk: int = 50_000) -> None:
    """The make_hmc model (same recipe and noise 0.5), written ``chunk`` rows at a time."""
    rng = np.random.RandomState(seed)
    h = random_tree(n_labels, n_top=3, random_state=rng)
    A = rng.normal(scale=1.0 / np.sqrt(n_features), size=(n_features, n_labels)) * 2.0
    B = rng.normal(scale=1.0 / np.sqrt(n_features), size=(n_features, n_labels))
    thresholds = rng.uniform(-0.3, 0.5, size=n_labels)
    names = np.asarray(h.labels, dtype=object)
    with open(path, "w") as fh:
        fh.write(",".join(f"x{j}" for j in range(n_features)) + ",labels\n")
        for start in range(0, rows, chunk):
            n = min(chunk, rows - start)
            X = rng.normal(size=(n, n_features))
            score = np.sin(X @ A) + 0.5 * X @ B + rng.normal(scale=0.5, size=(n, n_labels))
            Y = np.zeros((n, n_labels), dtype=bool)
            for j in h.order:  # parents first
                parents = h.parents[j]
                Y[:, j] = (Y[:, parents[0]] if len(parents) else True) & (
                    score[:, j] > thresholds[j])
            text = [",".join(f"{v:.5g}" for v in x) + "," + ";".join(names[y])
                    for x, y in zip(X, Y, strict=True)]
            fh.write("\n".join(text) + "\n")
    edges = [f"{h.labels[p]}\t{h.labels[c]}" for p, c in np.asarray(h.edges)]
    Path(path).with_suffix(".tsv").write_text("\n".join(edges + list(h.labels)) + "\n")


def run(*args: str) -> tuple[float, float]:
    """Run ``python -m ecrm ARGS --quiet``: (wall seconds, peak RSS in GiB)."""
    t0 = time.perf_counter()
    proc = subprocess.Popen([sys.executable, "-m", "ecrm", *args, "--quiet"],
                            stdout=subprocess.DEVNULL)
    _, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode:
        raise SystemExit(f"ecrm {' '.join(args)} failed with status {proc.returncode}")
    return time.perf_counter() - t0, usage.ru_maxrss / 2**20  # kB -> GiB


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=100_000)
    parser.add_argument("--n-components", type=int, default=2000)
    parser.add_argument("--scheduler", choices=("none", "local"), default="none",
                        help="local: also fit on a LocalCluster (2 workers) with --scheduler")
    parser.add_argument("--folder", default=None, help="where to write (default: a temp dir)")
    args = parser.parse_args()
    print(describe())
    folder = args.folder or tempfile.mkdtemp(prefix="ecrm-scale-")
    train = os.path.join(folder, "train.csv")
    t0 = time.perf_counter()
    write_csv(train, args.rows)
    print(f"wrote {args.rows:,} rows x 50 features, 500-label tree: "
          f"{os.path.getsize(train) / 2**20:,.0f} MiB in {time.perf_counter() - t0:.0f} s")
    fit = ["fit", train, "--hierarchy", train[:-4] + ".tsv", "--solver", "nystrom",
           "--n-components", str(args.n_components), "--standardize", "no", "--seed", "0"]
    model = os.path.join(folder, "model.ecrm")
    wall, peak = run(*fit, "-o", model)
    print(f"ecrm fit:     {wall:8.1f} s, peak {peak:5.2f} GiB, model "
          f"{os.path.getsize(model) / 2**20:.1f} MiB")
    out = os.path.join(folder, "pred.csv")
    wall, peak = run("predict", model, train, "-o", out)
    print(f"ecrm predict: {wall:8.1f} s, peak {peak:5.2f} GiB, predictions "
          f"{os.path.getsize(out) / 2**20:.0f} MiB")
    if args.scheduler == "local":
        from distributed import LocalCluster

        with LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                          dashboard_address=None) as cluster:
            dask_model = os.path.join(folder, "model-dask.ecrm")
            wall, peak = run(*fit, "--scheduler", cluster.scheduler_address, "-o", dask_model)
            print(f"ecrm fit --scheduler: {wall:8.1f} s, client peak {peak:5.2f} GiB")
        dask_out = os.path.join(folder, "pred-dask.csv")
        run("predict", dask_model, train, "-o", dask_out)
        same = Path(out).read_bytes() == Path(dask_out).read_bytes()
        print(f"the --scheduler model predicts {'the same' if same else 'DIFFERENT'} labels")


if __name__ == "__main__":
    main()
