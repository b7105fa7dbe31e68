"""The report's script and figures (rageval_core/report.py): the bundled plotly.js is the
version plotly.py writes figures for, and no text in a figure can end its script element."""

from __future__ import annotations

import gzip
import json
import re

import plotly.graph_objects as go
from hypothesis import given, settings
from hypothesis import strategies as st
from plotly.offline import get_plotlyjs_version

from rageval_core.report import PLOTLY_JS, _figure_html


def test_the_bundled_plotly_js_is_the_version_plotly_py_writes_for():
    head = gzip.decompress(PLOTLY_JS.read_bytes())[:200].decode()
    assert re.search(r"plotly\.js \(cartesian - minified\) v(\S+)", head)[1] == (
        get_plotlyjs_version()
    )
    assert (PLOTLY_JS.parent / "plotly-LICENSE.txt").read_text().startswith("MIT License")


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=40).map(lambda t: t + "</script><!--<script>"))
def test_no_text_in_a_figure_ends_its_script_element(text):
    html = _figure_html(go.Figure(go.Bar(x=[text], y=[1]), layout={"title": text}))
    assert html.count("</script") == 1 and html.endswith("</script>")
    assert "<!--" not in html.split('class="fig">', 1)[1]
    spec = json.loads(html.split('class="fig">', 1)[1].removesuffix("</script>"))
    assert spec["data"][0]["x"] == [text] and spec["layout"]["title"]["text"] == text
