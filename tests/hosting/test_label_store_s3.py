"""The labels location on a real S3 API (moto_server on 127.0.0.1): a save is one new
object, two reviewers saving at once both keep their labels, a bad line names its object,
and a store that may not write says so without writing."""

from __future__ import annotations

import threading

import boto3

from rageval_core.labels import LabelStore
from tests.core.labels.helpers import label


def keys(bucket: str) -> list[str]:
    listed = boto3.client("s3").list_objects_v2(Bucket=bucket).get("Contents", [])
    return sorted(o["Key"] for o in listed)


def test_saves_are_new_objects_and_load_like_a_folder(bucket):
    store = LabelStore(f"s3://{bucket}/team/labels")
    assert store.writable() == (True, "")
    assert keys(bucket) == []  # the write check leaves nothing behind
    url = store.save([label("q1", "Claim.", "supported"), label("q1", None, "pass")])
    assert url.startswith(f"s3://{bucket}/team/labels/qa/ann/") and url.endswith(".jsonl")
    store.save([label("q1", "Claim.", "contradicted", at="2026-03-01T00:00:00Z")])
    assert len(keys(bucket)) == 2
    fresh = LabelStore(f"s3://{bucket}/team/labels").load()
    assert {(lab.claim, lab.value) for lab in fresh.labels} == {
        ("Claim.", "contradicted"),
        (None, "pass"),
    }


def test_two_reviewers_saving_at_once_both_keep_their_labels(bucket):
    location = f"s3://{bucket}/labels"
    barrier = threading.Barrier(8)

    def save(i: int) -> None:
        store = LabelStore(location)
        barrier.wait()
        store.save([label("q1", f"Claim {i}.", "supported", reviewer=f"r{i % 2}")])

    threads = [threading.Thread(target=save, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    got = LabelStore(location).load()
    assert sorted(lab.claim for lab in got.labels) == [f"Claim {i}." for i in range(8)]


def test_a_bad_object_is_reported_by_its_url_and_line(bucket):
    boto3.client("s3").put_object(
        Bucket=bucket,
        Key="labels/qa/ann/x.jsonl",
        Body=label("q1", "C.", "supported").to_line().replace('"supported"', '"pass"'),
    )
    boto3.client("s3").put_object(Bucket=bucket, Key="labels/qa/ann/y.jsonl", Body=b"{\n")
    got = LabelStore(f"s3://{bucket}/labels").load()
    assert got.labels == ()
    assert any(
        p.startswith(f"s3://{bucket}/labels/qa/ann/x.jsonl:1: verdict") for p in got.problems
    )
    assert any(
        p.startswith(f"s3://{bucket}/labels/qa/ann/y.jsonl:1: not JSON") for p in got.problems
    )


def test_a_bucket_that_does_not_exist_is_not_writable(s3_endpoint):
    ok, why = LabelStore("s3://no-such-bucket-here/labels").writable()
    assert not ok and why.startswith("cannot write to s3://no-such-bucket-here/labels")


def test_several_processes_saving_at_once_to_a_bucket_all_keep_their_labels(bucket):
    """Issue 23: three dashboard replicas (processes) saving into one bucket at the same
    moment; every save is its own object, so none is lost or torn."""
    import os
    import subprocess
    import sys
    import time
    from pathlib import Path

    from tests.core.labels.helpers import SAVER

    root = Path(__file__).resolve().parents[2]
    env = {**os.environ, "PYTHONPATH": f"{root}{os.pathsep}{os.environ.get('PYTHONPATH', '')}"}
    location = f"s3://{bucket}/labels"
    start = time.time() + 3.0
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", SAVER, location, who, str(start)], env=env, cwd=root
        )
        for who in ("ann", "bob", "cy")
    ]
    assert [p.wait(timeout=180) for p in procs] == [0, 0, 0]
    assert len(keys(bucket)) == 120  # 40 saves each, one object per save
    got = LabelStore(location).load()
    assert got.problems == () and len(got.labels) == 120
    assert sorted({lab.reviewer for lab in got.labels}) == ["ann", "bob", "cy"]


def test_candidate_decisions_live_beside_the_labels_and_apart_from_them(bucket):
    from rageval_core.candidates.decisions import Decision, DecisionStore

    location = f"s3://{bucket}/labels"
    store = DecisionStore(location, "week-49")
    url = store.save(Decision("gen-1", "reject", "ann", at="2026-03-01T00:00:00Z"))
    assert url.startswith(f"{location}/week-49/candidates/ann/")
    DecisionStore(location, "week-49").save(Decision("gen-1", "accept", "bob"))
    LabelStore(location).save([label("q1", "Claim.", "supported")])
    got = DecisionStore(location, "week-49").latest()
    assert {cid: d.reviewer for cid, d in got.items()} == {"gen-1": "bob"}
    labels = LabelStore(location).load()
    assert labels.problems == () and len(labels.labels) == 1
