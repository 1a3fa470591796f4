"""The ``aoti-shim`` command line: one parser, subcommands registered by their modules.

Each subcommand module exposes ``register(subparsers)``, which adds a parser whose
``run`` default takes the parsed namespace and returns an exit status. Modules are
kept light at import time: heavy imports (LIEF, torch) happen inside ``run``.
"""

from __future__ import annotations

import argparse
import atexit
import errno
import gc
import importlib
import os
import sys
import threading
from collections.abc import Sequence
from typing import Any, NoReturn

from aoti_shim import __version__
from aoti_shim.errors import EXIT_TOOL_ERROR, EXIT_USAGE, AotiShimError
from aoti_shim.signals import interrupted, sigterm_as_interrupt

# Each subcommand and the module that registers it, in --help order. A command line that
# names one is parsed by a parser holding only that one: the others' modules (scan's
# environment reader, the smoke's pipeline) cost a check ~60 ms of imports it never uses.
COMMANDS: dict[str, str] = {
    "check": "aoti_shim.checks.check.command",
    "scan": "aoti_shim.checks.scan.command",
    "snapshot": "aoti_shim.checks.snapshot.command",
    "rename-header": "aoti_shim.rename_header",
    "smoke": "aoti_shim.smoke.command",
    "rewrite-imports": "aoti_shim.smoke.rewrite",
    "wheelhouse": "aoti_shim.own_wheel",
}


class _Parser(argparse.ArgumentParser):
    """argparse that reports usage errors as one line and the usage exit bit.

    No abbreviations: ``--pre`` must not pass as ``--prefix`` (nor a later option's
    prefix change the meaning of a command line that worked).
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs["allow_abbrev"] = False
        super().__init__(*args, **kwargs)

    def error(self, message: str) -> None:  # type: ignore[override]  # raises instead of exiting (NoReturn)
        # main() prints "aoti-shim: error: " in front: name only the subcommand, if any,
        # so the program's name is printed once.
        where = self.prog.split(" ", 1)[1] if " " in self.prog else ""
        raise AotiShimError(f"{where}: {message}" if where else message, exit_code=EXIT_USAGE)


# A command line of only these global flags needs no subcommand's module (--version read
# all seven, ~220 modules, to print one line).
_GLOBAL_FLAGS = frozenset({"--version", "--cmake-dir", "--torch-include-dir"})
# build_parser's ``command`` for such a line: a parser with no subcommand registered.
NO_COMMAND = ""


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The whole parser, or with ``command`` one whose only subcommand is that one (with
    NO_COMMAND, none)."""
    parser = _Parser(prog="aoti-shim", description="Private-prefix AOTInductor shims: check, build, smoke.")
    parser.add_argument("--version", action="version", version=f"aoti-shim {__version__}")
    parser.add_argument(
        "--cmake-dir",
        action="store_true",
        help="print the folder holding AotiShimConfig.cmake (for -DAotiShim_DIR=...) and exit",
    )
    parser.add_argument(
        "--torch-include-dir",
        action="store_true",
        help="print torch's include folder ($AOTI_SHIM_TORCH's, else the installed torch's; what "
        "aoti_shim_add_model compiles against) and exit; exit 1 when there is none",
    )
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    chosen = [] if command == NO_COMMAND else [COMMANDS[command]] if command else COMMANDS.values()
    for module in chosen:
        importlib.import_module(module).register(subparsers)
    return parser


def _named_command(argv: Sequence[str]) -> str | None:
    """The subcommand ``argv`` names, if it names a known one: its first word that is no
    option (the global options take no value). Anything else (no command, a misspelt one,
    ``--help`` or ``--`` before the command) gets the whole parser, whose help and errors
    list every command. A line of global flags only names NO_COMMAND."""
    if argv and all(arg in _GLOBAL_FLAGS for arg in argv):
        return NO_COMMAND
    for arg in argv:
        if arg in ("-h", "--help", "--"):
            return None
        if not arg.startswith("-"):
            return arg if arg in COMMANDS else None
    return None


def _print_path(path: os.PathLike[str]) -> None:
    """``path`` and a newline, as the file system's bytes: a folder whose name is not UTF-8
    must print as itself (CMake reads it), whatever stdout's encoding and error handler."""
    if sys.stdout is None:  # started with standard output closed: print() would drop it silently
        raise AotiShimError("standard output is closed: nothing to print the folder to")
    sys.stdout.flush()
    sys.stdout.buffer.write(os.fsencode(path) + b"\n")
    sys.stdout.buffer.flush()


# Commands whose result goes to standard output unless --output names a file: started with
# it closed (sys.stdout is None), the check's writer was a traceback and wheelhouse's path lost.
_PRINTS = {
    "check": "the report (give --output FILE)",
    "scan": "the report (give --output FILE)",
    "wheelhouse": "the wheel's path",
}


# Write errors of a redirected standard output, as opposed to a bug's OSError.
_OUTPUT_ERRNOS = frozenset({errno.EPIPE, errno.ENOSPC, errno.EDQUOT, errno.EFBIG, errno.EIO})


def _warn_of_prefix(args: argparse.Namespace) -> None:
    """A ``--prefix`` without its trailing ``_`` is legal but almost always a slip: one
    warning line on standard error, the exit status unchanged (it is no finding)."""
    given = getattr(args, "prefix", None)
    if not isinstance(given, str):
        return
    # Imported here: most command lines give no prefix and need not load the prefix rules.
    from aoti_shim.checks.abi.prefix import separator_warning, validate

    try:
        validate(given)
    except AotiShimError:
        return  # the command refuses it in one line; no warning before the error
    warning = separator_warning(given)
    if warning is not None:
        from aoti_shim.atomic import note  # lazy, as the escaping
        from aoti_shim.checks.formats.escape import printable  # lazy, as in _main's error path

        note(f"aoti-shim: warning: {printable(warning)}")  # its reader gone, the verdict still counts


# Commands whose process ends without the interpreter's teardown (freeing every module and
# object: 10 ms of a 120 ms clean check, as long as a whole nm -D of torch's lib/ takes
# beside it). Their reports are written and closed before main returns; they start no thread.
_FAST_EXIT = frozenset({"check", "scan"})


def console() -> NoReturn:
    """The console script and ``python -m aoti_shim``: :func:`main`, then the exit."""
    argv = sys.argv[1:]
    fast = _named_command(argv) in _FAST_EXIT
    if fast:
        # Short processes of bounded memory: the cyclic collector's passes over the objects
        # that importing the checker makes (6% of a clean check's instructions) buy nothing.
        gc.disable()
    code = main(argv)
    if fast:
        _exit_without_teardown(code)
    sys.exit(code)


def _exit_without_teardown(code: int) -> None:
    """End the process as the interpreter would, less its teardown: flush the standard
    streams, run the atexit functions (weakref finalizers: temp folders), then ``os._exit``,
    as mypy's fast exit does. Returns, for the interpreter's own exit, while another thread
    runs or a stream cannot be flushed (its error is the interpreter's to report)."""
    if threading.active_count() > 1:
        return
    try:
        _flush_standard_streams()
    except (OSError, ValueError):
        return
    atexit._run_exitfuncs()
    try:
        _flush_standard_streams()  # what an atexit function printed
    except (OSError, ValueError):
        pass  # nothing is left to report it to
    os._exit(code)


def _flush_standard_streams() -> None:
    for stream in (sys.stdout, sys.stderr):
        if stream is not None:
            stream.flush()


def main(argv: Sequence[str] | None = None) -> int:
    # SIGTERM unwinds as Ctrl-C does: temp files and folders go, children are killed.
    with sigterm_as_interrupt():
        return _main(argv)


def _main(argv: Sequence[str] | None) -> int:
    try:
        argv = sys.argv[1:] if argv is None else list(argv)
        parser = build_parser(_named_command(argv))
        args = parser.parse_args(argv)
        asked = [
            flag
            for flag, on in (("--cmake-dir", args.cmake_dir), ("--torch-include-dir", args.torch_include_dir))
            if on
        ]
        if asked and (len(asked) > 1 or getattr(args, "command", None)):
            # Each prints one folder and exits: a command after it would be skipped with exit 0.
            also = asked[1] if len(asked) > 1 else f"the command '{args.command}'"
            raise AotiShimError(f"{asked[0]} takes no command or other flag (got {also})", exit_code=EXIT_USAGE)
        if args.cmake_dir:
            from aoti_shim.paths import cmake_dir  # lazy: only this flag needs it

            _print_path(cmake_dir())
            return 0
        if args.torch_include_dir:
            from aoti_shim.torch_location import torch_include_dir  # lazy: only this flag needs it

            _print_path(torch_include_dir())
            return 0
        if not getattr(args, "command", None):
            parser.print_help()
            return EXIT_USAGE
        _warn_of_prefix(args)
        what = _PRINTS.get(args.command)
        if sys.stdout is None and what and not getattr(args, "output", None):
            raise AotiShimError(f"standard output is closed: nothing to write {what} to")
        return int(args.run(args))
    except AotiShimError as e:
        # Lazy: the escaping lives with the checker's formats; only an error needs it.
        from aoti_shim.atomic import note
        from aoti_shim.checks.formats.escape import printable

        # One line whatever a hostile file or symbol name holds (newlines, escape sequences);
        # its reader gone (2>&1 | head -1), the status is still the error's.
        note(f"aoti-shim: error: {printable(str(e))}")
        return e.exit_code
    except OSError as e:
        # Only a write to standard output gets here (the commands turn their own file errors
        # into AotiShimError): a pipe whose reader left, a full disk behind a redirection.
        if not isinstance(e, BrokenPipeError) and (e.filename is not None or e.errno not in _OUTPUT_ERRNOS):
            raise
        # A closed pipe's verdict is known only to check and scan (their StandardOutput):
        # here none is, so this is the output error of the README's table.
        from aoti_shim.atomic import note, silence_stdout  # lazy: only this error needs it

        silence_stdout()  # the interpreter's last flush must not fail again, with a traceback
        note(f"aoti-shim: error: cannot write to standard output: {e.strerror or e}")
        return EXIT_TOOL_ERROR
    except KeyboardInterrupt as e:
        return interrupted("aoti-shim", e)
