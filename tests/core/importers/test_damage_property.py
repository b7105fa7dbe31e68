"""Property: any one field of a real tool's file replaced by any JSON value gives either
a complete run or one SourceError — never another exception, never a half-written run."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rageval_core.errors import SourceError
from rageval_core.importers import import_run
from rageval_core.runs.reading import inspect_run
from tests.core.importers.conftest import FILES

JSON = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(2**70), 2**70)
    | st.floats(allow_nan=True, allow_infinity=True)
    | st.text(max_size=8),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3)
    ),
    max_leaves=8,
)


def paths(value, prefix=()):
    """Every place of a JSON document, as key/index tuples (the root excluded)."""
    items = (
        value.items()
        if isinstance(value, dict)
        else enumerate(value)
        if isinstance(value, list)
        else ()
    )
    for k, v in items:
        yield (*prefix, k)
        yield from paths(v, (*prefix, k))


def replaced(doc, where, value):
    doc = json.loads(json.dumps(doc))
    target = doc
    for k in where[:-1]:
        target = target[k]
    target[where[-1]] = value
    return doc


@pytest.mark.parametrize(
    "tool, kind",
    [("promptfoo", "promptfoo"), ("deepeval", "deepeval"), ("inspect", "inspect-json")],
)
def test_one_damaged_field_is_a_run_or_one_source_error(tool, kind):
    doc = json.loads(FILES[kind].read_text())
    # Inspect's events and messages are not read: damage only what an importer looks at.
    places = [p for p in paths(doc) if not {"events", "messages", "attachments"} & set(map(str, p))]

    @settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
    @given(where=st.sampled_from(places), value=JSON)
    def check(where, value):
        with tempfile.TemporaryDirectory() as d:
            path = Path(d) / f"file{FILES[kind].suffix}"
            path.write_text(json.dumps(replaced(doc, where, value)))
            results = Path(d) / "results"
            try:
                import_run(tool, path, results_dir=results, run_id="r")
            except SourceError as exc:
                assert str(path) in str(exc)
                assert not (results / "r").exists()
                return
            info = inspect_run(str(results), "r")
            assert info.ok and info.status == "complete", info.problems

    check()
