"""A framework object whose retriever returns the wrong type (issue 35: a Haystack
retriever returning strings gave "AttributeError: 'str' object has no attribute
'content'") is refused naming the type it got and the one expected, per framework."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rageval_core.adapters import adapt
from rageval_core.errors import PipelineError
from tests.core.adapters.apps import need

STRINGS = ["Glaciers carve U-shaped valleys.", "Rivers cut V-shaped valleys."]


def haystack_pipeline():
    need("haystack")
    from haystack import Pipeline, component

    @component
    class Strings:
        @component.output_types(documents=list[str])
        def run(self, query: str) -> dict:
            return {"documents": STRINGS}

    p = Pipeline()
    p.add_component("retriever", Strings())
    return p


def llamaindex_engine():
    need("llamaindex")
    from llama_index.core.base.response.schema import Response
    from llama_index.core.query_engine import CustomQueryEngine

    class Strings(CustomQueryEngine):
        def custom_query(self, query_str: str) -> Response:
            return Response(response="U-shaped.", source_nodes=STRINGS)

    return Strings()


def langchain_runnable():
    need("langchain")
    from langchain_core.runnables import RunnableLambda

    return RunnableLambda(lambda q: STRINGS)


@pytest.mark.parametrize(
    "build, expected",
    [
        (haystack_pipeline, "rank 1 has type str, expected haystack's Document"),
        (llamaindex_engine, "rank 1 has type str, expected llama_index's NodeWithScore"),
        (langchain_runnable, "rank 1 has type str, expected langchain_core's Document"),
    ],
)
def test_a_retriever_returning_strings_names_the_type_it_got_and_the_one_expected(build, expected):
    pipeline = adapt(build())
    with pytest.raises(PipelineError, match=expected) as caught:
        pipeline("How do glaciers shape valleys?")
    assert "object has no attribute" not in str(caught.value)


def test_a_haystack_documents_output_that_is_no_list_says_what_it_is():
    need("haystack")
    from haystack import Pipeline, component

    @component
    class OneString:
        @component.output_types(documents=str)
        def run(self, query: str) -> dict:
            return {"documents": STRINGS[0]}

    p = Pipeline()
    p.add_component("retriever", OneString())
    with pytest.raises(PipelineError, match="got type str, expected a list of haystack's Document"):
        adapt(p)("How?")


VALUES = st.one_of(
    st.none(),
    st.integers(),
    st.floats(),
    st.text(),
    st.binary(),
    st.booleans(),
    st.dictionaries(st.text(), st.integers()),
    st.tuples(st.integers()),
)


@settings(max_examples=60, deadline=None)
@given(st.one_of(VALUES, st.lists(VALUES, min_size=1)))
def test_any_wrong_value_is_named_by_its_type_never_an_attribute_error(value):
    pipeline = adapt(haystack_pipeline())
    pipeline.pipeline.get_component("retriever").run = lambda query: {"documents": value}
    if value is None or value == []:
        return  # no documents: an empty retrieval, not a mistake
    with pytest.raises(
        PipelineError, match=r"(got|has) type \w+, expected (a list of )?haystack's Document"
    ):
        pipeline("How?")
