"""The dashboard against a results bucket: every page renders, nothing is written there."""

from __future__ import annotations

from pathlib import Path

import boto3
import pytest
import streamlit as st
from streamlit.testing.v1 import AppTest

from rageval_core.runs.layout import RESULTS_ENV
from rageval_core.runs.remote import upload_run

ENTRY = str(Path(__file__).resolve().parents[2] / "dashboard" / "streamlit_app.py")
PAGES = ["runs", "diagnose", "tails", "retrieval", "cost", "compare", "question"]


def objects(bucket: str) -> dict[str, str]:
    s3 = boto3.client("s3")
    pages = s3.get_paginator("list_objects_v2").paginate(Bucket=bucket)
    return {o["Key"]: o["ETag"] for page in pages for o in page.get("Contents", [])}


@pytest.fixture
def bucket_results(bucket, demo_results, monkeypatch, tmp_path):
    location = f"s3://{bucket}/results"
    ids = sorted(p.name for p in demo_results.iterdir() if not p.name.startswith("."))
    for run_id in ids:
        upload_run(demo_results / run_id, location, run_id)
    monkeypatch.setenv(RESULTS_ENV, location)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    st.cache_data.clear()
    st.cache_resource.clear()
    before = objects(bucket)
    yield ids
    assert objects(bucket) == before, "the dashboard wrote into the results bucket"


def test_every_page_renders_from_the_bucket(bucket_results):
    ids = bucket_results
    at = AppTest.from_file(ENTRY, default_timeout=60)
    at.query_params["run"] = ids[-1]
    at.run()
    assert not at.exception, at.exception
    charts = 0
    for page in PAGES:
        at.query_params.clear()
        at.query_params.update(
            {"run": ids[-1], "baseline": ids[-2], "runs": [ids[-2], ids[-1]], "question": "q001"}
        )
        at.switch_page(f"app_pages/{page}.py").run()
        assert not at.exception, (page, at.exception)
        body = " ".join(str(e.value) for e in (*at.markdown, *at.title, *at.header, *at.subheader))
        assert body.strip(), page
        assert not [w.value for w in at.warning if "could not be read" in str(w.value)], page
        charts += len(at.get("plotly_chart"))
    assert charts >= len(PAGES) - 1  # data really came from the bucket
    # The runs page shows every run that is in the bucket.
    at.query_params.clear()
    at.switch_page("app_pages/runs.py").run()
    shown = " ".join(str(df.value.to_csv()) for df in at.dataframe)
    assert all(run_id in shown for run_id in ids)
