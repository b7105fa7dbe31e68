"""The fuzz checks can fail: each one, fed what it must catch, reports it."""

from __future__ import annotations

import tempfile
from pathlib import Path

from dashboard.pages import PAGES
from tests.fuzz.damage import PARQUET, RUN_IDS, Garbage, Harm, WrongColumnType, fresh_copy
from tests.fuzz.harness import CliResult, Params, cli_findings, environment, visit_every_page


def test_page_checks_report_a_missing_run_and_an_unnamed_damage():
    with tempfile.TemporaryDirectory(prefix="rageval-fuzz-") as d:
        results = fresh_copy(Path(d))
        with environment(results, Path(d) / "xdg"):
            findings = visit_every_page(
                Params(), [Harm("20990101-000000-ghost", True)], [*RUN_IDS, "ghost"], ()
            )
    text = "\n".join(findings)
    assert "healthy run ghost not in the Runs table" in text
    for picker in ("diagnose_run", "tails_run", "retrieval_run", "compare_runs"):
        assert f"healthy run ghost not in picker {picker}" in text
    assert text.count("'20990101-000000-ghost' named in no warning") == len(PAGES)  # each


def test_page_checks_report_a_view_down_for_a_healthy_run():
    with tempfile.TemporaryDirectory(prefix="rageval-fuzz-") as d:
        results = fresh_copy(Path(d))
        # a column chunk the Question page reads, not declared as damage to the checks
        Garbage(1, PARQUET, 0.5, b"\xff" * 32, False).apply(results)
        with environment(results, Path(d) / "xdg"):
            findings = visit_every_page(Params.pointing_at(RUN_IDS[1], RUN_IDS[0]), [], [], ())
    assert any("view down though no damaged run is named" in f for f in findings), findings


def test_cli_checks_report_every_broken_promise():
    def findings(code: int, out: str, err: str) -> str:
        return "\n".join(cli_findings(CliResult(("check", "r1"), code, out, err), ["r1"]))

    assert findings(0, "ok\n", "") == ""
    assert findings(1, "FAILED: 1 breach(es)\n", "") == ""
    assert "undocumented exit code" in findings(3, "", "rageval check: error: r1 bad\n")
    assert "traceback" in findings(1, "", "Traceback (most recent call last):\n")
    assert "not from rageval" in findings(2, "", "rageval check: error: r1\n  - more\n")
    assert "2 error lines" in findings(1, "", "rageval check: error: r1\n" * 2)
    assert "names none of" in findings(1, "", "rageval check: error: something\n")
    assert "without saying why" in findings(1, "", "")
    assert "chars" in findings(1, "", f"rageval check: error: r1 {'x' * 3000}\n")


def test_a_column_rewritten_in_its_own_type_is_not_a_damage_to_name(tmp_path):
    """Found by the long profile: `refused` rewritten as bool (its own type) was declared
    visible, so the page checks wanted a warning for a run no reader can tell apart."""
    results = fresh_copy(tmp_path)
    [own] = WrongColumnType(1, "refused", "bool").apply(results)
    [other] = WrongColumnType(1, "refused", "string").apply(results)
    assert (own.run_id, own.visible) == (RUN_IDS[1], False)
    assert (other.run_id, other.visible) == (RUN_IDS[1], True)
