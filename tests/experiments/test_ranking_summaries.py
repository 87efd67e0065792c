"""The ranking protocol's per-fold parameters summed up in the fields the results pages read
(ECRM-mixed's mean share; ECRM-stacked's kept share, member weights and its paired gain over
ECRM-mixed with the corrected resampled standard error)."""

import numpy as np
import pytest

from ecrm.experiments._ranking_stack import MEMBER_NAMES, summary
from ecrm.experiments.ranking import _summary
from ecrm.weights._stack_choice import resampled_std_error

EXACT = ["ECRM-Kendall", "ECRM-footrule", "ECRM-squared", "ECRM-forest", "kNN"]


def _params(rng, n_folds, members):
    out = []
    for _ in range(n_folds):
        w = rng.dirichlet(np.ones(len(members))).round(3)
        out.append({"members": members, "weights": w.tolist(), "k": int(rng.choice([1, 5, 30])),
                    "stack_used": bool(rng.rand() < 0.3), "loss": "ECRM-Kendall"})
    return out


def test_resampled_std_error_is_its_formula_and_the_naive_one_without_overlap():
    g = np.random.RandomState(0).randn(50) * 0.01
    s = np.sqrt(np.sum((g - g.mean()) ** 2) / 49)
    assert resampled_std_error(g, 1 / 9) == pytest.approx(s * np.sqrt(1 / 50 + 1 / 9), rel=1e-12)
    assert resampled_std_error(g, 0.0) == pytest.approx(s / np.sqrt(50), rel=1e-12)


@pytest.mark.parametrize("members", [EXACT, ["ECRM-footrule", "ECRM-forest", "kNN"]],
                         ids=["five-members", "low-rank"])
def test_stacked_summary_against_a_direct_count(members):
    rng = np.random.RandomState(1)
    params = _params(rng, 20, members)
    taus = rng.rand(20)
    mixed = taus.copy()
    mixed[[2, 7, 11]] += [0.01, -0.02, 0.005]  # three folds differ
    out = summary(params, taus.tolist(), mixed.tolist(), folds=10)
    assert out["low_rank"] == (len(members) == 3)
    assert out["stack_used"] == pytest.approx(sum(p["stack_used"] for p in params) / 20)
    assert out["median_k"] == np.median([p["k"] for p in params])
    for label, name in MEMBER_NAMES.items():
        direct = sum(p["weights"][members.index(label)] for p in params) / 20 \
            if label in members else 0.0
        assert out["weight_" + name] == pytest.approx(direct, abs=1e-12)
    assert out["folds_as_mixed"] == 17
    d = taus - mixed
    assert out["gain_over_mixed"] == pytest.approx(np.mean(taus) - np.mean(mixed), abs=1e-12)
    assert out["gain_std_error"] == pytest.approx(np.std(d, ddof=1) * np.sqrt(1 / 20 + 1 / 9),
                                                  rel=1e-9)
    assert not {"folds_as_mixed", "gain_over_mixed"} & set(summary(params, taus, folds=10))


def test_the_record_carries_the_summaries_of_the_rows_that_have_them():
    rng = np.random.RandomState(2)
    params = _params(rng, 4, EXACT)
    shares = [0.2, 0.5, 1.0, 0.7]
    done = [({"ECRM-mixed": (0.5 + i / 10, {"mixture": shares[i]}, 1.0),
              "ECRM-stacked": (0.5 + i / 10 + (i == 1) * 0.01, params[i], 2.0),
              "kNN-Kemeny": (0.4, {"k": 5}, 0.5)}, 0, 3.0) for i in range(4)]
    record = _summary("toy", np.zeros((40, 2)), 3, done,
                      methods=("ECRM-mixed", "ECRM-stacked", "kNN-Kemeny"), repeats=1, folds=4)
    rows = {row["method"]: row for row in record["rows"]}
    assert rows["ECRM-mixed"]["mean_share"] == pytest.approx(np.mean(shares))
    assert rows["ECRM-stacked"]["folds_as_mixed"] == 3
    assert rows["ECRM-stacked"]["gain_over_mixed"] == pytest.approx(0.01 / 4)
    assert set(rows["kNN-Kemeny"]) == {"method", "tau_mean", "tau_std", "fold_taus", "seconds",
                                       "params"}
