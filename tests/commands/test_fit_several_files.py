"""``ecrm fit A B``: one model on the rows of several training files (Clus: train + valid)."""

from __future__ import annotations

import numpy as np
import pytest
from numpy.testing import assert_allclose

import ecrm
from ecrm.cli import main

ARFF_HEAD = """@relation toy
@attribute x1 numeric
@attribute x2 numeric
@attribute colour {red,green}
@attribute class hierarchical a,a/b,a/c,d
@data
"""


def _rows(seed: int, n: int) -> list[tuple[float, float, str]]:
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 2))
    labels = ["a/b" if x > 0.3 else "a/c" if x > -0.3 else "d" for x in X[:, 0]]
    return [(float(a), float(b), lab) for (a, b), lab in zip(X, labels, strict=True)]


def _csv(path, rows, header="x1,x2,labels") -> None:
    path.write_text(header + "\n" + "".join(f"{a!r},{b!r},{lab}\n" for a, b, lab in rows))


def _fit(tmp_path, *argv) -> int:
    return main(["fit", *map(str, argv), "--quiet", "--path-sep", "/", "--cv", "--family", "kernel",
                 "--alphas", "1e-3,1e-2,1e-1", "--standardize", "no"])


def test_two_csv_files_fit_the_model_of_their_rows_in_one_file(tmp_path):
    first, second = _rows(0, 40), _rows(1, 30)
    _csv(tmp_path / "a.csv", first)
    _csv(tmp_path / "b.csv", second)
    _csv(tmp_path / "ab.csv", first + second)
    assert _fit(tmp_path, tmp_path / "a.csv", tmp_path / "b.csv", "-o", tmp_path / "two") == 0
    assert _fit(tmp_path, tmp_path / "ab.csv", "-o", tmp_path / "one") == 0
    two, one = ecrm.load(tmp_path / "two"), ecrm.load(tmp_path / "one")
    assert two.alpha_ == one.alpha_ and two.output_space == one.output_space
    X = np.array([r[:2] for r in _rows(2, 25)])
    assert_allclose(two.predict_costs(X), one.predict_costs(X), rtol=1e-9, atol=1e-12)


def test_labels_seen_in_one_file_only_are_united(tmp_path):
    first = [(x1, x2, lab) for x1, x2, lab in _rows(0, 40) if lab != "d"]
    second = [(x1, x2, "d" if lab == "d" else "e/f") for x1, x2, lab in _rows(1, 40)]
    _csv(tmp_path / "a.csv", first)
    _csv(tmp_path / "b.csv", second)
    assert _fit(tmp_path, tmp_path / "a.csv", tmp_path / "b.csv", "-o", tmp_path / "m") == 0
    h = ecrm.load(tmp_path / "m").output_space
    assert set(h.labels) == {"a", "a/b", "a/c", "d", "e", "e/f"}
    assert h.parents[h.index["e/f"]].tolist() == [h.index["e"]]


def test_clus_train_and_valid_arff_files(tmp_path):
    rows = _rows(3, 50)
    lines = [f"{a!r},{b!r},{'red' if a > 0 else 'green'},{lab.replace('d', 'd')}\n"
             for a, b, lab in rows]
    (tmp_path / "t.train.arff").write_text(ARFF_HEAD + "".join(lines[:30]))
    (tmp_path / "t.valid.arff").write_text(ARFF_HEAD + "".join(lines[30:]))
    (tmp_path / "t.trainvalid.arff").write_text(ARFF_HEAD + "".join(lines))
    argv = ["--loss", "hierarchical", "--cv", "--family", "kernel", "--alphas", "1e-2,1e-1",
            "--quiet"]
    assert main(["fit", str(tmp_path / "t.train.arff"), str(tmp_path / "t.valid.arff"),
                 "-o", str(tmp_path / "two"), *argv]) == 0
    assert main(["fit", str(tmp_path / "t.trainvalid.arff"), "-o", str(tmp_path / "one"),
                 *argv]) == 0
    two, one = ecrm.load(tmp_path / "two"), ecrm.load(tmp_path / "one")  # pipelines
    assert two[-1].alpha_ == one[-1].alpha_
    X = np.array([[0.1, -0.2, 0.0], [1.0, 0.5, 1.0]])
    assert_allclose(two[-1].predict_costs(two[0].transform(X)),
                    one[-1].predict_costs(one[0].transform(X)), rtol=1e-9, atol=1e-12)


@pytest.mark.parametrize("second, message", [
    ("x1,x3,labels\n", "b.csv have different feature columns (first difference: 'x2' and "
                       "'x3')"),
    ("x1,labels\n", "b.csv have different numbers of features (2 and 1)"),
])
def test_files_with_other_columns_are_refused_naming_both(tmp_path, capsys, second, message):
    _csv(tmp_path / "a.csv", _rows(0, 20))
    width = second.count(",")
    (tmp_path / "b.csv").write_text(second + "".join(
        ",".join(["0.5"] * width + ["a/b"]) + "\n" for _ in range(5)))
    assert _fit(tmp_path, tmp_path / "a.csv", tmp_path / "b.csv", "-o", tmp_path / "m") == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("ecrm: error: ") and len(err.splitlines()) == 1
    assert f"a.csv and {tmp_path / message}" in err
    assert not (tmp_path / "m").exists()


def test_arff_files_with_other_hierarchies_are_refused(tmp_path, capsys):
    (tmp_path / "t.train.arff").write_text(ARFF_HEAD + "0.1,0.2,red,a/b\n0.3,0.1,green,d\n")
    (tmp_path / "t.valid.arff").write_text(
        ARFF_HEAD.replace("a,a/b,a/c,d", "a,a/b,d") + "0.1,0.2,red,a/b\n")
    assert main(["fit", str(tmp_path / "t.train.arff"), str(tmp_path / "t.valid.arff"),
                 "-o", str(tmp_path / "m"), "--quiet"]) == 2
    assert "declare different label hierarchies" in capsys.readouterr().err
    assert not (tmp_path / "m").exists()


def test_an_error_in_the_second_file_names_it_and_its_line(tmp_path, capsys):
    _csv(tmp_path / "a.csv", _rows(0, 20))
    (tmp_path / "b.csv").write_text("x1,x2,labels\n0.1,0.2,a/b\n0.1,,d\n")
    assert _fit(tmp_path, tmp_path / "a.csv", tmp_path / "b.csv", "-o", tmp_path / "m") == 2
    assert "b.csv, line 3: column 'x2': a missing value" in capsys.readouterr().err


def test_scheduler_takes_one_file(tmp_path, capsys):
    _csv(tmp_path / "a.csv", _rows(0, 20))
    _csv(tmp_path / "b.csv", _rows(1, 20))
    assert main(["fit", str(tmp_path / "a.csv"), str(tmp_path / "b.csv"), "-o",
                 str(tmp_path / "m"), "--scheduler", "tcp://127.0.0.1:1", "--solver", "primal",
                 "--kernel", "linear", "--standardize", "no", "--quiet"]) == 2
    assert "--scheduler reads one training file" in capsys.readouterr().err


def test_svmlight_files_of_different_widths_unite_their_columns(tmp_path):
    # svmlight names features by index and omits zeros: the second file never uses feature 3
    (tmp_path / "a.svm").write_text("1 1:0.5 3:1\n2 2:1\n1 1:0.7 3:0.2\n2 2:0.9 3:0.1\n")
    (tmp_path / "b.svm").write_text("1 1:0.6\n2 2:1.1\n1 1:0.4 2:0.1\n")
    (tmp_path / "ab.svm").write_text((tmp_path / "a.svm").read_text()
                                     + (tmp_path / "b.svm").read_text())
    argv = ["--quiet", "--family", "kernel", "--alpha", "1e-2"]
    assert main(["fit", str(tmp_path / "a.svm"), str(tmp_path / "b.svm"), "-o",
                 str(tmp_path / "two"), *argv]) == 0
    assert main(["fit", str(tmp_path / "ab.svm"), "-o", str(tmp_path / "one"), *argv]) == 0
    two, one = ecrm.load(tmp_path / "two"), ecrm.load(tmp_path / "one")
    assert two.n_features_in_ == one.n_features_in_ == 3
    X = np.array([[0.5, 0.0, 1.0], [0.0, 1.0, 0.0]])
    assert_allclose(two.predict_costs(X), one.predict_costs(X), rtol=1e-9, atol=1e-12)
