"""Your own data: CSV/TSV with label names or paths, MEKA ARFF, svmlight, hierarchy files."""

import json
import re

import numpy as np
import pytest
import scipy.sparse as sp

from ecrm import Hierarchy
from ecrm.datasets import (
    DataFileError,
    load_csv,
    load_data,
    load_hierarchy,
    load_meka_arff,
    load_svmlight_multilabel,
)


def _write(tmp_path, name, text):
    path = tmp_path / name
    path.write_text(text)
    return path


def test_csv_with_label_paths_implies_a_tree(tmp_path):
    path = _write(tmp_path, "d.csv", "x1,labels,x2\n1,a/b;c,2\n3,,4\n5,a,6\n")
    data = load_csv(path, path_sep="/")
    np.testing.assert_array_equal(data.X, [[1, 2], [3, 4], [5, 6]])
    assert data.feature_names == ("x1", "x2")
    assert data.label_names == ("a", "a/b", "c")
    assert data.hierarchy == Hierarchy([("a", "a/b")], labels=["a", "a/b", "c"])
    np.testing.assert_array_equal(data.Y, [[1, 1, 1], [0, 0, 0], [1, 0, 0]])


def test_tsv_with_flat_names_and_a_chosen_separator(tmp_path):
    path = _write(tmp_path, "d.tsv", "f\ttags\n0.5\tred|blue\n1.5\tblue\n")
    data = load_data(path, label_column="tags", label_sep="|")
    assert data.label_names == ("red", "blue") and data.hierarchy.edges.size == 0
    np.testing.assert_array_equal(data.Y, [[1, 1], [0, 1]])


def test_csv_with_a_given_hierarchy_follows_its_columns(tmp_path):
    h = Hierarchy([("animal", "dog"), ("animal", "cat")])
    path = _write(tmp_path, "d.csv", "x,labels\n1,cat\n2,dog\n")
    np.testing.assert_array_equal(load_csv(path, hierarchy=h).Y, [[1, 0, 1], [1, 1, 0]])


def test_csv_without_labels_when_not_required(tmp_path):
    path = _write(tmp_path, "d.csv", "x,y\n1,2\n")
    data = load_csv(path, require_labels=False)
    assert data.Y is None and data.X.shape == (1, 2)


@pytest.mark.parametrize("text, line, match", [
    ("x,labels\n1,a\nfoo,b\n", 3, "column 'x': expected a finite number; found 'foo'"),
    ("x,labels\n1,a\n2\n", 3, "expected 2 fields"),
    ("x,labels\n1,a;;b\n", 2, "empty label name"),
    ("x,labels\n1,a//b\n", 2, "empty step in the label path"),
    ("x,x,labels\n1,2,a\n", 1, "column 'x' appears twice"),
    ("x,tags\n1,a\n", 1, "no label column 'labels'"),
    ("x,labels\n1,nan\n", None, None),
])
def test_bad_csv_names_file_and_line(tmp_path, text, line, match):
    path = _write(tmp_path, "bad.csv", text)
    if match is None:  # 'nan' is a label name here, not a feature: loads
        assert load_csv(path, path_sep="/").label_names == ("nan",)
        return
    with pytest.raises(DataFileError, match=match) as info:
        load_csv(path, path_sep="/")
    assert info.value.lineno == line and str(path) in str(info.value)


def test_csv_label_outside_given_hierarchy(tmp_path):
    path = _write(tmp_path, "d.csv", "x,labels\n1,cat\n2,cow\n")
    with pytest.raises(DataFileError, match="line 3: label 'cow' is not in the hierarchy"):
        load_csv(path, hierarchy=Hierarchy([("animal", "cat")]))


def test_csv_non_finite_feature(tmp_path):
    path = _write(tmp_path, "d.csv", "x,labels\ninf,a\n")
    with pytest.raises(DataFileError, match="line 2: column 'x'"):
        load_csv(path)


MEKA = """@relation 'scene: -C 2'
@attribute L1 {0,1}
@attribute L2 numeric
@attribute f1 numeric
@attribute f2 {lo,hi}
@data
1,0,0.5,hi
0,1,1.5,lo
{0 1,2 2.5}
"""


def test_meka_arff_dense_and_sparse_rows(tmp_path):
    data = load_meka_arff(_write(tmp_path, "s.arff", MEKA))
    assert data.label_names == ("L1", "L2") and data.feature_names == ("f1", "f2")
    np.testing.assert_array_equal(data.Y, [[1, 0], [0, 1], [1, 0]])
    X = data.X.toarray() if sp.issparse(data.X) else data.X
    np.testing.assert_array_equal(X, [[0.5, 1], [1.5, 0], [2.5, 0]])


def test_meka_negative_c_takes_the_last_attributes(tmp_path):
    text = "@relation 'x: -C -1'\n@attribute f numeric\n@attribute L {0,1}\n@data\n3,1\n4,0\n"
    data = load_data(_write(tmp_path, "x.arff", text))
    np.testing.assert_array_equal(data.Y, [[1], [0]])
    np.testing.assert_array_equal(data.X, [[3], [4]])


def test_meka_without_c_is_refused(tmp_path):
    text = MEKA.replace("'scene: -C 2'", "scene")
    with pytest.raises(DataFileError, match="line 1: the relation name 'scene' has no '-C n'"):
        load_meka_arff(_write(tmp_path, "s.arff", text))


def test_meka_label_not_binary(tmp_path):
    text = MEKA.replace("0,1,1.5,lo", "0,2,1.5,lo")
    with pytest.raises(DataFileError, match="line 8: label 'L2' must be 0 or 1; found 2.0"):
        load_meka_arff(_write(tmp_path, "s.arff", text))


def test_meka_bad_row_names_line(tmp_path):
    text = MEKA.replace("0,1,1.5,lo", "0,1,1.5")
    with pytest.raises(DataFileError, match="line 8: expected 4 comma-separated"):
        load_meka_arff(_write(tmp_path, "s.arff", text))


def test_svmlight_multilabel(tmp_path):
    path = _write(tmp_path, "d.svm", "1,3 1:0.5 2:1\n3 2:2\n 1:1\n")
    data = load_svmlight_multilabel(path)
    assert data.label_names == ("1", "3")
    np.testing.assert_array_equal(data.Y, [[1, 1], [0, 1], [0, 0]])
    np.testing.assert_array_equal(data.X.toarray(), [[0.5, 1], [0, 2], [1, 0]])


def test_bad_svmlight_names_file(tmp_path):
    path = _write(tmp_path, "d.svm", "1 a:b\n")
    with pytest.raises(DataFileError, match="not a valid multi-label svmlight file"):
        load_data(path)


def test_hierarchy_tsv_and_json_agree(tmp_path):
    tsv = load_hierarchy(_write(tmp_path, "h.tsv", "# tree\nanimal\tdog\nanimal\tcat\n\nplant\n"))
    js = load_hierarchy(_write(tmp_path, "h.json", json.dumps(
        {"edges": [["animal", "dog"], ["animal", "cat"]],
         "labels": ["animal", "dog", "cat", "plant"]})))
    parent_map = load_hierarchy(_write(tmp_path, "p.json", json.dumps(
        {"animal": None, "dog": "animal", "cat": "animal", "plant": []})))
    assert tsv == js == parent_map


@pytest.mark.parametrize("text, match", [
    ("a\tb\tc\n", "line 1: expected 'parent<TAB>child'"),
    ("a\ta\n", "line 1: self-loop on 'a'"),
    ("a\tb\na\tb\n", "line 2: duplicate edge"),
    ("a\tb\nb\ta\n", "invalid hierarchy: cycle"),
    ("", "no labels"),
])
def test_bad_hierarchy_tsv(tmp_path, text, match):
    with pytest.raises(DataFileError, match=match):
        load_hierarchy(_write(tmp_path, "h.tsv", text))


def test_bad_hierarchy_json(tmp_path):
    with pytest.raises(DataFileError, match="line 1: invalid JSON"):
        load_hierarchy(_write(tmp_path, "h.json", "[[1, 2]"))
    with pytest.raises(DataFileError, match="edge 0 must be a"):
        load_hierarchy(_write(tmp_path, "h.json", "[[1, 2]]"))


def test_unknown_extension_and_missing_file(tmp_path):
    with pytest.raises(DataFileError, match="cannot tell the format"):
        load_data(_write(tmp_path, "d.xlsx", "x"))
    with pytest.raises(DataFileError, match="no such file"):
        load_data(tmp_path / "none.csv")


# -- non-finite values, labels, paths and separators -------------------------------
def test_svmlight_non_integer_label_names_the_line(tmp_path):
    path = _write(tmp_path, "d.svm", "# header\n1 1:0.5\n\n1.5 2:1\n")
    with pytest.raises(DataFileError, match=r"line 4: the label field: label 1.5 is not an "
                       "integer") as info:
        load_svmlight_multilabel(path)
    assert info.value.lineno == 4


@pytest.mark.parametrize("name, text, match", [
    ("d.svm", "1 1:0.5\n# c\n2 2:nan 3:1\n", "line 3: feature index 2: a missing value"),
    ("d.svm", "1 1:0.5\n2 2:1 3:inf\n", "line 2: feature index 3: the value inf"),
    ("d.csv", "x,y,labels\n1,2,a\n3,,b\n", "line 3: column 'y': a missing value"),
    ("d.csv", "x,y,labels\n1,2,a\n3,inf,b\n", "line 3: column 'y': expected a finite number"),
    ("d.csv", "x,y,labels\n1,2,a\n3,high,b\n",
     "line 3: column 'y': expected a finite number; found 'high'"),
    ("d.arff", "@relation 'x: -C 1'\n@attribute L {0,1}\n@attribute f numeric\n"
     "@attribute g numeric\n@data\n1,2,3\n0,?,1\n", "line 7: column 'f': a missing value"),
    ("d.arff", "@relation 'x: -C 1'\n@attribute L {0,1}\n@attribute f numeric\n@data\n"
     "{0 1,1 2}\n{1 ?}\n", "line 6: column 'f': a missing value"),
    ("clus.arff", "@relation r\n@attribute x numeric\n@attribute y numeric\n"
     "@attribute class hierarchical a/b,a/c\n@data\n0,1,a/c\n% c\n2,?,a/b\n",
     "line 8: column 'y': a missing value"),
], ids=["svmlight-nan", "svmlight-inf", "csv-empty", "csv-inf", "csv-word", "arff-dense-missing",
        "arff-sparse-missing", "clus-arff-missing-after-a-comment"])
def test_non_finite_feature_names_file_line_and_column(tmp_path, name, text, match):
    from ecrm.datasets import check_finite_features

    path = _write(tmp_path, name, text)
    with pytest.raises(DataFileError, match=match) as info:
        check_finite_features(load_data(path))
    assert str(path) in str(info.value)


def test_meka_missing_label_names_line_and_attribute(tmp_path):
    text = MEKA.replace("0,1,1.5,lo", "0,?,1.5,lo")
    with pytest.raises(DataFileError, match="line 8: label 'L2' must be 0 or 1; found nan"):
        load_meka_arff(_write(tmp_path, "s.arff", text))


def test_label_path_contradicting_the_hierarchy_file(tmp_path):
    h = load_hierarchy(_write(tmp_path, "h.tsv", "art\tsci/phys\nsci\n"))
    path = _write(tmp_path, "d.csv", "x,labels\n1,sci\n2,sci/phys\n")
    with pytest.raises(DataFileError, match="line 3: the label path 'sci/phys' puts 'sci/phys' "
                       "under 'sci', but the hierarchy has it under 'art'"):
        load_csv(path, hierarchy=h, path_sep="/")
    ok = load_csv(_write(tmp_path, "ok.csv", "x,labels\n1,art/sci/phys\n"), path_sep="/",
                  hierarchy=Hierarchy([("art", "art/sci"), ("art/sci", "art/sci/phys")]))
    np.testing.assert_array_equal(ok.Y, [[1, 1, 1]])


def test_hierarchy_line_with_spaces_and_no_tab(tmp_path):
    path = _write(tmp_path, "h.tsv", "animal\tdog\nanimal cat\n")
    with pytest.raises(DataFileError, match=r"h.tsv, line 2: no tab in 'animal cat'"):
        load_hierarchy(path)


@pytest.mark.parametrize("text, label_sep, path_sep, other, count", [
    ("x,labels\n1,a|b\n2,b|c\n", ";", None, "|", "2 of 2"),
    ("x,labels\n1,a;b\n2,a|c\n3,b\n", ";", None, "|", "1 of 3"),
    ("x,labels\n1,a/b\n2,c/d\n", ";", None, "/", "2 of 2"),
    ("x\tlabels\n1\ta,b\n2\tb,c\n", ";", None, ",", "2 of 2"),
    ("x,labels\n1,a;b\n2,c\n", "|", None, ";", "1 of 2"),
])
def test_label_column_with_another_separator_warns(tmp_path, text, label_sep, path_sep, other,
                                                   count):
    path = _write(tmp_path, "d.tsv" if "\t" in text else "d.csv", text)
    line = next(k for k, row in enumerate(text.splitlines(), 1) if k > 1 and other in row)
    with pytest.warns(UserWarning, match=re.escape(
            f"{count} rows hold {other!r} in the label column 'labels' (e.g. line {line}: ")):
        load_data(path, label_sep=label_sep, path_sep=path_sep)


def test_no_separator_warning_for_a_slash_in_some_rows_or_the_path_separator(tmp_path,
                                                                            recwarn):
    load_csv(_write(tmp_path, "d.csv", "x,labels\n1,n/a\n2,c\n"))
    load_csv(_write(tmp_path, "e.csv", "x,labels\n1,a/b\n2,c/d\n"), path_sep="/")
    load_csv(_write(tmp_path, "f.csv", "x,labels\n1,a;b\n2,c\n"))
    assert not [w for w in recwarn if issubclass(w.category, UserWarning)]


@pytest.mark.parametrize("name, text", [
    ("d.csv", "x,labels\n1,never-seen\n"),
    ("d.svm", "7 1:1\n"),
    ("d.arff", "@relation 'x: -C 1'\n@attribute Z {0,1}\n@attribute x numeric\n@data\n1,1\n"),
])
def test_ignore_labels_reads_features_only(tmp_path, name, text):
    h = Hierarchy([], labels=["a"])
    data = load_data(_write(tmp_path, name, text), hierarchy=h, ignore_labels=True)
    assert data.Y is None and data.X.shape == (1, 1)


def test_svmlight_huge_index_stays_sparse(tmp_path):
    data = load_svmlight_multilabel(_write(tmp_path, "d.svm", "1 1:1\n1 100000000:1\n"))
    assert sp.issparse(data.X) and data.X.shape == (2, 100000000) and data.X.nnz == 2
    assert list(data.row_lines) == [1, 2]
