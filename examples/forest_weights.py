"""
Kernel or forest weights, chosen honestly
=========================================

Kernel or forest weights for the same Kendall loss, the family chosen on the training set
by its honest criterion.

ECRM estimates the conditional risk R(y|x) = sum_i w_i(x) l(y, y_i) and predicts its exact
minimiser. The weights can come from kernel ridge regression (``ECRMCV``: alpha and the
intercept by the exact leave-one-out Kendall distance) or from a forest grown on the
Kendall embedding of the training rankings (``ForestECRMCV``: its settings by the
out-of-bag Kendall distance). ``select_honestly`` keeps the family whose honest training
criterion is better; the test set is only looked at afterwards.

Semi-synthetic label ranking from scikit-learn's wine data (``make_label_ranking``).

Run:  python examples/forest_weights.py
"""

import matplotlib.pyplot as plt
import numpy as np
from sklearn.model_selection import train_test_split

from ecrm import ECRMCV, ForestECRMCV
from ecrm.datasets.ranking import make_label_ranking
from ecrm.losses import KendallLoss
from ecrm.losses.kendall import kendall_tau
from ecrm.selection import select_honestly

data = make_label_ranking("wine")
X, Xt, Y, Yt = train_test_split(data.X, data.Y, test_size=0.3, random_state=0)
loss = KendallLoss()
candidates = [ECRMCV(loss, data.space, alphas=np.logspace(-5, 1, 13),
                     gamma=1.0 / X.shape[1]),
              ForestECRMCV(loss, data.space, n_estimators=100, random_state=0)]
choice = select_honestly(candidates, X, Y)
print(f"{'weights':<8}{'honest Kendall distance':>25}{'test Kendall tau':>18}")
taus = []
for name, est, score in zip(("kernel", "forest"), choice.estimators, choice.scores,
                            strict=True):
    taus.append(kendall_tau(est.predict(Xt), Yt).mean())
    print(f"{name:<8}{-score:>25.3f}{taus[-1]:>18.3f}")
print(f"chosen on the training set: {('kernel', 'forest')[choice.best_index]}")

# left: the honest criterion the choice is made on; right: the test set, looked at afterwards
fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(7, 3.2))
colors = ["C2" if i == choice.best_index else "C7" for i in range(2)]
ax1.bar(["kernel", "forest"], -np.asarray(choice.scores), color=colors)
ax1.set(ylabel="Kendall distance", title="honest, on the training set")
ax2.bar(["kernel", "forest"], taus, color=colors)
ax2.set(ylabel="Kendall tau", title="test set")
fig.tight_layout()
