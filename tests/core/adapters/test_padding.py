"""No reward for padding (issue 32, item 3): LangChain's own fake chat models — one that
echoes the whole prompt, one that answers every question with the whole handbook —
beside an extractive app (it answers with the retrieved sentence closest to the
question), all offline through the same chain and the offline judge. Neither fake may
score above the extractive app on correctness or answer relevancy."""

from __future__ import annotations

import re

import pytest

import rageval_core
from tests.core.adapters import apps
from tests.core.adapters.apps import DOCUMENTS, need

PADDED = "Here is everything the handbook says. " + " ".join(DOCUMENTS.values())


def _words(text: str) -> set[str]:
    return set(re.findall(r"[a-z]+", text.lower()))


def extract(inputs: dict) -> str:
    """The retrieved sentence sharing the most words with the question."""
    question = _words(inputs["question"])
    return max((d.page_content for d in inputs["context"]), key=lambda s: len(question & _words(s)))


def chain(answerer, model: bool = True):
    """The documented \"return sources\" chain; `model`: `answerer` reads the prompt."""
    from langchain_core.output_parsers import StrOutputParser
    from langchain_core.prompts import ChatPromptTemplate
    from langchain_core.runnables import RunnableParallel, RunnablePassthrough

    prompt = ChatPromptTemplate.from_template(
        "Answer the question from the context only.\n\nContext:\n{context}\n\nQuestion: {question}"
    )

    def fill(inputs: dict) -> dict:
        """The prompt's variables: the chunks' texts, one paragraph each."""
        context = "\n\n".join(d.page_content for d in inputs["context"])
        return {"context": context, "question": inputs["question"]}

    answer = fill | prompt | answerer | StrOutputParser() if model else answerer
    return RunnableParallel(
        context=apps.langchain_retriever(4), question=RunnablePassthrough()
    ).assign(answer=answer)


def apps_under_test():
    from langchain_core.language_models.fake_chat_models import (
        FakeListChatModel,
        ParrotFakeChatModel,
    )
    from langchain_core.runnables import RunnableLambda

    return {
        "extractive": chain(RunnableLambda(extract), model=False),
        "parrot": chain(ParrotFakeChatModel()),
        "padded": chain(FakeListChatModel(responses=[PADDED])),
    }


@pytest.fixture(scope="module")
def means(tmp_path_factory):
    need("langchain")
    folder = tmp_path_factory.mktemp("padding")
    dataset = apps.write_dataset(
        folder / "data", apps.chunk_rows(apps.langchain_chunks(), "langchain")
    )
    out = {}
    for name, app in apps_under_test().items():
        run = rageval_core.evaluate(
            app, dataset, results=folder / "results", run_id=name, progress=False
        )
        rows = run.rows[run.rows["answerable"]]
        assert rows["error"].isna().all(), rows["error"].tolist()
        out[name] = (rows["answer_correctness"].mean(), rows["answer_relevancy"].mean())
    return out


@pytest.mark.parametrize("fake", ["parrot", "padded"])
def test_a_fake_that_pads_scores_below_the_extractive_app(means, fake):
    correctness, relevancy = means[fake]
    best_correctness, best_relevancy = means["extractive"]
    assert correctness < best_correctness, means
    assert relevancy < best_relevancy, means


def test_the_extractive_app_answers_well(means):
    assert means["extractive"][0] == 1.0 and means["extractive"][1] >= 0.75, means
