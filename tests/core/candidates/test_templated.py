"""The offline generator on real text nobody on the project wrote: the SQuAD sample's
Wikipedia articles and the Python standard library's own documentation. Every candidate
it makes validates as a dataset question; none is an exact duplicate; near-duplicates
stay under the bound docs/generate.md gives; the same documents give the same bytes."""

from __future__ import annotations

import inspect
import json
from itertools import combinations

import pytest

from rageval_core.candidates import ACCEPTED, read_candidates, write_outputs
from rageval_core.candidates.files import ACCEPTED_FILE, accepted_dataset
from rageval_core.candidates.generation import generate
from rageval_core.candidates.similarity import exact_key, similar, words
from rageval_core.cli import main
from rageval_core.dataset import load_dataset
from rageval_core.models import Document

NEAR_DUPLICATE_BOUND = 0.05  # docs/generate.md: "under 5% of the candidates"
STDLIB = (
    "json",
    "argparse",
    "pathlib",
    "collections",
    "functools",
    "itertools",
    "textwrap",
    "logging",
    "subprocess",
    "tarfile",
    "zipfile",
    "decimal",
    "datetime",
    "enum",
)


def stdlib_documents() -> tuple[Document, ...]:
    """Each module's documentation: its docstring and those of the public members it
    defines (the text is the installed Python's, written by its authors)."""
    docs = []
    for name in STDLIB:
        module = __import__(name)
        parts = [inspect.getdoc(module) or ""]
        for attr, member in sorted(vars(module).items()):
            mine = getattr(member, "__module__", "") or ""
            if attr.startswith("_") or not mine.startswith(name):
                continue
            if doc := inspect.getdoc(member):
                parts.append(f"{attr}\n\n{doc}")
        docs.append(Document(id=f"stdlib-{name}", text="\n\n".join(parts), title=name))
    return tuple(docs)


@pytest.fixture(scope="module", params=["squad", "stdlib"])
def corpus(request, squad_documents):
    return squad_documents if request.param == "squad" else stdlib_documents()


@pytest.fixture(scope="module")
def made(corpus):
    return generate(corpus, 120)


def test_every_candidate_validates_as_a_dataset_question(made, corpus, tmp_path) -> None:
    """Not only the accepted ones: every templated quote stands once and every id is new."""
    assert len(made.candidates) >= 100
    every = [c.__class__(**{**c.__dict__, "status": ACCEPTED}) for c in made.candidates]
    dataset = accepted_dataset("all", every)
    (tmp_path / "documents.jsonl").write_text(
        "".join(json.dumps({"id": d.id, "text": d.text}) + "\n" for d in corpus)
    )
    import yaml

    (tmp_path / "all.yaml").write_text(yaml.safe_dump(dataset, allow_unicode=True))
    ds = load_dataset(tmp_path / "all.yaml")
    assert len(ds.questions) == len(made.candidates)
    for q, c in zip(ds.questions, made.candidates, strict=True):
        (span,) = q.gold_spans
        assert (span.start, span.end) == (c.quotes[0].start, c.quotes[0].end)
        assert q.reference_answer in " ".join(c.quotes[0].text.split())


def test_every_candidate_passes_its_quote_and_support_checks(made) -> None:
    for c in made.candidates:
        checks = {ch.name: ch for ch in c.checks}
        assert checks["quotes"].passed, c
        assert checks["supported"].passed, c


def test_no_exact_duplicate_and_few_near_ones(made) -> None:
    accepted = [c for c in made.candidates if c.status == ACCEPTED]
    assert len(accepted) >= 0.75 * len(made.candidates)
    keys = [exact_key(c.question) for c in made.candidates]  # none asked twice, even rejected
    assert len(set(keys)) == len(keys)
    sets = [words(c.question) for c in made.candidates]
    near = {j for i, j in combinations(range(len(sets)), 2) if similar(sets[i], sets[j])}
    assert len(near) <= NEAR_DUPLICATE_BOUND * len(sets), len(near)
    accepted_sets = [words(c.question) for c in accepted]
    assert not any(similar(a, b) for a, b in combinations(accepted_sets, 2))


def test_it_spreads_over_documents_and_kinds(made, corpus) -> None:
    assert made.coverage.documents_covered == len(corpus)
    assert {c.kind for c in made.candidates} == {"definition", "number", "name"}


def test_the_folder_it_writes_validates_and_reads_back(made, corpus, tmp_path, capsys) -> None:
    write_outputs(tmp_path, "gen", made.candidates, corpus, made.report)
    assert main(["validate", str(tmp_path / ACCEPTED_FILE)]) == 0
    n = sum(c.status == ACCEPTED for c in made.candidates)
    assert f"{n} questions (0 unanswerable)" in capsys.readouterr().out
    assert read_candidates(tmp_path / "candidates.jsonl") == made.candidates


def test_the_same_documents_give_the_same_bytes(squad_documents, tmp_path) -> None:
    for folder in ("a", "b"):
        made = generate(squad_documents, 40)
        report = {**made.report, "seconds": {}}
        write_outputs(tmp_path / folder, "gen", made.candidates, squad_documents, report)
    for file in ("candidates.jsonl", "accepted.yaml", "report.json"):
        assert (tmp_path / "a" / file).read_bytes() == (tmp_path / "b" / file).read_bytes()
