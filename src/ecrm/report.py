"""A self-contained HTML page of an evaluation: the metric tables and the pictures.

:func:`write_report` is ``ecrm evaluate --report FILE``: the metrics of
:func:`ecrm.metrics.multilabel_report`, the per-level table of
:func:`ecrm.metrics.per_level_report` and the PNGs of
:func:`ecrm.plotting.evaluation_figures`, embedded as base64 data so the page is one file
that opens anywhere (no network, no side files).
"""

from __future__ import annotations

import base64
import html
import os
import tempfile

import numpy as np

from ecrm.metrics import multilabel_report, per_level_report

__all__ = ["METRIC_NAMES", "html_report", "write_report"]

_STYLE = """body{font-family:system-ui,sans-serif;margin:2em auto;max-width:980px;color:#222}
table{border-collapse:collapse;margin:1em 0}td,th{border:1px solid #ccc;padding:4px 10px}
td.n{text-align:right;font-variant-numeric:tabular-nums}img{max-width:100%;margin:1em 0}
figure{margin:0}figcaption{color:#555;font-size:90%}"""

#: The long name of every key of :func:`ecrm.metrics.multilabel_report`.
METRIC_NAMES = {"hamming": "Hamming loss (labels wrong per row)",
                "hamming_fraction": "Hamming loss (fraction of labels)",
                "hierarchical": "hierarchical loss", "exact_match": "exact match",
                "micro_f1": "micro F1", "macro_f1": "macro F1", "hP": "hierarchical precision",
                "hR": "hierarchical recall", "hF": "hierarchical F1 (= micro F1 of closed sets)",
                "micro_auprc": "micro AU(PRC)"}


def _table(header: list[str], rows: list[list]) -> str:
    def cell(v):
        if isinstance(v, (float, np.floating)):
            return f'<td class="n">{v:.4f}</td>'
        if isinstance(v, (int, np.integer)):
            return f'<td class="n">{v}</td>'
        return f"<td>{html.escape(str(v))}</td>"
    head = "".join(f"<th>{html.escape(h)}</th>" for h in header)
    body = "".join("<tr>" + "".join(cell(v) for v in row) + "</tr>" for row in rows)
    return f"<table><tr>{head}</tr>{body}</table>"


def html_report(title: str, metrics: dict, figures: list[str], *, levels: dict | None = None,
                notes: list[str] | None = None) -> str:
    """The HTML text of a report.

    Parameters
    ----------
    title : str
    metrics : dict of str to float
        Metric name (keys of :func:`ecrm.metrics.multilabel_report` get their long names)
        to value.
    figures : list of str
        PNG files, embedded in this order.
    levels : dict, optional
        A :func:`ecrm.metrics.per_level_report`.
    notes : list of str, optional
        Lines written under the title (the model, the data file).

    Returns
    -------
    page : str
    """
    parts = [f"<!DOCTYPE html><html><head><meta charset='utf-8'><title>{html.escape(title)}"
             f"</title><style>{_STYLE}</style></head><body><h1>{html.escape(title)}</h1>"]
    parts += [f"<p>{html.escape(line)}</p>" for line in notes or []]
    parts.append("<h2>Metrics</h2>" + _table(["metric", "value"], [
        [METRIC_NAMES.get(k, k), float(v)] for k, v in metrics.items()]))
    if levels is not None:
        rows = [[int(lv), int(n), int(s), int(p), float(pr), float(rc), float(f)]
                for lv, n, s, p, pr, rc, f in zip(
                    levels["level"], levels["n_labels"], levels["support"], levels["predicted"],
                    levels["precision"], levels["recall"], levels["f1"], strict=True)]
        parts.append("<h2>Per level</h2>" + _table(
            ["level", "labels", "true", "predicted", "precision", "recall", "F1"], rows))
    if figures:
        parts.append("<h2>Pictures</h2>")
    for path in figures:
        with open(path, "rb") as f:
            data = base64.b64encode(f.read()).decode("ascii")
        name = os.path.splitext(os.path.basename(path))[0].replace("_", " ")
        parts.append(f"<figure><img alt='{html.escape(name)}' src='data:image/png;base64,"
                     f"{data}'><figcaption>{html.escape(name)}</figcaption></figure>")
    parts.append("</body></html>")
    return "\n".join(parts)


def write_report(path, Y_true, Y_pred, scores=None, *, hierarchy=None, baseline=None,
                 title: str = "ecrm evaluation", notes: list[str] | None = None) -> str:
    """Evaluate ``Y_pred`` (and ``scores``) against ``Y_true`` and write one HTML page.

    Parameters
    ----------
    path : str or path-like
        The HTML file written.
    Y_true, Y_pred : array-like of shape (n, d), 0/1
    scores : array-like of shape (n, d), optional
    hierarchy : ecrm.Hierarchy, optional
    baseline : array-like of shape (n, d), optional
        A baseline's scores for the precision-recall curve.
    title : str
    notes : list of str, optional

    Returns
    -------
    path : str
    """
    from ecrm.plotting import evaluation_figures

    with_edges = hierarchy if hierarchy is not None and len(hierarchy.edges) else None
    metrics = multilabel_report(Y_true, Y_pred, scores, hierarchy=with_edges)
    levels = None if with_edges is None else per_level_report(Y_true, Y_pred, with_edges)
    with tempfile.TemporaryDirectory() as tmp:
        figures = evaluation_figures(tmp, Y_true, Y_pred, scores, hierarchy=with_edges,
                                     baseline=baseline)
        page = html_report(title, metrics, figures, levels=levels, notes=notes)
    with open(path, "w", encoding="utf-8") as f:
        f.write(page)
    return os.fspath(path)
