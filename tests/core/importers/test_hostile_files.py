"""Importer input a hostile or careless user hands us (issue 23): each is one SourceError
naming the file (and line or member), exit 2, nothing written, and memory bounded by the
limits rather than by what the file claims."""

from __future__ import annotations

import json
import struct
import tracemalloc
import zipfile
from pathlib import Path

import pytest

from rageval_core.cli import main
from rageval_core.errors import SourceError
from rageval_core.importers import import_run, inspect_log
from tests.core.importers.conftest import FILES, nothing_written

DEEP = "[" * 50_000 + "]" * 50_000


def _import(tool: str, path: Path, tmp_path: Path) -> str:
    with pytest.raises(SourceError) as err:
        import_run(tool, path, results_dir=tmp_path / "results", run_id="r")
    nothing_written(tmp_path / "results")
    message = str(err.value)
    assert str(path) in message and len(message) < 400, message
    return message


@pytest.mark.parametrize(
    ("tool", "name", "text"),
    [
        ("promptfoo", "p.json", '{"results": {"results": ' + DEEP + "}}"),
        ("deepeval", "d.json", '{"testCases": [' + DEEP + "]}"),
        ("inspect", "i.json", '{"eval": {}, "samples": [' + DEEP + "]}"),
        ("ragas", "r.jsonl", '{"user_input": "q"}\n{"user_input": ' + DEEP + "}\n"),
    ],
)
def test_deep_json_is_one_error_in_every_importer(tool, name, text, tmp_path):
    path = tmp_path / name
    path.write_text(text)
    assert "nested deeper than 64 levels" in _import(tool, path, tmp_path)


def test_a_4000_digit_metric_is_an_error_not_an_overflow(tmp_path):
    path = tmp_path / "big.jsonl"
    path.write_text('{"user_input": "q1", "faithfulness": 0.5}\n')
    path.write_text(path.read_text() + '{"user_input": "q2", "faithfulness": ' + "9" * 4000 + "}\n")
    message = _import("ragas", path, tmp_path)
    assert f"{path}:2: a number of 4000 characters" in message


def test_a_huge_integer_from_a_reader_without_bounds_is_an_error(tmp_path):
    from rageval_core.importers.common import number

    with pytest.raises(SourceError, match="too large a number"):
        number(10**4000, "f.json", "x")


def test_a_csv_with_an_unterminated_quote_is_refused_not_cut_short(tmp_path):
    lines = FILES["ragas"].read_text(encoding="utf-8").splitlines(keepends=True)
    path = tmp_path / "cut.csv"
    path.write_text("".join(lines[:4]) + "Who founded it?,\"['Northwind was founded", "utf-8")
    assert "not valid CSV (unexpected end of data)" in _import("ragas", path, tmp_path)
    code = main(["import", "ragas", str(path), "--results", str(tmp_path / "results")])
    assert code == 2


def test_pandas_index_column_names_the_file_and_column(tmp_path):
    lines = FILES["ragas"].read_text(encoding="utf-8").splitlines(keepends=True)
    path = tmp_path / "indexed.csv"
    path.write_text(
        "," + lines[0] + "".join(f"{i}," + line for i, line in enumerate(lines[1:])), "utf-8"
    )
    message = _import("ragas", path, tmp_path)
    assert f"{path}:1: column 1 has no name (pandas' index column?" in message


def test_a_csv_with_a_byte_order_mark_reads_as_without(tmp_path):
    path = tmp_path / "bom.csv"
    path.write_bytes(b"\xef\xbb\xbf" + FILES["ragas"].read_bytes())
    run = import_run("ragas", path, results_dir=tmp_path / "results", run_id="r")
    assert run.totals.get("n_questions", 10) == 10


def _eval_with(path: Path, members: dict[str, bytes]) -> Path:
    """A deflated .eval: the fixture's header, then `members`."""
    log = json.loads(FILES["inspect-json"].read_text())
    header = {k: v for k, v in log.items() if k != "samples"}
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_DEFLATED) as z:
        z.writestr("header.json", json.dumps(header))
        for name, data in members.items():
            z.writestr(name, data)
    return path


def _copy_zstd(src: Path, dst: Path) -> Path:
    dst.write_bytes(src.read_bytes())
    return dst


def _import_with_peak(path, tmp_path) -> tuple[str, int]:
    """The Inspect import's error message and the peak memory Python allocated for it."""
    tracemalloc.start()
    try:
        return _import("inspect", path, tmp_path), tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def test_many_members_under_the_member_limit_cannot_add_up(tmp_path, monkeypatch):
    monkeypatch.setattr(inspect_log, "MAX_MEMBER", 1 << 20)
    monkeypatch.setattr(inspect_log, "MAX_TOTAL", 3 << 20)
    pad = b'{"id": "x", "pad": "' + b" " * (900 << 10) + b'"}'
    members = {f"samples/z{i:02}_epoch_1.json": pad for i in range(12)}
    path = _eval_with(tmp_path / "many.eval", members)
    message, peak = _import_with_peak(path, tmp_path)
    assert "more than a sample holds" in message and "left of the log's" in message
    assert peak < 12 << 20  # never all twelve at once (10.8 MB of members)


def _claim_size(path: Path, member: str, size: int) -> None:
    """Rewrite the uncompressed size the central directory gives `member`."""
    data = bytearray(path.read_bytes())
    at = 0
    while (at := data.find(b"PK\x01\x02", at)) != -1:
        name_len = struct.unpack("<H", data[at + 28 : at + 30])[0]
        if data[at + 46 : at + 46 + name_len] == member.encode():
            data[at + 24 : at + 28] = struct.pack("<I", size)
        at += 4
    path.write_bytes(bytes(data))


def test_a_member_lying_about_its_size_stops_at_the_claim(tmp_path):
    zeros = b'{"id": "' + b"0" * (50 << 20) + b'"}'
    path = _eval_with(tmp_path / "lie.eval", {"samples/zz_epoch_1.json": zeros})
    _claim_size(path, "samples/zz_epoch_1.json", 100)
    message, peak = _import_with_peak(path, tmp_path)
    assert "samples/zz_epoch_1.json" in message
    assert peak < 8 << 20, peak  # not the 50 MB it inflates to


def test_a_zstd_member_lying_about_its_size_is_refused(tmp_path):
    path = _copy_zstd(FILES["inspect"], tmp_path / "zstd.eval")
    _claim_size(path, "header.json", 100)
    assert "header.json inflates past its declared 100 bytes" in _import("inspect", path, tmp_path)


def test_a_zstd_member_with_a_wrong_crc_is_refused(tmp_path):
    path = _copy_zstd(FILES["inspect"], tmp_path / "crc.eval")
    data = bytearray(path.read_bytes())
    at = data.find(b"PK\x01\x02")
    while at != -1:
        name_len = struct.unpack("<H", data[at + 28 : at + 30])[0]
        if data[at + 46 : at + 46 + name_len] == b"header.json":
            data[at + 16 : at + 20] = b"\0\0\0\0"
        at = data.find(b"PK\x01\x02", at + 4)
    path.write_bytes(bytes(data))
    assert "header.json is damaged (size or CRC-32" in _import("inspect", path, tmp_path)


def test_bad_importer_input_exits_2(tmp_path, capsys):
    path = tmp_path / "p.json"
    path.write_text(json.dumps({"results": {"results": [{"response": {"output": 5}}]}}))
    assert main(["import", "promptfoo", str(path), "--results", str(tmp_path / "res")]) == 2
    assert "response.output" in capsys.readouterr().err
