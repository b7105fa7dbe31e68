"""`rageval hash-password`: make the `password_hash` secret for the hosted dashboard.

The password is read without echo (or from stdin when piped) and never printed; only the
salted PBKDF2 hash goes to stdout, ready for `.streamlit/secrets.toml` or
`RAGEVAL_PASSWORD_HASH`.
"""

from __future__ import annotations

import argparse
import getpass
import sys

from rageval_core.errors import ConfigError
from rageval_core.passwords import DEFAULT_ITERATIONS, hash_password


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "hash-password",
        help="hash a shared dashboard password for secrets.toml",
        description="Prompt for a password (or read one line from stdin) and print its "
        "PBKDF2-SHA256 hash for `[rageval] password_hash` in .streamlit/secrets.toml or "
        "the RAGEVAL_PASSWORD_HASH environment variable.",
    )
    parser.add_argument(
        "--iterations", type=int, default=DEFAULT_ITERATIONS, help="PBKDF2 iterations"
    )
    parser.set_defaults(func=run)


def _read_password() -> str:
    if not sys.stdin.isatty():
        return sys.stdin.readline().rstrip("\r\n")
    first = getpass.getpass("Password: ")
    if first != getpass.getpass("Repeat: "):
        raise ConfigError("the passwords differ")
    return first


def run(args: argparse.Namespace) -> int:
    print(hash_password(_read_password(), iterations=args.iterations))
    return 0
