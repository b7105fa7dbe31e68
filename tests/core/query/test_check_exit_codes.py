"""`rageval check` exit codes as docs/ci.md promises: 0 pass, 1 breach (or a run that
exists but cannot be read: the gate fails closed), 2 a mistake in the arguments or the
thresholds file — so CI can tell a typo from a regression."""

from __future__ import annotations

import pytest

from rageval_core.cli import main

from .conftest import row, write_run


@pytest.fixture
def runs(results):
    write_run(results, "base", [row("q1"), row("q2")], created_at="2025-01-01T00:00:00Z")
    write_run(
        results,
        "cand",
        [row("q1", recall_at_5=0.0), row("q2", recall_at_5=0.0)],
        created_at="2025-01-02T00:00:00Z",
    )
    return results


def _thresholds(tmp_path, text: str | bytes) -> str:
    p = tmp_path / "t.yaml"
    p.write_bytes(text.encode() if isinstance(text, str) else text)
    return str(p)


def check(capsys, runs, *args: str) -> tuple[int, str]:
    code = main(["check", *args, "--results", str(runs)])
    err = capsys.readouterr().err
    assert "Traceback" not in err
    return code, err


def test_pass_is_0_and_breach_is_1(runs, tmp_path, capsys):
    drop = _thresholds(tmp_path, "recall_at_5: {max_drop: 0.1}\n")
    assert check(capsys, runs, "base", "--thresholds", drop)[0] == 0
    assert check(capsys, runs, "cand", "--baseline", "base", "--thresholds", drop)[0] == 1


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (["nope"], "no such run"),
        (["../etc"], "invalid run id"),
        (["cand", "--baseline", "nope"], "no such run"),
        (["cand", "--baseline", "a/b"], "invalid run id"),
        (["cand", "--baseline", "cand"], "baseline is the run being checked"),
        (["cand", "--thresholds", "missing.yaml"], "no such file"),
    ],
)
def test_argument_mistakes_exit_2_with_one_line(runs, capsys, args, needle):
    code, err = check(capsys, runs, *args)
    assert code == 2, err
    assert needle in err and len(err.strip().splitlines()) == 1, err


@pytest.mark.parametrize(
    "text",
    [b"recall_at_5: {min: 0.5}\n# caf\xe9\n", "recall_at_5: [unclosed\n", "mrr_typo: {min: 1}\n"],
    ids=["not-utf8", "not-yaml", "unknown-metric"],
)
def test_bad_thresholds_files_exit_2(runs, tmp_path, capsys, text):
    code, err = check(capsys, runs, "cand", "--thresholds", _thresholds(tmp_path, text))
    assert code == 2, err
    assert "t.yaml" in err


DROPS = "recall_at_5: {min: 0.5, max_drop: 0.1}\nmrr: {max_drop: 0.1, max_rise: 0.5}\n"


def test_latest_with_no_earlier_run_is_noted_not_an_error(runs, capsys, tmp_path):
    t = _thresholds(tmp_path, DROPS)
    code = main(
        ["check", "base", "--baseline", "latest", "--thresholds", t, "--results", str(runs)]
    )
    out = capsys.readouterr().out
    assert code == 0, out
    assert "baseline: none (no earlier complete run of config base on dataset qa v1)" in out
    assert "no `latest` baseline: max_drop and max_rise limits not checked" in out


@pytest.mark.parametrize("baseline", [[], ["--baseline", "latest"], ["--baseline", "latest-any"]])
@pytest.mark.parametrize("limits", [DROPS, "recall_at_5: {min: 0.5}\n"])
def test_skipped_limits_are_noted_once_and_only_when_there_are_some(
    runs, capsys, tmp_path, baseline, limits
):
    """One note, not one per limit or one per cause (`--baseline latest` found none, and
    each limit then skipped); none when no limit needs a baseline."""
    t = _thresholds(tmp_path, limits)
    main(["check", "base", *baseline, "--thresholds", t, "--results", str(runs)])
    out = capsys.readouterr().out
    assert out.count("not checked") == ("max_drop" in limits), out


def test_a_run_that_exists_but_cannot_be_read_fails_closed_with_2(runs, capsys):
    (runs / "broken").mkdir()  # a run folder without a manifest or rows
    code, err = check(capsys, runs, "broken")
    assert code == 2 and "broken" in err  # unreadable input, not a breach


def test_report_with_an_unknown_baseline_exits_2(runs, tmp_path, capsys):
    out = tmp_path / "r.html"
    code = main(["report", "cand", "--baseline", "nope", "--out", str(out), "--results", str(runs)])
    err = capsys.readouterr().err
    assert code == 2 and "no such run" in err and not out.exists()


def test_check_gates_reference_free_failures_and_unscored_questions(results, tmp_path, capsys):
    """Every question can fail: a limit on the new failure types fails the build, and an
    unscored question is said, never passed as ok (issue 32 item 4)."""
    types = ["off_topic", "irrelevant_context", "unscored", "ok"]
    rows = [row(f"q{i}", answerable=None, failure_type=ft) for i, ft in enumerate(types)]
    write_run(results, "prod", rows)
    limits = "".join(f"failure_{ft}: {{max: 0}}\n" for ft in types[:3])
    code, _ = check(capsys, results, "prod", "--thresholds", _thresholds(tmp_path, limits))
    assert code == 1
    main(
        ["check", "prod", "--thresholds", _thresholds(tmp_path, limits), "--results", str(results)]
    )
    out = capsys.readouterr().out
    assert out.count("above max 0") == 3, out
    assert "1 of 4 questions unscored" in out, out
