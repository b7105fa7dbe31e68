"""`rageval dashboard` builds the claims cache the label views join on before the server
starts when the labels location holds labels, where the app's store then finds it; with
no labels it spends no time on it."""

from __future__ import annotations

import pytest

from rageval_core.cli import main
from rageval_core.labels import LabelStore
from rageval_core.labels.example import example_labels
from rageval_core.query import ResultsStore, judge_reports
from rageval_core.store.claims import ClaimsCache


@pytest.mark.usefixtures("execs")
def test_claims_are_built_before_the_server_and_used_by_the_app(
    demo_results, scratch, monkeypatch, capsys
):
    monkeypatch.setenv("XDG_CACHE_HOME", str(scratch / "xdg"))
    labels = scratch / "labels"
    LabelStore(str(labels)).save(example_labels(demo_results))
    assert main(["dashboard", "--results", str(demo_results), "--labels", str(labels)]) == 0
    n = sum(1 for p in demo_results.iterdir() if not p.name.startswith("."))
    assert f"claims of {n:,} runs ready for labels" in capsys.readouterr().err
    # the app's store (read-only, same cache folder) unnests nothing on the Judge page
    built: list = []
    real = ClaimsCache._build
    monkeypatch.setattr(
        ClaimsCache,
        "_build",
        lambda self, cur, todo, *p: built.extend(todo) or real(self, cur, todo, *p),
    )
    with ResultsStore(str(demo_results), read_only=True) as store:
        reports = judge_reports(store, LabelStore(str(labels)).load())
        assert len(list((store.cache_dir / "claims").iterdir())) == n
    assert built == []
    assert sum(r.claims.n for r in reports) > 0  # the prebuilt files carry the verdicts


@pytest.mark.usefixtures("execs")
def test_no_labels_no_claims_build(demo_results, scratch, monkeypatch, capsys):
    monkeypatch.setenv("XDG_CACHE_HOME", str(scratch / "xdg"))
    labels = scratch / "labels"  # missing: nobody labelled yet
    assert main(["dashboard", "--results", str(demo_results), "--labels", str(labels)]) == 0
    assert "for labels" not in capsys.readouterr().err
    with ResultsStore(str(demo_results), read_only=True, refresh=False) as store:
        assert not (store.cache_dir / "claims").exists()
