"""A new output space is one class and one table registration.

The toy space below, "at most k of d labels" with a brute-force oracle, is defined here and
nowhere in the library; registering its task is all it takes for ECRM to fit and predict on
it, for model files to hold it and for the command line to describe its models.
"""

from __future__ import annotations

import itertools
import json

import numpy as np
import pytest

from ecrm import ECRM, load, save
from ecrm.cli import main
from ecrm.losses import HammingLoss
from ecrm.spaces.base import OutputSpace, check_binary_matrix
from ecrm.tasks import TASKS, Task, register_task, task_of_space


class AtMostK(OutputSpace):
    """Label sets of at most ``k`` of ``n_labels`` labels; the oracle scans every one."""

    def __init__(self, n_labels: int, k: int):
        self.n_labels, self.k = int(n_labels), int(k)

    @property
    def n_outputs(self) -> int:
        return self.n_labels

    def enumerate(self, max_outputs: int = 50_000) -> np.ndarray:
        rows = [np.isin(np.arange(self.n_labels), on).astype(float)
                for size in range(self.k + 1)
                for on in itertools.combinations(range(self.n_labels), size)]
        return np.array(rows)

    def argmin(self, C) -> np.ndarray:
        Y = self.enumerate()
        return Y[np.argmin(self.check_costs(C) @ Y.T, axis=1)]

    def validate(self, Y) -> np.ndarray:
        Y = check_binary_matrix(Y, self.n_labels)
        if np.any(Y.sum(axis=1) > self.k):
            raise ValueError(f"row {int(np.argmax(Y.sum(axis=1) > self.k))} has more than "
                             f"{self.k} labels")
        return Y


TOY = register_task(Task("at-most-k", (AtMostK,), {"hamming": HammingLoss},
                         what="label sets of at most k labels"))


def _k_cheapest(C, k: int) -> np.ndarray:
    """The direct solution: the (at most k) most negative costs switched on."""
    Y = np.zeros_like(C)
    for i, row in enumerate(C):
        on = [j for j in np.argsort(row, kind="stable")[:k] if row[j] < 0]
        Y[i, on] = 1.0
    return Y


def _data(seed: int = 0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(60, 3))
    scores = X @ rng.normal(size=(3, 5))
    Y = _k_cheapest(-scores, 2)  # the two highest positive scores
    return X, Y


def test_the_brute_force_oracle_is_the_direct_solution():
    space = AtMostK(5, 2)
    C = np.random.default_rng(1).normal(size=(200, 5))
    np.testing.assert_array_equal(space.minimize(C), _k_cheapest(C, 2))
    np.testing.assert_array_equal(HammingLoss().argmin(C, space), _k_cheapest(C, 2))


def test_the_task_table_holds_the_toy_and_builds_its_loss():
    space = AtMostK(5, 2)
    assert TASKS["at-most-k"] is TOY and task_of_space(space) is TOY
    assert isinstance(TOY.make_loss("hamming", space), HammingLoss)
    with pytest.raises(ValueError, match="'kendall' is not a loss of the task 'at-most-k'"):
        TOY.make_loss("kendall", space)
    with pytest.raises(ValueError, match="already registered"):
        register_task(TOY)
    twin = type("AtMostK", (AtMostK,), {})  # another class of the same name
    with pytest.raises(ValueError, match="another task's output space is called 'AtMostK'"):
        register_task(Task("twin", (twin,)))
    assert "twin" not in TASKS


def test_ecrm_fits_predicts_saves_and_loads_the_toy_space(tmp_path):
    X, Y = _data()
    space = AtMostK(5, 2)
    model = ECRM(HammingLoss(), space, alpha=1e-2, gamma=0.5).fit(X[:45], Y[:45])
    P = model.predict(X[45:])
    assert space.contains(P).all()
    # the prediction is the exact minimiser of the estimated risk <y, c(x)> over the space
    C = model.predict_costs(X[45:])
    best = (C @ space.enumerate().T).min(axis=1)
    np.testing.assert_allclose(np.einsum("ij,ij->i", P, C), best, rtol=1e-12, atol=1e-12)
    assert np.mean(HammingLoss()(P, Y[45:])) < np.mean(HammingLoss()(np.zeros_like(P), Y[45:]))
    save(model, tmp_path / "toy.ecrm")
    loaded = load(tmp_path / "toy.ecrm")
    assert type(loaded.output_space) is AtMostK
    assert (loaded.output_space.n_labels, loaded.output_space.k) == (5, 2)
    np.testing.assert_array_equal(loaded.predict(X[45:]), P)


def test_a_forest_predicts_the_exact_minimiser_over_the_toy_space(tmp_path):
    from ecrm import ForestECRM

    X, Y = _data(1)
    space = AtMostK(5, 2)
    forest = ForestECRM(HammingLoss(), space, n_estimators=20, random_state=0).fit(X, Y)
    P, C = forest.predict(X[:10]), forest.predict_costs(X[:10])
    assert space.contains(P).all()
    np.testing.assert_allclose(np.einsum("ij,ij->i", P, C),
                               (C @ space.enumerate().T).min(axis=1), rtol=1e-12, atol=1e-12)
    save(forest, tmp_path / "forest.ecrm")
    np.testing.assert_array_equal(load(tmp_path / "forest.ecrm").predict(X[:10]), P)


def test_the_command_line_names_the_toy_task(tmp_path, capsys):
    X, Y = _data()
    save(ECRM(HammingLoss(), AtMostK(5, 2), gamma=0.5).fit(X, Y), tmp_path / "toy.ecrm")
    assert main(["info", str(tmp_path / "toy.ecrm"), "--json"]) == 0
    info = json.loads(capsys.readouterr().out)
    assert (info["task"], info["output_space"], info["loss"]) == (
        "at-most-k", "AtMostK", "HammingLoss")
    assert main(["info", str(tmp_path / "toy.ecrm")]) == 0
    assert "at-most-k" in capsys.readouterr().out


def test_the_command_line_refuses_to_predict_a_task_whose_labels_it_cannot_write(
        tmp_path, capsys):
    X, Y = _data()
    save(ECRM(HammingLoss(), AtMostK(5, 2), gamma=0.5).fit(X, Y), tmp_path / "toy.ecrm")
    data = tmp_path / "x.csv"
    data.write_text("a,b,c\n" + "".join(f"{u},{v},{w}\n" for u, v, w in X[:3]))
    status = main(["predict", str(tmp_path / "toy.ecrm"), str(data), "-o",
                   str(tmp_path / "p.csv"), "--quiet"])
    assert status == 2
    assert "no labels of the task 'at-most-k'" in capsys.readouterr().err
    assert not (tmp_path / "p.csv").exists()


def test_every_built_in_task_names_real_spaces_and_losses():
    from ecrm.losses import Loss
    from ecrm.tasks import resolve

    for task in TASKS.values():
        for space in task.spaces:
            assert issubclass(resolve(space), OutputSpace), (task.name, space)
        for loss in task.losses.values():
            assert issubclass(resolve(loss), Loss), (task.name, loss)
