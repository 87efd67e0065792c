r"""Pictures of what a multi-label or hierarchical model did (matplotlib, the ``plot`` extra).

Every function draws on a given matplotlib ``Axes`` (or a new figure) and returns the axes;
:func:`evaluation_figures` draws them all and writes PNG files, the pictures of
``ecrm evaluate --plot DIR`` and ``--report``. matplotlib is imported only when a function
runs (``pip install 'ecrm[plot]'``); the Agg backend is used when no display is set.

- :func:`plot_precision_recall`: the micro (pooled) precision-recall curve of the label
  scores, against a baseline's scores if given; its area is
  :func:`ecrm.reporting.metrics.micro_auprc`.
- :func:`plot_ap_by_frequency`: average precision of each label against its frequency
  (rare labels are where ranking models part ways).
- :func:`plot_per_level`: precision, recall and F1 per depth level
  (:func:`ecrm.reporting.metrics.per_level_report`).
- :func:`plot_hierarchy`: the top levels of the hierarchy, each label coloured by its F1.
"""

from __future__ import annotations

import contextlib
import os

import numpy as np

from ecrm.model_files._atomic import atomic_path
from ecrm.reporting.metrics import per_level_report, pooled_average_precision

__all__ = ["evaluation_figures", "label_f1", "plot_ap_by_frequency", "plot_hierarchy",
           "plot_per_level", "plot_precision_recall"]


def _pyplot():
    try:
        import matplotlib
    except ImportError:  # pragma: no cover - depends on the installation
        raise ImportError("ecrm.reporting.plotting needs matplotlib: "
                          "pip install 'ecrm[plot]'") from None
    if not os.environ.get("DISPLAY") and not os.environ.get("MPLBACKEND"):
        matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def _axes(ax):
    return ax if ax is not None else _pyplot().subplots(figsize=(6, 4.5))[1]


def _pair(Y_true, other, what: str) -> tuple[np.ndarray, np.ndarray]:
    Y_true = np.asarray(Y_true, dtype=float)
    other = np.asarray(other, dtype=float)
    if Y_true.ndim != 2 or Y_true.shape != other.shape:
        raise ValueError(f"Y_true and {what} must be 2-D arrays of one shape (n, d); got "
                         f"{Y_true.shape} and {other.shape}")
    return Y_true, other


def label_f1(Y_true, Y_pred) -> np.ndarray:
    r"""F1 of each label (column): :math:`2\,TP_j / (2\,TP_j + FP_j + FN_j)`, 0 when a label
    is neither true nor predicted anywhere.

    Parameters
    ----------
    Y_true, Y_pred : array-like of shape (n, d), 0/1

    Returns
    -------
    f1 : ndarray of shape (d,)

    Examples
    --------
    >>> label_f1([[1, 0], [1, 1]], [[1, 1], [0, 1]]).tolist()
    [0.6666666666666666, 0.6666666666666666]
    """
    Y_true, Y_pred = _pair(Y_true, Y_pred, "Y_pred")
    tp = (Y_true * Y_pred).sum(axis=0)
    wrong = np.abs(Y_true - Y_pred).sum(axis=0)
    den = 2 * tp + wrong
    return np.divide(2 * tp, den, out=np.zeros_like(den), where=den > 0)


def plot_precision_recall(Y_true, scores, *, baseline=None, name="ECRM",
                          baseline_name="baseline", ax=None):
    """The micro precision-recall curve of label scores (all (row, label) pairs pooled).

    Parameters
    ----------
    Y_true : array-like of shape (n, d), 0/1
    scores : array-like of shape (n, d)
    baseline : array-like of shape (n, d), optional
        Another model's scores, drawn on the same axes.
    name, baseline_name : str
        Legend entries; the area (micro AU(PRC)) is appended.
    ax : matplotlib Axes, optional

    Returns
    -------
    ax : matplotlib Axes
    """
    from sklearn.metrics import precision_recall_curve

    ax = _axes(ax)
    curves = [(name, scores)] + ([] if baseline is None else [(baseline_name, baseline)])
    for label, S in curves:
        T, S = _pair(Y_true, S, "scores")
        precision, recall, _ = precision_recall_curve(T.ravel(), S.ravel())
        ap = pooled_average_precision(T, S)
        ax.step(recall, precision, where="post", label=f"{label} (AU(PRC) {ap:.3f})")
    ax.set(xlabel="recall", ylabel="precision", xlim=(0, 1), ylim=(0, 1.02),
           title="micro precision-recall")
    ax.legend(loc="lower left")
    return ax


def plot_ap_by_frequency(Y_true, scores, *, ax=None):
    """Average precision of each label against its frequency in ``Y_true``.

    Labels positive on no row or on every row are left out (their AP says nothing).

    Parameters
    ----------
    Y_true : array-like of shape (n, d), 0/1
    scores : array-like of shape (n, d)
    ax : matplotlib Axes, optional

    Returns
    -------
    ax : matplotlib Axes
    """
    from sklearn.metrics import average_precision_score

    T, S = _pair(Y_true, scores, "scores")
    freq = T.mean(axis=0)
    keep = np.flatnonzero((freq > 0) & (freq < 1))
    ap = np.array([average_precision_score(T[:, j], S[:, j]) for j in keep])
    ax = _axes(ax)
    ax.scatter(freq[keep], ap, s=12, alpha=0.7)
    if keep.size:
        ax.set_xscale("log")
    ax.set(xlabel="label frequency", ylabel="average precision", ylim=(0, 1.02),
           title=f"AP per label ({keep.size} labels)")
    return ax


def plot_per_level(Y_true, Y_pred, hierarchy, *, ax=None):
    """Precision, recall and F1 per depth level of the hierarchy, as grouped bars.

    Parameters
    ----------
    Y_true, Y_pred : array-like of shape (n, d), 0/1
    hierarchy : ecrm.Hierarchy
    ax : matplotlib Axes, optional

    Returns
    -------
    ax : matplotlib Axes
    """
    report = per_level_report(Y_true, Y_pred, hierarchy)
    ax = _axes(ax)
    x = np.arange(len(report["level"]))
    for k, key in enumerate(("precision", "recall", "f1")):
        ax.bar(x + (k - 1) * 0.27, report[key], width=0.27, label=key)
    ax.set_xticks(x, [f"{lv}\n({n} labels)" for lv, n in zip(report["level"],
                                                             report["n_labels"], strict=True)])
    ax.set(xlabel="depth level", ylim=(0, 1.15), title="metrics per level")
    ax.legend(loc="upper right", ncols=3, fontsize=8)
    return ax


def _level_positions(hierarchy, nodes_by_level) -> dict[int, tuple[float, float]]:
    """x in [0, 1] per node, each level ordered by the mean x of its drawn parents."""
    pos: dict[int, tuple[float, float]] = {}
    for depth, nodes in enumerate(nodes_by_level):
        def key(j):
            xs = [pos[p][0] for p in hierarchy.parents[j] if p in pos]
            return (float(np.mean(xs)) if xs else 0.0, j)
        ordered = sorted(nodes, key=key)
        for k, j in enumerate(ordered):
            pos[j] = ((k + 0.5) / len(ordered), -float(depth))
    return pos


def plot_hierarchy(hierarchy, values, *, max_depth: int = 1, max_labels: int = 60,
                   label: str = "F1", ax=None):
    """The top levels of a hierarchy, each label coloured by a value in [0, 1] (its F1).

    Parameters
    ----------
    hierarchy : ecrm.Hierarchy
    values : array-like of shape (d,)
        One value per label in ``hierarchy.labels`` order, e.g. :func:`label_f1`.
    max_depth : int, default=1
        Deepest level drawn (0: the top-level labels only).
    max_labels : int, default=60
        Levels are drawn while their labels, together, are at most this many (the top level
        always); names are written when a level has at most 25 labels.
    label : str, default="F1"
        The colour bar's title.
    ax : matplotlib Axes, optional

    Returns
    -------
    ax : matplotlib Axes
    """
    values = np.asarray(values, dtype=float)
    if values.shape != (hierarchy.n_labels,):
        raise ValueError(f"values must have one entry per label, shape ({hierarchy.n_labels},);"
                         f" got {values.shape}")
    depth = np.asarray(hierarchy.depth)
    levels: list[list[int]] = []
    for lv in range(int(max_depth) + 1):
        nodes = np.flatnonzero(depth == lv).tolist()
        if not nodes or (levels and sum(map(len, levels)) + len(nodes) > max_labels):
            break
        levels.append(nodes)
    pos = _level_positions(hierarchy, levels)
    ax = _axes(ax)
    for j, (x, y) in pos.items():
        for p in hierarchy.parents[j]:
            if p in pos:
                ax.plot([pos[p][0], x], [pos[p][1], y], color="0.7", lw=0.8, zorder=1)
    drawn = np.array(list(pos))
    xy = np.array([pos[j] for j in drawn])
    points = ax.scatter(xy[:, 0], xy[:, 1], c=values[drawn], cmap="viridis", vmin=0, vmax=1,
                        s=120, edgecolors="k", linewidths=0.5, zorder=2)
    for nodes in levels:
        if len(nodes) <= 25:
            for j in nodes:
                ax.annotate(str(hierarchy.labels[j]), pos[j], textcoords="offset points",
                            xytext=(0, 8), ha="center", fontsize=7, rotation=30)
    ax.figure.colorbar(points, ax=ax, label=label)
    ax.set(xticks=[], ylim=(-len(levels) + 0.5, 0.6), xlim=(-0.02, 1.02),
           yticks=-np.arange(len(levels)), yticklabels=[f"level {k}" for k in range(len(levels))],
           title=f"hierarchy (top {len(levels)} level{'s' if len(levels) > 1 else ''}, "
                 f"{len(drawn)} of {hierarchy.n_labels} labels)")
    return ax


def evaluation_figures(directory, Y_true, Y_pred, scores=None, *, hierarchy=None,
                       baseline=None, baseline_name="baseline", dpi: int = 100) -> list[str]:
    """Draw every picture of an evaluation and write them as PNG files in ``directory``.

    Parameters
    ----------
    directory : str or path-like
        Created if missing.
    Y_true, Y_pred : array-like of shape (n, d), 0/1
    scores : array-like of shape (n, d), optional
        Label scores (precision-recall curve and AP per label are drawn only with them).
    hierarchy : ecrm.Hierarchy, optional
        With it (and edges), the per-level bars and the hierarchy drawing.
    baseline : array-like of shape (n, d), optional
        A baseline's scores for the precision-recall curve.
    baseline_name : str
    dpi : int, default=100

    Returns
    -------
    paths : list of str
        The files written: ``precision_recall.png``, ``ap_by_frequency.png``,
        ``per_level.png``, ``hierarchy_f1.png`` (those that apply): all of them, or (on an
        error, a full disk) none, the files there before left as they were.
    """
    plt = _pyplot()
    os.makedirs(directory, exist_ok=True)
    drawings = []
    if scores is not None:
        drawings.append(("precision_recall", lambda ax: plot_precision_recall(
            Y_true, scores, baseline=baseline, baseline_name=baseline_name, ax=ax)))
        drawings.append(("ap_by_frequency", lambda ax: plot_ap_by_frequency(Y_true, scores,
                                                                            ax=ax)))
    if hierarchy is not None and len(hierarchy.edges):
        drawings.append(("per_level", lambda ax: plot_per_level(Y_true, Y_pred, hierarchy,
                                                                ax=ax)))
        drawings.append(("hierarchy_f1", lambda ax: plot_hierarchy(
            hierarchy, label_f1(Y_true, Y_pred), ax=ax)))
    paths = []
    # every picture is drawn to a temporary file beside its path; all are renamed into place
    # when the last is complete, and on any failure all are removed (a full disk must not
    # leave some pictures new and others old, nor a truncated one)
    with contextlib.ExitStack() as renames:
        for name, draw in drawings:
            path = os.path.join(os.fspath(directory), f"{name}.png")
            tmp = renames.enter_context(atomic_path(path))
            fig, ax = plt.subplots(figsize=(7, 5))
            try:
                draw(ax)
                fig.tight_layout()
                fig.savefig(tmp, dpi=dpi, format="png")
            finally:
                plt.close(fig)
            paths.append(path)
    return paths
