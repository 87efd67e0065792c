"""Tests generated from the constraint table (ecrm.estimators._parameters.CONSTRAINTS): every choice
parameter refuses an unknown name naming itself and its values, accepts each of them; the
library's remaining vocabulary constants and the command line's choices are the table's."""

import argparse
import inspect

import numpy as np
import pytest
from sklearn.base import BaseEstimator

import ecrm
from _shapes import TREE5 as TREE
from ecrm.estimators._parameters import CONSTRAINTS, Choice, check_parameter, vocabulary
from ecrm.losses import HammingLoss
from ecrm.selection import LeaveOneOutSearch, OutOfBagSearch

CHOICES = sorted(k for k, c in CONSTRAINTS.items() if isinstance(c, Choice))
BAD = "no-such-name"


@pytest.mark.parametrize("parameter", CHOICES)
def test_an_unknown_name_is_refused_naming_the_parameter_and_every_value(parameter):
    constraint = CONSTRAINTS[parameter]
    for name in (parameter, f"--{parameter.replace('_', '-')}"):
        with pytest.raises(ValueError) as error:
            check_parameter(parameter, BAD, name)
        message = str(error.value)
        assert message.startswith(f"{name} must be ") and message.endswith(f"got {BAD!r}")
        assert all(repr(value) in message for value in constraint.values)
        assert ("None" in message) == constraint.none
    for junk in (3, 2.5, [constraint.values[0]], b"auto"):
        with pytest.raises(ValueError, match=f"^{parameter} must be "):
            check_parameter(parameter, junk)


@pytest.mark.parametrize("parameter", CHOICES)
def test_every_declared_value_is_accepted_as_it_is(parameter):
    constraint = CONSTRAINTS[parameter]
    assert len(set(constraint.values)) == len(constraint.values) > 0
    for value in constraint.values:
        assert check_parameter(parameter, value) is value
        assert check_parameter(parameter, np.str_(value)) == value  # a NumPy string too
    if constraint.none:
        assert check_parameter(parameter, None) is None
    if constraint.function is not None:
        assert check_parameter(parameter, len) is len
    assert set(constraint.offered) <= set(constraint.values)


def test_the_readers_and_the_flows_refuse_an_unknown_name(tmp_path):
    from ecrm.datasets.flows import FlowModel
    from ecrm.datasets.formats import load_data

    with pytest.raises(ValueError, match=f"format must be .*; got {BAD!r}"):
        load_data(tmp_path / "x.csv", format=BAD)
    model = FlowModel.default()
    flows = np.zeros((1, model.paths.shape[1]))
    for method in (model.bayes, lambda x, loss: model.conditional_risk(x, flows, loss)):
        with pytest.raises(ValueError, match=f"loss must be 'absolute' or 'square'; got {BAD!r}"):
            method(np.zeros(model.n_features), BAD)


def test_instances_of_the_declared_class_are_accepted():
    from ecrm import CenterSelector, KMeansPlusPlusCenters

    assert (CONSTRAINTS["center_selection"].instance
            == "ecrm.weights.kernel._solvers.centers.CenterSelector")
    selector = KMeansPlusPlusCenters()
    assert check_parameter("center_selection", selector) is selector
    with pytest.raises(ValueError, match="or a CenterSelector; got <class"):
        check_parameter("center_selection", CenterSelector)  # the class is not an instance


def test_the_library_constants_are_the_table():
    """What remains of the library's own vocabularies cannot drift from the table."""
    from ecrm.datasets.formats import FORMATS
    from ecrm.datasets.preprocessing import _SCALE_CHOICES
    from ecrm.experiments import flow
    from ecrm.selection._criteria import SCORERS
    from ecrm.selection._grid import WIDTH_KERNELS
    from ecrm.selection.calibration import CALIBRATIONS
    from ecrm.weights.forest import estimator as forest
    from ecrm.weights.kernel import length_scales
    from ecrm.weights.kernel._kernels import KERNEL_PARAMS
    from ecrm.weights.kernel._solvers.budget import CENTER_SELECTIONS
    from ecrm.weights.kernel._solvers.centers import _SHORTHANDS
    from ecrm.weights.kernel._solvers.solver import SOLVER_CLASSES

    assert vocabulary("solver") == ("auto", *SOLVER_CLASSES)  # the solvers' one table
    assert CENTER_SELECTIONS == vocabulary("center_selection") == tuple(_SHORTHANDS)
    assert set(KERNEL_PARAMS) == set(vocabulary("kernel"))
    assert {"loss", *SCORERS} == set(vocabulary("scoring")) and "loss" not in SCORERS
    assert {*CALIBRATIONS, "auto"} == set(vocabulary("calibration"))
    assert WIDTH_KERNELS == length_scales.KERNELS == vocabulary("width_kernel")
    assert set(WIDTH_KERNELS) <= set(vocabulary("kernel"))
    assert forest.FLAVOURS == vocabulary("flavour")
    assert FORMATS == vocabulary("format")
    assert _SCALE_CHOICES == vocabulary("scale")
    assert flow.LOSSES == tuple(flow._LOSS) == vocabulary("flow_loss")
    with pytest.raises(TypeError, match="alpha is not a choice parameter"):
        vocabulary("alpha")


# -- every estimator refuses an unknown name of each of its choice parameters, at fit --------
#: A parameter checked against a table entry of another name: the length scales' kernels are
#: the kernels with a width.
CHECKED_AS = {("LeaveOneOutLengthScales", "kernel"): "width_kernel"}


def _estimators() -> list[type]:
    from ecrm.datasets.preprocessing import HMCPreprocessor
    from ecrm.weights.kernel.length_scales import LeaveOneOutLengthScales

    public = [getattr(ecrm, name) for name in ecrm.__all__]
    return [c for c in public if inspect.isclass(c) and issubclass(c, BaseEstimator)
            ] + [LeaveOneOutLengthScales, HMCPreprocessor]


def _make(cls, **params):
    takes = inspect.signature(cls).parameters
    nested = {k: params.pop(k) for k in list(params) if "__" in k}
    search = OutOfBagSearch if cls is ecrm.ForestECRMCV else LeaveOneOutSearch
    for owner, make in (("search", search), ("solver", ecrm.NystromSolver)):
        given = {k.partition("__")[2]: v for k, v in nested.items() if k.startswith(owner)}
        if given:  # a setting of the estimator's search or solver object
            params[owner] = make(**given)
    return (cls(HammingLoss(), TREE, **params) if "output_space" in takes else cls(**params))


CASES = [(cls, name) for cls in _estimators() for name in sorted(_make(cls).get_params(False))
         if CHECKED_AS.get((cls.__name__, name), name) in CHOICES]
#: The choice settings of ECRMCV's and ForestECRMCV's search objects, given through them.
CASES += [(cls, f"search__{name}") for cls, kind in ((ecrm.ECRMCV, LeaveOneOutSearch),
                                                     (ecrm.ForestECRMCV, OutOfBagSearch))
          for name in sorted(kind().get_params()) if name in CHOICES]
#: The choice settings of the Nystrom solver object, given through it.
CASES += [(cls, f"solver__{name}") for cls in (ecrm.ECRM, ecrm.ECRMCV)
          for name in sorted(ecrm.NystromSolver().get_params()) if name in CHOICES]


def test_the_generated_cases_cover_every_choice_parameter():
    covered = {CHECKED_AS.get((cls.__name__, name), name.rpartition("__")[2])
               for cls, name in CASES}
    # the data readers' format and the simulated flows' loss are no estimator's
    assert covered == set(CHOICES) - {"format", "flow_loss"}
    assert {cls.__name__ for cls, _ in CASES} >= {"ECRM", "ECRMCV", "ForestECRM",
                                                 "StructuredSVM", "LeaveOneOutLengthScales",
                                                 "HMCPreprocessor"}


@pytest.mark.parametrize(("cls", "name"), CASES, ids=[f"{c.__name__}-{n}" for c, n in CASES])
def test_fit_refuses_an_unknown_name_before_any_work(cls, name):
    rng = np.random.default_rng(0)
    X = rng.normal(size=(12, 3))
    y = (TREE.close(rng.random((12, TREE.n_labels)) < 0.5) if "output_space"
         in inspect.signature(cls).parameters else rng.normal(size=12))
    estimator = _make(cls, **{name: BAD})
    with pytest.raises(ValueError, match=f"{name.rpartition('__')[2]} must be .*; got {BAD!r}"):
        estimator.fit(X, y)
    # no fitted state (LeaveOneOutLengthScales records its input width first, as sklearn's
    # validate_data does)
    assert not [k for k in vars(estimator) if k.endswith("_") and not k.startswith("_")
                and k != "n_features_in_"]


# -- the command line offers the library's vocabularies --------------------------------------
#: Options whose choices are a parameter's offered names with a documented difference:
#: ``--calibration none`` is ``calibration=None``; ``reproduce hmc --solver`` leaves out the
#: primal solver, which its linear-kernel fits use by themselves.
DIFFERENCES = {("fit", "calibration"): ("none",), ("hmc", "solver"): ("-primal",)}
#: Options of the command line's own vocabularies that share names with a table's:
#: ``predict --output-format`` writes CSV/TSV (as the readers read them) or JSON lines.
OWN = {"output_format"}


def _choice_options():
    """(sub-command, option dest, choices) of every option of every ``ecrm`` sub-command
    that has fixed choices."""
    from ecrm.cli import build_parser

    def walk(parser, command):
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                for sub, subparser in action.choices.items():
                    yield from walk(subparser, sub)
            elif action.choices is not None and action.dest != "help":
                yield command, action.dest, tuple(action.choices)

    return list(walk(build_parser(), "ecrm"))


def test_each_option_of_a_library_parameter_offers_the_table_s_names():
    seen = set()
    for command, dest, choices in _choice_options():
        if dest not in CHOICES:
            continue
        offered = CONSTRAINTS[dest].offered
        change = DIFFERENCES.get((command, dest), ())
        expected = [v for v in (*[c for c in change if not c.startswith("-")], *offered)
                    if f"-{v}" not in change]
        assert list(choices) == expected, (command, dest)
        seen.add((command, dest))
    assert {("fit", "kernel"), ("fit", "solver"), ("fit", "center_selection"),
            ("fit", "scoring"), ("fit", "calibration"), ("hmc", "solver"),
            ("fit", "format")} <= seen


def test_no_other_option_copies_a_library_vocabulary():
    """An option of the command line's own (``--task``, ``--loss``, ``--family``, ...) shares
    no name with the library's vocabularies but the generic ``auto`` and ``none``."""
    for command, dest, choices in _choice_options():
        if dest in CHOICES or dest in OWN:
            continue
        for parameter in CHOICES:
            shared = set(choices) & set(vocabulary(parameter)) - {"auto", "none"}
            assert not shared, (command, dest, parameter, shared)


def test_the_fit_command_s_kernel_list_is_the_table_s():
    from ecrm.commands import fit

    assert fit.KERNELS == CONSTRAINTS["kernel"].offered
    assert fit.CENTER_SELECTIONS == vocabulary("center_selection")
    parse = fit.names_option("--kernels", fit.KERNELS, lower=True)
    assert parse(",".join(fit.KERNELS)) == list(fit.KERNELS)
    with pytest.raises(argparse.ArgumentTypeError):
        parse("precomputed")


def test_the_fit_command_s_tasks_and_losses_are_the_task_table_s():
    """``--task`` offers the library's tasks whose labels the command line reads, ``--loss``
    their losses: read from :data:`ecrm.tasks.TASKS`, never copied."""
    from ecrm.tasks import TASKS

    options = {dest: choices for command, dest, choices in _choice_options()
               if command == "fit"}
    readable = [t for t in TASKS.values() if t.labels is not None]
    assert list(options["task"]) == [t.name for t in readable]
    assert list(options["loss"]) == [name for t in readable for name in t.loss_names]
    assert {"multilabel", "ranking", "multiclass"} <= set(options["task"])
