r"""``ecrm reproduce flow``: the paper's network-flow experiment (Table 2 and Figure 1b).

Data come from :func:`ecrm.datasets.flows.simulate_flows` (the network of the paper's
Figure 1, inputs uniform on :math:`[0,1]^{20}`, a multinomial-logit path-choice model). Three
methods, each under the absolute loss :math:`\|y - y'\|_1` and the square loss
:math:`\|y - y'\|_2^2`:

* **ECRM**: RBF kernel, risk weights with intercept, exact inference
  (:func:`ecrm.spaces.flows.minimize_absolute_risk` with ``method="auto"``, and the
  projection for the square loss);
* **kNN**: the minimiser of the summed loss to the :math:`k` nearest training outputs;
* **KRR**: kernel ridge regression per arc, projected onto the polytope.

All hyper-parameters (ECRM's :math:`\gamma, \lambda`; KRR's :math:`\gamma` and ridge; kNN's
:math:`k`) are chosen per loss on a separate validation set (grids below), as in the paper.
Table 2 reports mean and standard deviation over trials of the test loss.

Figure 1b: the exact conditional risk :math:`R(\hat h(x)|x)` w.r.t. the absolute loss at
:math:`x = 0.75\cdot\mathbf 1` against the training size, with the 15th-85th percentile bars
over repeats and the exact Bayes risk. To keep it affordable, hyper-parameters are tuned on
the first repeat of each size (sizes above ``tune_max`` reuse the choice of the largest tuned
size) and kept for the other repeats.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from typing import cast

import numpy as np
from sklearn.neighbors import NearestNeighbors
from threadpoolctl import threadpool_limits

from ecrm.baselines.flows import KNNFlowRegressor, KRRProjection, knn_weights
from ecrm.commands._options import number_option, output_file_option, progress_bar
from ecrm.commands._threads import workers_option
from ecrm.datasets.flows import FlowModel, simulate_flows
from ecrm.estimators._parameters import vocabulary
from ecrm.estimators._validation import check_int, check_real
from ecrm.losses.continuous import AbsoluteLoss, SquaredLoss
from ecrm.model_files._atomic import atomic_path, write_text
from ecrm.spaces.flows import minimize_absolute_risk, minimize_squared_risk, paper_network
from ecrm.weights.forest.estimator import ForestECRM
from ecrm.weights.kernel.estimator import ECRM

__all__ = ["GRIDS", "PAPER_TABLE2", "add_parser", "demo", "format_figure", "format_table",
           "plot_figure", "run", "run_figure", "run_table", "select_parameters"]

#: The paper's Table 2: (method, loss) -> (mean, std) over 50 trials, n = 1000.
PAPER_TABLE2 = {
    ("ECRM", "absolute"): (1.6268, 0.0347), ("kNN", "absolute"): (1.7125, 0.0366),
    ("KRR", "absolute"): (1.8673, 0.0311), ("ECRM", "square"): (0.6476, 0.0197),
    ("kNN", "square"): (0.6859, 0.0202), ("KRR", "square"): (0.6495, 0.0197),
}

#: Validation grids. ECRM's alpha is the paper's lambda (the solve adds m * alpha);
#: KRR's ridge is added to the diagonal as is (scikit-learn's KernelRidge alpha).
GRIDS = {
    "gamma": (0.003, 0.01, 0.03, 0.1),
    "ecrm_alpha": (1e-6, 1e-5, 1e-4, 1e-3),
    "krr_ridge": (1e-3, 1e-2, 0.1, 1.0),
    "k": (5, 10, 20, 40, 80, 160),
    "forest_min_samples_leaf": (1, 5, 20),
}

#: Smallest training set: every method runs (kNN needs its smallest k).
_MIN_TRAIN = min(GRIDS["k"])

METHODS = ("ECRM", "kNN", "KRR")
#: Table 2 also has ECRM with forest weights (:class:`ecrm.ForestECRM`, 100 trees, the
#: weights handed to the same risk minimisers), its leaf size by validation loss as the rest.
TABLE_METHODS = (*METHODS, "ECRM-forest")
FOREST_TREES = 100
LOSSES = vocabulary("flow_loss")
_LOSS = {"absolute": AbsoluteLoss(), "square": SquaredLoss()}


# -- tuning --------------------------------------------------------------------------------
def _losses(P, Y) -> dict[str, float]:
    return {name: float(loss(P, Y).mean()) for name, loss in _LOSS.items()}


def select_parameters(Xtr, Ytr, Xval, Yval, grids=None) -> dict:
    """Choose every method's hyper-parameters per loss by validation loss.

    ECRM's risk weights (with intercept) serve both losses.

    Returns
    -------
    dict
        ``(method, loss) -> {"params": {...}, "val_loss": float}``.
    """
    grids = GRIDS if grids is None else grids
    space = paper_network()
    m = len(Xtr)
    best: dict = {}

    def offer(method, loss, value, params):
        if (method, loss) not in best or value < best[(method, loss)]["val_loss"]:
            best[(method, loss)] = {"params": params, "val_loss": value}

    def offer_risks(method, W, params):  # the exact minimisers of both losses' risks
        P = minimize_absolute_risk(W, Ytr, space).solution
        offer(method, "absolute", _losses(P, Yval)["absolute"], params)
        P = minimize_squared_risk(W, Ytr, space).solution
        offer(method, "square", _losses(P, Yval)["square"], params)

    for gamma in grids["gamma"]:
        for alpha in grids["ecrm_alpha"]:
            params = {"gamma": gamma, "alpha": alpha}
            est = ECRM(_LOSS["absolute"], space, kernel="rbf", **params).fit(Xtr, Ytr)
            offer_risks("ECRM", est.conditional_weights(Xval), params)  # for both losses
        for ridge in grids["krr_ridge"]:
            params = {"gamma": gamma, "ridge": ridge}
            P = KRRProjection(space, kernel="rbf", **params).fit(Xtr, Ytr).predict(Xval)
            for loss, value in _losses(P, Yval).items():
                offer("KRR", loss, value, params)
    for leaf in grids.get("forest_min_samples_leaf", ()):
        params = {"min_samples_leaf": leaf}
        offer_risks("ECRM-forest", ForestECRM(
            _LOSS["absolute"], space, n_estimators=FOREST_TREES, random_state=0,
            **params).fit(Xtr, Ytr).conditional_weights(Xval), params)
    ks = [k for k in grids["k"] if k <= m]
    idx = NearestNeighbors(n_neighbors=max(ks)).fit(Xtr).kneighbors(Xval,
                                                                     return_distance=False)
    for k in ks:
        W = knn_weights(idx[:, :k], m)
        P = minimize_absolute_risk(W, Ytr, space).solution
        offer("kNN", "absolute", _losses(P, Yval)["absolute"], {"n_neighbors": k})
        offer("kNN", "square", _losses(W @ Ytr, Yval)["square"], {"n_neighbors": k})
    return best


def fit_method(method: str, loss: str, params: dict, Xtr, Ytr):
    """The estimator of ``method`` for ``loss`` with ``params``, fitted on the training set."""
    space = paper_network()
    if method == "ECRM":
        return ECRM(_LOSS[loss], space, kernel="rbf", **params).fit(Xtr, Ytr)
    if method == "ECRM-forest":
        return ForestECRM(_LOSS[loss], space, n_estimators=FOREST_TREES, random_state=0,
                          **params).fit(Xtr, Ytr)
    if method == "kNN":
        return KNNFlowRegressor(_LOSS[loss], space, **params).fit(Xtr, Ytr)
    if method == "KRR":
        return KRRProjection(space, kernel="rbf", **params).fit(Xtr, Ytr)
    raise ValueError(f"unknown method {method!r}; expected one of {TABLE_METHODS}")


# -- Table 2 -------------------------------------------------------------------------------
def run_trial(seed, trial: int, n_train: int, n_val: int, n_test: int, grids=None) -> dict:
    """One trial: simulate, tune on validation, return test losses and chosen parameters."""
    # OpenBLAS threads spin against each other and other processes on small (1000 x 1000)
    # factorisations: one BLAS thread per process is up to 50x faster on a busy 2-core box.
    with threadpool_limits(limits=1, user_api="blas"):
        rng = np.random.default_rng([int(seed), int(trial)])
        X, Y = simulate_flows(n_train + n_val + n_test, random_state=rng)
        Xtr, Ytr = X[:n_train], Y[:n_train]
        Xval, Yval = X[n_train:n_train + n_val], Y[n_train:n_train + n_val]
        Xte, Yte = X[n_train + n_val:], Y[n_train + n_val:]
        chosen = select_parameters(Xtr, Ytr, Xval, Yval, grids)
        out = {}
        for (method, loss), sel in chosen.items():
            P = fit_method(method, loss, sel["params"], Xtr, Ytr).predict(Xte)
            out[(method, loss)] = {"test_loss": float(_LOSS[loss](P, Yte).mean()), **sel}
    return out


def run_table(trials: int = 50, n_train: int = 1000, n_test: int = 1000, n_val: int = 500,
              seed: int = 0, grids=None, progress_stream=sys.stderr, n_jobs: int = 1
              ) -> tuple[list, list]:
    """Table 2: returns (rows, per-trial results).

    Each row is ``{"method", "loss", "mean", "std", "trials", "n_train"}`` with the mean and
    (population) standard deviation over trials of the mean test loss. Trials run with one
    BLAS thread each, in ``n_jobs`` processes.
    """
    trials = cast(int, check_int(trials, "trials"))
    n_jobs = cast(int, check_int(n_jobs, "n_jobs"))
    from joblib import Parallel, delayed

    results: list = []
    with progress_bar(trials, "Table 2", enabled=progress_stream is not None,
                      stream=progress_stream) as bar:
        for out in Parallel(n_jobs=n_jobs, return_as="generator")(
                delayed(run_trial)(seed, t, n_train, n_val, n_test, grids)
                for t in range(trials)):
            results.append(out)
            bar.update()
    rows = []
    for loss in LOSSES:
        for method in (m for m in TABLE_METHODS if all((m, loss) in r for r in results)):
            v = np.array([r[(method, loss)]["test_loss"] for r in results])
            rows.append({"method": method, "loss": loss, "mean": float(v.mean()),
                         "std": float(v.std()), "trials": trials, "n_train": n_train})
    return rows, results


def format_table(rows: list, results: list | None = None) -> str:
    """Table 2 as text, beside the paper's numbers (standard errors in brackets)."""
    lines = [f"{'loss':<9}{'method':<12}{'mean':>9}{'std':>9}{'(s.e.)':>10}"
             f"{'paper mean':>13}{'paper std':>11}"]
    for r in rows:
        se = r["std"] / np.sqrt(max(r["trials"], 1))
        pm, ps = PAPER_TABLE2.get((r["method"], r["loss"]), (float("nan"), float("nan")))
        lines.append(f"{r['loss']:<9}{r['method']:<12}{r['mean']:>9.4f}{r['std']:>9.4f}"
                     f"{f'({se:.4f})':>10}{pm:>13.4f}{ps:>11.4f}")
    if results:
        lines.append("")
        for loss in LOSSES:
            e = np.array([r[("ECRM", loss)]["test_loss"] for r in results])
            for other in (m for m in TABLE_METHODS[1:] if all((m, loss) in r for r in results)):
                o = np.array([r[(other, loss)]["test_loss"] for r in results])
                diff = o - e
                se = diff.std(ddof=1) / np.sqrt(len(diff)) if len(diff) > 1 else float("nan")
                lines.append(f"{loss} loss: {other} - ECRM = {diff.mean():+.4f} (paired s.e. "
                             f"{se:.4f})")
    return "\n".join(lines)


# -- Figure 1b -----------------------------------------------------------------------------
def run_figure(sizes=(100, 316, 1000, 3162, 10000), repeats: int = 20, seed: int = 0,
               n_val: int = 500, tune_max: int = 3162, grids=None,
               progress_stream=sys.stderr) -> dict:
    """Exact conditional absolute-loss risk at x = 0.75 of ECRM, kNN and KRR vs. training size.

    Returns a dict with ``sizes``, ``bayes_risk`` and, per method, the risks (repeats x sizes)
    and the parameters used per size.
    """
    threads = threadpool_limits(limits=1, user_api="blas")
    model = FlowModel.default()
    x0 = np.full((1, model.n_features), 0.75)
    bayes, _ = model.bayes(x0[0], "absolute")
    risks = {m: np.full((repeats, len(sizes)), np.nan) for m in METHODS}
    params: dict = {m: [] for m in METHODS}
    chosen: dict = {}
    with threads, progress_bar(repeats * len(sizes), "Figure 1b",
                               enabled=progress_stream is not None, stream=progress_stream) as bar:
        for j, n in enumerate(sizes):
            for rep in range(repeats):
                rng = np.random.default_rng([int(seed), 1000 + j, rep])
                Xtr, Ytr = simulate_flows(n, random_state=rng, model=model)
                if rep == 0:
                    if not chosen or n <= tune_max:
                        Xval, Yval = simulate_flows(n_val, random_state=rng, model=model)
                        chosen = select_parameters(Xtr, Ytr, Xval, Yval, grids)
                    for m in METHODS:
                        params[m].append(chosen[(m, "absolute")]["params"])
                for m in METHODS:
                    est = fit_method(m, "absolute", chosen[(m, "absolute")]["params"], Xtr, Ytr)
                    risks[m][rep, j] = model.conditional_risk(x0[0], est.predict(x0),
                                                              "absolute")[0]
                bar.update()
    return {"sizes": list(sizes), "repeats": repeats, "bayes_risk": bayes, "x": 0.75,
            "risks": {m: r.tolist() for m, r in risks.items()}, "params": params}


def format_figure(fig: dict) -> str:
    """The figure's numbers: mean and 15th/85th percentiles per size, relative gap to Bayes."""
    b = fig["bayes_risk"]
    lines = [f"conditional absolute-loss risk at x = {fig['x']} (Bayes risk {b:.4f}); "
             f"mean [15th, 85th percentile] over {fig['repeats']} repeats, gap = mean/Bayes - 1",
             f"{'n_train':>8}" + "".join(f"{m:>32}" for m in METHODS)]
    for j, n in enumerate(fig["sizes"]):
        cells = []
        for m in METHODS:
            r = np.array(fig["risks"][m])[:, j]
            lo, hi = np.percentile(r, [15, 85])
            cells.append(f"{r.mean():.4f} [{lo:.4f},{hi:.4f}] {100 * (r.mean() / b - 1):+5.1f}%")
        lines.append(f"{n:>8}" + "".join(f"{c:>32}" for c in cells))
    return "\n".join(lines)


def plot_figure(fig: dict, path: Path) -> Path:
    """Draw Figure 1b as a PNG (matplotlib, imported lazily)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    sizes = np.array(fig["sizes"], dtype=float)
    fig_, ax = plt.subplots(figsize=(5, 3.6))
    for k, (m, marker) in enumerate(zip(METHODS, "osD", strict=False)):
        r = np.array(fig["risks"][m])
        mean = r.mean(axis=0)
        lo, hi = np.percentile(r, [15, 85], axis=0)
        xs = sizes * (1 + 0.04 * (k - 1))
        # The mean may lie outside the 15th-85th percentile band (skewed risks): draw the
        # band as its own bar rather than as errors around the mean.
        line = ax.plot(xs, mean, marker=marker, label=m)[0]
        ax.vlines(xs, lo, hi, color=line.get_color())
        ax.scatter(np.r_[xs, xs], np.r_[lo, hi], marker="_", color=line.get_color())
    ax.axhline(fig["bayes_risk"], color="k", linestyle="--", label="Bayes risk")
    ax.set_xscale("log")
    ax.set_xlabel("training size")
    ax.set_ylabel(r"$R(\hat h(x)\,|\,x)$, absolute loss")
    ax.set_title(f"Conditional risk at x = {fig['x']}")
    ax.legend()
    fig_.tight_layout()
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        with atomic_path(path) as tmp:  # the whole picture, or the old one left
            fig_.savefig(tmp, dpi=150, format=path.suffix.lstrip(".") or "png")
    finally:
        plt.close(fig_)
    return path


# -- demo and CLI --------------------------------------------------------------------------
def demo(seed: int = 0) -> str:
    """A quick flow run (one trial, 300 training points): a short text table."""
    t0 = time.perf_counter()
    small = {"gamma": (0.03, 0.1), "ecrm_alpha": (1e-4, 1e-3), "krr_ridge": (0.1, 1.0),
             "k": (10, 20)}
    res = run_trial(seed, 0, 300, 200, 300, small)
    model = FlowModel.default()
    lines = ["Network flow prediction (paper's Figure 1 network, 20 features): 300 training, "
             "200 validation, 300 test points",
             f"{'method':<7}{'absolute':>10}{'square':>9}  tuned parameters (absolute)"]
    for m in METHODS:
        p = res[(m, "absolute")]["params"]
        lines.append(f"{m:<7}{res[(m, 'absolute')]['test_loss']:>10.4f}"
                     f"{res[(m, 'square')]['test_loss']:>9.4f}  "
                     + ", ".join(f"{k}={v:g}" for k, v in p.items()))
    b = model.bayes(np.full(20, 0.75), "absolute")[0]
    lines.append(f"(Bayes risk at x = 0.75: {b:.4f} absolute; {time.perf_counter() - t0:.1f} s)")
    return "\n".join(lines)


def run(args) -> int:
    """Run ``ecrm reproduce flow`` from parsed arguments; the ``--json`` and ``--plot``
    paths are checked before any work, as ``ecrm fit`` checks ``-o``."""
    from ecrm.commands import fail
    from ecrm.commands._files import OutputError, check_output, check_output_directory

    try:
        if args.json:
            check_output(args.json, option="--json")
        if args.plot:
            check_output_directory(args.plot, option="--plot")
    except OutputError as exc:
        return fail(str(exc))
    stream = None if args.quiet else sys.stderr
    t0 = time.perf_counter()
    rows, results = run_table(args.trials, args.n_train, args.n_test, args.n_val, args.seed,
                              progress_stream=stream, n_jobs=args.jobs)
    elapsed = time.perf_counter() - t0
    print(f"Table 2: network flow prediction, {args.trials} trials, {args.n_train} training, "
          f"{args.n_val} validation and {args.n_test} test points per trial (seed {args.seed}); "
          f"{elapsed:.0f} s")
    print(format_table(rows, results))
    if args.json:
        write_text(args.json, json.dumps(rows, indent=2))
        print(f"rows written to {args.json}")
    if args.plot:
        sizes = [int(round(10 ** e)) for e in args.figure_log_sizes]
        fig = run_figure(sizes, args.figure_repeats, args.seed, progress_stream=stream)
        print()
        print(format_figure(fig))
        out = Path(args.plot)
        out.mkdir(parents=True, exist_ok=True)
        write_text(out / "flow_conditional_risk.json", json.dumps(fig, indent=2))
        png = plot_figure(fig, out / "flow_conditional_risk.png")
        print(f"Figure 1b written to {png}")
    return 0


def add_parser(subparsers) -> None:
    """Add the ``flow`` sub-command to ``ecrm reproduce``."""
    p = subparsers.add_parser(
        "flow", help="the network-flow experiment: Table 2 (and Figure 1b with --plot)",
        description=__doc__.splitlines()[0])
    p.add_argument("--trials", type=number_option(check_int, "--trials"), default=50)
    p.add_argument("--n-train", type=number_option(check_int, "--n-train", low=_MIN_TRAIN),
                   default=1000)
    p.add_argument("--n-test", type=number_option(check_int, "--n-test"), default=1000)
    p.add_argument("--n-val", type=number_option(check_int, "--n-val"), default=500,
                   help="validation set size (tuning)")
    p.add_argument("--seed", type=number_option(check_int, "--seed", low=0), default=0)
    p.add_argument("--json", type=output_file_option("--json"), metavar="FILE",
                   help="write the table rows as JSON")
    p.add_argument("--plot", metavar="DIR", help="also compute Figure 1b and save it as PNG")
    p.add_argument("--figure-log-sizes", nargs="+", default=[2.0, 2.5, 3.0, 3.5, 4.0],
                   type=number_option(check_real, "--figure-log-sizes", low=0.7, high=5.0,
                                low_open=False),
                   help="log10 training sizes of Figure 1b, in [0.7, 5]")
    p.add_argument("--figure-repeats", type=number_option(check_int, "--figure-repeats"),
                   default=20)
    p.add_argument("--jobs", type=workers_option("--jobs"), default=2,
                   help="worker processes for the trials (each uses one BLAS thread)")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    p.set_defaults(func=run)
