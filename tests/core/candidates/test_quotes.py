"""Where a quote stands: the generator's rule is the dataset loader's (found exactly
once, overlapping occurrences counted), checked against brute force and the loader."""

from __future__ import annotations

import json

from hypothesis import given, settings
from hypothesis import strategies as st

from rageval_core.candidates.quotes import find_quote
from rageval_core.dataset import load_dataset
from rageval_core.errors import DatasetError

# a small alphabet, so quotes repeat and overlap often
TEXT = st.text(alphabet="ab \n.é\x00", max_size=40)


def brute_starts(text: str, quote: str) -> list[int]:
    return [i for i in range(len(text) - len(quote) + 1) if text[i : i + len(quote)] == quote]


@given(TEXT, TEXT)
def test_found_matches_counting_every_position(text, quote) -> None:
    found = find_quote(text, quote)
    starts = brute_starts(text, quote) if quote else []
    assert found.count == min(len(starts), 2)
    assert list(found.starts) == starts[:2]
    if found.once:
        s = found.starts[0]
        assert text[s : s + len(quote)] == quote


def test_overlapping_occurrences_are_two() -> None:
    assert find_quote("aaa", "aa").count == 2
    assert find_quote("abc", "").count == 0


@settings(max_examples=60, deadline=None)
@given(TEXT.filter(lambda t: t.strip()), TEXT.filter(bool))
def test_once_is_exactly_what_the_loader_accepts(tmp_path_factory, text, quote) -> None:
    folder = tmp_path_factory.mktemp("q")
    (folder / "documents.jsonl").write_text(json.dumps({"id": "d", "text": text}) + "\n")
    (folder / "dataset.yaml").write_text(
        json.dumps(
            {
                "name": "n",
                "version": "1",
                "documents": "documents.jsonl",
                "questions": [
                    {
                        "id": "q1",
                        "question": "q?",
                        "reference_answer": "r",
                        "gold_spans": [{"doc_id": "d", "text": quote}],
                    }
                ],
            }
        )
    )
    try:
        ds = load_dataset(folder / "dataset.yaml")
    except DatasetError:
        loaded = None
    else:
        loaded = ds.questions[0].gold_spans[0]
    found = find_quote(text, quote)
    assert (loaded is not None) == found.once
    if loaded is not None:
        assert (loaded.start, loaded.end) == (found.starts[0], found.starts[0] + len(quote))
