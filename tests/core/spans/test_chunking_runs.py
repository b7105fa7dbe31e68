"""Two chunkings of one span dataset, run for real: span figures equal the formulas, one
dataset hash, no question-set warning; an id dataset re-chunked says so in run, compare
and check."""

from __future__ import annotations

import json
from pathlib import Path

import duckdb
import pytest
import yaml

from rageval_core.cli import main
from rageval_core.config import load_config
from rageval_core.dataset import example_dataset_path, load_dataset
from rageval_core.example.pipeline import _windows
from rageval_core.query import ResultsStore, Threshold, check_run, compare_runs
from rageval_core.runner import RunOptions, run

KS = (1, 3, 5)


def _config(tmp_path: Path, name: str, params: dict, dataset: Path) -> Path:
    path = tmp_path / f"{name}.yaml"
    path.write_text(
        yaml.safe_dump(
            {
                "name": name,
                "dataset": str(dataset),
                "pipeline": {"factory": "rageval_core.example.pipeline:build", "params": params},
                "judge": {"kind": "offline"},
                "ks": list(KS),
            }
        )
    )
    return path


def _chars(ranges) -> set[tuple[str, int]]:
    """The independent implementation: a set of (document, character) pairs."""
    return {(d, i) for d, s, e in ranges for i in range(s, e)}


@pytest.fixture(scope="module")
def chunk_runs(tmp_path_factory) -> tuple[Path, list[str]]:
    tmp = tmp_path_factory.mktemp("chunking")
    results = tmp / "results"
    ds = example_dataset_path()
    runs = []
    for name, params in (
        ("small-offsets", {"source": "documents", "chunk_size": 30, "offsets": True}),
        ("large-text", {"source": "documents", "chunk_size": 90, "offsets": False}),
    ):
        config = load_config(_config(tmp, name, params, ds))
        runs.append(run(config, RunOptions(results=str(results), run_id=name, progress=False)))
    return results, [r.run_id for r in runs]


def test_span_figures_equal_the_formulas(chunk_runs) -> None:
    results, run_ids = chunk_runs
    dataset = load_dataset(example_dataset_path())
    gold = {q.id: q.gold_spans for q in dataset.questions}
    texts = {d.id: d.text for d in dataset.documents}
    for run_id, size in zip(run_ids, (30, 90), strict=True):
        places = {p.chunk_id: p.place for p in _windows(dataset, size)}
        rows = duckdb.sql(f"select * from '{results / run_id / 'questions.parquet'}'").fetchall()
        cols = duckdb.sql(f"select * from '{results / run_id / 'questions.parquet'}'").columns
        checked = 0
        for values in rows:
            row = dict(zip(cols, values, strict=True))
            spans = gold[row["question_id"]]
            assert row["n_unplaced"] == 0
            if not spans:
                assert row["span_recall_at_5"] is None and row["recall_at_5"] is None
                continue
            got = list(
                zip(
                    row["retrieved_doc_ids"],
                    row["retrieved_starts"],
                    row["retrieved_ends"],
                    strict=True,
                )
            )
            cut = [places[i] for i in row["retrieved_ids"]]
            if size == 30:  # offsets given: taken as given
                assert got == cut
            else:  # text only: placed where those words are (a text both versions of a
                # document hold goes to the first of them)
                for (d, s, e), (d2, s2, e2) in zip(got, cut, strict=True):
                    assert texts[d][s:e].split() == texts[d2][s2:e2].split()
            g = _chars((s.doc_id, s.start, s.end) for s in spans)
            for k in KS:
                r = _chars(got[:k])
                assert row[f"span_recall_at_{k}"] == pytest.approx(len(r & g) / len(g))
                assert row[f"span_precision_at_{k}"] == pytest.approx(
                    len(r & g) / len(r) if r else 0.0
                )
                assert row[f"span_iou_at_{k}"] == pytest.approx(len(r & g) / len(r | g))
                touched = [s for s in spans if _chars([(s.doc_id, s.start, s.end)]) & r]
                assert row[f"recall_at_{k}"] == pytest.approx(len(touched) / len(spans))
            checked += 1
        assert checked == sum(bool(s) for s in gold.values())


def test_two_chunkings_compare_on_one_dataset_hash(chunk_runs) -> None:
    results, (a, b) = chunk_runs
    manifests = [json.loads((results / r / "manifest.json").read_text()) for r in (a, b)]
    assert manifests[0]["dataset"]["sha256"] == manifests[1]["dataset"]["sha256"]
    assert "n_unknown_ids" not in manifests[0]["totals"]  # a span dataset: ids are free
    with ResultsStore(str(results), read_only=True) as store:
        c = compare_runs(store, [a, b], metrics=["span_recall_at_5", "span_precision_at_5"])
    assert not any("dataset" in w for w in c.warnings), c.warnings
    cand = c.metrics[c.metrics["run_id"] == b].set_index("metric")
    for m in ("span_recall_at_5", "span_precision_at_5"):
        # paired over every answerable question of the one dataset, with an interval
        assert cand.loc[m, "n_pairs"] == 86
        assert cand.loc[m, "ci_low"] <= cand.loc[m, "delta"] <= cand.loc[m, "ci_high"]


ID_PIPELINE = """
def build():
    def pipe(question):
        # a pipeline chunking differently: ids the dataset's corpus does not have
        return {"answer": "2009.", "retrieved": [{"id": "assert", "text": "x"},
                                                  {"id": "company-overview#1", "text": "y"}]}
    return pipe
"""


def test_rechunked_id_dataset_warns_in_run_compare_and_check(tmp_path, capsys, monkeypatch) -> None:
    src = example_dataset_path().parent
    (tmp_path / "corpus.jsonl").write_text((src / "corpus.jsonl").read_text())
    ds = tmp_path / "ids.yaml"
    ds.write_text(
        "name: ids\nversion: 1\ncorpus: corpus.jsonl\nquestions:\n"
        "  - {id: q1, question: 'Founded?', reference_answer: '2009',"
        " gold_chunk_ids: [company-overview#1]}\n"
        "  - {id: q2, question: 'CTO?', reference_answer: 'F',"
        " gold_chunk_ids: [company-overview#3]}\n"
    )
    (tmp_path / "rechunk_pipe.py").write_text(ID_PIPELINE)
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    config = tmp_path / "c.yaml"
    config.write_text(
        yaml.safe_dump(
            {
                "name": "rechunked",
                "dataset": "ids.yaml",
                "pipeline": {"factory": "rechunk_pipe:build"},
            }
        )
    )
    results = str(tmp_path / "results")
    warning = (
        "2 of 4 retrieved ids are not in the corpus: is the pipeline chunking differently? "
        "Use gold_spans"
    )
    for run_id in ("r1", "r2"):
        assert main(["run", str(config), "--results", results, "--run-id", run_id]) == 0
        assert f"warning: {warning}" in capsys.readouterr().out
    assert main(["compare", "r1", "r2", "--results", results]) == 0
    assert f"r2: {warning}" in capsys.readouterr().out
    with ResultsStore(results, read_only=True) as store:
        result = check_run(store, "r2", thresholds=[Threshold("recall_at_5", min=0.9)])
        shown = set(compare_runs(store, ["r1", "r2"]).metrics["metric"])
    assert "recall_at_5" in shown and not any(m.startswith("span_") for m in shown)
    (row,) = result.rows
    assert row.breached and warning in row.notes
    assert f"warning: {warning}" in result.notes
