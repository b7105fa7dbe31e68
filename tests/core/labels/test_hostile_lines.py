"""Label lines a careless or hostile writer leaves (issue 23): a non-text claim, nesting
deep under the size limit, a lone surrogate, a byte-order mark. Each is one problem line
naming file and line; the other labels still load, become an Arrow table, and every
command over them (calibrate, labels export) runs."""

from __future__ import annotations

import json
import os

import pytest

from rageval_core.labels import LabelStore
from tests.core.labels.helpers import GOOD, HOSTILE, R1, run_cli


@pytest.mark.parametrize("name", sorted(HOSTILE))
def test_a_hostile_line_is_a_problem_and_the_rest_loads(tmp_path, name):
    folder = tmp_path / "labels" / "qa" / "eve"
    folder.mkdir(parents=True)
    path = folder / "x.jsonl"
    path.write_text(json.dumps(GOOD) + "\n" + HOSTILE[name] + "\n", encoding="utf-8")
    got = LabelStore(str(tmp_path / "labels")).load()
    assert [lab.question_id for lab in got.labels] == ["q9"]
    assert len(got.problems) == 1 and got.problems[0].startswith(f"{path}:2: ")
    assert len(got.problems[0]) <= 300
    assert got.table.num_rows == 1  # Arrow takes every label that loaded


def test_a_byte_order_mark_does_not_spoil_the_first_line(tmp_path):
    folder = tmp_path / "qa" / "eve"
    folder.mkdir(parents=True)
    (folder / "bom.jsonl").write_bytes(b"\xef\xbb\xbf" + json.dumps(GOOD).encode() + b"\n")
    got = LabelStore(str(tmp_path)).load()
    assert got.problems == () and len(got.labels) == 1


@pytest.mark.parametrize("name", ["claim-number", "deep", "note-surrogate"])
def test_commands_over_a_hostile_line_run_and_warn(project, name):
    bad = project / "labels" / "qa" / "ann" / "hostile.jsonl"
    bad.write_text(HOSTILE[name] + "\n")
    code, out, err = run_cli("calibrate", "--run", R1, "--results", str(project / "results"))
    assert code == 0 and f"{bad}:1: " in err and "Traceback" not in err
    out_file = project / "labels.csv"
    code, _, err = run_cli(
        "labels", "export", "--results", str(project / "results"), "--out", str(out_file)
    )
    assert code == 0 and out_file.read_text().count("\n") == 7


@pytest.mark.parametrize("note", [" =1+1", "\n=1+1", "\uff1d1+1", "\u3000+1", "\t-1", "=1"])
def test_csv_export_prefixes_formulas_behind_space_and_in_full_width(note):
    from rageval_core.labels.export import to_csv
    from tests.core.labels.helpers import label

    out = to_csv([label("q1", "A claim.", "supported", note=note)])
    assert f"'{note}" in out
    assert "'A claim." not in out  # a plain cell is left alone


def test_an_unwritable_labels_folder_says_so_before_a_save(tmp_path):
    """A real write decides, not permission bits: root ignores them, a read-only mount
    (here /proc, which nobody may create files in) does not show in them."""
    from rageval_core.errors import ConfigError
    from tests.core.labels.helpers import label

    locked = tmp_path / "locked"
    locked.mkdir()
    locked.chmod(0o500)
    places = ["/proc/rageval-labels"] + ([str(locked / "labels")] if os.geteuid() else [])
    try:
        for where in places:
            store = LabelStore(where)
            ok, why = store.writable()
            assert not ok and "is not writable" in why, where
            with pytest.raises(ConfigError, match="labels cannot be saved"):
                store.save([label("q1", "A claim.", "supported")])
    finally:
        locked.chmod(0o700)
    assert LabelStore(str(tmp_path / "fine")).writable() == (True, "")
    assert list(tmp_path.iterdir()) == [locked]  # the check leaves nothing behind
