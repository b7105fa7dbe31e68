"""The bundled example dataset validates and covers every category the demo relies on."""

from __future__ import annotations

from rageval_core.dataset import example_dataset_path, load_dataset


def test_example_dataset_validates_and_meets_its_category_counts() -> None:
    ds = load_dataset(example_dataset_path())
    tagged = {
        tag: [q for q in ds.questions if tag in q.tags]
        for tag in ("unanswerable", "multi-hop", "version-changed", "user-vocabulary")
    }
    assert len(ds.corpus) >= 60
    assert len({c.doc_id for c in ds.corpus}) >= 10
    assert len(ds.questions) >= 50
    assert len(tagged["unanswerable"]) >= 8
    assert all(not q.answerable for q in tagged["unanswerable"])
    assert sum(len(q.gold_chunk_ids) >= 2 for q in tagged["multi-hop"]) >= 8
    assert len(tagged["version-changed"]) >= 5
    assert len(tagged["user-vocabulary"]) >= 5
