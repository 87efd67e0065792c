"""Benchmark the batched hierarchy oracle against per-instance HiGHS LP.

For random trees and random DAGs of 100, 1,000 and 10,000 labels, time
``Hierarchy.argmin(C, method="auto")`` on a batch of cost rows (batched tree DP on
trees, min-cut closure on DAGs) and the paper's LP relaxation solved one row at a time
with ``scipy.optimize.linprog(method="highs")`` (``method="lp"``) on a subset of the
rows. Reports medians over repeats of the time per instance, the speed-up, and the
largest objective gap between the two on the shared rows.

Then a stress case for the DAG oracles: random signs on the Gene
Ontology DAGs of pheno_GO and spo_GO (3,127 and 4,119 labels, read from ``ECRM_DATA`` or
``../shared/data/hmc`` relative to the repository; skipped with a note, and a random DAG of
the same size used instead, when the directory is absent) with 1%, 30%, 50% and 93% negative
costs. For each: the closure (``"mincut"``) and the hierarchical-loss oracle
(``argmin_products``), batched and one row per call (median and 95th percentile of the time
per row), side by side in the same process with the same oracles of an older commit
(``--baseline``, default the code before the degree-one contraction; its hierarchy package is
read with ``git show`` into a temporary package, skipped with a note without git), with the
ratio old / new of the medians. The answers are checked against the old code's, the per-row
HiGHS LP and a plain per-row HiGHS MILP on every label and product (no reduction). A second
table puts the closure's compiled path (numba, the ``fast`` extra) beside its scipy path in
the same process (both oracles, batched and single; x = median scipy / median compiled; the
compiled kernels are loaded before timing, their first-call compile time is printed). A third
puts the hierarchical-loss oracle's solver stage (the compiled branch and bound on
bit sets on the small parts and with closure bounds on the larger ones, then one MILP per block
on the fractional components only) beside its reference (every row with a fractional label
sent whole to the MILP) and beside the stage without the closure-bound search, same process
and rows.

Usage::

    python benchmarks/bench_oracles.py [--quick] [--seed SEED] [--stress-only]
                                       [--baseline COMMIT] [--data-dir DIR] [--cpu-time]

``--cpu-time`` times the oracles per row by the CPU time of the thread instead of the wall
clock: on a machine shared with other work, the wall clock of a call counts the time other
processes hold the core (a 20-row batch is cut several times, a single row rarely), the
thread's CPU time does not.
"""

from __future__ import annotations

import argparse
import importlib
import os
import platform
import subprocess
import sys
import tempfile
import time
from contextlib import contextmanager
from pathlib import Path

import numpy as np
import scipy

sys.path.insert(0, str(Path(__file__).parent))
from _common import describe, median_time

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
    parser.add_argument("--cpu-time", action="store_true",
                        help="time per row by the thread's CPU time, not the wall clock")
    parser.add_argument("--baseline", default=BASELINE,
                        help="commit whose hierarchy oracles are timed side by side "
                             f"(default {BASELINE}, before the degree-one contraction)")
    parser.add_argument("--data-dir", default=os.environ.get("ECRM_DATA"),
                        help="the HMC data (pheno_GO, spo_GO); default ECRM_DATA or "
                             "../shared/data/hmc relative to the repository")
    args = parser.parse_args(argv)
    if args.data_dir:
        os.environ["ECRM_DATA"] = args.data_dir
    if args.cpu_time:
        global _clock
        _clock = time.thread_time
    if args.stress_only:
        return stress(args.quick, args.seed, args.baseline)

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
    return stress(args.quick, args.seed, args.baseline)


BASELINE = "f19d2b4"  # the DAG oracles before the reductions, certified cut and MILP


def load_baseline(commit: str):
    """The ``ecrm.spaces.hierarchy`` package of ``commit``, imported as a separate package
    (its files read with ``git show``, imports renamed), or None with a note."""
    repo = Path(__file__).resolve().parents[1]
    folder = "src/ecrm/spaces/hierarchy/"
    try:
        names = subprocess.run(["git", "-C", str(repo), "ls-tree", "--name-only", commit,
                                folder], capture_output=True, text=True, check=True).stdout
        root = Path(tempfile.mkdtemp(prefix="ecrm_baseline_"))
        package = root / f"ecrm_hierarchy_{commit}"
        package.mkdir()
        for name in names.split():
            text = subprocess.run(["git", "-C", str(repo), "show", f"{commit}:{name}"],
                                  capture_output=True, text=True, check=True).stdout
            (package / Path(name).name).write_text(
                text.replace("ecrm.spaces.hierarchy", package.name))
    except (OSError, subprocess.CalledProcessError) as exc:
        print(f"\nnote: no baseline ({commit}: {exc}); the old code is not timed")
        return None
    sys.path.insert(0, str(root))
    return importlib.import_module(package.name)


def data_dir() -> Path | None:
    """``ECRM_DATA`` or ``../shared/data/hmc`` relative to the repository, if it exists."""
    for root in (os.environ.get("ECRM_DATA"),
                 Path(__file__).resolve().parents[1].parent / "shared" / "data" / "hmc"):
        if root and Path(root).is_dir():
            return Path(root)
    return None


def stress_dags(rng: np.random.Generator) -> list[tuple[Hierarchy, str]]:
    """The GO DAGs of pheno_GO and spo_GO (3,127 and 4,119 labels) when the data are found,
    else (with a printed note) a random DAG of pheno_GO's size."""
    from ecrm.datasets import load_hmc_arff

    root = data_dir()
    found = [] if root is None else [root / f"{name}.train.arff.gz"
                                     for name in ("pheno_GO", "spo_GO")]
    found = [f for f in found if f.exists()]
    if not found:
        print("\nnote: no HMC data directory (ECRM_DATA or ../shared/data/hmc): the GO DAG "
              "case is skipped; a random DAG of 3,127 labels stands in for it")
        return [(random_dag(rng, 3127), "random DAG")]
    return [(load_hmc_arff(f).hierarchy, f.name.split(".")[0]) for f in found]


_clock = time.perf_counter  # of the per-row times: the thread's CPU time with --cpu-time


def per_row_times(fn, C, *more) -> np.ndarray:
    """Time (ms) of ``fn`` on each row alone."""
    out = []
    for i in range(len(C)):
        args = [M[i : i + 1] for M in (C, *more)]
        t0 = _clock()
        fn(*args)
        out.append(_clock() - t0)
    return 1e3 * np.array(out)


def per_row_in_batches(fn, n_batches, C, *more) -> np.ndarray:
    """Time per row (ms) of ``fn`` on each of ``n_batches`` consecutive batches."""
    out = []
    for rows in np.array_split(np.arange(len(C)), n_batches):
        t0 = _clock()
        fn(*(M[rows] for M in (C, *more)))
        out.append((_clock() - t0) / len(rows))
    return 1e3 * np.array(out)


def plain_milp(h: Hierarchy, C: np.ndarray, P: np.ndarray) -> np.ndarray:
    """Baseline: one HiGHS MILP per row on every label and product, no reduction."""
    import scipy.sparse as sp

    from ecrm.spaces.hierarchy import _products_milp

    n_parents = [len(h.parents[m]) for m in h.multi_parent]
    of_product = sp.csr_array(
        (np.ones(sum(n_parents)), (np.repeat(np.arange(len(n_parents)), n_parents),
                                   np.concatenate([h.parents[m] for m in h.multi_parent]))),
        shape=(len(n_parents), h.n_labels))
    free = np.ones(h.n_labels, dtype=bool)
    return np.vstack([_products_milp.solve_milps(
        [_products_milp.row_problem(h.edges, of_product, c, p, free, np.flatnonzero(p != 0))],
        h.n_labels) for c, p in zip(C, P, strict=True)])


def product_objective(h: Hierarchy, C, P, Y) -> np.ndarray:
    on = np.asarray(Y, dtype=bool)
    products = np.array([on[:, h.parents[m]].all(axis=1) for m in h.multi_parent]).T
    return np.sum(C * on, axis=1) + np.sum(P * products, axis=1)


@contextmanager
def engine(name: str):
    """The closure's path (``_closure._ENGINE``: "numba" or "scipy") inside the block."""
    from ecrm.spaces.hierarchy import _closure

    before, _closure._ENGINE = _closure._ENGINE, name
    try:
        yield
    finally:
        _closure._ENGINE = before


@contextmanager
def milp_stage(kind: str):
    """The hierarchical-loss oracle's solver stage inside the block: ``"reference"`` (no
    branch and bound, every row with a fractional label to the MILP whole), ``"bits"`` (the
    bit-set branch and bound up to 40 labels, without the closure-bound search) or the
    default."""
    from ecrm.spaces.hierarchy import _products

    names = ("_MILP_PATH", "_BRANCH_MAX", "_CUT_NODES")
    before = tuple(getattr(_products, name) for name in names)
    now = {"reference": ("rows", 0, 0), "bits": ("parts", 40, 0)}.get(kind, before)
    for name, value in zip(names, now, strict=True):
        setattr(_products, name, value)
    try:
        yield
    finally:
        for name, value in zip(names, before, strict=True):
            setattr(_products, name, value)


def compiled_available() -> bool:
    """Whether numba imports; the first-call compile (or cache load) time is printed."""
    from ecrm.spaces.hierarchy import Hierarchy as H
    from ecrm.spaces.hierarchy import _closure

    if _closure._import_compiled() is None:
        print("\nnote: numba is not installed (pip install 'ecrm[fast]'): the compiled "
              "closure is not timed")
        return False
    h = H([("a", "c"), ("a", "d"), ("b", "c"), ("b", "d")], labels="abcd")
    t0 = time.perf_counter()
    with engine("numba"):
        h.argmin(np.array([[1.0, 1.0, -1.5, -1.5]]), method="mincut")
    from ecrm.spaces.hierarchy import _branch

    _branch.search_parts(np.array([0, 1]), np.array([-1.0]), np.zeros(1, dtype=np.uint64),
                         np.array([0, 0]), np.zeros(0, dtype=np.uint64), np.zeros(0), 10)
    from ecrm.spaces.hierarchy import _cut_branch

    none = np.zeros(0, dtype=np.int64)
    _cut_branch.search_parts(np.array([0, 1]), np.array([-1.0]), np.array([0, 0]), none,
                             np.array([0, 0]), np.array([0]), none, np.zeros(0), 10)
    print(f"\ncompiled closure: kernels ready in {time.perf_counter() - t0:.2f} s (compile on "
          "the first run, then numba's cache)")
    return True


def pct(t: np.ndarray) -> str:
    return f"{np.median(t):>8.2f}{np.percentile(t, 95):>8.2f}"


def ratio(old: np.ndarray | None, new: np.ndarray) -> str:
    return f"{'':>7}" if old is None else f"{np.median(old) / np.median(new):>6.1f}x"


def stress(quick: bool, seed: int, baseline: str = BASELINE) -> int:
    """Random signs on GO DAGs: closure and hierarchical MILP, batched and one row per call,
    side by side with the oracles of ``baseline``, checked against them, the per-row HiGHS LP
    and a plain per-row HiGHS MILP (no reduction)."""
    rng = np.random.default_rng(seed)
    n, n_single, n_lp, n_milp, n_plain = ((200, 40, 5, 40, 2) if quick
                                          else (1000, 200, 20, 200, 3))
    old = load_baseline(baseline)
    paths = ("numba", "scipy") if compiled_available() else ("scipy",)
    print(f"\nDAG stress case on {describe()}; load average "
          f"{os.getloadavg()[0]:.1f} at the start; times by "
          + ("the thread's CPU time" if _clock is time.thread_time else "the wall clock"))
    print("|N(0, 1)| label costs and |N(0, 0.3)| product costs, each negative with the "
          "probability shown; times per row in ms, median and 95th percentile (batched: over "
          f"10 batches; single: over the rows); old = commit {baseline} in the same process, "
          "x = median old / median new")
    status = 0
    side = []  # the compiled / scipy table
    stage = []  # the MILP stage / its reference table
    for h, name in stress_dags(rng):
        d, K = h.n_labels, len(h.multi_parent)
        h_old = None if old is None else old.Hierarchy(h.edges.tolist(), labels=range(d))
        mixed = np.random.default_rng(seed).normal(size=(2, d))  # reaches the cut
        for space in (h, h_old):
            if space is not None:  # the cached set-up and the first-call compiles, not timed
                space.argmin(np.zeros((1, d)))
                space.argmin(mixed)
                space.argmin_products(np.zeros((1, d)), np.zeros((1, K)))
        print(f"\n{name}: {d} labels, {len(h.edges)} edges, {K} multi-parent; closure batch "
              f"{n} rows, {n_single} single; MILP batch {n_milp} rows, {n_milp // 2} single; "
              f"LP and plain MILP on {n_lp} and {n_plain} rows")
        header = (f"{'negative':>9} | {'closure':>8} {'batch':>16}{'old':>16}{'':>7}"
                  f"{'single':>16}{'old':>16}{'':>7}{'LP med':>8} | "
                  f"{'MILP':>5} {'batch':>16}{'old':>16}{'':>7}{'single':>16}{'old':>16}{'':>7}"
                  f"{'plain':>7}{'left':>6}")
        print(header)
        print(f"{'':>9} | {'':>8} " + f"{'p50     p95':>16}{'p50     p95':>16}{'':>7}" * 2
              + f"{'':>8} | {'':>5} " + f"{'p50     p95':>16}{'p50     p95':>16}{'':>7}" * 2)
        print("-" * len(header))
        for frac in (0.01, 0.3, 0.5, 0.93):
            C = np.abs(rng.normal(0, 1, size=(n, d))) * np.where(rng.random((n, d)) < frac, -1, 1)
            P = (np.abs(rng.normal(0, 0.3, size=(n, K)))
                 * np.where(rng.random((n, K)) < frac, -1, 1))
            h._stats.clear()
            times = {}
            for key, space in (("new", h), ("old", h_old)):
                if space is None:
                    times[key] = [None] * 4
                    continue
                times[key] = oracle_times(space, C, P, n_single, n_milp)
            left = h._stats.get("milp_rows", 0)
            by_path = {}  # "new" ran on the default path: numba when it imports
            for path in paths:
                with engine(path):
                    by_path[path] = (times["new"] if path == "numba"
                                     else oracle_times(h, C, P, n_single, n_milp))
                    by_path[path + " Y"] = (h.argmin(C[:n_milp]),
                                            h.argmin_products(C[:n_milp], P[:n_milp]))
            stage_times, Y_stage = {}, []
            for kind in ("reference", "bits"):
                with milp_stage(kind):
                    stage_times[kind] = [
                        per_row_in_batches(h.argmin_products, 10, C[:n_milp], P[:n_milp]),
                        per_row_times(h.argmin_products, C[: n_milp // 2], P[: n_milp // 2])]
                    Y_stage.append(h.argmin_products(C[:n_milp], P[:n_milp]))
            new, was = times["new"], times["old"]
            lp = per_row_times(lambda c: h.argmin(c, method="lp"), C[:n_lp])
            plain = per_row_times(lambda c, p: plain_milp(h, c, p), C[:n_plain], P[:n_plain])
            # exactness: closure against the LP and the old code, MILP against the plain MILP
            # and the old code
            Y = h.argmin(C[:n_milp])
            Yp = h.argmin_products(C[:n_milp], P[:n_milp])
            obj = np.sum(C[:n_milp] * Y, axis=1)
            obj_p = product_objective(h, C[:n_milp], P[:n_milp], Yp)
            scale = np.abs(C[:n_milp]).sum(axis=1) + np.abs(P[:n_milp]).sum(axis=1)
            gaps = [np.abs(obj[:n_lp] - np.sum(C[:n_lp] * h.argmin(C[:n_lp], method="lp"),
                                               axis=1)) / scale[:n_lp],
                    np.abs(obj_p[:n_plain] - product_objective(
                        h, C[:n_plain], P[:n_plain], plain_milp(h, C[:n_plain], P[:n_plain])))
                    / scale[:n_plain]]
            for Yc, Ypc in (by_path[path + " Y"] for path in paths):  # both paths
                gaps += [np.abs(obj - np.sum(C[:n_milp] * Yc, axis=1)) / scale,
                         np.abs(obj_p - product_objective(h, C[:n_milp], P[:n_milp], Ypc))
                         / scale]
            gaps += [np.abs(obj_p - product_objective(h, C[:n_milp], P[:n_milp], Ys)) / scale
                     for Ys in Y_stage]
            if h_old is not None:
                gaps += [np.abs(obj - np.sum(C[:n_milp] * h_old.argmin(C[:n_milp]), axis=1))
                         / scale,
                         np.abs(obj_p - product_objective(
                             h, C[:n_milp], P[:n_milp],
                             h_old.argmin_products(C[:n_milp], P[:n_milp]))) / scale]
            if max(g.max() for g in gaps) > 1e-9 or not h.is_consistent(Y).all():
                print(f"WARNING: the oracles disagree at {frac:.0%} negative")
                status = 1
            cells = []
            for k in range(4):
                cells.append(f"{pct(new[k])}{'':>16}" if was[k] is None
                             else f"{pct(new[k])}{pct(was[k])}")
                cells.append(ratio(was[k], new[k]))
            print(f"{frac:>9.0%} | {'':>8} {''.join(cells[:4])}{np.median(lp):>8.1f} | "
                  f"{'':>5} {''.join(cells[4:])}{np.median(plain):>7.0f}{left:>6}")
            ref, bits = stage_times["reference"], stage_times["bits"]
            stage.append(f"{name:<10}{frac:>5.0%} |" + " |".join(
                f"{pct(new[k])}{pct(ref[k - 2])}{ratio(ref[k - 2], new[k])}"
                f"{pct(bits[k - 2])}{ratio(bits[k - 2], new[k])}" for k in (2, 3)))
            if len(paths) == 2:
                fast, ref = by_path["numba"], by_path["scipy"]
                side.append(f"{name:<10}{frac:>5.0%} |" + " |".join(
                    f"{pct(fast[k])}{pct(ref[k])}{ratio(ref[k], fast[k])}" for k in range(4)))
    print("left: rows that reached the MILP after the reductions (new code); plain: median ms "
          "of one HiGHS MILP per row on every label and product")
    if side:
        print("\nThe closure's compiled path (numba) beside its scipy path, same process and "
              "rows; times per row in ms, p50 and p95; x = median scipy / median compiled")
        cell = f"{'compiled':>16}{'scipy':>16}{'':>7}"
        header = (f"{'':<10}{'neg':>5} |" + " |".join(
            f"{title:^39}" for title in ("closure, batched", "closure, single",
                                         "MILP, batched", "MILP, single")))
        print(header)
        print(f"{'':<15} |" + " |".join([cell] * 4))
        print("-" * len(header))
        print("\n".join(side))
    print("\nThe hierarchical MILP's solver stage (bit-set branch and bound up to 20 labels, "
          "branch and bound with closure bounds beyond, then the MILP on the fractional "
          "components) beside its reference (rows to the MILP whole) and the stage without the "
          "closure-bound search (bits: bit-set search up to 40 labels, then the MILP), same "
          "process and rows; times per row in ms, p50 and p95; x = median other / median new")
    cell = f"{'new':>16}{'reference':>16}{'':>7}{'bits':>16}{'':>7}"
    header = f"{'':<10}{'neg':>5} |" + " |".join(f"{title:^62}" for title in
                                                 ("MILP, batched", "MILP, single"))
    print(header)
    print(f"{'':<15} |" + " |".join([cell] * 2))
    print("-" * len(header))
    print("\n".join(stage))
    return status


def oracle_times(space, C, P, n_single: int, n_milp: int) -> list:
    """Per-row times (ms) of the closure and the hierarchical-loss oracle, batched (10
    batches) and one row per call."""
    return [per_row_in_batches(space.argmin, 10, C),
            per_row_times(space.argmin, C[:n_single]),
            per_row_in_batches(space.argmin_products, 10, C[:n_milp], P[:n_milp]),
            per_row_times(space.argmin_products, C[: n_milp // 2], P[: n_milp // 2])]


if __name__ == "__main__":
    raise SystemExit(main())
