"""Each check of a candidate, on real paragraphs, with its reason kept."""

from __future__ import annotations

from rageval_core.candidates.checks import Vocabulary, verify
from rageval_core.candidates.coverage import coverage
from rageval_core.candidates.documents import sections, source
from rageval_core.candidates.model import ACCEPTED, REJECTED, Candidate, Quote


def make(docs, kind, question, reference, *quotes) -> Candidate:
    by_id = {d.id: d for d in docs}
    return Candidate(
        id=f"c{abs(hash(question)) % 10**8}",
        kind=kind,
        question=question,
        reference_answer=reference,
        quotes=tuple(Quote(d, t) for d, t in quotes),
        sources=tuple(source(by_id[d]) for d, _ in quotes if d in by_id),
        generator="test",
    )


def check(docs, *candidates, existing=()):
    return verify(candidates, docs, Vocabulary.of(docs), existing=existing)[0]


def checks_of(c: Candidate) -> dict[str, tuple[bool, str]]:
    return {ch.name: (ch.passed, ch.detail) for ch in c.checks}


NORMANS = "normans"
ROLLO = (
    "The descendants of Rollo's Vikings and their Frankish wives would replace the Norse religion"
)


def test_a_good_single_fact_is_accepted_with_every_check_said(squad_documents) -> None:
    (c,) = check(
        squad_documents,
        make(squad_documents, "single-fact", "Whose descendants replaced the Norse religion?",
             "The descendants of Rollo's Vikings", (NORMANS, ROLLO)),
    )  # fmt: skip
    assert c.status == ACCEPTED, c.reasons
    assert set(checks_of(c)) == {"quotes", "supported", "specific", "duplicate"}
    assert c.quotes[0].start is not None
    doc = squad_documents[0].text
    assert doc[c.quotes[0].start : c.quotes[0].end] == ROLLO


def test_a_quote_the_document_lacks_or_holds_twice_is_rejected_with_where(squad_documents) -> None:
    missing, twice, other_doc = check(
        squad_documents,
        make(squad_documents, "single-fact", "Who conquered Normandy in 1066?", "Rollo",
             (NORMANS, "Rollo conquered Normandy in 1066.")),
        make(squad_documents, "single-fact", "Which people are the Normans named after?",
             "Normans", (NORMANS, "Normans")),
        make(squad_documents, "single-fact", "Whose descendants replaced the Norse religion?",
             "Rollo's Vikings", ("no-such-doc", ROLLO)),
    )  # fmt: skip
    assert missing.status == twice.status == other_doc.status == REJECTED
    assert "is not in 'normans'" in checks_of(missing)["quotes"][1]
    assert "found more than once in 'normans' (at " in checks_of(twice)["quotes"][1]
    assert "'no-such-doc' is not in the documents" in checks_of(other_doc)["quotes"][1]
    assert not checks_of(missing)["supported"][0]


def test_a_reference_the_quote_does_not_support_is_rejected(squad_documents) -> None:
    (c,) = check(
        squad_documents,
        make(squad_documents, "single-fact", "Whose descendants replaced the Norse religion?",
             "The descendants of the Saxon kings", (NORMANS, ROLLO)),
    )  # fmt: skip
    passed, detail = checks_of(c)["supported"]
    assert not passed and "saxon" in detail.lower()
    assert c.reasons == (f"supported: {detail}",)


def test_a_generic_question_is_rejected(squad_documents) -> None:
    (c,) = check(
        squad_documents,
        make(squad_documents, "single-fact", "What is this document about?", "Rollo's Vikings",
             (NORMANS, ROLLO)),
    )  # fmt: skip
    passed, detail = checks_of(c)["specific"]
    assert not passed and detail.startswith("generic")


def test_multi_hop_needs_two_documents(squad_documents) -> None:
    one, two = check(
        squad_documents,
        make(squad_documents, "multi-hop", "Whose descendants replaced the Norse religion?",
             "Rollo's Vikings", (NORMANS, ROLLO)),
        make(squad_documents, "multi-hop",
             "Which Vikings' descendants replaced the Norse religion, and what does complexity "
             "theory classify?",
             "Rollo's Vikings; computational problems",
             (NORMANS, ROLLO),
             ("computational-complexity-theory",
              "Computational complexity theory is a branch of the theory of computation")),
    )  # fmt: skip
    assert "needs quotes in two documents" in checks_of(one)["quotes"][1]
    assert checks_of(two)["quotes"][0]


def test_unanswerable_near_misses_are_checked_against_every_document(squad_documents) -> None:
    near_miss, answerable = check(
        squad_documents,
        make(squad_documents, "unanswerable",
             "Whose descendants replaced the Norse religion in Japan?",
             "No document mentions Japan.", (NORMANS, ROLLO)),
        make(squad_documents, "unanswerable", "Whose descendants replaced the Norse religion?",
             "None.", (NORMANS, ROLLO)),
    )  # fmt: skip
    assert checks_of(near_miss)["unanswerable"][0], near_miss.reasons
    assert "none of the 2 documents answers it" in checks_of(near_miss)["unanswerable"][1]
    passed, detail = checks_of(answerable)["unanswerable"]
    assert not passed and detail.startswith("'normans' may answer it: 'The descendants of Rollo")


def test_duplicates_of_the_dataset_and_of_each_other_are_rejected(squad_documents) -> None:
    q = "Whose descendants replaced the Norse religion?"
    first, exact, near, of_dataset = check(
        squad_documents,
        make(squad_documents, "single-fact", q, "Rollo's Vikings", (NORMANS, ROLLO)),
        make(squad_documents, "single-fact", "whose descendants  replaced the Norse religion",
             "Rollo's Vikings", (NORMANS, ROLLO)),
        make(squad_documents, "single-fact", "Whose descendant replaced Norse religions?",
             "Rollo's Vikings", (NORMANS, ROLLO)),
        make(squad_documents, "single-fact", "What did the Normans' Frankish wives replace?",
             "the Norse religion", (NORMANS, ROLLO)),
        existing=[("q7", "What religion did the Frankish wives of the Normans replace?")],
    )  # fmt: skip
    assert first.status == ACCEPTED
    assert checks_of(exact)["duplicate"] == (False, f"the same question as {first.id}")
    assert checks_of(near)["duplicate"] == (False, f"near {first.id} (Jaccard 1.00)")
    passed, detail = checks_of(of_dataset)["duplicate"]
    assert not passed and detail.startswith("near q7 (Jaccard 0.8")


def test_a_rejected_candidate_makes_no_later_one_a_duplicate(squad_documents) -> None:
    q = "Whose descendants replaced the Norse religion?"
    bad, good = check(
        squad_documents,
        make(squad_documents, "single-fact", q, "Rollo's Vikings", (NORMANS, "not there")),
        make(squad_documents, "single-fact", q, "Rollo's Vikings", (NORMANS, ROLLO)),
    )  # fmt: skip
    assert bad.status == REJECTED and good.status == ACCEPTED


def test_user_vocabulary_shares_few_words_with_its_quote(squad_documents) -> None:
    echo, own_words = check(
        squad_documents,
        make(squad_documents, "user-vocabulary", "Whose descendants replaced the Norse religion?",
             "Rollo's Vikings", (NORMANS, ROLLO)),
        make(squad_documents, "user-vocabulary", "Which Viking lot's kids ditched the old gods?",
             "Rollo's Vikings", (NORMANS, ROLLO)),
    )  # fmt: skip
    assert not checks_of(echo)["paraphrased"][0]
    assert checks_of(own_words)["paraphrased"][0], own_words.reasons


def test_coverage_counts_documents_and_sections_of_accepted_candidates(squad_documents) -> None:
    checked = check(
        squad_documents,
        make(squad_documents, "single-fact", "Whose descendants replaced the Norse religion?",
             "Rollo's Vikings", (NORMANS, ROLLO)),
        make(squad_documents, "single-fact", "Who is this about?", "Rollo", (NORMANS, ROLLO)),
    )  # fmt: skip
    cover = coverage(checked, squad_documents)
    assert (cover.documents, cover.documents_covered) == (2, 1)
    assert cover.sections == 87  # the SQuAD sample's paragraphs
    assert cover.sections_covered == 1
    assert cover.uncovered_documents == ("computational-complexity-theory",)
    assert cover.line().startswith("coverage: 1 of 2 documents, 1 of 87 sections (uncovered: ")


def test_sections_are_headings_else_paragraphs() -> None:
    text = "# A\nx\n\ny\n## B\nz\n"
    assert [text[a:b] for a, b in sections(text)] == ["# A\nx\n\ny\n", "## B\nz\n"]
    plain = "one\n\n\ntwo\n  \nthree"
    assert [plain[a:b].strip() for a, b in sections(plain)] == ["one", "two", "three"]
