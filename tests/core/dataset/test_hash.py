"""The content hash: blind to layout, key order, comments and item order; not to content."""

from __future__ import annotations

import dataclasses
import hashlib
import json
import tempfile
from pathlib import Path

import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from rageval_core.dataset import QUESTION_ID_RE, dataset_sha256, load_dataset
from rageval_core.models import Chunk, GoldenQuestion

# PyYAML emits NEL and the Unicode line/paragraph separators unquoted, then reads them back
# as line breaks; that is a PyYAML emitter quirk, not a property of our hash.
_YAML_BREAKS = "\x85\u2028\u2029"
text = st.text(
    st.characters(exclude_categories=("Cs",), exclude_characters=_YAML_BREAKS),
    min_size=1,
    max_size=12,
).filter(str.strip)
ids = st.lists(text, min_size=1, max_size=6, unique=True)
question_ids = st.lists(
    st.from_regex(QUESTION_ID_RE, fullmatch=True), min_size=1, max_size=6, unique=True
)


@st.composite
def datasets(draw: st.DrawFn) -> tuple[str, str, list[GoldenQuestion], list[Chunk]]:
    chunk_ids = draw(ids)
    corpus = [Chunk(cid, draw(text), draw(text), draw(st.none() | text)) for cid in chunk_ids]
    questions = []
    for qid in draw(question_ids):
        gold = tuple(draw(st.lists(st.sampled_from(chunk_ids), unique=True, max_size=3)))
        # an empty gold list beside a reference answer does not validate (docs/metrics.md)
        reference = draw(st.none() | text) if gold else None
        tags = tuple(draw(st.lists(text, unique=True, max_size=3)))
        questions.append(GoldenQuestion(qid, draw(text), reference, gold, tags))
    return draw(text), draw(text), questions, corpus


def render(data: st.DataObject, name: str, version: str, questions, corpus) -> tuple[str, str]:
    """The dataset as YAML and JSONL in a randomly drawn but equivalent layout."""

    def shuffled(d: dict) -> dict:
        keys = data.draw(st.permutations(list(d)))
        return {k: d[k] for k in keys}

    qs = [
        shuffled(
            {
                "id": q.id,
                "question": q.question,
                "reference_answer": q.reference_answer,
                "gold_chunk_ids": list(data.draw(st.permutations(q.gold_chunk_ids))),
                "tags": list(q.tags),
            }
        )
        for q in data.draw(st.permutations(questions))
    ]
    top = shuffled({"name": name, "version": version, "corpus": "corpus.jsonl", "questions": qs})
    flow = data.draw(st.sampled_from([False, True, None]))
    body = yaml.safe_dump(top, sort_keys=False, default_flow_style=flow, allow_unicode=True)
    chunks = [shuffled(dataclasses.asdict(c)) for c in data.draw(st.permutations(corpus))]
    jsonl = "".join(json.dumps(c, ensure_ascii=data.draw(st.booleans())) + "\n" for c in chunks)
    return "# a comment\n" + body, jsonl


def load_text(yaml_text: str, jsonl: str) -> str:
    with tempfile.TemporaryDirectory() as tmp:
        (Path(tmp) / "corpus.jsonl").write_text(jsonl, encoding="utf-8")
        (Path(tmp) / "dataset.yaml").write_text(yaml_text, encoding="utf-8")
        return load_dataset(Path(tmp) / "dataset.yaml").sha256


@settings(max_examples=100, deadline=None)
@given(datasets(), st.data())
def test_layout_and_order_do_not_change_the_hash(ds, data: st.DataObject) -> None:
    name, version, questions, corpus = ds
    expected = dataset_sha256(name, version, questions, corpus)
    assert load_text(*render(data, *ds)) == expected


@settings(max_examples=60)
@given(datasets(), st.data())
def test_any_content_change_changes_the_hash(ds, data: st.DataObject) -> None:
    name, version, questions, corpus = ds
    before = dataset_sha256(name, version, questions, corpus)
    target = data.draw(st.sampled_from(["name", "version", "question", "chunk"]))
    if target == "name":
        name += "!"
    elif target == "version":
        version += "1"
    elif target == "question":
        i = data.draw(st.integers(0, len(questions) - 1))
        field = data.draw(st.sampled_from(["question", "reference_answer", "gold", "tags"]))
        q = questions[i]
        changed = {
            "question": dataclasses.replace(q, question=q.question + "?"),
            "reference_answer": dataclasses.replace(
                q, reference_answer=None if q.reference_answer else "x"
            ),
            "gold": dataclasses.replace(q, gold_chunk_ids=q.gold_chunk_ids + ("new#0",)),
            "tags": dataclasses.replace(q, tags=q.tags + ("new-tag",)),
        }[field]
        questions = [*questions[:i], changed, *questions[i + 1 :]]
    else:
        i = data.draw(st.integers(0, len(corpus) - 1))
        corpus = [
            *corpus[:i],
            dataclasses.replace(corpus[i], text=corpus[i].text + "."),
            *corpus[i + 1 :],
        ]
    assert dataset_sha256(name, version, questions, corpus) != before


def test_editing_a_chunk_file_changes_the_loaded_hash(valid_dataset: Path) -> None:
    before = load_dataset(valid_dataset).sha256
    corpus = valid_dataset.parent / "corpus.jsonl"
    corpus.write_text(corpus.read_text().replace("five days", "six days"))
    assert load_dataset(valid_dataset).sha256 != before


def test_hash_is_sha256_of_the_documented_canonical_json() -> None:
    # Runs record this hash in their manifests: the canonical form must never drift.
    q = GoldenQuestion("q1", "Why é?", None, ("b#0", "a#0"), ("y", "x"))
    chunks = [Chunk("b#0", "b", "two", "3"), Chunk("a#0", "a", "one")]
    canonical = (
        '{"corpus":[{"doc_id":"a","id":"a#0","text":"one","version":null},'
        '{"doc_id":"b","id":"b#0","text":"two","version":"3"}],"name":"n",'
        '"questions":[{"gold_chunk_ids":["a#0","b#0"],"id":"q1","question":"Why é?",'
        '"reference_answer":null,"tags":["x","y"]}],"version":"1"}'
    )
    expected = hashlib.sha256(canonical.encode("utf-8")).hexdigest()
    assert dataset_sha256("n", "1", [q], chunks) == expected
