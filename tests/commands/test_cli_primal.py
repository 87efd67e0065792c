"""``ecrm fit --kernel linear``: with more rows than features, ``--solver auto`` fits, stores
and predicts in the primal (weights p x d), through the real ``ecrm`` entry point; and
``ecrm predict --leaves-only``."""

from __future__ import annotations

import numpy as np
import pytest

import ecrm
from ecrm.weights.kernel._solvers.dual import KernelFit
from ecrm.weights.kernel._solvers.primal import FeatureFit


def _fit(ecrm_cmd, train_csv, tmp_path, name: str, *flags: str):
    out = tmp_path / name
    proc = ecrm_cmd("fit", str(train_csv), "--path-sep", "/", "--kernel", "linear", *flags,
                    "--standardize", "no",
                    "--quiet", "-o", str(out), cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr.decode()
    return out, proc.stdout.decode()


@pytest.mark.parametrize("cv", [(), ("--cv", "--family", "kernel")], ids=["fixed-alpha", "cv"])
def test_linear_kernel_auto_is_the_primal_and_predicts_as_the_dual(ecrm_cmd, train_csv, test_csv,
                                                                   tmp_path, cv):
    primal, summary = _fit(ecrm_cmd, train_csv, tmp_path, "auto.ecrm", *cv)
    dual, _ = _fit(ecrm_cmd, train_csv, tmp_path, "dual.ecrm", "--solver", "dual", *cv)
    assert "primal solver (auto" in summary
    p_model, d_model = ecrm.load(primal), ecrm.load(dual)
    assert isinstance(p_model._fit, FeatureFit) and isinstance(d_model._fit, KernelFit)
    # weights p x (risk regressions), whatever the number of rows: the file holds no rows
    p, width = p_model._fit.coef.shape
    assert p == p_model.n_features_in_ and width <= 2 * p_model.output_space.n_outputs + 1
    assert p_model.X_fit_ is None and p_model.Y_fit_ is None
    assert primal.stat().st_size < dual.stat().st_size / 3
    if cv:
        assert (p_model.alpha_, p_model.fit_intercept_) == (d_model.alpha_,
                                                            d_model.fit_intercept_)
    # the same exact model: the same predictions through ecrm predict
    outs = []
    for model in (primal, dual):
        out = tmp_path / f"{model.stem}.csv"
        proc = ecrm_cmd("predict", str(model), str(test_csv), "--quiet", "-o", str(out),
                        cwd=tmp_path)
        assert proc.returncode == 0, proc.stderr.decode()
        outs.append(out.read_text())
    assert outs[0] == outs[1]
    np.testing.assert_allclose(p_model.predict_costs(d_model.X_fit_[:5]),
                               d_model.predict_costs(d_model.X_fit_[:5]), atol=1e-6)


def test_other_kernels_and_wide_files_keep_the_dual(ecrm_cmd, train_csv, tmp_path):
    _, summary = _fit(ecrm_cmd, train_csv, tmp_path, "given.ecrm", "--solver", "dual")
    assert "primal" not in summary and ", dual solver" in summary
    rbf = tmp_path / "rbf.ecrm"
    proc = ecrm_cmd("fit", str(train_csv), "--path-sep", "/", "--quiet", "-o", str(rbf),
                    cwd=tmp_path)
    assert proc.returncode == 0 and "primal" not in proc.stdout.decode()
    assert isinstance(ecrm.load(rbf)._fit, KernelFit)


def test_predict_leaves_only_writes_the_most_specific_labels(ecrm_cmd, train_csv, test_csv,
                                                            tmp_path):
    model, _ = _fit(ecrm_cmd, train_csv, tmp_path, "m.ecrm")
    rows = {}
    for flag in ((), ("--leaves-only",)):
        out = tmp_path / f"p{len(flag)}.csv"
        proc = ecrm_cmd("predict", str(model), str(test_csv), *flag, "--quiet", "-o", str(out),
                        cwd=tmp_path)
        assert proc.returncode == 0, proc.stderr.decode()
        rows[bool(flag)] = out.read_text().splitlines()
    h = ecrm.load(model).output_space
    assert len(rows[True]) == len(rows[False]) and rows[True] != rows[False]
    for full, leaves in zip(rows[False][1:], rows[True][1:], strict=True):
        full_set = set(full.rsplit(",", 1)[-1].split(";")) - {""}
        leaf_set = set(leaves.rsplit(",", 1)[-1].split(";")) - {""}
        assert leaf_set <= full_set
        # every dropped label is an ancestor of a kept one: closing the leaves gives it back
        closed = h.to_labels(h.close(h.to_matrix([sorted(leaf_set)])))[0]
        assert set(closed) == full_set
