"""`rageval dashboard --labels DIR|URL --read-only`: what the app is told through its
environment (RAGEVAL_LABELS, RAGEVAL_READ_ONLY), beside RAGEVAL_RESULTS."""

from __future__ import annotations

import os

import pytest

from rageval_core.cli import main
from rageval_core.labels import LABELS_ENV, READ_ONLY_ENV
from rageval_core.runs.layout import RESULTS_ENV


@pytest.fixture
def execs(monkeypatch) -> list[dict[str, str]]:
    calls: list[dict[str, str]] = []
    monkeypatch.setattr(os, "execve", lambda path, argv, env: calls.append(env))
    monkeypatch.delenv(LABELS_ENV, raising=False)
    monkeypatch.delenv(READ_ONLY_ENV, raising=False)
    return calls


def test_labels_default_to_a_folder_beside_the_results(execs, tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    assert main(["dashboard", "--results", "out/results"]) == 0
    [env] = execs
    assert env[RESULTS_ENV] == str(tmp_path / "out" / "results")
    assert env[LABELS_ENV] == str(tmp_path / "out" / "labels")
    assert READ_ONLY_ENV not in env
    assert f"labels in {tmp_path / 'out' / 'labels'}\n" in capsys.readouterr().err


def test_labels_option_wins_over_the_environment_and_is_made_absolute(execs, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv(LABELS_ENV, "/elsewhere")
    assert main(["dashboard", "--labels", "mine"]) == 0
    assert execs[0][LABELS_ENV] == str(tmp_path / "mine")


def test_labels_env_is_the_default_and_bucket_urls_pass_through(execs, monkeypatch):
    monkeypatch.setenv(LABELS_ENV, "s3://team/labels")
    assert main(["dashboard", "--results", "s3://team/results"]) == 0
    assert execs[0][LABELS_ENV] == "s3://team/labels"
    execs.clear()
    monkeypatch.delenv(LABELS_ENV)
    assert main(["dashboard", "--results", "s3://team/evals/results"]) == 0
    assert execs[0][LABELS_ENV] == "s3://team/evals/labels"


def test_read_only_is_passed_on_and_said(execs, tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    assert main(["dashboard", "--read-only"]) == 0
    assert execs[0][READ_ONLY_ENV] == "1"
    assert "(read-only)" in capsys.readouterr().err
