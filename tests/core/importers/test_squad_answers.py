"""SQuAD answers placed on word boundaries near `answer_start`, every fallback counted."""

from __future__ import annotations

import json
import re
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from rageval_core.cli import main
from rageval_core.dataset import load_dataset
from rageval_core.importers.squad import import_squad, locate_answer

CONTEXT = "Northwind ships in winter; goods in crates arrive in spring."


def _squad(tmp_path: Path, answers: list[tuple[str, int]]) -> Path:
    qas = [
        {"id": f"q{i}", "question": "Where?", "answers": [{"text": t, "answer_start": s}]}
        for i, (t, s) in enumerate(answers)
    ]
    path = tmp_path / "squad.json"
    path.write_text(
        json.dumps({"data": [{"title": "T", "paragraphs": [{"context": CONTEXT, "qas": qas}]}]})
    )
    return path


def test_an_answer_off_its_start_is_the_nearest_whole_word_and_counted(tmp_path: Path) -> None:
    at_crates = CONTEXT.index("in crates")
    path = _squad(
        tmp_path,
        [("in", at_crates + 1), ("in", -4), ("winter", 14), ("ships", 10), ("wind", 3)],
    )
    done = import_squad(path, tmp_path / "out")
    spans = {q.id: q.gold_spans for q in load_dataset(done.path).questions}
    # "in" asked one past "in crates": that one, never the "in" inside "Northwind"
    assert [(s.start, s.end) for s in spans["q0"]] == [(at_crates, at_crates + 2)]
    # a negative answer_start: the first whole-word "in", not dropped
    first = CONTEXT.index(" in ") + 1
    assert [(s.start, s.end) for s in spans["q1"]] == [(first, first + 2)]
    assert (done.at_start, done.moved, done.unplaced) == (1, ("q0", "q1", "q2"), ("q4",))
    assert spans["q4"] == ()  # "wind" only inside "Northwind"


def test_the_command_reports_each_fallback(tmp_path: Path, capsys) -> None:
    path = _squad(tmp_path, [("in", 3), ("ships", 10), ("wind", 20)])
    assert main(["import", "squad", str(path), "--out", str(tmp_path / "out")]) == 0
    out = capsys.readouterr().out
    assert "answers at their answer_start: 1" in out
    assert "1 not at their answer_start, placed at the nearest whole-word match: q0" in out
    assert "1 found nowhere on word boundaries: gold is their paragraph only: q2" in out


@settings(max_examples=300, deadline=None)
@given(
    words=st.lists(
        st.sampled_from(["in", "Northwind", "a", "ink", "in.", "tin", "—"]), max_size=12
    ),
    answer=st.sampled_from(["in", "a", "in.", "ink"]),
    start=st.one_of(st.none(), st.integers(-5, 80)),
)
def test_an_answer_is_at_its_start_or_the_nearest_whole_word(
    words: list[str], answer: str, start: int | None
) -> None:
    text = " ".join(words)
    at, exact = locate_answer(text, answer, start)
    whole = [m.start() for m in re.finditer(rf"(?<!\w){re.escape(answer)}(?!\w)", text)]
    if start is not None and start >= 0 and text[start : start + len(answer)] == answer:
        assert (at, exact) == (start, True)
    elif not whole:
        assert at is None
    else:
        assert not exact and at in whole
        assert abs(at - (start or 0)) == min(abs(w - (start or 0)) for w in whole)
