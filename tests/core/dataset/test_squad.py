"""SQuAD v2 import: paragraphs become chunks, impossible questions unanswerable."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from rageval_core.dataset import load_dataset
from rageval_core.errors import ConfigError, DatasetError
from rageval_core.importers.squad import import_squad, slugify
from rageval_core.models import Chunk, GoldenQuestion, GoldSpan


def qa(qid: str, question: str, answers: list[str], impossible: bool = False) -> dict:
    return {
        "id": qid,
        "question": question,
        "answers": [{"text": a, "answer_start": 0} for a in answers],
        "is_impossible": impossible,
    }


SQUAD = {
    "version": "v2.0",
    "data": [
        {
            "title": "Normans",
            "paragraphs": [
                {
                    "context": "The Normans lived in Normandy, France.",
                    "qas": [
                        qa("n1", "Where is Normandy?", ["France", "in France"]),
                        qa("n2", "Who ruled Normandy in 1900?", [], impossible=True),
                    ],
                },
                {"context": "Rollo was their first ruler.", "qas": [qa("n3", "Who?", ["Rollo"])]},
            ],
        },
        {
            "title": "Sky_(Genève)",
            "paragraphs": [{"context": "Blue.", "qas": [qa("s1", "Colour?", ["Blue"])]}],
        },
        {"title": "sky genève", "paragraphs": [{"context": "Same slug.", "qas": []}]},
    ],
}


@pytest.fixture
def squad_file(tmp_path: Path) -> Path:
    path = tmp_path / "My SQuAD.json"
    path.write_text(json.dumps(SQUAD))
    return path


def test_import_writes_a_dataset_that_loads(squad_file: Path, tmp_path: Path) -> None:
    out = tmp_path / "out"
    assert import_squad(squad_file, out).path == out / "dataset.yaml"
    assert sorted(p.name for p in out.iterdir()) == [
        "corpus.jsonl",
        "dataset.yaml",
        "documents.jsonl",
    ]
    ds = load_dataset(out / "dataset.yaml")
    assert (ds.name, ds.version) == ("my-squad", "1")
    assert ds.corpus == (
        Chunk("normans#0", "normans", "The Normans lived in Normandy, France."),
        Chunk("normans#1", "normans", "Rollo was their first ruler."),
        Chunk("sky-geneve#0", "sky-geneve", "Blue."),
        Chunk("sky-geneve-2#0", "sky-geneve-2", "Same slug."),
    )
    # answers become spans of their article: at answer_start, or (all of these fixture
    # answers say 0) found in the paragraph
    normans = "The Normans lived in Normandy, France.\n\nRollo was their first ruler."
    assert [(d.id, d.text) for d in ds.documents][0] == ("normans", normans)
    span = GoldSpan
    assert ds.questions == (
        GoldenQuestion(
            "n1",
            "Where is Normandy?",
            "France",
            ("normans#0",),
            ("squad",),
            (span("normans", 31, 37),),
        ),
        GoldenQuestion("n2", "Who ruled Normandy in 1900?", None, (), ("squad", "unanswerable")),
        GoldenQuestion(
            "n3", "Who?", "Rollo", ("normans#1",), ("squad",), (span("normans", 40, 45),)
        ),
        GoldenQuestion(
            "s1", "Colour?", "Blue", ("sky-geneve#0",), ("squad",), (span("sky-geneve", 0, 4),)
        ),
    )
    assert normans[31:37] == "France" and normans[40:45] == "Rollo"


def test_existing_dataset_is_kept_unless_overwrite(squad_file: Path, tmp_path: Path) -> None:
    import_squad(squad_file, tmp_path, name="first")
    with pytest.raises(ConfigError, match="already exists"):
        import_squad(squad_file, tmp_path, name="second")
    assert load_dataset(tmp_path / "dataset.yaml").name == "first"
    import_squad(squad_file, tmp_path, name="second", overwrite=True)
    assert load_dataset(tmp_path / "dataset.yaml").name == "second"


@pytest.mark.parametrize(
    ("title", "slug"),
    [("Normans", "normans"), ("Sky_(United_Kingdom)", "sky-united-kingdom"), ("???", "doc")],
)
def test_slugify(title: str, slug: str) -> None:
    assert slugify(title) == slug


def test_bad_json_names_file_line_and_column(tmp_path: Path) -> None:
    path = tmp_path / "bad.json"
    path.write_text('{"data": [\n  {"title": }\n]}')
    with pytest.raises(DatasetError) as info:
        import_squad(path, tmp_path / "out")
    assert info.value.problems == [f"{path}:2: not valid JSON (Expecting value, column 13)"]
    assert not (tmp_path / "out").exists()


def test_missing_data_list(tmp_path: Path) -> None:
    path = tmp_path / "v.json"
    path.write_text('{"version": "v2.0"}')
    with pytest.raises(DatasetError) as info:
        import_squad(path, tmp_path / "out")
    assert info.value.problems == [f"{path}: expected a JSON object with a 'data' list of articles"]


def test_every_malformed_entry_is_listed(tmp_path: Path) -> None:
    path = tmp_path / "m.json"
    bad = {
        "data": [
            {"paragraphs": []},
            {
                "title": "T",
                "paragraphs": [
                    {"qas": []},
                    {"context": "c", "qas": [{"id": "x"}, qa("y", "Q?", []), qa("y", "Q?", ["a"])]},
                ],
            },
        ]
    }
    path.write_text(json.dumps(bad))
    with pytest.raises(DatasetError) as info:
        import_squad(path, tmp_path / "out")
    p = f"{path}: data[1].paragraphs"
    assert info.value.problems == [
        f"{path}: data[0]: an article needs 'title' and 'paragraphs'",
        f"{p}[0]: a paragraph needs 'context' and 'qas'",
        f"{p}[1].qas[0]: a question needs non-empty 'id' and 'question' strings",
        f"{p}[1].qas[1]: question y: an answerable question needs 'answers'",
    ]


def test_duplicate_squad_ids_are_reported(tmp_path: Path) -> None:
    path = tmp_path / "d.json"
    para = {"context": "c", "qas": [qa("y", "Q?", ["a"]), qa("y", "Q2?", ["b"])]}
    path.write_text(json.dumps({"data": [{"title": "T", "paragraphs": [para]}]}))
    with pytest.raises(DatasetError) as info:
        import_squad(path, tmp_path / "out")
    assert info.value.problems == [f"{path}: data[0].paragraphs[0].qas[1]: duplicate question id y"]


@pytest.mark.parametrize(
    ("data", "problem"),
    [
        ([], "no questions to import"),
        ([{"title": "T", "paragraphs": [{"context": "c", "qas": []}]}], "no questions to import"),
        (
            [{"title": "T", "paragraphs": [{"context": " ", "qas": [qa("y", "Q?", ["a"])]}]}],
            "data[0].paragraphs[0]: a paragraph needs a non-empty 'context'",
        ),
    ],
)
def test_nothing_is_written_when_the_result_would_not_load(
    tmp_path: Path, data: list, problem: str
) -> None:
    # Writing first and failing the load after left an invalid dataset.yaml behind, which
    # the next import then refused to replace without --force.
    path = tmp_path / "e.json"
    path.write_text(json.dumps({"version": "v2.0", "data": data}))
    with pytest.raises(DatasetError) as info:
        import_squad(path, tmp_path / "out")
    assert info.value.problems == [f"{path}: {problem}"]
    assert not (tmp_path / "out").exists()
