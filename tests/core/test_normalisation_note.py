"""Two texts that read the same but differ in Unicode normalisation (issue 35: a gold
quote in NFD against an NFC document printed two identical-looking strings) are shown
by the code points that differ."""

from __future__ import annotations

import re
import unicodedata
from pathlib import Path

import pytest
import yaml
from hypothesis import given
from hypothesis import strategies as st

from rageval_core.dataset import load_dataset
from rageval_core.errors import DatasetError, normalisation_note

DOC = "Le café ouvre à sept heures et ferme à midi."
NFD = unicodedata.normalize("NFD", "café ouvre à sept heures")


def _dataset(tmp_path: Path, span: dict) -> Path:
    (tmp_path / "documents.yaml").write_text(yaml.safe_dump([{"id": "d", "text": DOC}]))
    data = {
        "name": "nfc",
        "version": "1",
        "documents": "documents.yaml",
        "questions": [{"id": "q", "question": "When?", "gold_spans": [{"doc_id": "d", **span}]}],
    }
    path = tmp_path / "dataset.yaml"
    path.write_text(yaml.safe_dump(data, allow_unicode=True))
    return path


def test_offsets_whose_quote_is_in_another_normalisation_show_the_code_points(tmp_path):
    start = DOC.index("café")
    span = {"start": start, "end": start + len("café ouvre à sept heures"), "text": NFD}
    with pytest.raises(DatasetError, match=r"U\+00E9 against U\+0065 U\+0301"):
        load_dataset(_dataset(tmp_path, span))


def test_a_quote_found_only_in_another_normalisation_says_so_with_its_code_points(tmp_path):
    with pytest.raises(DatasetError, match=r"another Unicode normalisation.*U\+0301"):
        load_dataset(_dataset(tmp_path, {"text": NFD}))


def test_texts_that_differ_otherwise_get_no_note():
    assert normalisation_note("café", "cafe") == ""
    assert normalisation_note("café", "café") == ""


ACCENTED = st.text(alphabet="aeiouAEÅçñéèü\u0301\u0308 ", max_size=30)


@given(ACCENTED, ACCENTED, ACCENTED)
def test_the_code_points_shown_are_where_the_two_forms_differ(before, middle, after):
    nfc = unicodedata.normalize("NFC", before + middle + after)
    nfd = unicodedata.normalize("NFD", nfc)
    note = normalisation_note(nfc, nfd)
    if nfc == nfd:
        assert note == ""
        return
    m = re.search(r"first at character (\d+): ([U+0-9A-F ]+) against ([U+0-9A-F ]+) \(", note)
    assert m, note
    a, b = ("".join(chr(int(c[2:], 16)) for c in g.split()) for g in m.groups()[1:])
    at = int(m[1])
    assert a != b and nfc[at:].startswith(a) and nfd[at:].startswith(b)
    assert unicodedata.normalize("NFC", a) == unicodedata.normalize("NFC", b)
