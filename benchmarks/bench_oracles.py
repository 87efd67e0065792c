"""Benchmark the batched hierarchy oracle against per-instance HiGHS LP.

For random trees and random DAGs of 100, 1,000 and 10,000 labels, time
``Hierarchy.argmin(C, method="auto")`` on a batch of cost rows (batched tree DP on
trees, min-cut closure on DAGs) and the paper's LP relaxation solved one row at a time
with ``scipy.optimize.linprog(method="highs")`` (``method="lp"``) on a subset of the
rows. Reports medians over repeats of the time per instance, the speed-up, and the
largest objective gap between the two on the shared rows.

Then a stress case for the DAG oracles (issue 11.5): random signs on a Gene Ontology DAG
(pheno_GO's, from ``ECRM_DATA`` or ``../shared/data/hmc``; a random DAG of the same size
otherwise) with 1%, 30%, 50% and 93% negative costs. For each: the closure (``"mincut"``)
batched and one row per call (median and 95th percentile per row), the per-row HiGHS LP, the
hierarchical-loss MILP (``argmin_products``, one row per call) and the closure's count of
exact re-solves (its certificate failing).

Usage::

    python benchmarks/bench_oracles.py [--quick] [--seed SEED] [--stress-only]
"""

from __future__ import annotations

import argparse
import os
import platform
import sys
import time
from pathlib import Path

import numpy as np
import scipy

sys.path.insert(0, str(Path(__file__).parent))
from _common import median_time

try:
    from ecrm.spaces.hierarchy import Hierarchy
except ImportError:  # running from a source checkout without installing
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))
    from ecrm.spaces.hierarchy import Hierarchy


def random_tree(rng: np.random.Generator, d: int) -> Hierarchy:
    """Random recursive tree: each label's parent is uniform among earlier labels."""
    parents = [rng.integers(0, j) for j in range(1, d)]
    return Hierarchy([(int(p), j) for j, p in enumerate(parents, start=1)], labels=range(d))


def random_dag(rng: np.random.Generator, d: int) -> Hierarchy:
    """Random DAG: each label after the first gets 1-3 parents among earlier labels."""
    edges = []
    for j in range(1, d):
        k = min(int(rng.integers(1, 4)), j)
        edges += [(int(p), j) for p in rng.choice(j, size=k, replace=False)]
    return Hierarchy(edges, labels=range(d))


def ecrm_like_costs(rng: np.random.Generator, n: int, d: int) -> np.ndarray:
    """Costs like ECRM's: N(0.3, 1) entries (mostly positive), each row scaled by a lognormal."""
    return rng.normal(0.3, 1.0, size=(n, d)) * rng.lognormal(0.0, 1.0, size=(n, 1))


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="smaller batches, fewer repeats")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--stress-only", action="store_true", help="only the DAG stress case")
    args = parser.parse_args(argv)
    if args.stress_only:
        return stress(args.quick, args.seed)

    if args.quick:
        sizes, n_batch, n_lp, repeats = (100, 1_000, 10_000), 100, 5, 2
    else:
        sizes, n_batch, n_lp, repeats = (100, 1_000, 10_000), 500, 30, 3
    rng = np.random.default_rng(args.seed)

    print("Hierarchy oracle benchmark: batched 'auto' vs per-instance HiGHS linprog ('lp')")
    print(
        f"machine: {platform.platform()} | {platform.processor() or platform.machine()} | "
        f"{os.cpu_count()} CPUs | Python {platform.python_version()} | numpy {np.__version__} | "
        f"scipy {scipy.__version__}"
    )
    print(
        f"batch {n_batch} rows for 'auto', {n_lp} rows for 'lp', median of {repeats} repeats; "
        "costs N(0.3, 1) x lognormal row scale"
    )
    header = (
        f"{'hierarchy':<10}{'d':>7}{'edges':>8}{'build ms':>10}{'auto us/inst':>14}"
        f"{'lp us/inst':>13}{'speed-up':>10}{'max rel gap':>13}"
    )
    print(header)
    print("-" * len(header))
    t_start = time.perf_counter()
    worst_gap = 0.0
    for d in sizes:
        for kind, make in (("tree", random_tree), ("DAG", random_dag)):
            t0 = time.perf_counter()
            h = make(rng, d)
            h.argmin(np.zeros((1, d)))  # build the cached plans / ancestor matrix
            build = time.perf_counter() - t0
            C = ecrm_like_costs(rng, n_batch, d)
            Y_auto = h.argmin(C)
            t_auto = median_time(lambda h=h, C=C: h.argmin(C), repeats) / n_batch
            C_lp = C[:n_lp]
            Y_lp = h.argmin(C_lp, method="lp")
            t_lp = median_time(lambda h=h, C=C_lp: h.argmin(C, method="lp"), repeats) / n_lp
            obj_auto = np.sum(C_lp * Y_auto[:n_lp], axis=1)
            obj_lp = np.sum(C_lp * Y_lp, axis=1)
            gap = float(np.max(np.abs(obj_auto - obj_lp) / np.abs(C_lp).sum(axis=1)))
            worst_gap = max(worst_gap, gap)
            if not (h.is_consistent(Y_auto).all() and h.is_consistent(Y_lp).all()):
                raise RuntimeError(f"inconsistent answer on the {kind} with {d} labels")
            print(
                f"{kind:<10}{d:>7}{len(h.edges):>8}{1e3 * build:>10.1f}{1e6 * t_auto:>14.1f}"
                f"{1e6 * t_lp:>13.1f}{t_lp / t_auto:>9.0f}x{gap:>13.1e}"
            )
    print("-" * len(header))
    print(
        f"max |objective(auto) - objective(lp)| / sum|c| = {worst_gap:.1e}; "
        f"total {time.perf_counter() - t_start:.1f} s"
    )
    if worst_gap > 1e-6:
        print("WARNING: the oracles disagree on the objective")
        return 1
    return stress(args.quick, args.seed)


def go_dag(rng: np.random.Generator) -> tuple[Hierarchy, str]:
    """pheno_GO's hierarchy if the data are found, else a random DAG of the same size."""
    for root in (os.environ.get("ECRM_DATA"), Path(__file__).resolve().parents[2] / "shared"
                 / "data" / "hmc"):
        if root and (Path(root) / "pheno_GO.train.arff.gz").exists():
            from ecrm.datasets import load_hmc

            return load_hmc("pheno_GO", root).hierarchy, "pheno_GO"
    return random_dag(rng, 3127), "random DAG"


def per_row_times(fn, C, *more) -> np.ndarray:
    """Wall time (ms) of ``fn`` on each row alone."""
    out = []
    for i in range(len(C)):
        args = [M[i : i + 1] for M in (C, *more)]
        t0 = time.perf_counter()
        fn(*args)
        out.append(time.perf_counter() - t0)
    return 1e3 * np.array(out)


def stress(quick: bool, seed: int) -> int:
    """Random signs on a GO-sized DAG: closure and MILP against the per-row LP."""
    rng = np.random.default_rng(seed)
    h, name = go_dag(rng)
    d, K = h.n_labels, len(h.multi_parent)
    n, n_single, n_lp, n_milp = (200, 20, 5, 5) if quick else (1000, 100, 20, 20)
    print(f"\nDAG stress case: {name} ({d} labels, {len(h.edges)} edges, {K} multi-parent); "
          f"|N(0, 1)| costs with random signs; batch {n} rows, {n_single} single-row calls")
    header = (f"{'negative':>9}{'batch ms/row':>14}{'row med':>9}{'row p95':>9}{'LP ms/row':>11}"
              f"{'LP/batch':>10}{'LP/p95':>8}{'MILP med':>10}{'MILP p95':>10}{'exact':>7}")
    print(header)
    print("-" * len(header))
    for frac in (0.01, 0.3, 0.5, 0.93):
        C = np.abs(rng.normal(0, 1, size=(n, d))) * np.where(rng.random((n, d)) < frac, -1, 1)
        P = np.abs(rng.normal(0, 0.3, size=(n, K))) * np.where(rng.random((n, K)) < frac, -1, 1)
        h._stats.clear()
        h.argmin(C[:2])
        t0 = time.perf_counter()
        Y = h.argmin(C)
        batch = 1e3 * (time.perf_counter() - t0) / n
        single = per_row_times(h.argmin, C[:n_single])
        lp = per_row_times(lambda c: h.argmin(c, method="lp"), C[:n_lp])
        milp = per_row_times(h.argmin_products, C[:n_milp], P[:n_milp])
        gap = np.abs(np.sum(C[:n_lp] * (Y[:n_lp] - h.argmin(C[:n_lp], method="lp")), axis=1))
        if np.any(gap > 1e-9 * np.abs(C[:n_lp]).sum(axis=1)) or not h.is_consistent(Y).all():
            print(f"WARNING: closure and LP disagree at {frac:.0%} negative")
            return 1
        p95 = np.percentile(single, 95)
        print(f"{frac:>9.0%}{batch:>14.3f}{np.median(single):>9.2f}{p95:>9.2f}"
              f"{np.median(lp):>11.1f}{np.median(lp) / batch:>9.0f}x{np.median(lp) / p95:>7.0f}x"
              f"{np.median(milp):>10.1f}{np.percentile(milp, 95):>10.1f}"
              f"{h._stats.get('exact', 0):>7}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
