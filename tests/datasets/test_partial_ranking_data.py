"""The partial label ranking loader: small files written here, and the shared benchmark files
(data-marked, skipped when absent)."""

from __future__ import annotations

import gzip
import os
from pathlib import Path

import numpy as np
import pytest

import ecrm.datasets
from ecrm.datasets import list_partial_label_ranking, load_partial_label_ranking


def _shared_dir() -> Path | None:
    """``$ECRM_DATA_PARTIAL_RANKING``, else ``shared/data/partial_label_ranking`` beside the
    checkout or one of its parents (a worktree sits one level deeper)."""
    env = os.environ.get("ECRM_DATA_PARTIAL_RANKING")
    if env:
        return Path(env)
    for parent in Path(__file__).resolve().parents[2:5]:
        d = parent / "shared" / "data" / "partial_label_ranking"
        if d.is_dir():
            return d
    return None


REAL = _shared_dir()
no_real = pytest.mark.skipif(
    REAL is None or not REAL.is_dir(), reason="partial label ranking benchmark files not "
    "found: set ECRM_DATA_PARTIAL_RANKING or provide ../shared/data/partial_label_ranking")

TOY = "3,2,3\n0.5,1,1,2,2\n-1,0.2,2,1,1\n\n4,5,3,0,1\n"


def _write(tmp_path, text, name="toy", gz=False) -> Path:
    path = tmp_path / (f"{name}.csv.gz" if gz else f"{name}.csv")
    if gz:
        with gzip.open(path, "wt", encoding="utf-8") as f:
            f.write(text)
    else:
        path.write_text(text, encoding="utf-8")
    return path


@pytest.mark.parametrize("gz", [False, True], ids="gz={}".format)
def test_load_small_file_with_ties_and_a_missing_label(tmp_path, gz):
    _write(tmp_path, TOY, gz=gz)
    data = load_partial_label_ranking("toy", tmp_path)
    np.testing.assert_array_equal(data.X, [[0.5, 1], [-1, 0.2], [4, 5]])
    np.testing.assert_array_equal(data.positions, [[1, 2, 2], [2, 1, 1], [3, 0, 1]])
    assert data.positions.dtype == np.int64
    assert data.feature_names == ["x1", "x2"] and data.label_names == ["label1", "label2",
                                                                     "label3"]
    assert data.name == "toy" and data.path.endswith(".csv.gz" if gz else ".csv")


def test_an_empty_field_is_a_missing_label_and_a_path_is_read_directly(tmp_path):
    path = _write(tmp_path, "2,1,3\n0.5,1,,2\n1.5,,1,1\n", name="gaps")
    data = load_partial_label_ranking(path)
    np.testing.assert_array_equal(data.positions, [[1, 0, 2], [0, 1, 1]])
    assert data.name == "gaps"
    assert load_partial_label_ranking(str(path), data_dir=tmp_path / "ignored").name == "gaps"
    (tmp_path / "bare").write_text("1,1,2\n0.5,1,2\n")  # a bare name is a data set's name
    with pytest.raises(FileNotFoundError, match=r"no bare.csv.gz or bare.csv"):
        load_partial_label_ranking("bare", tmp_path)
    assert load_partial_label_ranking(tmp_path / "bare").name == "bare"


def test_no_features(tmp_path):
    data = load_partial_label_ranking(_write(tmp_path, "2,0,2\n1,2\n1,1\n"))
    assert data.X.shape == (2, 0)
    np.testing.assert_array_equal(data.positions, [[1, 2], [1, 1]])


def test_data_dir_from_the_environment_and_the_listing(tmp_path, monkeypatch):
    _write(tmp_path, TOY, name="b", gz=True)
    _write(tmp_path, TOY, name="a")
    (tmp_path / "notes.txt").write_text("not a data set")
    monkeypatch.delenv("ECRM_DATA_PARTIAL_RANKING", raising=False)
    monkeypatch.setenv("ECRM_DATA", str(tmp_path))
    assert list_partial_label_ranking() == ["a", "b"]
    monkeypatch.setenv("ECRM_DATA", str(tmp_path / "elsewhere"))
    monkeypatch.setenv("ECRM_DATA_PARTIAL_RANKING", str(tmp_path))  # the specific one wins
    np.testing.assert_array_equal(load_partial_label_ranking("b").positions[2], [3, 0, 1])


@pytest.mark.parametrize("text, match", [
    ("3,2\n", r"line 1: expected the header 'n,p,k'"),
    ("", r"line 1: expected the header 'n,p,k'"),
    ("0,2,3\n", r"line 1: header 'n,p,k' needs n >= 1"),
    ("1,2,1\n0.5,1,1\n", r"line 1: header 'n,p,k' needs .* k >= 2"),
    ("2,2,3\n0.5,1,1,2,2\n0.5,1,1,2\n", r"line 3: expected 5 comma-separated fields"),
    ("1,2,3\n0.5,abc,1,2,2\n", r"line 2: feature 2 is 'abc', not a finite number"),
    ("1,2,3\nnan,1,1,2,2\n", r"line 2: feature 1 is 'nan'"),
    ("1,2,3\n\n0.5,1,1,2.5,2\n", r"line 3: the bucket of label 2 is '2.5', not a non-negative"),
    ("1,2,3\n0.5,1,1,-1,2\n", r"line 2: the bucket of label 2 is '-1'"),
    ("1,2,3\n0.5,1,1,x,2\n", r"line 2: the bucket of label 2 is 'x'"),
    ("2,2,3\n0.5,1,1,2,2\n", r"declares 2 data lines; found 1"),
    ("1,2,3\n0.5,1,1,2,3\n0.5,1,1,2,3\n", r"line 3: more data lines than the 1"),
])
def test_bad_files_name_file_and_line(tmp_path, text, match):
    path = _write(tmp_path, text)
    with pytest.raises(ValueError, match=match) as info:
        load_partial_label_ranking("toy", tmp_path)
    assert str(path) in str(info.value)


def test_a_huge_header_allocates_nothing_for_the_rows_it_lacks(tmp_path):
    # n rows allocated up front would ask for terabytes (a MemoryError, not this message)
    _write(tmp_path, "1000000000000,2,3\n0.5,1,1,2,2\n")
    with pytest.raises(ValueError, match=r"declares 1000000000000 data lines; found 1"):
        load_partial_label_ranking("toy", tmp_path)


def test_missing_file_and_directory(tmp_path, monkeypatch):
    _write(tmp_path, TOY, name="there")
    with pytest.raises(FileNotFoundError, match=r"no nope.csv.gz or nope.csv .*there: there"):
        load_partial_label_ranking("nope", tmp_path)
    with pytest.raises(FileNotFoundError, match=r"no partial label ranking file"):
        load_partial_label_ranking(tmp_path / "absent.csv.gz")
    with pytest.raises(FileNotFoundError, match=r"does not exist"):
        list_partial_label_ranking(tmp_path / "none")
    monkeypatch.delenv("ECRM_DATA_PARTIAL_RANKING", raising=False)
    monkeypatch.delenv("ECRM_DATA", raising=False)
    with pytest.raises(FileNotFoundError, match=r"no partial label ranking data directory"):
        load_partial_label_ranking("there")


def test_exported_lazily_from_ecrm_datasets():
    assert ecrm.datasets.load_partial_label_ranking is load_partial_label_ranking
    assert "list_partial_label_ranking" in ecrm.datasets.__all__


#: name: (n, p, k, rows with a tie, mean buckets), from the shared directory's README.
README = {"blocks": (5472, 10, 5, 0.99, 2.34), "breast": (106, 9, 6, 0.98, 3.92),
          "ecoli": (336, 7, 8, 1.00, 4.14), "glass": (214, 9, 6, 0.98, 4.09),
          "iris": (150, 4, 3, 0.62, 2.38), "libras": (360, 90, 15, 1.00, 6.89),
          "satimage": (6435, 36, 6, 0.98, 3.36), "segment": (2310, 18, 7, 1.00, 3.03),
          "vehicle": (846, 18, 4, 0.71, 3.12), "wine": (178, 13, 3, 0.32, 2.68)}


@pytest.mark.data
@no_real
@pytest.mark.parametrize("name", sorted(README))
def test_real_files_match_their_readme(name):
    if name not in list_partial_label_ranking(REAL):
        pytest.skip(f"{name} not in {REAL}")
    n, p, k, tied, buckets = README[name]
    data = load_partial_label_ranking(name, REAL)
    assert data.X.shape == (n, p) and data.positions.shape == (n, k)
    P = data.positions
    assert P.min() >= 1  # complete rankings
    distinct = np.array([len(set(row)) for row in P.tolist()])
    np.testing.assert_allclose(np.mean(distinct < k), tied, atol=0.005)
    np.testing.assert_allclose(distinct.mean(), buckets, atol=0.005)
