r"""Semi-synthetic label-ranking data from the classification sets scikit-learn ships.

The usual protocol (Cheng, Hühn & Hüllermeier, ICML 2009) turns a multiclass data set into a
label-ranking one: a probabilistic classifier scores every class for every instance and the
classes ranked by decreasing probability are the instance's target ranking. Here:

1. the feature columns are split at random into *visible* ones (returned as ``X``) and
   *held-out* ones (a fraction ``hidden_fraction``, at least one column when the fraction
   is positive);
2. a Gaussian naive Bayes classifier on **all** features gives out-of-fold class
   probabilities (``n_folds``-fold cross-fitting, so no instance is scored by a model
   trained on it);
3. each instance's ranking sorts the classes by decreasing probability (ties by class
   index).

Because part of the evidence behind each ranking is held out of ``X``, the ranking is a
noisy, not a deterministic, function of the inputs. Only data sets bundled with
scikit-learn are used (no download): ``iris`` (3 classes), ``wine`` (3), ``digits`` (10),
``breast_cancer`` (2).
"""

from __future__ import annotations

import numpy as np
from sklearn import datasets as skd
from sklearn.model_selection import StratifiedKFold, cross_val_predict
from sklearn.naive_bayes import GaussianNB
from sklearn.utils import Bunch, check_random_state

from ecrm.estimators._validation import check_int, check_real
from ecrm.spaces.permutations import PermutationSpace

__all__ = ["RANKING_DATASETS", "make_label_ranking"]

_LOADERS = {
    "iris": skd.load_iris,
    "wine": skd.load_wine,
    "digits": skd.load_digits,
    "breast_cancer": skd.load_breast_cancer,
}

#: Names accepted by :func:`make_label_ranking`.
RANKING_DATASETS = tuple(_LOADERS)


def make_label_ranking(name: str = "iris", *, hidden_fraction: float = 0.3, n_folds: int = 5,
                       random_state=0) -> Bunch:
    """A label-ranking data set built from a scikit-learn classification data set.

    Parameters
    ----------
    name : {"iris", "wine", "digits", "breast_cancer"}, default="iris"
    hidden_fraction : float in [0, 1), default=0.3
        Fraction of feature columns used to make the rankings but held out of ``X``.
    n_folds : int, default=5
        Folds of the cross-fitted naive Bayes scores (at least 2).
    random_state : int, RandomState or None, default=0

    Returns
    -------
    data : sklearn.utils.Bunch
        ``X`` (n, p_visible), standardised; ``Y`` (n, d*d), flattened permutation matrices;
        ``ranks`` (n, d), position of each class (0 = first); ``space``, the
        :class:`~ecrm.spaces.permutations.PermutationSpace`; ``class_names``;
        ``visible_features`` and ``hidden_features`` (column indices); ``target`` (the
        original classes); ``name``.

    Examples
    --------
    >>> data = make_label_ranking("iris")
    >>> data.X.shape, data.Y.shape, data.ranks[0].tolist()
    ((150, 3), (150, 9), [0, 1, 2])
    """
    if name not in _LOADERS:
        raise ValueError(f"unknown data set {name!r}; expected one of {list(_LOADERS)}")
    check_real(hidden_fraction, "hidden_fraction", low=0.0, high=1.0, low_open=False,
               high_open=True)
    check_int(n_folds, "n_folds", low=2)
    rng = check_random_state(random_state)
    raw = _LOADERS[name]()
    X_all, target = np.asarray(raw.data, dtype=float), np.asarray(raw.target)
    p = X_all.shape[1]
    n_hidden = 0 if hidden_fraction == 0 else max(1, int(round(hidden_fraction * p)))
    n_hidden = min(n_hidden, p - 1)
    perm = rng.permutation(p)
    hidden, visible = np.sort(perm[:n_hidden]), np.sort(perm[n_hidden:])
    folds = StratifiedKFold(n_folds, shuffle=True, random_state=rng.randint(2**31 - 1))
    proba = cross_val_predict(GaussianNB(), X_all, target, cv=folds, method="predict_proba")
    d = proba.shape[1]
    space = PermutationSpace(d)
    Y = space.from_scores(proba)
    X = X_all[:, visible]
    scale = X.std(axis=0)
    X = (X - X.mean(axis=0)) / np.where(scale > 0, scale, 1.0)
    return Bunch(X=X, Y=Y, ranks=space.to_ranks(Y), space=space,
                 class_names=list(getattr(raw, "target_names", range(d))),
                 visible_features=visible, hidden_features=hidden, target=target, name=name)
