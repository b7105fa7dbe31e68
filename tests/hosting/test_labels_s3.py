"""Labels on a bucket (moto S3 on loopback) work as a folder does: a save on the Question
page is one new object under the labels prefix, it shows at once and after a fresh
session, the Judge page counts it, and the results bucket is never written."""

from __future__ import annotations

import json
from pathlib import Path

import boto3
import pytest
import streamlit as st
from streamlit.testing.v1 import AppTest

from dashboard.pages import PAGES
from rageval_core.labels import LABELS_ENV, READ_ONLY_ENV
from rageval_core.runs.layout import RESULTS_ENV
from rageval_core.runs.remote import upload_run
from tests.dashboard.apptest import seen

ENTRY = str(Path(__file__).resolve().parents[2] / "dashboard" / "streamlit_app.py")
LATEST = "20261123-150000-verbose"
QUESTION = "q001"


def objects(bucket: str, prefix: str) -> dict[str, str]:
    s3 = boto3.client("s3")
    pages = s3.get_paginator("list_objects_v2").paginate(Bucket=bucket, Prefix=prefix)
    return {o["Key"]: o["ETag"] for page in pages for o in page.get("Contents", [])}


@pytest.fixture
def bucket_site(bucket, demo_results, monkeypatch, tmp_path):
    """Demo runs under s3://bucket/results; labels (default location) s3://bucket/labels."""
    location = f"s3://{bucket}/results"
    for run in sorted(p for p in demo_results.iterdir() if not p.name.startswith(".")):
        upload_run(run, location, run.name)
    monkeypatch.setenv(RESULTS_ENV, location)
    monkeypatch.delenv(LABELS_ENV, raising=False)  # the default: beside the results
    monkeypatch.delenv(READ_ONLY_ENV, raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    st.cache_data.clear()
    st.cache_resource.clear()
    before = objects(bucket, "results/")
    yield bucket
    assert objects(bucket, "results/") == before, "the dashboard wrote into the results"


def open_page(page: str, **params: str) -> AppTest:
    at = AppTest.from_file(ENTRY, default_timeout=60)
    at.run()
    at.query_params.clear()
    at.query_params.update(params)
    at.switch_page(PAGES[page].path).run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def click(at: AppTest, label: str, index: int = 0) -> AppTest:
    [b for b in at.button if b.label == label][index].click().run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def test_a_label_saved_on_the_question_page_lands_in_the_bucket(bucket_site):
    bucket = bucket_site
    at = open_page("question", run=LATEST, question=QUESTION)
    at.text_input(key="label_reviewer_name").input("Ann")
    click(at, "Start labelling")
    at.radio(key=f"question_label_{LATEST}_{QUESTION}_claim_2_choice").set_value("contradicted")
    click(at, "Save claim label", 1)
    assert any(e.label.endswith("people: contradicted") for e in at.expander)

    [key] = objects(bucket, "labels/")
    assert key.startswith("labels/") and key.endswith(".jsonl") and "/Ann/" in key
    body = boto3.client("s3").get_object(Bucket=bucket, Key=key)["Body"].read()
    [line] = [json.loads(x) for x in body.decode().splitlines()]
    assert (line["question_id"], line["verdict"], line["judge"]) == (
        QUESTION,
        "contradicted",
        "unsupported",
    )

    # A new session (and a server without the memo: caches cleared) reads it back.
    st.cache_data.clear()
    st.cache_resource.clear()
    again = open_page("question", run=LATEST, question=QUESTION)
    assert any(e.label.endswith("people: contradicted") for e in again.expander)
    judge = open_page("judge")
    figures = judge.table[0].value
    assert figures.loc["labels behind these figures", "claims"] == "1", figures


def test_a_read_only_dashboard_on_a_bucket_writes_nothing(bucket_site, monkeypatch):
    monkeypatch.setenv(READ_ONLY_ENV, "1")
    at = open_page("question", run=LATEST, question=QUESTION)
    assert not [b for b in at.button if b.label.startswith(("Save", "Start labelling"))]
    assert "read-only" in seen(" ".join(str(i.value) for i in at.info))
    assert objects(bucket_site, "labels/") == {}


def test_a_labels_bucket_that_takes_no_writes_is_said_and_offers_no_form(bucket_site, monkeypatch):
    monkeypatch.setenv(LABELS_ENV, "s3://no-such-bucket-here/labels")
    at = open_page("question", run=LATEST, question=QUESTION)
    assert not [b for b in at.button if b.label.startswith(("Save", "Start labelling"))]
    said = seen(" ".join(str(i.value) for i in at.info))
    assert "cannot be saved" in said and "no-such-bucket-here" in said, said
