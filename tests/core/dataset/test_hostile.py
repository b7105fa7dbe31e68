"""Hostile dataset files: alias bombs, deep nesting, bad bytes, huge values, unsafe ids.

Whatever a dataset, corpus or SQuAD file holds, loading ends in one DatasetError naming the
file, quickly and in bounded memory, and no message echoes an unbounded value.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rageval_core.cli import main
from rageval_core.dataset import QUESTION_ID_RE, load_dataset
from rageval_core.errors import DatasetError
from rageval_core.importers.squad import import_squad, squad_question_id
from tests.core.hostile_files import billion_laughs, cli

CORPUS_LINE = '{"id": "c#0", "doc_id": "c", "text": "Some text."}\n'


def dataset_with(tmp_path: Path, body: str, corpus: str = CORPUS_LINE) -> Path:
    (tmp_path / "corpus.jsonl").write_text(corpus)
    path = tmp_path / "dataset.yaml"
    path.write_text(body)
    return path


def problems_of(path: Path) -> list[str]:
    with pytest.raises(DatasetError) as info:
        load_dataset(path)
    return info.value.problems or [info.value.message]


# ---------------------------------------------------------------------------- alias bombs


def test_billion_laughs_dataset_is_refused_quickly_in_bounded_memory(tmp_path):
    bomb = billion_laughs()
    path = dataset_with(
        tmp_path,
        bomb + "name: x\nversion: '1'\ncorpus: corpus.jsonl\n"
        "questions:\n  - id: q1\n    question: hi\n    gold_chunk_ids: *l9\n",
    )
    done, seconds = cli("validate", str(path))
    assert done.returncode == 2, done.stderr[-500:]
    assert seconds < 20
    assert "Traceback" not in done.stderr and len(done.stderr) < 1000
    assert f"{path}: dataset: YAML aliases expand" in done.stderr


def test_billion_laughs_in_a_yaml_corpus_is_refused(tmp_path):
    (tmp_path / "corpus.yaml").write_text(billion_laughs() + "chunks: *l9\n")
    path = tmp_path / "dataset.yaml"
    path.write_text(
        "name: x\nversion: '1'\ncorpus: corpus.yaml\nquestions:\n"
        "  - {id: q1, question: hi, gold_chunk_ids: []}\n"
    )
    [problem] = problems_of(path)
    assert problem.startswith(f"{tmp_path / 'corpus.yaml'}: corpus: YAML aliases expand")


def test_a_few_anchors_still_load(tmp_path):
    path = dataset_with(
        tmp_path,
        "name: x\nversion: '1'\ncorpus: corpus.jsonl\nquestions:\n"
        "  - {id: q1, question: a?, gold_chunk_ids: &gold [c#0], tags: &tags [x, y]}\n"
        "  - {id: q2, question: b?, gold_chunk_ids: *gold, tags: *tags}\n"
        "  - {id: q3, question: c?, gold_chunk_ids: *gold, tags: *tags}\n",
    )
    ds = load_dataset(path)
    assert [q.gold_chunk_ids for q in ds.questions] == [("c#0",)] * 3
    assert ds.questions[2].tags == ("x", "y")


def test_an_alias_to_its_own_ancestor_is_refused(tmp_path):
    path = dataset_with(tmp_path, "name: &a [x, *a]\n")
    [problem] = problems_of(path)
    assert problem.startswith(f"{path}: dataset: line 1: an alias refers to itself")


# ---------------------------------------------------------------------------- nesting


@pytest.mark.parametrize("depth", [80, 600, 999])
def test_deeply_nested_yaml_is_a_dataset_error(tmp_path, depth):
    path = dataset_with(tmp_path, "name: " + "[" * depth + "]" * depth + "\n")
    [problem] = problems_of(path)
    assert problem.startswith(f"{path}: dataset: line 1: nested more than 64 levels deep")


def test_deeply_nested_block_yaml_is_a_dataset_error(tmp_path):
    body = "name:\n" + "".join(" " * i + "- \n" for i in range(0, 1200, 2))
    [problem] = problems_of(dataset_with(tmp_path, body))
    assert "nested more than 64 levels deep" in problem


def test_deeply_nested_json_in_a_corpus_line_is_a_dataset_error(tmp_path):
    path = dataset_with(
        tmp_path,
        "name: x\nversion: '1'\ncorpus: corpus.jsonl\n"
        "questions:\n  - {id: q1, question: hi, gold_chunk_ids: [c#0]}\n",
        corpus=CORPUS_LINE + '{"id": ' + "[" * 100_000 + "]" * 100_000 + "}\n",
    )
    problems = problems_of(path)
    assert problems == [f"{tmp_path / 'corpus.jsonl'}:2: nested deeper than 64 levels"]


def test_deeply_nested_squad_json_is_a_dataset_error(tmp_path):
    path = tmp_path / "squad.json"
    path.write_text('{"data": ' + "[" * 100_000 + "]" * 100_000 + "}")
    with pytest.raises(DatasetError) as info:
        import_squad(path, tmp_path / "out")
    assert info.value.problems == [f"{path}: nested deeper than 64 levels"]
    done, _ = cli("import", "squad", str(path), "--out", str(tmp_path / "out"))
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert "nested deeper than 64 levels" in done.stderr


# ---------------------------------------------------------------------------- bytes and sizes


def test_not_utf8_names_line_and_byte_offset(tmp_path):
    path = tmp_path / "dataset.yaml"
    path.write_bytes(b"name: x\nversion: caf\xe9\n")
    assert problems_of(path) == [f"{path}:2: dataset is not UTF-8 (byte 0xe9 at offset 20)"]


def test_a_huge_integer_is_not_a_traceback(tmp_path):
    # Python refuses int() of more than 4,300 digits; plain scalars here stay strings, but a
    # tagged one is converted.
    path = dataset_with(tmp_path, "name: !!int " + "9" * 5000 + "\n")
    [problem] = problems_of(path)
    assert problem.startswith(f"{path}: dataset: unreadable value") and len(problem) < 400


HUGE = "A" * 1_000_000


@pytest.mark.parametrize(
    "body",
    [
        f"name: x\nversion: '1'\ncorpus: corpus.jsonl\nquestions:\n  - id: {HUGE}\n"
        "    question: hi\n    gold_chunk_ids: []\n",
        f"name: x\nversion: '1'\ncorpus: corpus.jsonl\nquestions:\n  - id: q1\n"
        f"    question: hi\n    gold_chunk_ids: [{HUGE}]\n",
        f"name: x\nversion: '1'\ncorpus: corpus.jsonl\nquestions:\n  - id: q1\n"
        f"    question: hi\n    gold_chunk_ids: [[{', '.join([HUGE[:1000]] * 1000)}]]\n",
        f"name: x\nversion: '1'\ncorpus: corpus.jsonl\nquestions:\n  - id: q1\n"
        f"    {HUGE}: 1\n    question: hi\n    gold_chunk_ids: []\n",
        f"name: x\nversion: '1'\ncorpus: corpus.jsonl\nquestions:\n  - id: q1\n"
        f"    question: hi\n    gold_chunk_ids: []\n  - id: q1\n    id: q2\n    {HUGE}: x\n",
        f"name: [{HUGE}]\nversion: '1'\ncorpus: corpus.jsonl\nquestions: {HUGE}\n",
    ],
    ids=["id", "gold-id", "nested-list", "unknown-key", "repeated", "top-level"],
)
def test_no_problem_echoes_an_unbounded_value(tmp_path, body):
    problems = problems_of(dataset_with(tmp_path, body))
    assert problems
    for p in problems:
        assert len(p) < 400 and "\n" not in p, p[:500]


def test_huge_chunk_fields_are_cut_in_problems(tmp_path):
    corpus = json.dumps({"id": HUGE, "doc_id": ["x"] * 100_000, "text": 1}) + "\n"
    path = dataset_with(
        tmp_path,
        "name: x\nversion: '1'\ncorpus: corpus.jsonl\n"
        "questions:\n  - {id: q1, question: hi, gold_chunk_ids: []}\n",
        corpus=corpus + corpus,
    )
    for p in problems_of(path):
        assert len(p) < 400, p[:500]


# ---------------------------------------------------------------------------- question ids

BAD_IDS = ["q\n1", "../q1", "<b>q</b>", "q 1", "", "-q", "é1", "q/1", "a" * 129, "q?x=1", "q&r"]


@pytest.mark.parametrize("qid", BAD_IDS)
def test_question_ids_must_fit_the_documented_pattern(tmp_path, qid):
    body = (
        "name: x\nversion: '1'\ncorpus: corpus.jsonl\nquestions:\n"
        f"  - {{id: {json.dumps(qid)}, question: hi, gold_chunk_ids: []}}\n"
    )
    [problem] = problems_of(dataset_with(tmp_path, body))
    assert "questions[0]" in problem and "\n" not in problem and len(problem) < 400
    assert "id" in problem


@pytest.mark.parametrize("qid", ["q001", "003", "_x", "56be4db0acb8001400a502ec", "a.b:c@d#e+f-g"])
def test_valid_question_ids_load(tmp_path, qid):
    body = (
        "name: x\nversion: '1'\ncorpus: corpus.jsonl\nquestions:\n"
        f"  - {{id: {json.dumps(qid)}, question: hi, gold_chunk_ids: []}}\n"
    )
    assert load_dataset(dataset_with(tmp_path, body)).questions[0].id == qid


def squad_doc(ids: list[str]) -> dict:
    qas = [{"id": i, "question": f"Q{n}?", "answers": [{"text": "x"}]} for n, i in enumerate(ids)]
    return {"data": [{"title": "T", "paragraphs": [{"context": "x.", "qas": qas}]}]}


def test_squad_ids_that_do_not_fit_are_mapped_deterministically(tmp_path):
    ids = ["plain1", "has space", "../up", "a\nb", "é", "x" * 300, "<b>"]
    src = tmp_path / "s.json"
    src.write_text(json.dumps(squad_doc(ids)))
    ds = load_dataset(import_squad(src, tmp_path / "out").path)
    got = [q.id for q in ds.questions]
    assert got[0] == "plain1"  # an id that fits is kept as it is
    assert got == [squad_question_id(i) for i in ids]
    assert len(set(got)) == len(ids)
    assert all(QUESTION_ID_RE.fullmatch(q) for q in got)
    assert got[1].startswith("has_space-") and got[2].startswith("_up-")


def test_squad_id_mapping_collision_is_a_clear_error(tmp_path):
    mapped = squad_question_id("has space")
    src = tmp_path / "s.json"
    src.write_text(json.dumps(squad_doc(["has space", mapped])))
    with pytest.raises(DatasetError) as info:
        import_squad(src, tmp_path / "out")
    assert f"duplicate question id {mapped}" in str(info.value)


@settings(max_examples=60, deadline=None)
@given(st.text(max_size=300))
def test_squad_id_mapping_always_fits_and_keeps_fitting_ids(raw):
    mapped = squad_question_id(raw)
    assert QUESTION_ID_RE.fullmatch(mapped)
    assert squad_question_id(raw) == mapped
    if QUESTION_ID_RE.fullmatch(raw):
        assert mapped == raw


# ---------------------------------------------------------------------------- fuzz

JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=10), inner),
    max_leaves=30,
)
SQUADISH = st.fixed_dictionaries(
    {
        "data": st.lists(
            st.fixed_dictionaries(
                {
                    "title": JSON | st.text(max_size=10),
                    "paragraphs": st.lists(
                        st.fixed_dictionaries(
                            {
                                "context": JSON | st.text(max_size=30),
                                "qas": st.lists(
                                    st.fixed_dictionaries(
                                        {"id": JSON, "question": JSON, "answers": JSON},
                                        optional={"is_impossible": JSON},
                                    ),
                                    max_size=3,
                                ),
                            }
                        ),
                        max_size=3,
                    ),
                }
            ),
            max_size=3,
        )
    }
)


def _nested(depth: int) -> str:
    return '{"data": ' + "[" * depth + "]" * depth + "}"


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    doc=st.one_of(
        JSON.map(json.dumps),
        SQUADISH.map(json.dumps),
        st.integers(1, 50_000).map(_nested),
        st.binary(max_size=200).map(lambda b: b.decode("latin-1")),
    ),
    garbage=st.binary(max_size=8),
)
def test_import_squad_raises_only_dataset_errors(tmp_path_factory, doc, garbage):
    work = tmp_path_factory.mktemp("squad")
    src = work / "s.json"
    src.write_bytes(doc.encode("utf-8", "surrogatepass") + garbage)
    try:
        path = import_squad(src, work / "out").path
    except DatasetError as exc:
        assert all(len(line) < 400 for line in str(exc).splitlines())
    else:
        load_dataset(path)  # what the import writes must load


YAMLISH = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=10), inner),
    max_leaves=25,
)


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    questions=st.lists(
        st.fixed_dictionaries(
            {"id": YAMLISH | st.text(max_size=12), "question": YAMLISH | st.text(max_size=12)},
            optional={"gold_chunk_ids": YAMLISH, "tags": YAMLISH, "extra": YAMLISH},
        ),
        max_size=4,
    ),
    top=st.dictionaries(st.sampled_from(["name", "version", "corpus"]), YAMLISH),
    noise=st.text(max_size=30),
    corpus=st.lists(YAMLISH.map(json.dumps), max_size=3),
)
def test_loading_any_dataset_raises_only_dataset_errors(
    tmp_path_factory, questions, top, noise, corpus
):
    work = tmp_path_factory.mktemp("ds")
    (work / "corpus.jsonl").write_text("\n".join(corpus) + "\n")
    doc = {"name": "x", "version": "1", "corpus": "corpus.jsonl", **top, "questions": questions}
    (work / "dataset.yaml").write_text(json.dumps(doc) + "\n" + noise)
    try:
        load_dataset(work / "dataset.yaml")
    except DatasetError as exc:
        assert all(len(p) < 400 for p in exc.problems)


def _corpus_dataset(root: Path, corpus: bytes) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    (root / "corpus.jsonl").write_bytes(corpus)
    (root / "dataset.yaml").write_text(
        "name: d\nversion: 1\ncorpus: corpus.jsonl\nquestions:\n"
        "  - {id: q1, question: a, reference_answer: r}\n"
    )
    return root / "dataset.yaml"


@pytest.mark.parametrize(
    ("line", "why"),
    [
        ('{"id": "a#1", "doc_id": "a", "text": "x\\ud800y"}', "lone surrogate"),
        ('{"id": "a#1", "doc_id": "a", "text": "t", "n": ' + "9" * 5000 + "}", "5000 characters"),
    ],
)
def test_a_corpus_line_the_bounded_reader_refuses_is_exit_2_with_file_and_line(
    tmp_path: Path, capsys, line: str, why: str
) -> None:
    """A lone surrogate crashed the hash (UnicodeEncodeError) and a 5,000-digit number the
    parser (ValueError), each with a traceback and exit 1."""
    path = _corpus_dataset(tmp_path, (line + "\n").encode())
    assert main(["validate", str(path)]) == 2
    err = capsys.readouterr().err
    assert f"{tmp_path / 'corpus.jsonl'}:1: " in err and why in err
    assert "Traceback" not in err


@settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    text=st.text(
        st.sampled_from(
            ["{", "}", '"', ":", ",", "[", "]", "\\", "u", "d", "8", "0", "9", "e", " "]
        )
        | st.characters(),
        max_size=60,
    )
)
def test_any_corpus_or_documents_file_is_a_dataset_or_one_dataset_error(tmp_path_factory, text):
    for name in ("corpus.jsonl", "documents.jsonl"):
        root = tmp_path_factory.mktemp("ds")
        (root / name).write_bytes(
            f'{{"id": "a#1", "doc_id": "a", "text": "t"}}\n{text}\n'.encode(
                "utf-8", "surrogatepass"
            )
        )
        key = name.split(".")[0]
        (root / "dataset.yaml").write_text(
            f"name: d\nversion: 1\n{key}: {name}\nquestions:\n"
            "  - {id: q1, question: a, reference_answer: r}\n"
        )
        try:
            load_dataset(root / "dataset.yaml")
        except DatasetError as exc:
            assert str(root) in str(exc) or any(str(root) in p for p in exc.problems)
