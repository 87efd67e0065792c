"""A self-contained HTML page of an evaluation: the metric tables and the pictures.

:func:`write_report` is ``ecrm evaluate --report FILE``: the model's summary, the metrics of
:func:`ecrm.reporting.metrics.multilabel_report` beside those of the trivial baselines
(:func:`ecrm.baselines.trivial_baselines`) and the warnings about them, the per-level table of
:func:`ecrm.reporting.metrics.per_level_report`, the per-label table of
:func:`ecrm.reporting.metrics.per_label_report` (sorted by a click on a column's head) and the PNGs
of :func:`ecrm.reporting.plotting.evaluation_figures`, embedded as base64 data so the page is one
file that opens anywhere (no network, no side files).
"""

from __future__ import annotations

import base64
import html
import os
import tempfile

import numpy as np

from ecrm.model_files._atomic import write_text
from ecrm.reporting.metrics import multilabel_report, per_label_report, per_level_report

__all__ = ["METRIC_NAMES", "html_report", "model_line", "summary_rows", "weights_line",
           "write_report"]

_STYLE = """body{font-family:system-ui,sans-serif;margin:2em auto;max-width:980px;color:#222}
table{border-collapse:collapse;margin:1em 0}td,th{border:1px solid #ccc;padding:4px 10px}
td.n{text-align:right;font-variant-numeric:tabular-nums}img{max-width:100%;margin:1em 0}
figure{margin:0}figcaption{color:#555;font-size:90%}table.sortable th{cursor:pointer}
p.warn{background:#fff3cd;border:1px solid #e0c36c;padding:6px 10px}"""

#: Sorts a ``sortable`` table by the column whose head is clicked (again: the other way).
_SORT = """document.querySelectorAll("table.sortable th").forEach((th, i) => {
 th.onclick = () => {
  const body = th.closest("table").tBodies[0], rows = [...body.rows].slice(1);
  const up = th.dataset.up !== "1"; th.dataset.up = up ? "1" : "0";
  const key = r => { const t = r.cells[i].textContent, v = Number(t);
                     return t.trim() === "" || isNaN(v) ? t : v; };
  rows.sort((a, b) => { const x = key(a), y = key(b);
    const c = typeof x === "number" && typeof y === "number" ? x - y
              : String(x).localeCompare(String(y));
    return up ? c : -c; });
  rows.forEach(r => body.appendChild(r)); };
});"""

#: The long name of every key of :func:`ecrm.reporting.metrics.multilabel_report`.
METRIC_NAMES = {"hamming": "Hamming loss (labels wrong per row)",
                "hamming_fraction": "Hamming loss (fraction of labels)",
                "hierarchical": "hierarchical loss", "exact_match": "exact match",
                "micro_f1": "micro F1", "macro_f1": "macro F1", "hP": "hierarchical precision",
                "hR": "hierarchical recall", "hF": "hierarchical F1 (= micro F1 of closed sets)",
                "micro_auprc": "micro AU(PRC)"}


def _kernel(k: dict) -> str:
    kernel = f"{k['kernel']} kernel"
    if k["kernel"] not in ("linear", "precomputed"):
        kernel += ", gamma=" + ("1/features" if k["gamma"] is None else f"{k['gamma']:g}")
    if k["kernel"] == "poly":
        kernel += f", degree={k['degree']}"
    return kernel


def model_line(summary: dict) -> str:
    """One line on a model from its ``ecrm info --json`` summary: estimator, loss, kernel and
    alpha (a structured SVM's C) or forest, preprocessing steps, training size."""
    steps = ", ".join(s["step"] for s in summary["preprocessing"]) or "none"
    return (f"{summary['estimator']}, {summary['loss']}, {weights_line(summary)}; preprocessing: "
            f"{steps}; {summary['n_train']} training rows")


def weights_line(summary: dict) -> str:
    """The risk weights of an ``ecrm info --json`` summary in words: a forest's, a
    kernel's, their mixture, or a stack of families."""
    if summary.get("weights") == "mixed":
        kernel, forest = (weights_line(summary["members"][f]) for f in ("kernel", "forest"))
        return f"mixed risk, kernel share {summary['mixture']:g} ({kernel}; {forest})"
    if summary.get("weights") == "stack":
        parts = "; ".join(f"{m['weight']:g} {weights_line(m)}" for m in summary["stacked"])
        return f"stacked risk{'' if summary['stack_used'] else ' (one member kept)'} ({parts})"
    if summary.get("weights") == "forest":
        return _forest(summary)
    if "kernel" not in summary:  # a registered family's
        return f"{summary.get('weights', 'unknown')} weights"
    return f"{_kernel(summary['kernel'])}, {'='.join(_regularisation(summary))}"


def _forest(summary: dict) -> str:
    split = summary.get("min_samples_split", 2)  # 2 (no limit) in older model summaries
    return (f"forest weights ({summary['flavour']}, {summary['n_estimators']} trees, "
            f"max_features={summary['max_features']}, "
            f"min_samples_leaf={summary['min_samples_leaf']}"
            f"{f', min_samples_split={split}' if split != 2 else ''})")


def _regularisation(summary: dict) -> tuple[str, str]:
    """ECRM's ``alpha`` or a structured SVM's ``C``: (name, value)."""
    return ("C", f"{summary['C']:g}") if "C" in summary else ("alpha", f"{summary['alpha']:g}")


def summary_rows(summary: dict) -> list[list[str]]:
    """The model table of a report: (what, value) rows from an ``ecrm info --json`` summary."""
    chosen = " (chosen by exact leave-one-out)" if "selection" in summary else ""
    steps = "; ".join(f"{s['step']}: {s['what']}" for s in summary["preprocessing"])
    rows = [["estimator", summary["estimator"]], ["loss", summary["loss"]]]
    if summary.get("weights") == "mixed":
        rows.append(["weights", weights_line(summary)])
    elif summary.get("weights") == "forest":
        rows += [["weights", _forest(summary)],
                 ["out-of-bag loss", f"{summary['oob_loss']:.4g}"]]
    else:
        name, value = _regularisation(summary)
        rows += [["kernel", _kernel(summary["kernel"])], [name, value + chosen]]
        if "duality_gap" in summary:  # a structured SVM: how its training ended
            rows.append(["training", f"{summary['n_iter']} passes, duality gap "
                                     f"{summary['duality_gap']:.4g} (objective "
                                     f"{summary['objective']:.4g})"])
        rows += [["intercept", str(summary["fit_intercept"])],
                 ["solver", summary["solver"] + (f", {summary['n_components']} components"
                                                 if "n_components" in summary else "")]]
    rows += [["preprocessing", steps or "none (the features as they are)"],
            ["training rows", str(summary["n_train"])],
            ["features", str(summary["n_features"])]]
    if "n_edges" in summary:
        rows.append(["labels", f"{summary['n_labels']} ({summary['n_edges']} edges, "
                               f"{'tree' if summary['is_tree'] else 'DAG'})"])
    if "selection" in summary:
        sel = summary["selection"]
        rows.append(["selection", f"{sel['scoring']}: best {sel['best_score']:.4g} of "
                                  f"{sel['n_candidates']} candidates, calibration "
                                  f"{sel.get('calibration', 'none')}"])
    rows.append(["file", f"{summary['file']} ({summary['bytes']} bytes, ecrm "
                         f"{summary['ecrm_version']})"])
    return rows


def _table(header: list[str], rows: list[list], *, sortable: bool = False) -> str:
    def cell(v):
        if v is None:
            return "<td></td>"
        if isinstance(v, (float, np.floating)):
            return f'<td class="n">{v:.4f}</td>'
        if isinstance(v, (int, np.integer)):
            return f'<td class="n">{v}</td>'
        return f"<td>{html.escape(str(v))}</td>"
    head = "".join(f"<th>{html.escape(h)}</th>" for h in header)
    body = "".join("<tr>" + "".join(cell(v) for v in row) + "</tr>" for row in rows)
    return f"<table{' class=sortable' if sortable else ''}><tr>{head}</tr>{body}</table>"


def html_report(title: str, metrics: dict, figures: list[str], *, levels: dict | None = None,
                notes: list[str] | None = None, baselines: dict | None = None,
                summary: dict | None = None, labels: dict | None = None,
                warnings: list[str] | None = None) -> str:
    """The HTML text of a report.

    Parameters
    ----------
    title : str
    metrics : dict of str to float
        Metric name (keys of :func:`ecrm.reporting.metrics.multilabel_report` get their long names)
        to value.
    figures : list of str
        PNG files, embedded in this order.
    levels : dict, optional
        A :func:`ecrm.reporting.metrics.per_level_report`.
    notes : list of str, optional
        Lines written under the title (the model, the data file).
    baselines : dict, optional
        :func:`ecrm.baselines.trivial_baselines`: a column per baseline beside the metrics.
    summary : dict, optional
        The model's description (``ecrm info --json``): a table (:func:`summary_rows`).
    labels : dict, optional
        A :func:`ecrm.reporting.metrics.per_label_report` with a ``label`` entry (the names): a
        sortable table.
    warnings : list of str, optional
        Shown above the metrics.

    Returns
    -------
    page : str
    """
    from ecrm.baselines.trivial import BASELINE_NAMES

    parts = [f"<!DOCTYPE html><html><head><meta charset='utf-8'><title>{html.escape(title)}"
             f"</title><style>{_STYLE}</style></head><body><h1>{html.escape(title)}</h1>"]
    parts += [f"<p>{html.escape(line)}</p>" for line in notes or []]
    if summary:
        parts.append("<h2>Model</h2>" + _table(["", ""], summary_rows(summary)))
    parts += [f"<p class=warn>warning: {html.escape(line)}</p>" for line in warnings or []]
    baselines = baselines or {}
    parts.append("<h2>Metrics</h2>" + _table(
        ["metric", "model", *(f"{BASELINE_NAMES.get(b, b)} (baseline)" for b in baselines)],
        [[METRIC_NAMES.get(k, k), float(v),
          *(None if r.get(k) is None else float(r[k]) for r in baselines.values())]
         for k, v in metrics.items()]))
    if levels is not None:
        rows = [[int(lv), int(n), int(s), int(p), float(pr), float(rc), float(f)]
                for lv, n, s, p, pr, rc, f in zip(
                    levels["level"], levels["n_labels"], levels["support"], levels["predicted"],
                    levels["precision"], levels["recall"], levels["f1"], strict=True)]
        parts.append("<h2>Per level</h2>" + _table(
            ["level", "labels", "true", "predicted", "precision", "recall", "F1"], rows))
    if labels is not None:
        keys = [k for k in ("label", "level", "train_frequency", "support", "predicted",
                            "precision", "recall", "f1") if k in labels]
        rows = [[_scalar(v) for v in row] for row in zip(*(labels[k] for k in keys),
                                                         strict=True)]
        parts.append("<h2>Per label</h2><p>Click a column's head to sort by it.</p>" + _table(
            [_LABEL_COLUMNS[k] for k in keys], rows, sortable=True))
    if figures:
        parts.append("<h2>Pictures</h2>")
    for path in figures:
        with open(path, "rb") as f:
            data = base64.b64encode(f.read()).decode("ascii")
        name = os.path.splitext(os.path.basename(path))[0].replace("_", " ")
        parts.append(f"<figure><img alt='{html.escape(name)}' src='data:image/png;base64,"
                     f"{data}'><figcaption>{html.escape(name)}</figcaption></figure>")
    if labels is not None:
        parts.append(f"<script>{_SORT}</script>")
    parts.append("</body></html>")
    return "\n".join(parts)


_LABEL_COLUMNS = {"label": "label", "level": "level", "train_frequency": "training frequency",
                  "support": "true", "predicted": "predicted", "precision": "precision",
                  "recall": "recall", "f1": "F1"}


def _scalar(value):
    """A NumPy scalar as the Python int, float or str the table writes."""
    if isinstance(value, (np.integer, int)):
        return int(value)
    if isinstance(value, (np.floating, float)):
        return float(value)
    return str(value)


def write_report(path, Y_true, Y_pred, scores=None, *, hierarchy=None, baseline=None,
                 title: str = "ecrm evaluation", notes: list[str] | None = None,
                 label_names=None, train_frequency=None, baselines: dict | None = None,
                 summary: dict | None = None, warnings: list[str] | None = None) -> str:
    """Evaluate ``Y_pred`` (and ``scores``) against ``Y_true`` and write one HTML page.

    Parameters
    ----------
    path : str or path-like
        The HTML file written.
    Y_true, Y_pred : array-like of shape (n, d), 0/1
    scores : array-like of shape (n, d), optional
    hierarchy : ecrm.Hierarchy, optional
        Its labels name the columns (else ``label_names``); with edges, it adds the
        hierarchical metrics and the per-level table.
    baseline : array-like of shape (n, d), optional
        A baseline's scores for the precision-recall curve.
    title : str
    notes : list of str, optional
    label_names : sequence of d str, optional
        The columns' names when there is no hierarchy (else ``0 .. d-1``).
    train_frequency : array-like of shape (d,), optional
        Each label's training frequency (a fitted estimator's ``output_mean_``), a column
        of the per-label table.
    baselines, summary, warnings : optional
        As in :func:`html_report`.

    Returns
    -------
    path : str
    """
    from ecrm.reporting.plotting import evaluation_figures

    with_edges = hierarchy if hierarchy is not None and len(hierarchy.edges) else None
    metrics = multilabel_report(Y_true, Y_pred, scores, hierarchy=with_edges)
    levels = None if with_edges is None else per_level_report(Y_true, Y_pred, with_edges)
    labels: dict = dict(per_label_report(Y_true, Y_pred, with_edges))
    d = len(labels["support"])
    names = hierarchy.labels if hierarchy is not None else label_names
    labels["label"] = [str(v) for v in (range(d) if names is None else names)]
    if with_edges is not None:
        labels["level"] = np.asarray(with_edges.depth)
    if train_frequency is not None:
        labels["train_frequency"] = np.asarray(train_frequency, dtype=float)
    with tempfile.TemporaryDirectory() as tmp:
        figures = evaluation_figures(tmp, Y_true, Y_pred, scores, hierarchy=with_edges,
                                     baseline=baseline)
        page = html_report(title, metrics, figures, levels=levels, notes=notes,
                           baselines=baselines, summary=summary, labels=labels,
                           warnings=warnings)
    write_text(path, page)  # whole, or the old file left
    return os.fspath(path)
