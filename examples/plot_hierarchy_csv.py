"""
Hierarchical classification of your own CSV file
================================================

Fit, predict and evaluate a hierarchical classifier on a CSV file whose labels are topic
paths, with every choice made by exact leave-one-out.

A CSV file with numeric feature columns and a ``labels`` column is all ECRM needs. Here the
labels are paths (``science/physics``) separated by ``;``, so they imply a tree of 7 topics
under 3 parents. :class:`~ecrm.ECRMCV` chooses the regularisation, the intercept and the RBF
width by the exact leave-one-out hierarchical loss, and every prediction is the exact
minimiser of the estimated conditional risk over the label sets closed under parents.

The same four steps on the command line are ``ecrm fit``, ``ecrm predict``,
``ecrm evaluate`` and ``ecrm info`` (see :doc:`/getting_started`).
"""

# %%
# Load the training and test files
# --------------------------------
# ``path_sep="/"`` turns each path into its labels (``science`` and ``science/physics``);
# the test file is read against the training file's hierarchy.
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np

from ecrm import ECRMCV
from ecrm.datasets import load_csv
from ecrm.losses import HammingLoss, HierarchicalLoss
from ecrm.reporting.metrics import multilabel_report, per_level_report
from ecrm.selection import LeaveOneOutSearch

# the data files sit beside this script (the gallery runs it from its own folder)
HERE = Path(__file__).resolve().parent if "__file__" in globals() else Path.cwd()
DATA = HERE / "data"
train = load_csv(DATA / "documents-train.csv", path_sep="/")
test = load_csv(DATA / "documents-test.csv", hierarchy=train.hierarchy)
h = train.hierarchy
print(f"{train.X.shape[0]} training rows, {test.X.shape[0]} test rows, "
      f"{train.X.shape[1]} features, {h.n_labels} labels:")
print("  " + ", ".join(h.labels))

# %%
# Fit with exact leave-one-out model selection
# --------------------------------------------
model = ECRMCV(HierarchicalLoss(h), h, alphas=np.logspace(-5, 0, 11),
               search=LeaveOneOutSearch(kernel_grid={"gamma": [0.1, 0.3, 1.0]}))
model.fit(train.X, train.Y)
print(f"chosen: alpha={model.alpha_:.2g}, gamma={model.kernel_params_['gamma']}, "
      f"intercept={model.fit_intercept_}")

# %%
# Predict label names and evaluate on the test file
# -------------------------------------------------
pred = model.predict(test.X)
for names, truth in zip(h.to_labels(pred[:5], leaves_only=True), test.label_lists[:5],
                        strict=True):
    print(f"predicted {'; '.join(names) or '(none)':32s} true {'; '.join(truth)}")
report = multilabel_report(test.Y, pred, model.predict_scores(test.X), hierarchy=h)
print(f"test Hamming loss {HammingLoss()(pred, test.Y).mean():.3f}, hierarchical loss "
      f"{HierarchicalLoss(h)(pred, test.Y).mean():.3f}, hF {report['hF']:.3f}, "
      f"micro AU(PRC) {report['micro_auprc']:.3f}")

# %%
# The leave-one-out curve and the per-level view
# ----------------------------------------------
# Left: the exact leave-one-out hierarchical loss of every candidate (one curve per RBF
# width); the chosen model is circled. Right: precision, recall and F1 per depth level of
# the tree on the test file.
res = model.cv_results_
fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(10, 4))
gammas = np.array([p["gamma"] for p in res["params"]])
for gamma in np.unique(gammas):
    for intercept in (True, False):
        sel = (gammas == gamma) & (res["fit_intercept"] == intercept)
        if sel.any():
            ax1.semilogx(res["alpha"][sel], res["mean_loss"][sel], marker=".",
                         ls="-" if intercept else "--",
                         label=f"gamma={gamma:g}" + ("" if intercept else ", no intercept"))
best = int(np.argmin(res["rank"]))
ax1.plot(res["alpha"][best], res["mean_loss"][best], "o", ms=12, mfc="none", c="k")
ax1.set(xlabel="alpha (the paper's lambda)", ylabel="leave-one-out hierarchical loss",
        title="Exact leave-one-out search")
ax1.legend(fontsize=8)
levels = per_level_report(test.Y, pred, h)
width = 0.25
for k, key in enumerate(["precision", "recall", "f1"]):
    ax2.bar(levels["level"] + (k - 1) * width, levels[key], width, label=key)
ax2.set(xticks=levels["level"], xlabel="depth level (0 = top)", ylim=(0, 1.05),
        title="Test metrics per level")
ax2.legend()
fig.tight_layout()
