"""``ecrm fit --cv`` (``--family auto``): the kernel, the forest and their mixture, the
kernel's share chosen on both families' honest outputs; and the mixture assembled from
fitted members (:meth:`ecrm.MixedRiskECRM.from_fitted`)."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest
from numpy.testing import assert_allclose
from sklearn.base import clone
from sklearn.exceptions import NotFittedError

import ecrm
from _threshold_labels import write_threshold_file
from ecrm import ECRMCV, ForestECRMCV, Hierarchy, MixedRiskECRM
from ecrm.cli import main
from ecrm.datasets import load_csv
from ecrm.losses import HammingLoss, HierarchicalLoss
from ecrm.selection import LeaveOneOutSearch

ROOT = Path(__file__).resolve().parents[2]
TRAIN = ROOT / "examples" / "data" / "documents-train.csv"
TEST = ROOT / "examples" / "data" / "documents-test.csv"
GAMMAS = [0.1, 0.3, 1.0]


def _toy(seed: int = 0, m: int = 80):
    h = Hierarchy([("a", "a1"), ("a", "a2")])
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(m, 3))
    Y = np.where(X[:, :1] > 0, [1, 0, 1], [1, 1, 0])
    flip = rng.random(m) < 0.2
    Y[flip] = Y[flip][:, [0, 2, 1]]
    return h, X, Y


# -- the mixture of fitted members --------------------------------------------------------------
def test_from_fitted_is_the_mixture_fit_makes(tmp_path):
    h, X, Y = _toy()
    fitted = MixedRiskECRM(HammingLoss(), h, kernel_options={"alphas": [1e-2, 0.1, 1]},
                           forest_options={"n_estimators": 20}, random_state=0).fit(X, Y)
    kernel, forest = clone(fitted.kernel_estimator_), clone(fitted.forest_estimator_)
    made = MixedRiskECRM.from_fitted(kernel, forest, kernel.fit_honest(X, Y),
                                     forest.fit_honest(X, Y))
    assert made.mixture_ == fitted.mixture_ and made.cv_results_ == fitted.cv_results_
    assert made.best_score_ == fitted.best_score_
    Xt = np.random.default_rng(1).normal(size=(30, 3))
    assert_allclose(made.predict_costs(Xt), fitted.predict_costs(Xt), rtol=0, atol=1e-10)
    ecrm.save(made, tmp_path / "m.ecrm")
    loaded = ecrm.load(tmp_path / "m.ecrm")
    assert loaded.mixture_ == made.mixture_ and loaded.random_state is None
    assert_allclose(loaded.predict_costs(Xt), made.predict_costs(Xt), rtol=0, atol=1e-12)


def test_from_fitted_returns_the_choice_it_made_when_asked():
    h, X, Y = _toy()
    kernel = ECRMCV(HammingLoss(), h, alphas=[0.1, 1], scoring="loss")
    forest = ForestECRMCV(HammingLoss(), h, n_estimators=10, scoring="loss", random_state=0)
    k_honest, f_honest = kernel.fit_honest(X, Y), forest.fit_honest(X, Y)
    model = MixedRiskECRM.from_fitted(kernel, forest, k_honest, f_honest)
    made, choice = MixedRiskECRM.from_fitted(kernel, forest, k_honest, f_honest,
                                             return_choice=True)
    assert made.mixture_ == model.mixture_ == choice.mixture
    assert made.cv_results_ == model.cv_results_
    # the mixture's honest outputs: the oracle on the mixed honest costs of the rows judged
    oob = np.full((len(Y), f_honest.values.shape[1]), np.nan)
    oob[f_honest.rows] = f_honest.values
    at = np.searchsorted(k_honest.rows, choice.rows)
    costs = (choice.mixture * k_honest.values[at]
             + (1.0 - choice.mixture) * oob[choice.rows])
    np.testing.assert_array_equal(choice.predictions, h.minimize(costs, HammingLoss().cost_form))


def test_from_fitted_refuses_members_of_other_data_or_types():
    h, X, Y = _toy()
    kernel = ECRMCV(HammingLoss(), h, alphas=[0.1, 1], scoring="loss")
    forest = ForestECRMCV(HammingLoss(), h, n_estimators=10, scoring="loss", random_state=0)
    k_honest, f_honest = kernel.fit_honest(X, Y), forest.fit_honest(X, Y)
    _, X2, Y2 = _toy(seed=1)
    other = clone(forest)
    o_honest = other.fit_honest(X2, Y2)
    with pytest.raises(ValueError, match="not fitted on the same data"):
        MixedRiskECRM.from_fitted(kernel, other, k_honest, o_honest)
    with pytest.raises(TypeError, match="fitted ECRMCV and a fitted ForestECRMCV"):
        MixedRiskECRM.from_fitted(forest, kernel, f_honest, k_honest)
    with pytest.raises(NotFittedError):
        MixedRiskECRM.from_fitted(clone(kernel), forest, k_honest, f_honest)


# -- ecrm fit --cv ---------------------------------------------------------------------------
def _fit(path, *extra, family: str = "auto") -> int:
    trees = [] if family == "kernel" else ["--trees", "20"]
    gammas = [] if family == "forest" else ["--gammas", ",".join(map(str, GAMMAS))]
    return main(["fit", str(TRAIN), "--path-sep", "/", "--loss", "hierarchical", "--cv",
                 *gammas, *trees, "--family", family,
                 "--quiet", "-o", str(path), *extra])


def _members(X, Y, h):
    """The kernel and the forest ``ecrm fit --cv`` fits, fitted here on their own."""
    loss = HierarchicalLoss(h)
    search = LeaveOneOutSearch(kernel_grid=[{"kernel": ["rbf"], "gamma": GAMMAS}],
                               fit_intercept="auto", verbose=0)
    kernel = ECRMCV(loss, h, scoring="loss", search=search)
    forest = ForestECRMCV(loss, h, scoring="loss", n_estimators=20, random_state=0)
    return kernel, kernel.fit_honest(X, Y), forest, forest.fit_honest(X, Y)


def test_auto_keeps_the_mixture_its_honest_outputs_choose(tmp_path, capsys):
    """On the example file the kernel (on the features as they are) and the forest mix at
    an interior share: the one a from-scratch search of the grid over the same honest
    outputs finds; the saved model's costs are the members' costs mixed by it."""
    assert _fit(tmp_path / "m.ecrm") == 0
    out = capsys.readouterr().out
    model = ecrm.load(tmp_path / "m.ecrm")
    assert type(model) is MixedRiskECRM  # no preprocessing step: the kernel chose none
    train = load_csv(TRAIN, path_sep="/")
    h = train.hierarchy
    kernel, k_honest, forest, f_honest = _members(train.X, train.Y, h)
    # the grid judged from scratch: each share's mean loss of the oracle's outputs
    rows = k_honest.rows[~np.isnan(f_honest.values[k_honest.rows]).any(axis=1)]
    K = k_honest.values[np.searchsorted(k_honest.rows, rows)]
    F = f_honest.values[rows]
    loss = HierarchicalLoss(h)
    means = [np.mean([loss(h.minimize(s * K[i:i + 1] + (1 - s) * F[i:i + 1],
                                      loss.cost_form), train.Y[rows[i]:rows[i] + 1])
                      for i in range(len(rows))]) for s in np.linspace(0, 1, 11)]
    best = int(np.argmin(np.round(means, 12)))
    assert 0 < best < 10, means  # an interior share on this file
    assert model.mixture_ == pytest.approx(best / 10, abs=1e-12)
    assert_allclose(model.best_score_, -means[best], rtol=0, atol=1e-12)
    test = load_csv(TEST, hierarchy=h)
    share = model.mixture_
    assert_allclose(model.predict_costs(test.X), share * kernel.predict_costs(test.X)
                    + (1 - share) * forest.predict_costs(test.X), rtol=0, atol=1e-10)
    line = next(s for s in out.splitlines() if s.startswith("weights:"))
    assert f"mixed (kernel share {share:g}): mixed leave-one-out and out-of-bag " \
           f"hierarchical loss {-model.best_score_:.4f} in" in line
    assert "; chose mixed (the difference" in line
    assert out.startswith("fitted ECRM on the mixed risk (hierarchical loss) on 300 rows")
    # predict reads the file as any other model
    assert main(["predict", str(tmp_path / "m.ecrm"), str(TEST), "-o",
                 str(tmp_path / "p.csv"), "--quiet"]) == 0
    assert len((tmp_path / "p.csv").read_text().splitlines()) == 101


@pytest.mark.parametrize("end", [1.0, 0.0], ids="end={}".format)
def test_auto_at_an_end_share_keeps_the_better_family_as_it_fits_alone(tmp_path, monkeypatch,
                                                                        end, capsys):
    """At a share of 1 or 0 the better single family is kept (here the kernel): the model
    its own ``--family`` fits (the grid narrowed to that end to make the choice)."""
    real = MixedRiskECRM.from_fitted.__func__
    monkeypatch.setattr(MixedRiskECRM, "from_fitted", classmethod(
        lambda cls, *a, **k: real(cls, *a, **k, mixing_grid=[end])))
    assert _fit(tmp_path / "auto.ecrm", "--standardize", "no") == 0
    line = next(s for s in capsys.readouterr().out.splitlines() if s.startswith("weights:"))
    assert f"mixed (kernel share {end:g})" in line and "; chose kernel (" in line
    family = "kernel"
    assert _fit(tmp_path / "alone.ecrm", "--standardize", "no", family=family) == 0
    auto, alone = ecrm.load(tmp_path / "auto.ecrm"), ecrm.load(tmp_path / "alone.ecrm")
    assert type(auto) is type(alone) is ECRMCV
    X = load_csv(TEST, path_sep="/").X
    np.testing.assert_array_equal(auto.predict_costs(X), alone.predict_costs(X))


def _threshold_file(folder) -> Path:
    """Labels the forest finds and a kernel trails on (:mod:`tests._threshold_labels`)."""
    return write_threshold_file(folder)


def test_an_interior_share_that_does_not_beat_the_better_family_is_not_kept(
        tmp_path, monkeypatch, capsys):
    """The mixture's kernel reads the forest's features (as they are); the kernel alone
    chose standardised ones. A mixture at share 0.5 (the grid narrowed to it) trails the
    forest: the forest is kept, as its own ``--family`` fits it."""
    train = _threshold_file(tmp_path)
    common = ["fit", str(train), "--path-sep", "/", "--cv", "--trees", "20", "--quiet"]
    assert main([*common, "-o", str(tmp_path / "auto.ecrm")]) == 0  # the whole grid: share 0
    assert "mixed (kernel share 0): " in capsys.readouterr().out
    real = MixedRiskECRM.from_fitted.__func__
    monkeypatch.setattr(MixedRiskECRM, "from_fitted", classmethod(
        lambda cls, *a, **k: real(cls, *a, **k, mixing_grid=[0.5])))
    assert main([*common, "-o", str(tmp_path / "auto.ecrm")]) == 0
    out = capsys.readouterr().out
    line = next(s for s in out.splitlines() if s.startswith("weights:"))
    found = [float(v) for v in re.findall(r"loss (\d\.\d{4})", line)]
    kernel, forest, mixed = found
    assert "mixed (kernel share 0.5)" in line and "; chose forest (" in line
    assert forest < min(kernel, mixed)
    assert "preprocessing: none (the features as they are); a forest's splits" in out
    assert main([*common, "--family", "forest", "-o", str(tmp_path / "alone.ecrm")]) == 0
    auto, alone = ecrm.load(tmp_path / "auto.ecrm"), ecrm.load(tmp_path / "alone.ecrm")
    assert type(auto) is type(alone) is ForestECRMCV
    X = np.random.default_rng(1).normal(size=(20, 4))
    np.testing.assert_array_equal(auto.predict_costs(X), alone.predict_costs(X))
