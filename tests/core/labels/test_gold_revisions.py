"""to-gold writes the next version as the team wrote it: the file edited where gold
changed and nowhere else, gold placed where the run placed it, never a chunk id outside
the corpus, and never an invalid or half-written folder."""

from __future__ import annotations

import difflib
import shutil
from dataclasses import replace
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rageval_core import cli
from rageval_core.dataset import load_dataset, write_revision
from rageval_core.errors import ConfigError
from rageval_core.labels import LabelStore
from rageval_core.labels.gold import chunks_from_runs, plan_gold, write_gold
from tests.core.labels.helpers import EXAMPLE, chunk_label, write_jsonl
from tests.core.query.conftest import row, write_run

SENTENCE = "Pallets are wrapped twice before they leave the dock at night."


def changed_lines(before: Path, after: Path) -> tuple[list[str], list[str]]:
    diff = list(difflib.ndiff(before.read_text().splitlines(), after.read_text().splitlines()))
    return [d[2:] for d in diff if d.startswith("- ")], [d[2:] for d in diff if d.startswith("+ ")]


def test_to_gold_on_the_bundled_dataset_changes_only_gold_lines(tmp_path: Path, capsys) -> None:
    src = tmp_path / "v3"
    shutil.copytree(EXAMPLE.parent, src)
    ds = load_dataset(src / "dataset.yaml")
    q = next(q for q in ds.questions if len(q.gold_chunk_ids) == 1 and q.gold_spans)
    other = next(c.id for c in ds.corpus if c.id not in q.gold_chunk_ids and "@v1" not in c.id)
    LabelStore(str(tmp_path / "labels")).save(
        [chunk_label(q.id, other, True, dataset=ds.name, sha=ds.sha256)]
    )
    out = tmp_path / "v4"
    assert (
        cli.main(
            [
                "labels",
                "to-gold",
                "--dataset",
                str(src / "dataset.yaml"),
                "--labels",
                str(tmp_path / "labels"),
                "--results",
                str(tmp_path / "results"),
                "--out",
                str(out),
            ]
        )
        == 0
    ), capsys.readouterr().err
    removed, added = changed_lines(src / "dataset.yaml", out / "dataset.yaml")
    assert removed[0] == "version: 3" and added[0] == "version: 4"
    assert [r.split(":")[0].strip() for r in removed[1:]] == ["gold_chunk_ids", "gold_spans"]
    assert added[1].endswith(f"{q.gold_chunk_ids[0]}, {other}]")
    written = load_dataset(out / "dataset.yaml")
    assert {c.id for c in written.corpus} == {c.id for c in ds.corpus}
    assert (out / "corpus.jsonl").read_bytes() == (src / "corpus.jsonl").read_bytes()


def test_gold_is_where_the_run_placed_the_chunk_not_its_text_elsewhere(tmp_path: Path) -> None:
    """The same sentence is in documents A and B; the run placed its own chunk in B."""
    root = tmp_path / "ds"
    root.mkdir()
    write_jsonl(root / "corpus.jsonl", [{"id": "a#1", "doc_id": "a", "text": SENTENCE}])
    b_text = f"Preface.\n\n{SENTENCE}"
    write_jsonl(
        root / "documents.jsonl",
        [{"id": "a", "text": SENTENCE}, {"id": "b", "text": b_text}],
    )
    (root / "dataset.yaml").write_text(
        "name: qa\nversion: 1\ncorpus: corpus.jsonl\ndocuments: documents.jsonl\n"
        "questions:\n"
        "  - id: q1  # asked by the night shift\n"
        "    question: 'When are pallets wrapped?'\n"
        '    reference_answer: "twice"\n'
        "    gold_chunk_ids: [a#1]\n"
    )
    ds = load_dataset(root / "dataset.yaml")
    r = row("q1", retrieved=["own-3"], gold=["a#1"])
    start = b_text.index(SENTENCE)
    r.update(
        retrieved_texts=[SENTENCE],
        retrieved_doc_ids=["b"],
        retrieved_starts=[start],
        retrieved_ends=[start + len(SENTENCE)],
    )
    write_run(tmp_path / "results", "20260101-000000-own", [r])
    labels = [chunk_label("q1", "own-3", True, run_id="20260101-000000-own")]
    plan = plan_gold(ds, labels, retrieved=chunks_from_runs(str(tmp_path / "results"), labels, ds))
    (q,) = plan.questions
    assert [s.label for s in q.gold_spans] == [f"b:{start}-{start + len(SENTENCE)}"]
    assert q.gold_chunk_ids == ("a#1",)  # own-3 is no corpus chunk: gold by its span only
    path = write_gold(plan, tmp_path / "v2")
    text = path.read_text()
    assert "# asked by the night shift" in text and "'When are pallets wrapped?'" in text
    assert '"twice"' in text and "own-3" not in text
    assert f"text: {SENTENCE}" in text  # the new span's quote, for the reviewer


def test_a_version_that_does_not_read_back_leaves_nothing(tmp_path: Path) -> None:
    src = tmp_path / "v3"
    shutil.copytree(EXAMPLE.parent, src)
    ds = load_dataset(src / "dataset.yaml")
    out = tmp_path / "v4"
    with pytest.raises(ConfigError, match="does not read back as planned"):
        write_revision(ds, "4", ds.questions, out, expected_sha256="0" * 64)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["v3"]  # no out, no work folder
    write_revision(ds, "4", ds.questions, out)  # a rerun is not refused
    assert load_dataset(out / "dataset.yaml").version == "4"


STYLES = st.sampled_from(["plain", "single", "double"])


def quoted(text: str, style: str) -> str:
    return {"plain": text, "single": f"'{text}'", "double": f'"{text}"'}[style]


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    n=st.integers(1, 5),
    styles=st.lists(STYLES, min_size=5, max_size=5),
    flow=st.lists(st.booleans(), min_size=5, max_size=5),
    version=st.sampled_from(["1", "'1'", '"v1"', "2.1"]),
    touched=st.sets(st.integers(0, 4)),
)
def test_a_revision_changes_exactly_the_lines_of_the_changed_questions(
    tmp_path_factory, n, styles, flow, version, touched
) -> None:
    root = tmp_path_factory.mktemp("ds")
    write_jsonl(
        root / "corpus.jsonl",
        [{"id": f"c{i}", "doc_id": "d", "text": f"text {i}"} for i in range(6)],
    )
    lines = [f"# hand-written\nname: qa\nversion: {version}\ncorpus: corpus.jsonl\nquestions:"]
    for i in range(n):
        q = quoted(f"question {i}?", styles[i])
        if flow[i]:
            lines.append(
                f"  - {{id: q{i}, question: {q}, reference_answer: r, gold_chunk_ids: [c{i}]}}"
            )
        else:
            lines.append(
                f"  # question {i}\n  - id: q{i}\n    question: {q}\n"
                f"    reference_answer: r\n    gold_chunk_ids: [c{i}]"
            )
    (root / "dataset.yaml").write_text("\n".join(lines) + "\n")
    ds = load_dataset(root / "dataset.yaml")
    qs = [
        replace(q, gold_chunk_ids=(*q.gold_chunk_ids, "c5")) if i in touched else q
        for i, q in enumerate(ds.questions)
    ]
    out = root / "next"
    write_revision(ds, "7", qs, out)
    written = load_dataset(out / "dataset.yaml")
    assert written.questions == tuple(qs) and written.version == "7"
    removed, added = changed_lines(root / "dataset.yaml", out / "dataset.yaml")
    hit = sorted(i for i in touched if i < n)
    assert len(removed) == len(added) == 1 + len(hit)
    assert all("c5" in a for a in added[1:])
