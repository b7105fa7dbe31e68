"""The `rageval` command: one entry point, subcommands discovered in `rageval_core.commands`.

Each module in `commands/` defines `register(subparsers)` and sets `func` on its parser; the
handler returns an exit code. A module registers the command its name spells (`hash_password`
is `hash-password`), or a part of one (`import_squad` adds a format to `import`), so a chosen
command imports only its own modules: `rageval dashboard` then starts Streamlit without
importing every command's dependencies first. `rageval --help` still imports them all.
User mistakes become one line on stderr (exit 1 for invalid data, 2 for bad flags), never a
traceback. So does an operating-system error on a file (a
results file that is a folder, a symlink loop, a full disk): exit 1, naming the file. Any
other exception is a bug in rageval and keeps its traceback, so tests see it.
"""

from __future__ import annotations

import argparse
import importlib
import os
import pkgutil
import sys
from collections.abc import Sequence

from rageval_core import __version__, commands
from rageval_core.errors import RagevalError, shown


def command_modules(command: str | None = None) -> list[str]:
    """The modules in `commands/` that register `command` (all of them for None)."""
    names = sorted(m.name for m in pkgutil.iter_modules(commands.__path__))
    if command is None:
        return names
    stem = command.replace("-", "_")
    return [n for n in names if n == stem or n.startswith(f"{stem}_")]


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The parser of every command, or of `command` only (its modules alone imported)."""
    parser = argparse.ArgumentParser(
        prog="rageval", description="Evaluate RAG pipelines and explore the results."
    )
    parser.add_argument("--version", action="version", version=f"rageval {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name in command_modules(command):
        importlib.import_module(f"{commands.__name__}.{name}").register(sub)
    return parser


def _chosen(argv: Sequence[str]) -> str | None:
    """The command `argv` names, if a module registers it; None for `--help`, `--version`,
    no command or an unknown one, which the full parser answers (listing every command)."""
    if not argv or argv[0].startswith("-") or not command_modules(argv[0]):
        return None
    return argv[0]


def main(argv: Sequence[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    parser = build_parser(_chosen(argv))
    args = parser.parse_args(argv)
    if not getattr(args, "func", None):
        parser.print_help(sys.stderr)
        return 2
    try:
        return int(args.func(args) or 0)
    except RagevalError as exc:
        print(f"rageval {args.command}: error: {exc.one_line()}", file=sys.stderr)
        return exc.exit_code
    except BrokenPipeError:
        # The reader of stdout went away (`rageval compare A B | head`): nothing to report.
        # Point stdout at devnull so the interpreter's final flush does not raise again.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 1
    except OSError as exc:  # a file named on the command line that cannot be read or written
        print(f"rageval {args.command}: error: {os_error(exc)}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print(f"rageval {args.command}: interrupted", file=sys.stderr)
        return 130


def os_error(exc: OSError) -> str:
    """`FILE: reason` of an OSError, on one bounded line. For a rename the file is the
    destination (the path the user named), not our temporary file."""
    reason = exc.strerror or str(exc) or type(exc).__name__
    path = exc.filename2 if exc.filename2 is not None else exc.filename
    return shown(f"{path}: {reason}" if path is not None else reason, 600, bare=True)


if __name__ == "__main__":
    sys.exit(main())
