"""The ``ecrm`` command: registers the sub-commands that the experiment modules define.

Each module listed below defines ``add_parser(subparsers)``, which adds its sub-command,
validates the options at parse time and sets ``func``, the function that runs it.
"""

from __future__ import annotations

import argparse
import importlib
import os
import signal
import sys
import threading
import warnings

__all__ = ["COMMANDS", "EXPERIMENTS", "build_parser", "main"]

#: Modules of the top-level sub-commands (``ecrm demo``).
COMMANDS: list[str] = ["ecrm.commands.fit", "ecrm.commands.predict", "ecrm.commands.evaluate",
                       "ecrm.commands.info", "ecrm.experiments.demo"]
#: Modules of the ``ecrm reproduce`` sub-commands.
EXPERIMENTS: list[str] = ["ecrm.experiments.hmc", "ecrm.experiments.flow",
                          "ecrm.experiments.ranking"]


def build_parser() -> argparse.ArgumentParser:
    """The ``ecrm`` argument parser with every sub-command registered.

    Returns
    -------
    parser : argparse.ArgumentParser
    """
    from ecrm import __version__

    parser = argparse.ArgumentParser(
        prog="ecrm", description="Structured prediction by estimated conditional risk "
        "minimisation (Goh & Jaillet, ICML 2016).")
    parser.add_argument("--version", action="version", version=f"ecrm {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)
    for module in COMMANDS:
        importlib.import_module(module).add_parser(sub)
    reproduce = sub.add_parser("reproduce", help="reproduce one of the paper's experiments")
    experiments = reproduce.add_subparsers(dest="experiment", required=True)
    for module in EXPERIMENTS:
        importlib.import_module(module).add_parser(experiments)
    return parser


class Terminated(BaseException):
    """Raised in the main thread on SIGTERM, so that ``finally`` blocks and atomic writes
    clean up (no partial output, no temporary file) before the command exits."""


def _terminate(signum, frame) -> None:
    raise Terminated


def _show_warning(message, category, filename, lineno, file=None, line=None) -> None:
    """Warnings as one line ``ecrm: warning: ...`` on standard error (no source line)."""
    print(f"ecrm: warning: {message}", file=sys.stderr if file is None else file)


def main(argv: list[str] | None = None) -> int:
    """Run the ``ecrm`` command.

    Parameters
    ----------
    argv : list of str, optional
        The arguments after ``ecrm`` (default: ``sys.argv[1:]``).

    Returns
    -------
    status : int
        0 on success, 2 when the data or the options are unusable (the reason is on
        standard error), 130 when interrupted (Ctrl-C), 143 when terminated (SIGTERM), 141
        when standard output is closed early (``ecrm ... | head``; nothing is printed).
        Invalid options exit with status 2 through argparse. An interrupted command leaves
        no partial output and no temporary file.
    """
    in_main_thread = threading.current_thread() is threading.main_thread()
    previous = signal.signal(signal.SIGTERM, _terminate) if in_main_thread else None
    try:
        with warnings.catch_warnings():
            warnings.showwarning = _show_warning
            args = build_parser().parse_args(argv)
            status = args.func(args)
            sys.stdout.flush()
            return status
    except KeyboardInterrupt:
        print("ecrm: interrupted", file=sys.stderr)
        return 130
    except Terminated:
        print("ecrm: terminated", file=sys.stderr)
        return 143
    except BrokenPipeError:
        # the reader went away (``| head``): end quietly, and keep Python's final flush of
        # standard output from reporting the same error again
        with_devnull = os.open(os.devnull, os.O_WRONLY)
        try:
            os.dup2(with_devnull, sys.stdout.fileno())
        except (OSError, ValueError):  # pragma: no cover - stdout without a descriptor
            pass
        finally:
            os.close(with_devnull)
        return 141
    finally:
        if in_main_thread:
            signal.signal(signal.SIGTERM, previous)
