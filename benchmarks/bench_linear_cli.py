"""``ecrm fit --kernel linear`` on a large CSV: the primal model file against the dual's.

A linear-kernel model fitted in the primal (``--solver auto`` with more rows than features)
is stored as its weights (p x d) without the training rows, so its file and ``ecrm predict``
do not grow with m; the dual (``--solver dual``, the earlier default) stores the training
rows and predicts through an m-column kernel block. Both through the real ``ecrm`` command,
side by side on the same files (at 50,000 rows the dual needs 23 GiB and is refused by the
default budget: the primal row alone is measured then). Run:
``python benchmarks/bench_linear_cli.py [--rows 15000] [--memory-budget 8]``.
"""

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

from ecrm.datasets import make_hmc  # noqa: E402


def _csv(path: str, X, Y, h) -> None:
    names = [";".join(str(v) for v in row) for row in h.to_labels(Y)]
    header = ",".join(f"x{j}" for j in range(X.shape[1])) + ",labels"
    rows = (",".join(f"{v:.5g}" for v in x) + "," + lab for x, lab in zip(X, names, strict=True))
    Path(path).write_text(header + "\n" + "\n".join(rows) + "\n")
    edges = np.asarray(h.edges).reshape(-1, 2)
    lone = set(range(h.n_labels)) - set(edges.ravel().tolist())  # a label on a line of its own
    hierarchy = "\n".join([f"{h.labels[p]}\t{h.labels[c]}" for p, c in edges]
                          + [str(h.labels[j]) for j in sorted(lone)])
    Path(path).with_suffix(".tsv").write_text(hierarchy + "\n")


def _ecrm(*args: str) -> float:
    t0 = time.perf_counter()
    subprocess.run([sys.executable, "-m", "ecrm", *args, "--quiet"], check=True,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.perf_counter() - t0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=15_000)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--memory-budget", default="8",
                        help="GiB for the dual's fit (e.g. 12 at 30,000 rows)")
    args = parser.parse_args()
    print(describe())
    folder = tempfile.mkdtemp()
    X, Y, h = make_hmc(args.rows, n_features=50, n_labels=100, random_state=0)
    train = os.path.join(folder, "train.csv")
    _csv(train, X, Y, h)
    common = ["--hierarchy", train[:-4] + ".tsv", "--kernel", "linear", "--standardize", "no"]
    print(f"{args.rows} rows, 50 features, {h.n_labels} labels; medians of {args.repeats}")
    print(f"{'solver':<8}{'fit s':>8}{'model MB':>10}{'predict s':>11}")
    out = {}
    for solver in ("auto", "dual"):
        model = os.path.join(folder, f"{solver}.ecrm")
        try:
            fit_s = _ecrm("fit", train, *common, "--solver", solver, "-o", model,
                          "--memory-budget", args.memory_budget)
        except subprocess.CalledProcessError:
            print(f"{solver:<8} refused (over the memory budget)")
            return
        pred = [_ecrm("predict", model, train, "-o", os.path.join(folder, "p.csv"))
                for _ in range(args.repeats)]
        out[solver] = (fit_s, os.path.getsize(model) / 1e6, float(np.median(pred)))
        print(f"{'primal' if solver == 'auto' else solver:<8}{fit_s:>8.1f}"
              f"{out[solver][1]:>10.2f}{out[solver][2]:>11.1f}")
    print(f"the primal file is {out['dual'][1] / out['auto'][1]:.0f}x smaller, its predict "
          f"{out['dual'][2] / out['auto'][2]:.1f}x faster (reading the CSV included)")


if __name__ == "__main__":
    main()
