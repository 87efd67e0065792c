"""Options that size the work (threads, worker processes, trees) are bounded before any work,
with the way out in the message."""

from __future__ import annotations

import argparse
import os

import pytest

from ecrm.cli import build_parser, main
from ecrm.commands._threads import most_workers

MOST = 4 * (os.cpu_count() or 1)


def test_most_workers_is_four_per_cpu():
    assert most_workers() == MOST


@pytest.mark.parametrize("argv, option", [
    (["fit", "train.csv", "-o", "m.ecrm", "--threads"], "--threads"),
    (["evaluate", "m.ecrm", "test.csv", "--threads"], "--threads"),
    (["reproduce", "flow", "--jobs"], "--jobs"),
    (["reproduce", "ranking", "--n-jobs"], "--n-jobs"),
], ids=["fit-threads", "evaluate-threads", "reproduce-flow-jobs", "reproduce-ranking-n-jobs"])
def test_thread_and_process_counts_are_bounded_by_the_cpus(tmp_path, monkeypatch, capsys, argv,
                                                            option):
    monkeypatch.chdir(tmp_path)
    for name in ("train.csv", "test.csv", "m.ecrm"):  # the commands check inputs exist
        (tmp_path / name).write_text("x,labels\n1,a\n")
    assert getattr(build_parser([*argv, str(MOST)]).parse_args([*argv, str(MOST)]),
                   option.lstrip("-").replace("-", "_")) == MOST
    with pytest.raises(SystemExit) as exc:
        build_parser([*argv, "100000"]).parse_args([*argv, "100000"])
    assert exc.value.code == 2
    assert (f"{option} must be an integer from {1 - (option == '--threads')} to {MOST} "
            f"(4 per CPU, {os.cpu_count()} CPUs here); got '100000'") in capsys.readouterr().err


def test_a_forest_over_the_memory_budget_is_refused_before_any_work(train_csv, tmp_path, capsys):
    out = tmp_path / "m.ecrm"
    assert main(["fit", str(train_csv), "--path-sep", "/", "--family", "forest",
                 "--trees", "1000000000", "-o", str(out), "--quiet"]) == 2
    err = capsys.readouterr().err
    assert err.strip() == (
        "ecrm: error: --trees 1000000000 on 300 training rows needs at least 1,676.4 GiB (the "
        "bootstrap counts and leaves of every row in every tree, 6 bytes each), over "
        "--memory-budget 8 GiB: give --trees 4772185 or fewer, or raise --memory-budget")
    assert not out.exists()


def test_the_largest_forest_the_budget_allows_is_the_one_named():
    from ecrm.commands._fit_estimators import trees_over_budget

    gib = 2.0**30
    budget = 6 * 300 * 5 / gib  # five trees of 300 rows, exactly
    assert trees_over_budget(argparse.Namespace(memory_budget=budget, trees=5), 300) is None
    refused = trees_over_budget(argparse.Namespace(memory_budget=budget, trees=6), 300)
    assert refused.endswith("give --trees 5 or fewer, or raise --memory-budget")
    tiny = trees_over_budget(argparse.Namespace(memory_budget=1e-9, trees=1), 300)
    assert tiny.endswith("over --memory-budget 1e-09 GiB: raise --memory-budget")
