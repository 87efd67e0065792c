"""
Binary and multiclass classification
====================================

Binary and multiclass classification with ECRM and the 0-1 loss on a finite output space.

With the 0-1 loss on {-1, 1}, ECRM is regularised least squares classification (paper,
Section 2.4.1): its predictions equal the sign of kernel ridge regression on the +-1 labels.
"""

import matplotlib.pyplot as plt
import numpy as np
from sklearn.datasets import load_breast_cancer, load_wine
from sklearn.kernel_ridge import KernelRidge
from sklearn.metrics import confusion_matrix
from sklearn.model_selection import train_test_split
from sklearn.preprocessing import StandardScaler

from ecrm.losses.classification import ZeroOneLoss
from ecrm.spaces.candidates import CandidateSpace
from ecrm.weights.kernel.estimator import ECRM


def main():
    X, y = load_breast_cancer(return_X_y=True)
    X = StandardScaler().fit_transform(X)
    y = np.where(y == 1, 1.0, -1.0)
    X, Xt, y, yt = train_test_split(X, y, test_size=0.3, random_state=0)
    lam, gamma = 1e-3, 1.0 / X.shape[1]
    space = CandidateSpace([[-1], [1]])
    ecrm = ECRM(ZeroOneLoss(space), space, gamma=gamma, alpha=lam, fit_intercept=False)
    pred = ecrm.fit(X, y[:, None]).predict(Xt)[:, 0]
    rlsc = np.sign(KernelRidge(alpha=len(X) * lam, kernel="rbf", gamma=gamma)
                   .fit(X, y).predict(Xt))
    print(f"breast cancer: ECRM 0-1 accuracy {np.mean(pred == yt):.3f}; "
          f"agrees with RLSC on {np.mean(pred == rlsc):.1%} of test points")

    X, y = load_wine(return_X_y=True)
    X = StandardScaler().fit_transform(X)
    X, Xt, y, yt = train_test_split(X, y, test_size=0.3, random_state=0)
    space = CandidateSpace.from_classes(np.unique(y))
    est = ECRM(ZeroOneLoss(space), space, gamma=1.0 / X.shape[1], alpha=1e-3)
    pred = est.fit(X, y[:, None]).predict(Xt)[:, 0]
    print(f"wine (3 classes): ECRM 0-1 accuracy {np.mean(pred == yt):.3f}")

    # the wine test set's confusion matrix
    counts = confusion_matrix(yt, pred)
    fig, ax = plt.subplots(figsize=(4, 3.5))
    ax.imshow(counts, cmap="Blues")
    for (i, j), c in np.ndenumerate(counts):
        ax.text(j, i, str(c), ha="center", va="center")
    ax.set(xlabel="predicted class", ylabel="true class", xticks=range(3), yticks=range(3),
           title="ECRM, 0-1 loss: wine test set")
    fig.tight_layout()


if __name__ == "__main__":
    main()
