"""`ecrm reproduce hmc` end to end on small data sets the test writes (tree and DAG)."""

import json

import numpy as np
import pytest

from ecrm.cli import main


def _write(path, name, split, hierarchy, label_sets, rng):
    lines = ["@relation toy", "@attribute x1 numeric", "@attribute x2 numeric",
             "@attribute colour {red,blue}", f"@attribute class hierarchical {hierarchy}",
             "@data"]
    for labels in label_sets:
        x = rng.normal(size=2)
        lines.append(f"{x[0]:.4f},{x[1]:.4f},{rng.choice(['red', 'blue'])},{labels}")
    (path / f"{name}.{split}.arff").write_text("\n".join(lines) + "\n")


@pytest.fixture
def data_dir(tmp_path):
    rng = np.random.default_rng(0)
    tree_sets = ["a/b", "a/c", "d", "a/b@d", "a"]
    dag_sets = ["C", "E@A", "D", "B", "A"]
    for split, n in [("trainvalid", 40), ("test", 15)]:
        _write(tmp_path, "toytree", split, "a,a/b,a/c,d",
               [tree_sets[i % 5] for i in range(n)], rng)
    for split, n in [("train", 25), ("valid", 15), ("test", 15)]:
        _write(tmp_path, "toydag", split, "root/A,root/B,A/C,B/C,C/D,B/E",
               [dag_sets[i % 5] for i in range(n)], rng)
    return tmp_path


def test_reproduce_hmc_prints_table_and_writes_json(data_dir, tmp_path, capsys):
    out = tmp_path / "rows.json"
    code = main(["reproduce", "hmc", "--data-dir", str(data_dir), "--datasets",
                 "toytree,toydag", "--json", str(out), "--quiet"])
    assert code == 0
    text = capsys.readouterr().out
    for piece in ["toytree: m=40 train, n=15 test", "toydag: m=40 train", "(DAG)", "BR-SVM",
                  "ECRM (kernel LOO)", "empty label set", "majority labels"]:
        assert piece in text
    rows = json.loads(out.read_text())
    assert len(rows) == 10
    keys = {"dataset", "method", "trained_for", "hamming", "hierarchical", "fit_seconds",
            "predict_seconds_per_instance", "params"}
    for row in rows:
        assert keys <= set(row) and row["method"] in ("ECRM", "BR-SVM")
        assert row["trained_for"] in ("hamming", "hierarchical", None)
        assert 0 <= row["hierarchical"] <= 1 and row["hamming"] >= 0


def test_reproduce_hmc_without_data_says_where_to_get_it(tmp_path, capsys, monkeypatch):
    monkeypatch.delenv("ECRM_DATA", raising=False)
    assert main(["reproduce", "hmc"]) == 2
    assert "ECRM_DATA" in capsys.readouterr().out
    assert main(["reproduce", "hmc", "--data-dir", str(tmp_path), "--datasets", "nope"]) == 2
    assert "nope" in capsys.readouterr().out
