"""Real LlamaIndex apps whose chunks do not say where they are in the words the dataset
uses, offline: a sentence-window app (the text is the window, the offsets the sentence's)
and a `SimpleDirectoryReader(filename_as_id=True)` app run from a second folder (the
document ids are the other folder's paths). Each scores retrieval as the plain direct run
of the same chunks does (placed by their text), and the run says what did not match."""

from __future__ import annotations

import json
from pathlib import Path

import rageval_core
from rageval_core.adapters.llamaindex import documents
from rageval_core.catalogue import retrieval_columns, span_columns
from rageval_core.mismatch import mismatch_warnings
from tests.conftest import import_or_skip_unless_ci
from tests.core.adapters import apps

COLUMNS = [*span_columns(), *retrieval_columns(), "mrr"]
ANSWERABLE = ["q1", "q2", "q3"]


def _need_llamaindex() -> None:
    import_or_skip_unless_ci("llama_index.core", "pip install 'rageval[llamaindex]'")


def _figures(ran) -> object:
    return ran.rows.set_index("question_id").loc[ANSWERABLE, COLUMNS]


def _totals(ran) -> dict:
    return json.loads((ran.path / "manifest.json").read_text())["totals"]


def test_a_sentence_window_app_scores_the_window_it_gave_the_llm(tmp_path: Path) -> None:
    _need_llamaindex()
    rows = [{"id": d, "text": t} for d, t in apps.DOCUMENTS.items()]
    dataset = apps.write_span_dataset(tmp_path / "data", rows)
    engine = apps.llamaindex_sentence_window_engine(top_k=2)
    results = tmp_path / "results"
    app = rageval_core.evaluate(engine, dataset, results=results, run_id="app", progress=False)
    plain = rageval_core.evaluate(
        apps.by_hand(engine), dataset, results=results, run_id="plain", progress=False
    )
    a, b = _figures(app), _figures(plain)
    assert a.notna().all().all()
    assert a.equals(b), (a, b)
    assert (a["recall_at_5"] == 1.0).all()
    # the window is longer than the sentence the offsets name: placed by its text, counted
    placed = app.rows.set_index("question_id").loc["q1"]
    assert placed["retrieved_ends"][0] - placed["retrieved_starts"][0] > 100
    n = int(app.rows["n_offsets_mismatched"].sum())
    assert n > 0 and _totals(app)["n_offsets_mismatched"] == n
    assert (
        f"{n} chunks' offsets do not match their text: placed by text (LlamaIndex sentence "
        "windows record the window)"
    ) in mismatch_warnings(_totals(app))
    assert "n_offsets_mismatched" not in _totals(plain)


def test_a_filename_as_id_app_scores_the_same_from_another_folder(tmp_path: Path) -> None:
    _need_llamaindex()
    one, two = apps.write_handbook(tmp_path / "one"), apps.write_handbook(tmp_path / "two")
    rows = documents(apps.llamaindex_directory_documents(one))
    assert {r["id"] for r in rows} == {str(one / f"{d}.txt") for d in apps.DOCUMENTS}
    dataset = apps.write_span_dataset(tmp_path / "data", rows)
    results = tmp_path / "results"
    ran = {}
    for name, folder in (("one", one), ("two", two)):
        engine = apps.llamaindex_directory_engine(folder, top_k=2)
        ran[name] = rageval_core.evaluate(
            engine, dataset, results=results, run_id=name, progress=False
        )
    plain = rageval_core.evaluate(
        apps.by_hand(apps.llamaindex_directory_engine(two, top_k=2)),
        dataset,
        results=results,
        run_id="plain",
        progress=False,
    )
    first, second, direct = _figures(ran["one"]), _figures(ran["two"]), _figures(plain)
    assert first.notna().all().all()
    assert first.equals(second), (first, second)
    assert first.equals(direct), (first, direct)
    assert (first["recall_at_5"] == 1.0).all()
    # the second folder's paths are named, with how many chunks were placed anyway
    totals = _totals(ran["two"])
    retrieved = int(ran["two"].rows["retrieved_ids"].map(len).sum())
    assert totals["n_unknown_doc_placed"] == retrieved and totals["n_unplaced"] == 0
    assert set(totals["unknown_doc_ids"]) <= {str(two / f"{d}.txt") for d in apps.DOCUMENTS}
    (said,) = mismatch_warnings(totals)
    assert f"{retrieved} of them placed by their text anyway" in said
    assert "two/search-guide.txt" in said and "one/" not in said
    assert mismatch_warnings(_totals(ran["one"])) == ()
