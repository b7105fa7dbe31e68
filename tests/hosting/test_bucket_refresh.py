"""A dashboard on a bucket: one listing per refresh, manifests read only for runs that
changed, and a restarted server that reads none (moto S3 on loopback)."""

from __future__ import annotations

import json

import boto3

from rageval_core import query
from rageval_core.runs.layout import MANIFEST
from rageval_core.runs.remote import upload_run


def test_a_bucket_refresh_reads_only_the_runs_that_changed(
    bucket, demo_results, tmp_path, inspected_runs
):
    location = f"s3://{bucket}/team"
    ids = sorted(p.name for p in demo_results.iterdir() if not p.name.startswith("."))
    for run_id in ids[:-1]:
        upload_run(demo_results / run_id, location, run_id)
    s3 = boto3.client("s3")
    s3.put_object(Bucket=bucket, Key="team/README.txt", Body=b"not a run")  # ignored
    s3.put_object(Bucket=bucket, Key="team/bad name!/x.json", Body=b"{}")
    cache = tmp_path / "cache"
    first = query.ResultsStore(location, read_only=True, cache_dir=cache)
    assert [r.run_id for r in first.runs()] == ids[:-1]
    assert [p.run_id for p in first.problems] == ["'bad name!'"]  # named, not a run
    overview = query.runs_overview(first)

    inspected = inspected_runs
    inspected.clear()  # counted from the restart on
    restarted = query.ResultsStore(location, read_only=True, cache_dir=cache)
    assert inspected == []  # the runs index stood in for every manifest
    assert restarted.runs() == first.runs()
    assert query.runs_overview(restarted).equals(overview)
    restarted.refresh()
    assert inspected == []

    # a CI job uploads a run, another rewrites a manifest (a tag added after the fact)
    upload_run(demo_results / ids[-1], location, ids[-1])
    key = f"team/{ids[0]}/{MANIFEST}"
    manifest = json.loads(s3.get_object(Bucket=bucket, Key=key)["Body"].read())
    manifest["tags"] = [*manifest.get("tags", []), "release"]
    s3.put_object(Bucket=bucket, Key=key, Body=json.dumps(manifest).encode())
    restarted.refresh()
    assert sorted(inspected) == sorted([ids[0], ids[-1]])
    assert [r.run_id for r in restarted.runs()] == ids
    tagged = query.runs_overview(restarted, tags="release")
    assert list(tagged["run_id"]) == [ids[0]]

    s3.delete_objects(
        Bucket=bucket,
        Delete={
            "Objects": [
                {"Key": o["Key"]}
                for o in s3.list_objects_v2(Bucket=bucket, Prefix=f"team/{ids[1]}/")["Contents"]
            ]
        },
    )
    restarted.refresh()
    assert ids[1] not in {r.run_id for r in restarted.runs()}
    assert ids[1] not in set(query.runs_overview(restarted)["run_id"])


def test_one_runs_fingerprint_lists_that_run_only_and_matches_the_refresh(
    bucket, demo_results, tmp_path, monkeypatch
):
    location = f"s3://{bucket}/team"
    ids = sorted(p.name for p in demo_results.iterdir() if not p.name.startswith("."))
    for run_id in ids[:3]:
        upload_run(demo_results / run_id, location, run_id)
    refreshed = query.ResultsStore(location, read_only=True, cache_dir=tmp_path / "a")
    fresh = query.ResultsStore(location, read_only=True, cache_dir=tmp_path / "b", refresh=False)
    listed: list[str] = []
    real = fresh.fs.find
    monkeypatch.setattr(
        fresh.fs, "find", lambda path, **kw: listed.append(path) or real(path, **kw)
    )
    info = refreshed.run(ids[1])
    assert fresh.run_fingerprint(info) == refreshed.run_fingerprint(info) != ""
    assert listed == [info.path]  # the run's folder, not the bucket
