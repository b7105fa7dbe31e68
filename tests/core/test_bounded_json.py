"""The bounded JSON reader: every JSON a user or tool hands us is either a value or one
`BadJSON` with a line and a reason, never RecursionError, OverflowError or a string that
cannot be written as UTF-8."""

from __future__ import annotations

import io
import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from rageval_core.bounded_json import BadJSON, Limits, load_file, loads, read_lines

JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(),
    lambda kids: st.lists(kids, max_size=4) | st.dictionaries(st.text(), kids, max_size=4),
    max_leaves=20,
)


@given(JSON)
def test_what_json_writes_reads_back(value):
    assert loads(json.dumps(value)) == value
    assert loads(json.dumps(value, ensure_ascii=False).encode()) == value


@given(st.text(alphabet='[]{}"\\:,0123456789eE.-+ \nabnrtu\ud800', max_size=300))
def test_any_text_is_a_value_or_bad_json(text):
    try:
        value = loads(text)
    except BadJSON as exc:
        assert exc.why and len(str(exc)) < 300
    else:
        json.dumps(value, ensure_ascii=False).encode("utf-8")  # writable as UTF-8


@pytest.mark.parametrize(
    ("text", "why"),
    [
        ("[" * 100_000 + "]" * 100_000, "nested deeper than 64"),
        ('{"a":' * 65 + "1" + "}" * 65, "nested deeper than 64"),
        ("[" * 100_000, "nested deeper than 64"),
        ("1" * 4000, "a number of 4000 characters"),
        ('{"m": -' + "9" * 500 + "}", "a number of 501 characters"),
        ('{"m": 1.' + "5" * 500 + "}", "a number of 502 characters"),
        ('"\\ud800"', "lone surrogate"),
        ('{"\\udc00": 1}', "lone surrogate"),
        ('{"a": 1,\n "b": }', "not valid JSON"),
        (b"\xff\xfe{}", "not UTF-8"),
    ],
)
def test_hostile_json_is_one_bad_json(text, why):
    with pytest.raises(BadJSON) as err:
        loads(text)
    assert why in err.value.why


def test_depth_at_the_limit_reads_and_brackets_inside_strings_do_not_count():
    assert loads("[" * 64 + "]" * 64) is not None
    assert loads(json.dumps({"x": "[" * 1000})) == {"x": "[" * 1000}
    assert loads('"\\ud83d\\ude00"') == "\U0001f600"  # a pair is a character


def test_a_parse_error_names_its_line_and_a_byte_order_mark_is_ignored(tmp_path):
    with pytest.raises(BadJSON) as err:
        loads('{\n"a": 1,\n}')
    assert err.value.line == 3 and err.value.at("f.json").startswith("f.json:3: not valid JSON")
    path = tmp_path / "bom.json"
    path.write_bytes(b'\xef\xbb\xbf{"a": 1}')
    assert load_file(path) == {"a": 1}


def test_read_lines_streams_and_reports_each_bad_line_by_number():
    data = b'\xef\xbb\xbf{"a": 1}\n\n[[[[1]]]]\n' + b"x" * 5000 + b"\n{oops\n" + b'{"b": 2}'
    got = list(read_lines(io.BytesIO(data), limits=Limits(depth=3, line_bytes=1000)))
    assert [n for n, _ in got] == [1, 3, 4, 5, 6]
    assert got[0][1] == {"a": 1} and got[-1][1] == {"b": 2}
    assert [v.why.split(" (")[0] for _, v in got[1:4]] == [
        "nested deeper than 3 levels",
        "line longer than 1000 bytes",
        "not valid JSON",
    ]
    assert all(v.line == n for n, v in got[1:4])
