"""`rageval rescore` into and from a bucket (moto_server on 127.0.0.1): the run is staged
locally and uploaded manifest last, and the judge's replies come from the user's cache,
so a second rescore into the bucket makes no calls."""

from __future__ import annotations

from rageval_core import query
from rageval_core.cli import main
from tests.core.judges.chat_server import ChatServer
from tests.core.rescore.helpers import SOURCE, judge_yaml, reply, verdict_of


def test_rescore_into_a_bucket_twice_makes_the_calls_once(
    bucket, demo_copy, tmp_path, monkeypatch, capsys
):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))  # no other test's replies
    location = f"s3://{bucket}/results"
    with ChatServer(reply) as srv:
        judge = str(judge_yaml(tmp_path, srv))
        base = ["rescore", SOURCE, "--judge", judge, "--no-progress"]
        assert main([*base, "--results", str(demo_copy), "--out", location, "--run-id", "a"]) == 0
        assert f"{location}/a" in capsys.readouterr().out
        calls = srv.calls
        assert calls > 0
        assert main([*base, "--results", str(demo_copy), "--out", location, "--run-id", "b"]) == 0
        # The source read from the bucket too, its rescore written beside it.
        assert main(["rescore", "a", "--judge", judge, "--no-progress", "--results", location]) == 0
        assert srv.calls == calls
    with query.ResultsStore(location, read_only=True, cache_dir=tmp_path / "c") as store:
        assert not store.problems
        infos = {i.run_id: i for i in store.runs()}
        assert len(infos) == 3 and {i.status for i in infos.values()} == {"complete"}
        assert infos["a"].manifest.source_run == SOURCE and infos["b"].manifest.source_run == SOURCE
        (third,) = set(infos) - {"a", "b"}
        assert third.endswith("-rescore") and infos[third].manifest.source_run == "a"
        page = query.question_rows(store, "b", query.QuestionFilter(), limit=200).rows
        detail = query.question_detail(store, "b", page["question_id"].iloc[0])
        if detail.claims:
            assert detail.claims[0].verdict == verdict_of(detail.question)
