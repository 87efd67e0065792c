"""Label names both ways: Hierarchy.to_matrix / to_labels and the estimators' label_names_."""

import numpy as np
import pytest

from ecrm import ECRM, Hierarchy, MultilabelSpace
from ecrm.losses import HammingLoss

H = Hierarchy([("animal", "dog"), ("animal", "cat"), ("dog", "puppy"), ("plant", "tree")])


def test_to_matrix_closes_and_to_labels_inverts():
    lists = [["puppy"], ["cat", "tree"], [], ["animal"]]
    Y = H.to_matrix(lists)
    np.testing.assert_array_equal(Y, [[1, 1, 0, 1, 0, 0], [1, 0, 1, 0, 1, 1],
                                      [0, 0, 0, 0, 0, 0], [1, 0, 0, 0, 0, 0]])
    assert H.to_labels(Y) == [["animal", "dog", "puppy"], ["animal", "cat", "plant", "tree"],
                              [], ["animal"]]
    assert H.to_labels(Y, leaves_only=True) == [["puppy"], ["cat", "tree"], [], ["animal"]]
    np.testing.assert_array_equal(H.to_matrix(H.to_labels(Y)), Y)


def test_to_matrix_without_closing_keeps_given_labels():
    np.testing.assert_array_equal(H.to_matrix([["puppy"]], close=False), [[0, 0, 0, 1, 0, 0]])


def test_to_matrix_names_row_and_unknown_label():
    with pytest.raises(ValueError, match="row 1 has the label 'kitten'"):
        H.to_matrix([["dog"], ["kitten"]])


def test_to_matrix_refuses_a_bare_string_row():
    with pytest.raises(TypeError, match="row 0 .* the string 'dog'"):
        H.to_matrix(["dog"])


def test_estimators_expose_label_names():
    X = np.array([[0.0], [1.0], [2.0]])
    Y = H.to_matrix([["puppy"], ["cat"], ["tree"]])
    est = ECRM(HammingLoss(), H, gamma=1.0).fit(X, Y)
    assert est.label_names_.tolist() == list(H.labels)
    flat = ECRM(HammingLoss(), MultilabelSpace(2)).fit(X, [[0, 1], [1, 0], [1, 1]])
    assert flat.label_names_.tolist() == [0, 1]
