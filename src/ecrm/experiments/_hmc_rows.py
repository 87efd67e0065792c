"""The rows of ``ecrm reproduce hmc``'s table: one fitted model's test losses, micro AU(PRC)s,
times and chosen parameters, in the order the JSON holds them."""

from __future__ import annotations

import time

import numpy as np

__all__ = ["TableRows", "timed"]

#: Bootstrap resamples of the test instances behind a row's ``auprc_gain_std_error``.
GAIN_RESAMPLES = 200


def timed(fn):
    """``fn()`` and the wall seconds it took."""
    t0 = time.perf_counter()
    out = fn()
    return out, time.perf_counter() - t0


class TableRows:
    """The rows of Table 1 of one data set, each scored on its test part.

    Parameters
    ----------
    name : str
        The data set.
    hierarchy : ecrm.Hierarchy
    Yte : ndarray of shape (n, d)
        The test label sets.
    losses : dict
        Task losses by row key (``"hamming"``, ``"hierarchical"``).
    exclude : tuple of str
        Labels the first micro AU(PRC) leaves out (``"auprc"``; ``"auprc_all"`` keeps all).
    random_state : int, default=0
        Seed of the bootstrap resamples of the test instances (the same for every row).

    Attributes
    ----------
    reference : tuple or None
        What the rows scored while it is set (:meth:`compare_with`) are compared with: each
        such row gets ``auprc_gain`` (its ``auprc`` minus the reference's) and
        ``auprc_gain_std_error``, the paired bootstrap standard error of that gain over
        ``GAIN_RESAMPLES`` resamples of the test instances
        (:func:`ecrm.reporting.metrics.paired_bootstrap_auprc`; the reference is resampled
        once, its values kept).
    """

    def __init__(self, name, hierarchy, Yte, losses, exclude, *, random_state=0):
        self.name, self.hierarchy, self.Yte = name, hierarchy, Yte
        self.losses, self.exclude, self.random_state = losses, exclude, random_state
        self.reference = None

    def compare_with(self, S) -> None:
        """Compare the rows scored from now on with the test label scores ``S``."""
        self.reference = self._bootstrap(S)

    def _bootstrap(self, S):
        from ecrm.reporting.metrics import bootstrap_auprc

        kept = np.array([label not in self.exclude for label in self.hierarchy.labels])
        return bootstrap_auprc(self.Yte, S, columns=kept, n_boot=GAIN_RESAMPLES,
                               random_state=self.random_state)

    def scores(self, P, S) -> dict:
        """The mean test loss of the predictions ``P`` per loss, the micro AU(PRC) of the
        label scores ``S`` and, with a ``reference``, its gain over it."""
        from ecrm.reporting.metrics import micro_auprc

        row = {key: float(np.mean(loss(P, self.Yte))) for key, loss in self.losses.items()}
        row["auprc"] = micro_auprc(self.Yte, S, labels=self.hierarchy.labels,
                                   exclude=self.exclude)
        row["auprc_all"] = micro_auprc(self.Yte, S)
        if self.reference is not None:
            (auprc, resampled), (ref, ref_resampled) = self._bootstrap(S), self.reference
            row["auprc_gain"] = float(auprc - ref)
            row["auprc_gain_std_error"] = float(np.std(resampled - ref_resampled, ddof=1))
        return row

    def row(self, method, protocol, trained_for, P, S, *, fit_seconds, predict_seconds,
            params) -> dict:
        """One model's row (``predict_seconds``: for the whole test part)."""
        return {"dataset": self.name, "method": method, "protocol": protocol,
                "trained_for": trained_for, **self.scores(P, S), "fit_seconds": fit_seconds,
                "predict_seconds_per_instance": predict_seconds / len(self.Yte),
                "params": params}
