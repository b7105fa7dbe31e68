"""A pipeline's output is checked by one set of rules whether it is a dict or a
`PipelineOutput`/`RetrievedChunk` built in code, and so is a harness's record: a bad
field costs that question its row (`error`), never the run, never a wrong figure."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pyarrow.parquet as pq
import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import rageval_core
from rageval_core.errors import PipelineError, SourceError
from rageval_core.models import PipelineOutput, RetrievedChunk
from rageval_core.writer import RunWriter

GOLD = "Glaciers carve U-shaped valleys over thousands of years."
OTHER = "Rivers cut V-shaped valleys through softer rock layers."
TEXT = f"{GOLD} {OTHER}"
GOOD = RetrievedChunk("c1", GOLD, 0.9, "geo", 0, len(GOLD))

# name -> (a change of the good output, words the question's error must hold)
BAD = {
    "negative start": (dict(chunk=dict(start=-10)), "0 <= start <= end"),
    "float offsets": (dict(chunk=dict(start=0.0, end=len(GOLD) - 0.9)), "must be integers"),
    "reversed offsets": (dict(chunk=dict(start=len(GOLD), end=0)), "0 <= start <= end"),
    "offsets without a document": (dict(chunk=dict(doc_id=None)), "need a 'doc_id'"),
    "no answer": (dict(answer=None), "'answer' must be a string"),
    "a plain string chunk": (dict(retrieved=("c1",)), "retrieved[0] needs a string 'id'"),
    "a word for a score": (dict(chunk=dict(score="high")), "score must be a number"),
    "a number for a text": (dict(chunk=dict(text=5)), "text must be a string"),
    "half a token": (dict(input_tokens=3.5), "'input_tokens' must be a whole number"),
    "a word for a time": (dict(retrieval_ms="fast"), "'retrieval_ms' must be a number"),
}


def output(change: dict, form: str) -> object:
    """The good output with `change` applied, as a dict or as the dataclasses."""
    chunk = replace(GOOD, **change.get("chunk", {}))
    fields = {k: v for k, v in change.items() if k != "chunk"}
    out = PipelineOutput(**{"answer": GOLD, "retrieved": (chunk,), **fields})
    if form == "object":
        return out
    as_dict = {
        **vars(out),
        "retrieved": [c if isinstance(c, str) else vars(c) for c in out.retrieved],
    }
    return {k: v for k, v in as_dict.items() if k != "scores"}


def dataset(folder: Path, n: int) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "documents.yaml").write_text(yaml.safe_dump([{"id": "geo", "text": TEXT}]))
    data = {
        "name": "outputs",
        "version": "1",
        "documents": "documents.yaml",
        "questions": [
            {
                "id": f"q{i}",
                "question": f"How do glaciers shape valleys, case {i}?",
                "reference_answer": GOLD,
                "gold_spans": [{"doc_id": "geo", "start": 0, "end": len(GOLD)}],
            }
            for i in range(n)
        ],
    }
    path = folder / "dataset.yaml"
    path.write_text(yaml.safe_dump(data))
    return path


def run(tmp: Path, outputs: list[object], run_id: str) -> dict[str, dict]:
    """`outputs[i]` is what the pipeline returns for question q{i}."""
    path = dataset(tmp / "data", len(outputs))

    def pipeline(question: str) -> object:
        return outputs[int(question.rstrip("?").split()[-1])]

    done = rageval_core.evaluate(
        pipeline, path, results=tmp / "results", run_id=run_id, concurrency=2, progress=False
    )
    assert done.status == "complete"
    rows = pq.read_table(done.path / "questions.parquet").to_pylist()
    return {r["question_id"]: r for r in rows}


@pytest.mark.parametrize("form", ["dict", "object"])
def test_each_bad_output_is_its_questions_error_and_the_run_goes_on(tmp_path, form):
    names = list(BAD)
    outputs = [output(BAD[name][0], form) for name in names] + [output({}, form)]
    got = run(tmp_path, outputs, f"bad-{form}")
    for i, name in enumerate(names):
        row = got[f"q{i}"]
        assert row["error"] is not None and row["error"].startswith("PipelineError:"), name
        assert BAD[name][1] in row["error"], (name, row["error"])
        assert row["failure_type"] == "error", name
    good = got[f"q{len(names)}"]
    assert good["error"] is None
    assert good["span_precision_at_5"] == 1.0 and good["span_recall_at_5"] == 1.0


@pytest.mark.parametrize("name", [n for n in BAD if n not in ("no answer", "a plain string chunk")])
def test_a_bad_record_is_refused_naming_the_question(tmp_path, name):
    """The writer's records meet the same rules (a SourceError naming the question;
    nothing of it is recorded). For a harness an absent answer is unknown and a string
    is a chunk id (docs/import.md), so those two are not mistakes there."""
    path = dataset(tmp_path / "data", 1)
    given_ = output(BAD[name][0], "object")
    fields = {
        "answer": given_.answer,
        "retrieved": list(given_.retrieved),
        "input_tokens": given_.input_tokens,
        "retrieval_ms": given_.retrieval_ms,
    }
    with RunWriter("h", results_dir=tmp_path / "results", dataset=path, run_id="w") as w:
        with pytest.raises(SourceError, match="question 'q0'"):
            w.add("q0", **fields)
        assert w.done == frozenset()
        w.add("q0", answer=GOLD, retrieved=[GOOD])


@settings(
    max_examples=12,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(
    picks=st.lists(
        st.tuples(st.sampled_from([None, *BAD]), st.sampled_from(["dict", "object"])),
        min_size=1,
        max_size=8,
    )
)
def test_random_bad_outputs_cost_their_rows_only(tmp_path_factory, picks):
    tmp = tmp_path_factory.mktemp("random")
    outputs = [output({} if name is None else BAD[name][0], form) for name, form in picks]
    got = run(tmp, outputs, "random")
    assert len(got) == len(picks)
    for i, (name, _) in enumerate(picks):
        row = got[f"q{i}"]
        if name is None:
            assert row["error"] is None and row["span_recall_at_5"] == 1.0
        else:
            assert BAD[name][1] in (row["error"] or ""), (name, row["error"])


FIELD_VALUES = st.one_of(
    st.none(),
    st.integers(-5, 80),
    st.floats(-5, 80),
    st.just(float("nan")),
    st.booleans(),
    st.sampled_from(["geo", "c1", "", GOLD]),
)


@settings(max_examples=300, deadline=None)
@given(
    values=st.fixed_dictionaries(
        {k: FIELD_VALUES for k in ("id", "text", "score", "doc_id", "start", "end")}
    ),
    answer=st.one_of(st.none(), st.just(GOLD), st.integers()),
    tokens=FIELD_VALUES,
)
def test_a_dict_and_an_object_meet_one_set_of_rules(values, answer, tokens):
    """Whatever the field values, the dataclasses built in code and the dict with the same
    keys are accepted alike (to the same value) or refused alike (the same message)."""

    def check(value: object) -> object:
        try:
            return PipelineOutput.from_value(value)
        except PipelineError as exc:
            return exc.message

    as_object = PipelineOutput(answer, (RetrievedChunk(**values),), input_tokens=tokens)
    as_dict = {"answer": answer, "retrieved": [values], "input_tokens": tokens}
    assert check(as_object) == check(as_dict)
