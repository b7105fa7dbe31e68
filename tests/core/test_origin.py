"""A run's origin as recorded in `config.origin` and shown on Runs: any config value
(damaged manifests included) gives a label, never an exception."""

from __future__ import annotations

import json
import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from rageval_core.origin import NATIVE, RunOrigin, origin_label


@pytest.mark.parametrize(
    "config, label",
    [
        (None, NATIVE),
        (math.nan, NATIVE),
        ("", NATIVE),
        ("{not json", NATIVE),
        ("[1, 2]", NATIVE),
        (json.dumps({"name": "bm25"}), NATIVE),
        (json.dumps({"origin": {"kind": "run"}}), NATIVE),
        (json.dumps({"origin": "ragas"}), NATIVE),
        (
            json.dumps({"origin": {"kind": "import", "tool": "ragas", "file": "s.csv"}}),
            "imported from ragas (s.csv)",
        ),
        (json.dumps({"origin": {"kind": "import", "tool": "inspect"}}), "imported from inspect"),
        (
            json.dumps({"origin": {"kind": "rescore", "tool": "offline", "source_run": "r1"}}),
            "rescore of r1 by offline",
        ),
        (
            json.dumps({"origin": {"kind": "writer", "tool": "nightly"}}),
            "written by nightly (writer)",
        ),
        ("[" * 5000 + "]" * 5000, NATIVE),
    ],
)
def test_labels(config, label):
    assert origin_label(config) == label


def test_round_trip_through_the_config():
    o = RunOrigin("import", "deepeval", "run.json", "ab" * 32, "4.3.1")
    assert RunOrigin.from_config({"origin": o.to_dict()}) == o
    assert "sha256" not in RunOrigin("writer", "h").to_dict()
    r = RunOrigin("rescore", "openai m", source_run="20261201-100000-x")
    assert RunOrigin.from_config({"origin": r.to_dict()}) == r


@given(
    st.recursive(
        st.none() | st.text() | st.integers() | st.booleans(),
        lambda c: st.lists(c) | st.dictionaries(st.text(), c),
        max_leaves=12,
    )
)
def test_any_json_config_gives_a_bounded_label(value):
    label = origin_label(json.dumps({"origin": value}))
    assert isinstance(label, str) and 0 < len(label) <= 120 and "\n" not in label
