"""The labels location: one new file per save, newest per key, bad lines reported by
file and line, notes scrubbed, read-only refused."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from rageval_core.errors import ConfigError
from rageval_core.labels import HumanLabel, LabelSet, LabelStore, labels_location
from rageval_core.labels import store as label_store
from rageval_core.runs.layout import LABELS_ENV
from tests.core.labels.helpers import label


def test_save_writes_one_new_file_per_save_under_dataset_and_reviewer(tmp_path):
    store = LabelStore(str(tmp_path / "labels"))
    first = store.save([label("q1", "Claim one.", "supported")])
    second = store.save([label("q1", "Claim one.", "unsupported", at="2026-02-02T00:00:00Z")])
    assert first != second
    files = sorted((tmp_path / "labels" / "qa" / "ann").glob("*.jsonl"))
    assert [str(f) for f in files] == sorted([first, second])
    assert json.loads(files[0].read_text().splitlines()[0])["claim"] == "Claim one."


def test_newest_label_per_key_wins_and_older_file_is_never_rewritten(tmp_path):
    store = LabelStore(str(tmp_path))
    path = store.save([label("q1", "Claim one.", "supported")])
    before = Path(path).read_bytes()
    store.save([label("q1", "claim ONE", "contradicted", at="2026-03-01T00:00:00Z")])
    store.save([label("q1", "Claim one.", "unsupported", reviewer="bob")])
    got = store.load()
    assert Path(path).read_bytes() == before
    assert {(lab.reviewer, lab.verdict) for lab in got.labels} == {
        ("ann", "contradicted"),
        ("bob", "unsupported"),
    }
    by_claim = got.for_question("a" * 64, "q1")
    assert set(by_claim) == {"claim one"}
    assert len(by_claim["claim one"]) == 2


def test_an_older_created_at_saved_later_does_not_win(tmp_path):
    store = LabelStore(str(tmp_path))
    store.save([label("q1", None, "fail", at="2026-05-01T00:00:00Z")])
    store.save([label("q1", None, "pass", at="2026-04-01T00:00:00Z")])
    (only,) = store.load().labels
    assert only.question_label == "fail"


def test_bad_lines_are_reported_with_file_and_line_and_the_rest_is_read(tmp_path):
    store = LabelStore(str(tmp_path))
    good = label("q1", "Fine.", "supported").to_line()
    bad_file = tmp_path / "qa" / "ann" / "x.jsonl"
    bad_file.parent.mkdir(parents=True)
    lines = [
        good,
        "{not json",
        json.dumps({**json.loads(good), "verdict": "maybe"}),
        "",
        json.dumps({**json.loads(good), "created_at": "yesterday"}),
        json.dumps([1, 2]),
        json.dumps({**json.loads(good), "reviewer": "a\x1bb"}),
    ]
    bad_file.write_text("\n".join(lines) + "\n")
    (tmp_path / "qa" / "ann" / "latin.jsonl").write_bytes(b"\xff\xfe")
    got = store.load()
    assert len(got.labels) == 1
    where = str(bad_file)
    assert any(p.startswith(f"{where}:2: not JSON") for p in got.problems)
    assert any(p.startswith(f"{where}:3: verdict must be") for p in got.problems)
    assert any(p.startswith(f"{where}:5: created_at") for p in got.problems)
    assert any(p.startswith(f"{where}:6: a label line must be a JSON object") for p in got.problems)
    assert any(p.startswith(f"{where}:7: reviewer name contains control") for p in got.problems)
    assert any("latin.jsonl: not UTF-8" in p for p in got.problems)


def test_notes_are_scrubbed_of_credentials_before_writing(tmp_path):
    store = LabelStore(str(tmp_path))
    path = store.save([label("q1", "C.", "supported", note="see api_key=sk1234567890abcdef")])
    text = Path(path).read_text()
    assert "sk1234567890abcdef" not in text
    assert "api_key=***" in text


def test_one_save_is_one_dataset_and_one_reviewer(tmp_path):
    store = LabelStore(str(tmp_path))
    with pytest.raises(ConfigError, match="one reviewer"):
        store.save([label("q1", "C.", "supported"), label("q2", "C.", "supported", "bob")])
    with pytest.raises(ConfigError, match="nothing to save"):
        store.save([])


def test_read_only_store_refuses_to_save_and_says_why(tmp_path):
    store = LabelStore(str(tmp_path), read_only=True)
    assert store.writable() == (False, "the dashboard was started read-only")
    with pytest.raises(ConfigError, match="read-only"):
        store.save([label("q1", "C.", "supported")])
    assert list(tmp_path.iterdir()) == []


def test_a_file_where_the_folder_should_be_is_not_writable(tmp_path):
    (tmp_path / "labels").write_text("not a folder")
    ok, why = LabelStore(str(tmp_path / "labels" / "sub")).writable()
    assert not ok and "not writable" in why


def test_labels_location_defaults(monkeypatch):
    monkeypatch.delenv(LABELS_ENV, raising=False)
    assert labels_location("/x/results") == "/x/labels"
    assert labels_location("/x/results/") == "/x/labels"
    assert labels_location("file:///x/results") == "/x/labels"
    assert labels_location("s3://b/p/results") == "s3://b/p/labels"
    assert labels_location("s3://b") == "s3://b/labels"
    assert labels_location("/x/results", "/y/l") == "/y/l"
    monkeypatch.setenv(LABELS_ENV, "s3://other/labels")
    assert labels_location("/x/results") == "s3://other/labels"


def test_missing_location_is_an_empty_set(tmp_path):
    assert LabelStore(str(tmp_path / "nothing")).load() == LabelSet()


def test_reload_reads_only_new_files(tmp_path, monkeypatch):
    store = LabelStore(str(tmp_path))
    store.save([label("q1", "C.", "supported")])
    store.load()
    opened = []
    real = label_store._read_local
    monkeypatch.setattr(label_store, "_read_local", lambda p: opened.append(p) or real(p))
    second = store.save([label("q2", "D.", "supported")])
    assert len(store.load().labels) == 2
    assert opened == [second]
    assert store.load() is store.load()  # nothing new: the same set, not merged again


@pytest.mark.parametrize(
    "change, message",
    [
        ({"claim": None, "verdict": "supported"}, "question_label"),
        ({"question_label": "pass"}, "not a question_label"),
        ({"reviewer": " "}, "empty"),
        ({"reviewer": "x" * 121}, "longer than 120"),
        ({"created_at": "2026-01-01T00:00:00"}, "no time zone"),
        ({"question_id": ""}, "question_id"),
    ],
)
def test_invalid_labels_cannot_be_built(change, message):
    base = label("q1", "C.", "supported").to_dict()
    with pytest.raises(ConfigError, match=message):
        HumanLabel(**{**base, **change})


def test_a_reload_merges_new_files_and_a_removed_file_takes_its_labels_along(tmp_path):
    store = LabelStore(str(tmp_path))
    first = store.save([label("q1", "C.", "supported"), label("q2", "D.", "supported")])
    assert len(store.load().labels) == 2
    store.save([label("q1", "C.", "contradicted", at="2026-03-01T00:00:00Z")])
    assert {lab.value for lab in store.load().labels} == {"contradicted", "supported"}
    store.save([label("q1", "C.", "unsupported", at="2025-01-01T00:00:00Z")])  # older
    assert {(lab.question_id, lab.value) for lab in store.load().labels} == {
        ("q1", "contradicted"),
        ("q2", "supported"),
    }
    Path(first).unlink()
    assert {(lab.question_id, lab.value) for lab in store.load().labels} == {("q1", "contradicted")}
