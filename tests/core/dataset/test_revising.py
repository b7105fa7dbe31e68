"""A new version of a dataset rageval wrote itself (`import squad`, `dataset generate`,
`write_dataset`) changes only what changed: long questions were folded at 80 columns by
the writer and joined by the round trip, so every long question showed in the diff."""

from __future__ import annotations

import difflib
from dataclasses import replace
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rageval_core.dataset import load_dataset, write_dataset, write_revision
from rageval_core.models import Chunk, GoldenQuestion

WORDS = st.text(alphabet="abcdefghij'\":#-?", min_size=1, max_size=12)
QUESTIONS = st.lists(WORDS, min_size=1, max_size=40).map(" ".join).map(str.strip).filter(bool)


def changed(before: Path, after: Path) -> list[str]:
    diff = difflib.ndiff(before.read_text().splitlines(), after.read_text().splitlines())
    return [d for d in diff if d.startswith(("- ", "+ "))]


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(texts=st.lists(QUESTIONS, min_size=2, max_size=6), touched=st.integers(0, 5))
def test_a_revision_of_a_written_dataset_changes_only_the_changed_question(
    tmp_path_factory, texts, touched
) -> None:
    root = tmp_path_factory.mktemp("ds")
    corpus = [Chunk("c0", "text zero", "d"), Chunk("c1", "text one", "d")]
    questions = [
        GoldenQuestion(f"q{i}", text, "an answer", ("c0",)) for i, text in enumerate(texts)
    ]
    path = write_dataset(root / "v1", "qa", "1", questions, corpus)
    ds = load_dataset(path)
    i = touched % len(texts)
    revised = [
        replace(q, gold_chunk_ids=("c0", "c1")) if n == i else q for n, q in enumerate(ds.questions)
    ]
    out = write_revision(ds, "2", revised, root / "v2")

    assert load_dataset(out).questions == tuple(revised)
    lines = changed(path, out)
    assert [x.split(":")[0] for x in lines] == [
        "- version",
        "+ version",
        "-   gold_chunk_ids",
        "+   gold_chunk_ids",
    ], lines
