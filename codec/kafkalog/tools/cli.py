"""The ``kafkalog`` command line: the parser that gathers each command's module (``info``, ``cat``, ``export``, ``dump``, ``build``,
``explain``, ``groups``, ``verify``, ``conformance``, ``retention``, ``recover``, ``compact``) and ``main``.

Exit codes: 0 success; 1 the input holds bad data (corrupt batches, bad files); 2 usage error
(bad arguments, unreadable JSON given to ``build``); 3 a path could not be read or written, or the
command needs a package of an extra that is not installed. Messages go to stderr, data to stdout;
no tracebacks for bad input.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
from collections.abc import Callable, Sequence

from kafkalog import __version__
from kafkalog.errors import KafkaLogError
from kafkalog.tools.command import EXIT_BAD_DATA, EXIT_IO, EXIT_OK, EXIT_USAGE, UsageError

__all__ = ["main"]


#: Each command's module in :mod:`kafkalog.tools` (its ``register`` adds the command), in the order
#: ``--help`` lists them.
COMMANDS = {
    "info": "info",
    "cat": "cat",
    "export": "export",
    "dump": "dump",
    "build": "build",
    "explain": "explain",
    "groups": "groups",
    "verify": "verify",
    "conformance": "conformance",
    "write-case": "writer_cases",
    "retention": "maintenance",
    "recover": "maintenance",
    "compact": "compact",
}


#: The optional packages commands import, by top-level module: (what pip installs, the extra that brings it)
EXTRAS = {
    "pyarrow": ("pyarrow", "arrow"),
    "pyspark": ("pyspark", "spark"),
    "fsspec": ("fsspec", "s3"),
    "s3fs": ("s3fs", "s3"),
    "Crypto": ("pycryptodome", "tiered"),
}


def _missing_extra(e: Exception) -> str | None:
    """The one line that names the extra to install when ``e`` is an optional package not found."""
    if not isinstance(e, ModuleNotFoundError):
        return None
    found = EXTRAS.get((e.name or "").partition(".")[0])
    return None if found is None else f'needs {found[0]}: pip install "kafkalog[{found[1]}]"'


def _parser(argv: Sequence[str] | None = None) -> argparse.ArgumentParser:
    """The parser, with only the named command's module loaded when ``argv`` names one (each command
    imports only what it uses: a small command starts fast); every command's otherwise (``--help``,
    a mistyped command)."""
    p = argparse.ArgumentParser(prog="kafkalog", description="Read, verify and write Apache Kafka log files without a broker.")
    p.add_argument("--version", action="version", version=f"kafkalog {__version__}")
    sub = p.add_subparsers(dest="command", metavar="COMMAND")
    args = sys.argv[1:] if argv is None else list(argv)
    named = next((a for a in args if not a.startswith("-")), None)
    if named in COMMANDS:
        modules = [COMMANDS[named]]
    elif _version_first(args):
        modules = []  # argparse prints the version and exits before it looks at a command
    else:
        modules = list(dict.fromkeys(COMMANDS.values()))
    for name in modules:
        importlib.import_module(f"kafkalog.tools.{name}").register(sub)
    return p


def _version_first(args: Sequence[str]) -> bool:
    """Whether argparse meets ``--version`` (or an abbreviation of it) before a help flag and before
    a command word: it then prints the version and exits, so no command's module need load."""
    for a in args:
        if a == "-h" or (len(a) > 2 and "--help".startswith(a)):
            return False
        if len(a) > 2 and "--version".startswith(a):
            return True
        if not a.startswith("-"):
            return False
    return False


def _subparsers(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    """The subcommand parsers by name, so that a subcommand's mistakes print its own usage."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return dict(action.choices)
    return {}


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``kafkalog`` console script; returns the exit code.

    Whatever the command line gives, it never ends in a traceback: bad data exits 1, usage errors 2
    (with the subcommand's usage), unreadable or unwritable paths 3, as does a command that needs an
    extra not installed (one line naming it); a closed stdout (``| head``) ends the command quietly."""
    parser = _parser(argv)
    args, extra = parser.parse_known_args(argv)
    command = getattr(args, "command", None)
    sub = _subparsers(parser).get(command or "", parser)
    if extra:
        sub.error(f"unrecognized arguments: {' '.join(extra)}")  # exits 2 with that subcommand's usage
    if not getattr(args, "func", None):
        parser.print_help(sys.stderr)
        return EXIT_USAGE
    func: Callable[[argparse.Namespace], int] = args.func
    try:
        code = func(args)
        sys.stdout.flush()  # a closed pipe shows here, while it can still be handled
        return code
    except BrokenPipeError:
        # the reader of our stdout went away (`| head`, quitting `less`): stop quietly, as Unix tools do;
        # stdout goes to devnull so that the interpreter's last flush does not fail again (Python's signal docs)
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return EXIT_OK
    except UsageError as e:
        sub.print_usage(sys.stderr)
        print(f"kafkalog {command}: error: {e}", file=sys.stderr)
        return EXIT_USAGE
    except KafkaLogError as e:
        print(f"kafkalog {command}: {e}", file=sys.stderr)
        return EXIT_BAD_DATA
    except OSError as e:
        print(f"kafkalog {command}: {e.filename or ''}{': ' if e.filename else ''}{e.strerror or e}", file=sys.stderr)
        return EXIT_IO
    except KeyboardInterrupt:
        return 130
    except Exception as e:  # noqa: BLE001 - no input may end in a traceback; KAFKALOG_DEBUG=1 shows it
        needs = _missing_extra(e)
        if needs is not None:
            print(f"kafkalog {command}: {needs}", file=sys.stderr)
            return EXIT_IO
        if os.environ.get("KAFKALOG_DEBUG"):
            raise
        print(f"kafkalog {command}: internal error: {type(e).__name__}: {e} (KAFKALOG_DEBUG=1 shows the traceback; "
              "please report it)", file=sys.stderr)
        return EXIT_BAD_DATA


if __name__ == "__main__":
    sys.exit(main())
