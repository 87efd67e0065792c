import numpy as np
import pytest

from ecrm.losses import HammingLoss
from ecrm.metrics import mean_loss, micro_auprc


def test_micro_auprc_by_hand():
    Y = np.array([[1, 0], [0, 1]])
    S = np.array([[0.9, 0.1], [0.8, 0.2]])
    # Ranked pairs: 0.9 (pos), 0.8 (neg), 0.2 (pos), 0.1 (neg): AP = (1/1 + 2/3) / 2.
    assert micro_auprc(Y, S) == pytest.approx((1 + 2 / 3) / 2)
    # Leaving out the second label leaves one positive ranked first.
    assert micro_auprc(Y, S, labels=["a", "b"], exclude=["b", "zzz"]) == pytest.approx(1.0)


def test_micro_auprc_errors():
    with pytest.raises(ValueError, match="same shape"):
        micro_auprc(np.zeros((2, 2)), np.zeros((2, 3)))
    with pytest.raises(ValueError, match="exclude needs labels"):
        micro_auprc(np.eye(2), np.eye(2), exclude=["a"])


def test_mean_loss():
    assert mean_loss(HammingLoss(), [[1, 0], [1, 1]], [[1, 1], [1, 1]]) == 0.5
