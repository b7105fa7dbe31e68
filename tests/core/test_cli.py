"""The `rageval` entry point: exit codes and one-line errors, never a traceback."""

from __future__ import annotations

import argparse
import subprocess
import sys

import pytest

from rageval_core.cli import build_parser, main


def test_every_subcommand_has_help(capsys):
    parser = build_parser()
    names = sorted(parser._subparsers._group_actions[0].choices)  # noqa: SLF001
    assert {"validate", "run", "demo", "check", "compare", "dashboard", "report"} <= set(names)
    for name in names:
        with pytest.raises(SystemExit) as exc:
            main([name, "--help"])
        assert exc.value.code == 0
    assert "usage: rageval" in capsys.readouterr().out


def test_a_chosen_command_imports_only_its_modules_and_parses_alike():
    """`build_parser(name)` registers `name` from its own modules only (the naming rule of
    `command_modules`): every command's parser, nested ones included, is the full one's."""
    full = build_parser()._subparsers._group_actions[0].choices  # noqa: SLF001
    for name, parser in full.items():
        alone = build_parser(name)._subparsers._group_actions[0].choices  # noqa: SLF001
        assert list(alone) == [name]
        assert [p.format_help() for p in _all_parsers(alone[name])] == [
            p.format_help() for p in _all_parsers(parser)
        ]
    assert build_parser("no-such-command")._subparsers._group_actions[0].choices == {}  # noqa: SLF001


def _all_parsers(parser):
    """`parser` and every sub-command's parser below it, nested ones (`labels export`) too."""
    yield parser
    for action in parser._actions:  # noqa: SLF001
        if isinstance(action, argparse._SubParsersAction):  # noqa: SLF001
            for sub in action.choices.values():
                yield from _all_parsers(sub)


def test_no_help_text_shows_an_escaped_percent():
    """argparse formats `help=` texts but prints a `description=` as written, so `95%%` in a
    description reaches the user doubled."""
    shown = {p.prog: p.format_help() for p in _all_parsers(build_parser())}
    assert len(shown) > 15
    assert [prog for prog, text in shown.items() if "%%" in text] == []


def test_no_command_prints_help_and_exits_2(capsys):
    assert main([]) == 2
    assert "usage: rageval" in capsys.readouterr().err


def test_bad_flag_exits_2_with_one_message(capsys):
    with pytest.raises(SystemExit) as exc:
        main(["validate", "x.yaml", "--no-such-flag"])
    assert exc.value.code == 2
    assert "unrecognized arguments: --no-such-flag" in capsys.readouterr().err


def test_user_mistake_is_one_line_not_a_traceback(tmp_path):
    missing = tmp_path / "nope.yaml"
    proc = subprocess.run(
        [sys.executable, "-m", "rageval_core.cli", "validate", str(missing)],
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 2  # a user mistake (docs/ci.md: exit codes)
    assert "Traceback" not in proc.stderr
    assert str(missing) in proc.stderr


def test_invalid_run_id_is_a_clear_error(tmp_path, capsys):
    code = main(["check", "../etc", "--results", str(tmp_path)])
    assert code == 2  # a mistake in the arguments, not a breach (docs/ci.md)
    err = capsys.readouterr().err
    assert "invalid run id '../etc'" in err and "Traceback" not in err
