"""Tests of the Clus hierarchical ARFF loader and the HMC preprocessing.

Most tests write small ARFF snippets to ``tmp_path``; the tests marked ``data`` load the real
Clus HMC files from ``$ECRM_DATA`` or ``../shared/data/hmc`` and skip when they are absent.
"""

from __future__ import annotations

import gzip
import os
import time
from pathlib import Path

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.base import clone

from ecrm.datasets import ArffError, HMCPreprocessor, list_hmc, load_hmc, load_hmc_arff

TREE = """\
% a comment before the header
@RELATION 'toy tree'

@ATTRIBUTE x1 NUMERIC
@attribute 'x two' real
@Attribute colour {red, green, 'light blue'}
@ATTRIBUTE id string
@ATTRIBUTE class hierarchical a,a/b,a/b/c,d,a/e
@DATA
% a comment in the data
1.5,2,red,'s1',a/b/c
?,-1e-1,'light blue',s2,d@a/e

3,4,?,s3,a
"""

DAG = """\
@relation go
@attribute f1 numeric
@attribute class hierarchical root/A,root/B,A/C,B/C,C/D,B/E
@data
1,D
2,E@A
3,root
"""


def write(tmp_path: Path, text: str, name: str = "toy.arff", compress: bool = False) -> Path:
    f = tmp_path / name
    if compress:
        with gzip.open(f, "wt") as fh:
            fh.write(text)
    else:
        f.write_text(text)
    return f


def assert_closed(Y: np.ndarray, hierarchy) -> None:
    """Every label that is on has all its parents on."""
    for j, parents in enumerate(hierarchy.parents):
        for k in parents:
            assert np.all(Y[:, k] >= Y[:, j]), (hierarchy.labels[j], hierarchy.labels[k])


# --------------------------------------------------------------------------- tree files
def test_tree_paths(tmp_path):
    data = load_hmc_arff(write(tmp_path, TREE))
    assert data.relation == "toy tree"
    assert data.hierarchy_type == "tree"
    assert data.label_names == ("a", "a/b", "a/b/c", "d", "a/e")
    assert data.label_names == data.hierarchy.labels
    assert data.feature_names == ("x1", "x two", "colour")
    assert data.ignored_attributes == ("id",)
    assert data.class_attribute == "class"
    assert data.categories == (None, None, ("red", "green", "light blue"))
    np.testing.assert_array_equal(data.nominal, [False, False, True])
    np.testing.assert_allclose(
        data.X, [[1.5, 2.0, 0.0], [np.nan, -0.1, 2.0], [3.0, 4.0, np.nan]], equal_nan=True
    )
    np.testing.assert_array_equal(
        data.Y,
        [[1, 1, 1, 0, 0], [1, 0, 0, 1, 1], [1, 0, 0, 0, 0]],
    )
    assert data.Y.dtype == np.float64
    assert_closed(data.Y, data.hierarchy)
    # parents: a/b -> a, a/b/c -> a/b, a/e -> a; a and d are top level
    idx = data.hierarchy.index
    assert [data.label_names[k] for k in data.hierarchy.parents[idx["a/b/c"]]] == ["a/b"]
    assert len(data.hierarchy.parents[idx["d"]]) == 0


def test_tree_declares_ancestors_and_deduplicates(tmp_path):
    # a path declares its ancestors, even when listed before them; repeats are harmless
    text = (
        "@relation r\n@attribute x numeric\n"
        "@attribute class hierarchical 4/6/2,2,2/1,4,4/6,2,2/1\n@data\n0,4/6/2\n1,2/1\n"
    )
    data = load_hmc_arff(write(tmp_path, text))
    assert data.label_names == ("4", "4/6", "4/6/2", "2", "2/1")
    np.testing.assert_array_equal(data.Y, [[1, 1, 1, 0, 0], [0, 0, 0, 1, 1]])


def test_two_level_tree_without_root_is_a_tree(tmp_path):
    text = (
        "@relation r\n@attribute x numeric\n@attribute class hierarchical a/b,a/c\n@data\n0,a/c\n"
    )
    data = load_hmc_arff(write(tmp_path, text))
    assert data.hierarchy_type == "tree"
    assert data.label_names == ("a", "a/b", "a/c")
    np.testing.assert_array_equal(data.Y, [[1, 0, 1]])
    f = write(tmp_path, text.replace("0,a/c", "0,c"), "forced.arff")
    forced = load_hmc_arff(f, hierarchy_type="dag")
    assert forced.hierarchy_type == "dag"
    assert forced.label_names == ("a", "b", "c")
    np.testing.assert_array_equal(forced.Y, [[1, 0, 1]])


def test_gzip_equals_plain(tmp_path):
    plain = load_hmc_arff(write(tmp_path, TREE))
    gz = load_hmc_arff(write(tmp_path, TREE, "toy.arff.gz", compress=True))
    np.testing.assert_array_equal(plain.X, gz.X)
    np.testing.assert_array_equal(plain.Y, gz.Y)
    assert plain.label_names == gz.label_names


def test_windows_line_endings_and_tabs(tmp_path):
    text = TREE.replace("@ATTRIBUTE x1 NUMERIC", "@ATTRIBUTE\tx1\tNUMERIC").replace("\n", "\r\n")
    data = load_hmc_arff(write(tmp_path, text))
    assert data.feature_names[0] == "x1"
    assert data.Y.shape == (3, 5)


# --------------------------------------------------------------------------- DAG files
def test_dag_edges(tmp_path):
    data = load_hmc_arff(write(tmp_path, DAG))
    assert data.hierarchy_type == "dag"
    assert data.label_names == ("A", "B", "C", "D", "E")
    assert "root" not in data.hierarchy.index
    # D -> C -> {A, B}; E -> B; the label 'root' is the virtual root and sets nothing
    np.testing.assert_array_equal(
        data.Y,
        [[1, 1, 1, 1, 0], [1, 1, 0, 0, 1], [0, 0, 0, 0, 0]],
    )
    assert_closed(data.Y, data.hierarchy)
    idx = data.hierarchy.index
    assert sorted(data.label_names[k] for k in data.hierarchy.parents[idx["C"]]) == ["A", "B"]
    assert data.hierarchy.is_consistent(data.Y).all()


# --------------------------------------------------------------------------- sparse files
SPARSE = """\
@relation sp
@attribute a numeric
@attribute b numeric
@attribute c {x,y,z}
@attribute d numeric
@attribute class hierarchical p,p/q,r
@data
{0 1.5, 2 y, 4 p/q}
{1 ?, 3 2, 4 r@p}
{}
1,0,z,0,p
"""


def test_sparse_arff(tmp_path):
    data = load_hmc_arff(write(tmp_path, SPARSE))
    assert sp.issparse(data.X) and data.X.format == "csr"
    assert data.X.shape == (4, 4)
    # an omitted value is 0, i.e. the first category for a nominal attribute
    np.testing.assert_allclose(
        data.X.toarray(),
        [[1.5, 0, 1, 0], [0, np.nan, 0, 2], [0, 0, 0, 0], [1, 0, 2, 0]],
        equal_nan=True,
    )
    np.testing.assert_array_equal(data.Y, [[1, 1, 0], [1, 0, 1], [0, 0, 0], [1, 0, 0]])


# --------------------------------------------------------------------------- errors
def _error(tmp_path, text: str, *, lineno: int | None, match: str, name: str = "bad.arff"):
    f = write(tmp_path, text, name)
    with pytest.raises(ArffError, match=match) as info:
        load_hmc_arff(f)
    msg = str(info.value)
    assert str(f) in msg
    assert info.value.filename == str(f)
    if lineno is not None:
        assert f"line {lineno}:" in msg
        assert info.value.lineno == lineno
    assert isinstance(info.value, ValueError)
    return msg


HEAD = (
    "@relation r\n@attribute x numeric\n@attribute c {u,v}\n"
    "@attribute class hierarchical a,a/b\n@data\n"
)


@pytest.mark.parametrize(
    ("body", "lineno", "match"),
    [
        ("1,u,a\n1,u\n", 7, r"expected 3 comma-separated values .*found 2"),
        ("1,u,a\n1,u,a,a\n", 7, r"expected 3 comma-separated values .*found 4"),
        ("1,u,a\n\n1,u,a/c\n", 8, r"unknown label 'a/c'"),
        ("1,u,a\n1x,u,a\n", 7, r"expected a finite number or '\?' \(missing\) for attribute 'x'; "
         r"found '1x'"),
        ("1,u,a\n2,w,a\n", 7, r"value 'w' of nominal attribute 'c' is not one of \{u,v\}"),
        ("1,'u,a\n", 6, r"unterminated quote"),
    ],
)
def test_malformed_data_lines(tmp_path, body, lineno, match):
    _error(tmp_path, HEAD + body, lineno=lineno, match=match)


def test_error_in_gzip_file_names_it(tmp_path):
    f = write(tmp_path, HEAD + "1,u,a\n1,u,zz\n", "bad.arff.gz", compress=True)
    with pytest.raises(ArffError, match=r"bad\.arff\.gz, line 7: unknown label 'zz'"):
        load_hmc_arff(f)


def test_sparse_errors(tmp_path):
    head = "@relation r\n@attribute x numeric\n@attribute class hierarchical a\n@data\n"
    _error(tmp_path, head + "{0 1, 5 a}\n", lineno=5, match=r"index 5 out of range")
    _error(tmp_path, head + "{0 1}\n{x 1}\n", lineno=6, match=r"expected 'index value'")
    _error(tmp_path, head + "{0 1, 0 2}\n", lineno=5, match=r"given twice")
    _error(tmp_path, head + "{0 1, 1 a\n", lineno=5, match=r"ending with '}'")
    _error(tmp_path, head + "{0 q, 1 a}\n", lineno=5, match=r"expected a finite number")
    _error(tmp_path, head + "{0 1, 1 a}\n{0 inf}\n", lineno=6, match=r"found 'inf'")


@pytest.mark.parametrize("value", ["nan", "NaN", "-nan", "inf", "-Infinity", "1e400"])
@pytest.mark.parametrize("missing", ["", "?,u,a\n"],
                         ids=["no-missing-value-before", "a-missing-value-before"])
def test_non_finite_numbers_are_not_arff(tmp_path, value, missing):
    # Regression: numpy read 'nan' and 'inf' as floats; in ARFF missing is '?'.
    body = "1,u,a\n" + missing + f"{value},v,a/b\n"
    _error(tmp_path, HEAD + body, lineno=7 + bool(missing),
           match=rf"expected a finite number or '\?' \(missing\) for attribute 'x'; "
                 rf"found '{value}'")


def test_labels_1_and_true_stay_distinct(tmp_path):
    # Regression: labels and categories are strings; 1 == True must not merge them.
    tree = ("@relation r\n@attribute c {1,True,0,False}\n"
            "@attribute class hierarchical 1,True,1/0,True/False\n@data\n"
            "1,1/0\nTrue,True\n0,True/False\nFalse,1\n")
    data = load_hmc_arff(write(tmp_path, tree, "tree.arff"))
    assert data.label_names == ("1", "True", "1/0", "True/False")
    np.testing.assert_array_equal(data.Y, [[1, 0, 1, 0], [0, 1, 0, 0], [0, 1, 0, 1],
                                           [1, 0, 0, 0]])
    np.testing.assert_array_equal(data.X.ravel(), [0, 1, 2, 3])
    assert data.categories == (("1", "True", "0", "False"),)
    dag = ("@relation r\n@attribute x numeric\n"
           "@attribute class hierarchical root/1,root/True,1/0,True/False\n@data\n"
           "{0 1, 1 0}\n2,True\n")
    data = load_hmc_arff(write(tmp_path, dag, "dag.arff"))
    assert data.label_names == ("1", "True", "0", "False")
    np.testing.assert_array_equal(data.Y, [[1, 0, 1, 0], [0, 1, 0, 0]])


def test_cycle(tmp_path):
    text = (
        "@relation r\n@attribute x numeric\n"
        "@attribute class hierarchical root/a,a/b,b/c,c/a\n@data\n"
    )
    msg = _error(tmp_path, text, lineno=3, match=r"invalid class hierarchy")
    assert "cycle" in msg


def test_self_loop(tmp_path):
    text = "@relation r\n@attribute x numeric\n@attribute class hierarchical root/a,a/a\n@data\n"
    _error(tmp_path, text, lineno=3, match=r"invalid class hierarchy.*self-loop")


def test_missing_data_section(tmp_path):
    text = "@relation r\n@attribute x numeric\n@attribute class hierarchical a\n"
    _error(tmp_path, text, lineno=4, match=r"expected an @data line")


def test_no_hierarchical_attribute(tmp_path):
    text = "@relation r\n@attribute x numeric\n@attribute y {a,b}\n@data\n1,a\n"
    _error(tmp_path, text, lineno=4, match=r"no hierarchical attribute")


def test_header_errors(tmp_path):
    _error(
        tmp_path,
        "@relation r\n@attribute x numeric\n@attribute class hierarchical a\n"
        "@attribute k hierarchical b\n@data\n",
        lineno=4,
        match=r"second hierarchical attribute",
    )
    _error(
        tmp_path,
        "@relation r\n@attribute x blob\n@attribute class hierarchical a\n@data\n",
        lineno=2,
        match=r"unknown type 'blob'",
    )
    _error(
        tmp_path,
        "@relation r\n1,2\n@attribute class hierarchical a\n@data\n",
        lineno=2,
        match=r"expected @relation, @attribute or @data",
    )
    _error(
        tmp_path,
        "@relation r\n@attribute class hierarchical a,a//b\n@data\n",
        lineno=2,
        match=r"empty component in hierarchy entry 'a//b'",
    )
    with pytest.raises(ArffError, match=r"expected DAG edges"):
        load_hmc_arff(
            write(tmp_path, "@relation r\n@attribute class hierarchical a/b/c\n@data\n"),
            hierarchy_type="dag",
        )


def test_missing_file(tmp_path):
    with pytest.raises(FileNotFoundError):
        load_hmc_arff(tmp_path / "nope.arff")


# --------------------------------------------------------------------------- load_hmc
def _split_text(rows: str, header_classes: str = "a,a/b,c") -> str:
    return (
        "@relation r\n@attribute x numeric\n@attribute n {p,q}\n"
        f"@attribute class hierarchical {header_classes}\n@data\n{rows}"
    )


def test_load_hmc_train_valid_test(tmp_path):
    write(tmp_path, _split_text("1,p,a/b\n2,q,c\n"), "toy.train.arff")
    write(tmp_path, _split_text("3,q,a\n"), "toy.valid.arff.gz", compress=True)
    write(tmp_path, _split_text("4,p,c@a\n5,?,a/b\n"), "toy.test.arff")
    data = load_hmc("toy", tmp_path)
    np.testing.assert_array_equal(data.train.X, [[1, 0], [2, 1], [3, 1]])
    np.testing.assert_array_equal(data.train.Y, [[1, 1, 0], [0, 0, 1], [1, 0, 0]])
    np.testing.assert_allclose(data.test.X, [[4, 0], [5, np.nan]], equal_nan=True)
    np.testing.assert_array_equal(data.test.Y, [[1, 0, 1], [1, 1, 0]])
    assert data.train.hierarchy is data.test.hierarchy is data.hierarchy
    assert data.label_names == data.train.label_names == data.test.label_names
    assert data.files["train"] == [
        str(tmp_path / "toy.train.arff"),
        str(tmp_path / "toy.valid.arff.gz"),
    ]
    assert list_hmc(tmp_path) == ["toy"]


def test_load_hmc_prefers_trainvalid(tmp_path, monkeypatch):
    write(tmp_path, _split_text("1,p,a\n2,p,a\n"), "s.trainvalid.arff")
    write(tmp_path, _split_text("9,p,a\n"), "s.train.arff")
    write(tmp_path, _split_text("3,q,c\n"), "s.test.arff")
    monkeypatch.setenv("ECRM_DATA", str(tmp_path))
    data = load_hmc("s")  # data_dir from ECRM_DATA
    np.testing.assert_array_equal(data.train.X[:, 0], [1, 2])
    assert data.files["train"] == [str(tmp_path / "s.trainvalid.arff")]
    assert list_hmc() == ["s"]


def test_load_hmc_train_without_valid(tmp_path):
    write(tmp_path, _split_text("1,p,a\n"), "s.train.arff")
    write(tmp_path, _split_text("3,q,c\n"), "s.test.arff")
    assert load_hmc("s", tmp_path).train.X.shape == (1, 2)


def test_load_hmc_header_order_may_differ(tmp_path):
    # same hierarchy declared in another order: one shared column order (the training file's)
    write(tmp_path, _split_text("1,p,a/b\n", "a,a/b,c"), "s.trainvalid.arff")
    write(tmp_path, _split_text("3,q,a/b\n", "c,a/b,a"), "s.test.arff")
    data = load_hmc("s", tmp_path)
    assert data.label_names == ("a", "a/b", "c")
    np.testing.assert_array_equal(data.test.Y, [[1, 1, 0]])


def test_load_hmc_hierarchies_differ(tmp_path):
    write(tmp_path, _split_text("1,p,a\n"), "s.trainvalid.arff")
    write(tmp_path, _split_text("1,p,a\n", "a,a/b,c,d"), "s.test.arff")
    with pytest.raises(ValueError, match=r"hierarchies .* differ.*'d'"):
        load_hmc("s", tmp_path)


def test_load_hmc_attributes_differ(tmp_path):
    write(tmp_path, _split_text("1,p,a\n"), "s.trainvalid.arff")
    write(tmp_path, _split_text("1,p,a\n").replace("{p,q}", "{p,q,r}"), "s.test.arff")
    with pytest.raises(ValueError, match=r"attributes .* differ at feature 1"):
        load_hmc("s", tmp_path)


def test_load_hmc_missing_data(tmp_path, monkeypatch):
    monkeypatch.delenv("ECRM_DATA", raising=False)
    with pytest.raises(FileNotFoundError, match=r"ECRM_DATA") as info:
        load_hmc("enron")
    assert "Clus" in str(info.value) and "--data-dir" in str(info.value)
    write(tmp_path, _split_text("1,p,a\n"), "enron.trainvalid.arff")
    with pytest.raises(FileNotFoundError) as info:
        load_hmc("enron", tmp_path)
    msg = str(info.value)
    assert "enron.test.arff" in msg and str(tmp_path) in msg
    assert "C-HMCNN" in msg and "ECRM_DATA" in msg
    with pytest.raises(FileNotFoundError, match=r"does not exist"):
        load_hmc("enron", tmp_path / "nowhere")


# --------------------------------------------------------------------------- preprocessing
def test_preprocessor_dense():
    cats = [None, ("a", "b", "c"), None]
    Xtr = np.array([[1.0, 0, 5], [3.0, 2, 5], [np.nan, np.nan, 5], [2.0, 0, 5]])
    Xte = np.array([[10.0, 1, 7], [np.nan, np.nan, np.nan]])
    pre = HMCPreprocessor(categories=cats).fit(Xtr)
    Z = pre.transform(Xte)
    assert Z.shape == (2, 5) and pre.n_features_out_ == 5
    mu, sd = 2.0, np.sqrt(2 / 4)  # imputed column [1, 3, 2, 2]
    np.testing.assert_allclose(Z[:, 0], [(10 - mu) / sd, 0.0])
    freq = [2 / 3, 0, 1 / 3]
    np.testing.assert_allclose(Z[0, 1:4], [0, 1, 0])  # category 'b' unseen in training
    np.testing.assert_allclose(Z[1, 1:4], freq)
    np.testing.assert_allclose(Z[:, 4], [2.0, 0.0])  # constant column: centred only
    Ztr = pre.transform(Xtr)
    np.testing.assert_allclose(Ztr[:, 0].mean(), 0, atol=1e-12)
    np.testing.assert_allclose(Ztr[:, 0].std(), 1)
    assert list(pre.get_feature_names_out(["u", "v", "w"])) == ["u", "v=a", "v=b", "v=c", "w"]
    # the caller's arrays are not modified
    assert np.isnan(Xte[1]).all()
    # sklearn conventions
    assert clone(pre).get_params() == {"categories": cats, "scale": "numeric",
                                        "impute": True}


def test_preprocessor_scale_options():
    X = np.array([[1.0, 0], [3.0, 1], [5.0, 1], [7.0, np.nan]])
    cats = [None, ("a", "b")]
    Z = HMCPreprocessor(categories=cats, scale="all").fit_transform(X)
    np.testing.assert_allclose(Z.mean(axis=0), 0, atol=1e-12)
    np.testing.assert_allclose(Z.std(axis=0), 1)
    Z = HMCPreprocessor(categories=cats, scale="none").fit_transform(X)
    np.testing.assert_allclose(Z, [[1, 1, 0], [3, 0, 1], [5, 0, 1], [7, 1 / 3, 2 / 3]])
    with pytest.raises(ValueError, match="scale must be one of"):
        HMCPreprocessor(scale="bogus").fit(X)
    with pytest.raises(ValueError, match="expected codes 0..1"):
        HMCPreprocessor(categories=cats).fit(np.array([[1.0, 2.0]]))
    with pytest.raises(ValueError, match="one entry"):
        HMCPreprocessor(categories=[None]).fit(X)


def test_preprocessor_sparse_matches_dense_scaling():
    rng = np.random.default_rng(0)
    D = rng.normal(size=(30, 4)) * (rng.random((30, 4)) < 0.4)
    D[3, 1] = np.nan
    D[:, 3] = rng.integers(0, 3, size=30)
    D[5, 3] = np.nan
    cats = [None, None, None, ("x", "y", "z")]
    S = sp.csr_matrix(D)
    pre_s = HMCPreprocessor(categories=cats).fit(S)
    pre_d = HMCPreprocessor(categories=cats).fit(D)
    Zs = pre_s.transform(S)
    Zd = pre_d.transform(D)
    assert sp.issparse(Zs) and Zs.format == "csr"
    np.testing.assert_allclose(pre_s.scale_, pre_d.scale_)
    np.testing.assert_allclose(pre_s.mean_, pre_d.mean_)
    # sparse output is not centred: it differs from the dense one by the scaled mean
    shift = np.where(np.arange(6) < 3, pre_d.mean_ / pre_d.scale_, 0.0)
    np.testing.assert_allclose(Zs.toarray(), Zd + shift)
    assert not np.isnan(Zs.data).any()


def test_preprocessor_on_loaded_data(tmp_path):
    data = load_hmc_arff(write(tmp_path, TREE))
    pre = HMCPreprocessor(categories=data.categories).fit(data.X)
    Z = pre.transform(data.X)
    assert Z.shape == (3, 5) and not np.isnan(Z).any()
    names = pre.get_feature_names_out(data.feature_names)
    assert list(names) == ["x1", "x two", "colour=red", "colour=green", "colour=light blue"]


# --------------------------------------------------------------------------- real data
def _real_data_dir() -> Path | None:
    env = os.environ.get("ECRM_DATA")
    candidates = [Path(env)] if env else []
    candidates.append(Path(__file__).resolve().parents[3] / "shared/data/hmc")
    for d in candidates:
        if d.is_dir() and any(d.glob("*.arff*")):
            return d
    return None


# name: (m, n, p, d, hierarchy type) from ../shared/data/hmc/README.md
REAL = {
    "enron": (988, 660, 1001, 56, "tree"),
    "imclef07a": (10000, 1006, 80, 96, "tree"),
    "imclef07d": (10000, 1006, 80, 46, "tree"),
    "pheno_FUN": (1009, 582, 69, 455, "tree"),
    "spo_FUN": (2437, 1266, 80, 499, "tree"),
    "pheno_GO": (1005, 581, 69, 3127, "dag"),
    "spo_GO": (2434, 1263, 80, 4119, "dag"),
}


@pytest.mark.data
@pytest.mark.parametrize("name", list(REAL))
def test_real_data_sizes(name):
    d = _real_data_dir()
    if d is None:
        pytest.skip("HMC data not found: set ECRM_DATA or provide ../shared/data/hmc")
    if name not in list_hmc(d):
        pytest.skip(f"data set {name!r} not in {d}")
    t0 = time.perf_counter()
    data = load_hmc(name, d)
    seconds = time.perf_counter() - t0
    m, n, p, dd, kind = REAL[name]
    assert data.train.X.shape == (m, p)
    assert data.test.X.shape == (n, p)
    assert data.train.Y.shape == (m, dd) and data.test.Y.shape == (n, dd)
    assert data.hierarchy.n_labels == dd
    assert data.train.hierarchy_type == kind
    assert data.hierarchy.is_tree == (kind == "tree")
    for part in (data.train, data.test):
        assert data.hierarchy.is_consistent(part.Y).all()
        assert set(np.unique(part.Y)) <= {0.0, 1.0}
        assert (part.Y.sum(axis=1) > 0).all()  # every instance has a label
    pre = HMCPreprocessor(categories=data.train.categories).fit(data.train.X)
    assert not np.isnan(pre.transform(data.test.X)).any()
    assert seconds < 10, f"loading {name} took {seconds:.1f} s"
