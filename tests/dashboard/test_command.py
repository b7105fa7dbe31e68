"""`rageval dashboard`: sets RAGEVAL_RESULTS and execs Streamlit on the installed app."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from rageval_core.cli import main
from rageval_core.commands import dashboard as command
from rageval_core.runs.layout import CANDIDATES_ENV, RESULTS_ENV
from tests.dashboard.conftest import ENTRY


@pytest.fixture
def execs(monkeypatch) -> list[tuple[str, list[str], dict[str, str]]]:
    calls: list[tuple[str, list[str], dict[str, str]]] = []
    monkeypatch.setattr(os, "execve", lambda path, argv, env: calls.append((path, argv, env)))
    return calls


def test_execs_streamlit_on_the_app_with_the_results_location(execs, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert main(["dashboard", "--results", "runs", "--port", "8600", "--host", "0.0.0.0"]) == 0
    [(path, argv, env)] = execs
    assert path == sys.executable
    assert argv == [
        sys.executable,
        "-m",
        "dashboard.serve",
        str(ENTRY),
        "--server.headless",
        "true",
        "--browser.gatherUsageStats",
        "false",
        "--client.toolbarMode",
        "minimal",
        "--client.showErrorDetails",
        "type",
        "--server.port",
        "8600",
        "--server.address",
        "0.0.0.0",
    ]
    assert env[RESULTS_ENV] == str(tmp_path / "runs")  # absolute: Streamlit may change cwd


def test_defaults_are_results_dir_loopback_and_8501(execs, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv(RESULTS_ENV, raising=False)
    assert main(["dashboard"]) == 0
    [(_, argv, env)] = execs
    assert argv[argv.index("--server.port") + 1] == "8501"
    assert argv[argv.index("--server.address") + 1] == "127.0.0.1"
    assert env[RESULTS_ENV] == str(tmp_path / "results")


def test_results_env_is_the_default_and_urls_pass_through(execs, monkeypatch):
    monkeypatch.setenv(RESULTS_ENV, "s3://bucket/results")
    assert main(["dashboard"]) == 0
    assert execs[0][2][RESULTS_ENV] == "s3://bucket/results"


def test_candidates_reach_the_app_as_an_absolute_folder(execs, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv(CANDIDATES_ENV, raising=False)
    assert main(["dashboard", "--candidates", "drafts/manual"]) == 0
    assert main(["dashboard"]) == 0
    assert execs[0][2][CANDIDATES_ENV] == str(tmp_path / "drafts" / "manual")
    assert CANDIDATES_ENV not in execs[1][2]  # the app then looks in the results location


def test_bad_port_is_one_line_and_exit_2(execs, capsys):
    assert main(["dashboard", "--port", "70000"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == ["rageval dashboard: error: --port must be between 1 and 65535, got 70000"]
    assert execs == []


def test_app_path_is_the_installed_entry_file():
    assert command.app_path() == ENTRY and Path(ENTRY).is_file()


def test_prints_the_runs_link_and_the_newest_runs_diagnose_link(execs, demo_results, capsys):
    assert main(["dashboard", "--results", str(demo_results), "--host", "0.0.0.0"]) == 0
    err = capsys.readouterr().err
    assert "runs: http://127.0.0.1:8501/?" not in err  # the default page has no query
    assert "rageval dashboard: runs: http://127.0.0.1:8501/\n" in err
    newest = max(p.name for p in demo_results.iterdir() if not p.name.startswith("."))
    assert f"newest run: http://127.0.0.1:8501/diagnose?run={newest}" in err
