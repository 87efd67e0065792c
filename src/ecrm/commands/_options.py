"""Option helpers of the ``ecrm`` commands: argparse ``type=`` functions and the progress bar.

A bad value stops the command at parse time, before any work, with a message naming the
option and the accepted values. Only the standard library is imported here (NumPy by a
number check, tqdm by :func:`progress_bar`, when used), so that building the parser -- and
``ecrm --version`` / ``ecrm --help`` -- stays fast. The ``ecrm reproduce`` sub-commands
(:mod:`ecrm.experiments`) import them from here too.
"""

from __future__ import annotations

import argparse
import contextlib
import os
from collections.abc import Callable, Sequence
from typing import Any

__all__ = ["add_data_options", "choices", "directory_option", "existing_file_option", "in_flags",
           "names_option", "number_option", "output_file_option", "parameter_option",
           "progress_bar"]


def choices(parameter: str) -> tuple[str, ...]:
    """The command-line choices of a choice parameter: the names its declared constraint
    (:data:`ecrm.estimators._parameters.CONSTRAINTS`) offers, so an option offers what the library
    accepts, from one declaration. Call it when the parser is built: a vocabulary read from
    a registry (the solvers') then includes what was registered before.

    >>> choices("solver")
    ('auto', 'dual', 'primal', 'nystrom')
    """
    from ecrm.estimators._parameters import CONSTRAINTS, Choice

    constraint = CONSTRAINTS[parameter]  # a KeyError here is a typo in a parser
    if not isinstance(constraint, Choice):
        raise TypeError(f"{parameter} is not a choice parameter")
    return constraint.offered


#: The ``--format`` choices (:data:`ecrm.datasets.formats.FORMATS`).
FORMATS = choices("format")


def number_option(check: Callable | str, name: str, **limits) -> Callable[[str], object]:
    """An argparse ``type=``: ``parse(text)`` returns the number checked by ``check`` with
    ``**limits`` (``low``, ``high``, ...), or raises :class:`argparse.ArgumentTypeError`
    naming the option ``name`` (e.g. ``"--n-train"``).

    ``check`` is :func:`ecrm.estimators._validation.check_int` (the text is read as an int)
    or :func:`ecrm.estimators._validation.check_real` (read as a float); given as ``"int"``
    or ``"real"``, the check (and NumPy) is imported only when an option is parsed.

    Examples
    --------
    >>> parse = number_option("int", "--labels", low=3)
    >>> parse("40")
    40
    >>> parse("0")
    Traceback (most recent call last):
    ...
    argparse.ArgumentTypeError: --labels must be an integer >= 3; got 0
    """
    if isinstance(check, str) and check not in ("int", "real"):
        raise ValueError(f"check must be a callable, 'int' or 'real'; got {check!r}")

    def parse(text: str):
        from ecrm.estimators import _validation

        checker = (getattr(_validation, f"check_{check}") if isinstance(check, str)
                   else check)
        convert = int if checker is _validation.check_int else float
        value: object = text  # not a number: the check names the option and the range
        with contextlib.suppress(ValueError):
            value = convert(text)
        try:
            return checker(value, name, **limits)
        except ValueError as exc:
            raise argparse.ArgumentTypeError(str(exc)) from None

    return parse


def parameter_option(parameter: str, name: str) -> Callable[[str], object]:
    """An argparse ``type=`` for an estimator parameter: its declared constraint
    (:data:`ecrm.estimators._parameters.CONSTRAINTS`), so the option accepts what the estimator
    does.

    >>> parameter_option("gamma", "--gamma")("0")
    0.0
    >>> parameter_option("alpha", "--alpha")("0")
    Traceback (most recent call last):
    ...
    argparse.ArgumentTypeError: --alpha must be a real number in (0, inf); got 0.0
    """
    from ecrm.estimators._parameters import CONSTRAINTS, Number

    constraint = CONSTRAINTS[parameter]  # a KeyError here is a typo in a parser
    if not isinstance(constraint, Number):
        raise TypeError(f"{parameter} is not a numeric parameter: use choices()")
    return number_option(constraint.kind, name, **constraint.limits)


def names_option(name: str, choices: Sequence[str] | None = None, *,
                 lower: bool = False) -> Callable[[str], list[str]]:
    """An argparse ``type=`` for a comma-separated list of distinct names: ``parse(text)``
    returns the names, stripped (in lower case if ``lower``), or raises
    :class:`argparse.ArgumentTypeError` naming the option ``name`` (e.g. ``"--methods"``)
    for an empty or repeated name, or one outside ``choices`` (default: any).

    Examples
    --------
    >>> names_option("--methods", ["ecrm", "br-svm"], lower=True)("ECRM, br-svm")
    ['ecrm', 'br-svm']
    """
    def parse(text: str) -> list[str]:
        names = [part.strip().lower() if lower else part.strip() for part in text.split(",")]
        expected = (f"expected a comma-separated list of {', '.join(choices)}"
                    if choices is not None else "expected a comma-separated list of names")
        if not all(names):
            raise argparse.ArgumentTypeError(f"{name} has an empty name in {text!r}; {expected}")
        repeated = sorted({part for part in names if names.count(part) > 1})
        if repeated:
            raise argparse.ArgumentTypeError(f"{name} repeats {', '.join(repeated)}; {expected}")
        unknown = [part for part in names if choices is not None and part not in choices]
        if unknown:
            raise argparse.ArgumentTypeError(
                f"{name} has unknown names {', '.join(unknown)}; {expected}")
        return names

    return parse


def directory_option(name: str) -> Callable[[str], str]:
    """An argparse ``type=`` for an existing directory (returned as given); the error
    message names the option ``name``, e.g. ``"--data-dir"``."""
    def parse(text: str) -> str:
        if not os.path.isdir(text):
            raise argparse.ArgumentTypeError(
                f"{name} must be an existing directory; {text!r} is not one")
        return text

    return parse


def output_file_option(name: str) -> Callable[[str], str]:
    """An argparse ``type=`` for a file to write at the end of a run (the error message
    names the option ``name``, e.g. ``"--json"``): the file's directory must exist and the
    path must not be a directory, so that a run of hours does not fail at its last step."""
    def parse(text: str) -> str:
        folder = os.path.dirname(text) or "."
        if not text or os.path.isdir(text) or not os.path.isdir(folder):
            raise argparse.ArgumentTypeError(
                f"{name} must be a file path in an existing directory; got {text!r}")
        return text

    return parse


def existing_file_option(name: str) -> Callable[[str], str]:
    """An argparse ``type=`` for a file that must exist and be readable."""
    def parse(text: str) -> str:
        if not os.path.isfile(text) or not os.access(text, os.R_OK):
            raise argparse.ArgumentTypeError(f"{name} must be a readable file; {text!r} is not "
                                             "one")
        return text

    return parse


def delimiter_option(text: str) -> str:
    """The ``--delimiter`` type: one character; ``\\t`` or ``tab`` is a tab (a shell passes
    ``'\\t'`` as two characters).

    >>> delimiter_option("tab"), delimiter_option(";")
    ('\\t', ';')
    """
    value = "\t" if text in ("\\t", "tab", "TAB") else text
    if len(value) != 1 or value in ('"', "\n", "\r"):
        raise argparse.ArgumentTypeError(f"--delimiter must be one character (e.g. ';', "
                                         f"'\\t' for a tab), not a quote or a line break; "
                                         f"got {text!r}")
    return value


#: The data readers' and the estimators' parameter names in their messages -> the commands'
#: flags (one table: every failure goes through :func:`in_flags`).
_FLAGS = ((r"\bsep=", "--delimiter "), (r"\bid_column=", "--id-column "),
          (r"\bid_column\b", "--id-column"), (r"\blabel_column\b", "--label-column"),
          (r"\blevel_columns\b", "--level-columns"),
          (r"\(or 'primal' for a linear kernel\)", "(or --solver primal with --kernel linear)"),
          (r"solver='(\w+)'", r"--solver \1"), (r"\bn_components=", "--n-components "),
          (r"\bmemory_budget=", "--memory-budget "), (r"\bmemory_budget\b", "--memory-budget"),
          (r"\bcenter_selection=", "--center-selection "), (r"kernel='(\w+)'", r"--kernel \1"),
          (r"\bloo_samples=", "--loo-samples "))


def in_flags(message: str) -> str:
    """A data reader's or an estimator's message with its parameters written as the
    commands' flags: what a user of the command line reads names what they can type.

    >>> in_flags("the fields look separated by ';' (give sep=';')")
    "the fields look separated by ';' (give --delimiter ';')"
    """
    import re

    for pattern, flag in _FLAGS:
        message = re.sub(pattern, flag, message)
    return message


def add_data_options(parser: argparse.ArgumentParser, *, remembered: bool = False) -> None:
    """Options describing a data file: format, field separator, ID, label column and label
    separators. ``remembered``: a command reading a model file, whose ``ecrm fit`` options
    are the defaults (unset options are ``None``, see
    :func:`ecrm.commands._training.remember_reading_options`)."""
    fitted = "default: as the model was fitted, else " if remembered else "default: "
    group = parser.add_argument_group("data file")
    group.add_argument("--format", choices=FORMATS, default="auto",
                       help="data format (default: from the file name)")
    group.add_argument("--delimiter", type=delimiter_option, default=None, metavar="CHAR",
                       help="CSV/TSV: the field separator (e.g. ';', '\\t' for a tab; "
                       f"{fitted}a tab for .tsv, else a comma)")
    group.add_argument("--id-column", default=None, metavar="NAME",
                       help="CSV/TSV: a column identifying the rows, neither a feature nor a "
                       "label; predict writes it as the first column (instead of row); "
                       "never guessed from a name, and not stored in the model")
    group.add_argument("--label-column", default=None if remembered else "labels",
                       metavar="NAME", help=f"CSV/TSV column holding the labels ({fitted}labels)")
    group.add_argument("--label-sep", default=None if remembered else ";", metavar="CHAR",
                       help=f"separates the labels in the label column ({fitted};)")
    group.add_argument("--path-sep", default=None, metavar="CHAR",
                       help="labels are paths a/b/c implying a tree (e.g. --path-sep /"
                       + ("; default: as the model was fitted)" if remembered else ")"))
    group.add_argument("--level-columns", default=None, metavar="A,B,...",
                       type=lambda text: [c.strip() for c in text.split(",") if c.strip()],
                       help="CSV/TSV: the labels are these columns, one level of the path "
                       "each (e.g. Cat1,Cat2,Cat3; an empty cell ends a shorter path); the "
                       "model remembers them for predict and evaluate")


def progress_bar(total: int, desc: str, *, enabled: bool = True, stream=None,
                 stages: bool = False) -> Any:
    """A tqdm bar of ``total`` steps on ``stream`` (stderr by default); silent if disabled,
    and on a stream that is not a terminal (a log or a pipe would keep every redrawn frame).

    Use as a context manager; ``bar.update()`` after each step and ``bar.set_postfix_str``
    for a note on the step just done. ``stages``: the steps are a command's few unequal
    stages (reading, fitting, saving), so the bar shows the stage and the time elapsed, not
    a rate or an estimate of the time left, which such steps would make wrong.
    """
    import sys

    from tqdm.auto import tqdm

    form = "{desc}: {n_fmt}/{total_fmt}{postfix} [{elapsed}]" if stages else None
    stream = sys.stderr if stream is None else stream
    terminal = stream is not None and getattr(stream, "isatty", lambda: False)()
    return tqdm(total=total, desc=desc, disable=not (enabled and terminal), bar_format=form,
                file=stream, dynamic_ncols=True)
