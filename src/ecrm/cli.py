"""The ``ecrm`` command: registers the sub-commands that the command and experiment modules define.

Each module listed below defines ``add_parser(subparsers)``, which adds its sub-command,
validates the options at parse time and sets ``func``, the function that runs it. A module
is imported only when its sub-command is chosen: ``ecrm --version`` and ``ecrm --help``
import no module of the table (nor NumPy, SciPy or scikit-learn), and list the sub-commands
with the one-line help of :data:`COMMANDS` / :data:`EXPERIMENTS`, which is the help each
module registers.
"""

from __future__ import annotations

import argparse
import contextlib
import errno
import importlib
import os
import signal
import sys
import threading
import warnings

from ecrm.commands import _threads

__all__ = ["COMMANDS", "EXPERIMENTS", "Terminated", "build_parser", "main"]

#: The top-level sub-commands: name -> (module, one-line help).
COMMANDS: dict[str, tuple[str, str]] = {
    "fit": ("ecrm.commands.fit", "fit ECRM on a data file and write a model file"),
    "predict": ("ecrm.commands.predict", "predict label names for a data file"),
    "evaluate": ("ecrm.commands.evaluate", "evaluate a model on a labelled data file"),
    "info": ("ecrm.commands.info", "describe a model file"),
    "demo": ("ecrm.experiments.demo", "fit ECRM and a per-label baseline on noisy digits as a "
             "two-level hierarchy and print test losses, label names and the oracle's speed"),
}
#: The ``ecrm reproduce`` sub-commands: name -> (module, one-line help).
EXPERIMENTS: dict[str, tuple[str, str]] = {
    "hmc": ("ecrm.experiments.hmc",
            "the paper's Table 1: ECRM and BR-SVM on the Clus HMC data sets"),
    "flow": ("ecrm.experiments.flow",
             "the network-flow experiment: Table 2 (and Figure 1b with --plot)"),
    "ranking": ("ecrm.experiments.ranking", "label ranking benchmark: ECRM (Kendall, footrule, "
                "squared rank) against kNN and kernel ridge, Kendall's tau"),
    "partial-ranking": ("ecrm.experiments.partial_ranking", "partial label ranking benchmark "
                        "(bucket orders): ECRM kernel, forest and mixed against kNN-Borda and "
                        "scikit-lr's peers, tau_x"),
    "missing-labels": ("ecrm.experiments.missing_labels", "label ranking from training "
                       "rankings with labels removed at random: ECRM kernel, forest and "
                       "mixed, Kendall's tau"),
}


def _chosen(argv: list[str]) -> str | None:
    """The first argument that is not an option (the parsers above it take no values)."""
    return next((a for a in argv if not a.startswith("-")), None)


def _add(sub, table: dict[str, tuple[str, str]], chosen: str | None, *,
         load_all: bool) -> None:
    for name, (module, help_text) in table.items():
        if load_all or name == chosen:
            importlib.import_module(module).add_parser(sub)
            if table is COMMANDS and name in _threads.COMMANDS:
                _threads.add_threads_option(sub.choices[name])
        else:  # listed in --help; never parsed (only the chosen sub-command is)
            sub.add_parser(name, help=help_text)


def build_parser(argv: list[str] | None = None) -> argparse.ArgumentParser:
    """The ``ecrm`` argument parser.

    Parameters
    ----------
    argv : list of str, optional
        The arguments to parse: only the sub-command they name is loaded fully (its module
        imported). Default: every sub-command is loaded.

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
    load_all = argv is None
    chosen = None if argv is None else _chosen(argv)
    _add(sub, COMMANDS, chosen, load_all=load_all)
    reproduce = sub.add_parser("reproduce", help="reproduce one of the paper's experiments")
    experiments = reproduce.add_subparsers(dest="experiment", required=True)
    rest = [] if argv is None or chosen != "reproduce" else argv[argv.index(chosen) + 1:]
    _add(experiments, EXPERIMENTS, _chosen(rest), load_all=load_all)
    return parser


class Terminated(BaseException):
    """Raised in the main thread on SIGTERM or SIGHUP, so that ``finally`` blocks and atomic
    writes clean up (no partial output, no temporary file) before the command exits.

    Attributes
    ----------
    signum : int
        The signal received.
    """

    def __init__(self, signum: int = signal.SIGTERM):
        super().__init__(signum)
        self.signum = signum


def _terminate(signum, frame) -> None:
    raise Terminated(signum)


def _on_termination() -> dict:
    """Turn SIGTERM and SIGHUP (a closed terminal or session) into :class:`Terminated`; the
    handlers replaced, to restore. A SIGHUP ignored when the command starts (``nohup``) stays
    ignored."""
    previous = {signal.SIGTERM: signal.signal(signal.SIGTERM, _terminate)}
    hangup = getattr(signal, "SIGHUP", None)  # not on Windows
    if hangup is not None and signal.getsignal(hangup) is not signal.SIG_IGN:
        previous[hangup] = signal.signal(hangup, _terminate)
    return previous


def _show_warning(message, category, filename, lineno, file=None, line=None) -> None:
    """Warnings as one line ``ecrm: warning: ...`` on standard error (no source line), the
    data readers' parameters named as the flags; one prefix (a message that names its
    command, ``ecrm fit: ...``, loses that name)."""
    import re

    from tqdm import tqdm  # clears a progress bar on the stream and draws it again below

    from ecrm.commands._options import in_flags

    text = re.sub(r"^ecrm [a-z]+: ", "", in_flags(str(message)))
    tqdm.write(f"ecrm: warning: {text}", file=sys.stderr if file is None else file)


#: The errors of a write that found no room (a full disk or quota, a file too large) or a
#: failing device.
_WRITE_ERRORS = frozenset({errno.ENOSPC, errno.EDQUOT, errno.EFBIG, errno.EIO})


def _drop_standard_output() -> None:
    """Point standard output at the null device, so that Python's final flush of what is
    still buffered does not report the same write error again."""
    with_devnull = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(with_devnull, sys.stdout.fileno())
    except (AttributeError, OSError, ValueError):  # pragma: no cover - no descriptor
        pass
    finally:
        os.close(with_devnull)


def _prints(args) -> bool:
    """Whether the command prints on standard output: all do, but ``fit`` and ``predict``
    whose ``-o`` is a stream (``-``, a FIFO, a device), which report on standard error."""
    output = getattr(args, "output", None) if args.command in ("fit", "predict") else None
    if output is None:
        return True
    from ecrm.commands._files import is_stream

    return not is_stream(output)


def main(argv: list[str] | None = None) -> int:
    """Run the ``ecrm`` command.

    Parameters
    ----------
    argv : list of str, optional
        The arguments after ``ecrm`` (default: ``sys.argv[1:]``).

    Returns
    -------
    status : int
        0 on success, 2 when the data or the options are unusable or an output cannot be
        written (standard output closed with ``>&-``, a full disk; the reason is on
        standard error), 130 when interrupted (Ctrl-C), 143 when terminated (SIGTERM), 129
        when hung up (SIGHUP: the terminal or the session closed), 141
        when standard output is closed early (``ecrm ... | head``; nothing is printed).
        Invalid options exit with status 2 through argparse. An interrupted command leaves
        no partial output and no temporary file.
    """
    in_main_thread = threading.current_thread() is threading.main_thread()
    previous = _on_termination() if in_main_thread else {}
    try:
        with warnings.catch_warnings():
            warnings.showwarning = _show_warning
            # a model fitted on a DataFrame is given arrays whose columns the commands have
            # matched and ordered by its names (ecrm.commands._ready_for): nothing to warn
            warnings.filterwarnings("ignore", "X does not have valid feature names",
                                    UserWarning)
            argv = sys.argv[1:] if argv is None else list(argv)
            args = build_parser(argv).parse_args(argv)
            if sys.stdout is None and _prints(args):  # started with it closed (>&-)
                name = " ".join(filter(None, [args.command, getattr(args, "experiment", None)]))
                print(f"ecrm: error: standard output is closed: nothing can be printed (ecrm "
                      f"{name} prints there; redirect it to a file or /dev/null instead)",
                      file=sys.stderr)
                return 2
            with _threads.limit_threads(getattr(args, "threads", None)):
                status = args.func(args)
            if sys.stdout is not None:  # None: started with standard output closed (>&-)
                sys.stdout.flush()
            return status
    except KeyboardInterrupt:
        print("ecrm: interrupted", file=sys.stderr)
        return 130
    except Terminated as exc:
        with contextlib.suppress(OSError, ValueError):  # a hung-up terminal refuses it
            print("ecrm: hung up" if exc.signum == getattr(signal, "SIGHUP", None)
                  else "ecrm: terminated", file=sys.stderr)
        return 128 + exc.signum
    except BrokenPipeError:
        # the reader went away (``| head``): end quietly
        _drop_standard_output()
        return 141
    except OSError as exc:
        if exc.errno not in _WRITE_ERRORS:
            raise
        # a write that the disk refused and the command did not report itself (standard
        # output, its final flush included, a picture, a report): one line, no traceback
        _drop_standard_output()
        where = f" ({exc.filename})" if exc.filename else ""
        print(f"ecrm: error: cannot write the output{where}: {exc.strerror or exc}",
              file=sys.stderr)
        return 2
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)
