"""The judge reply cache: where it lives, and what it never keeps. It sits in the user's
cache folder, shared by every results location: a credential an answer echoed (and the
judge's claims quote) must not be stored in clear there."""

from __future__ import annotations

from rageval_core.judges.reply_cache import ReplyCache, Served, cache_key

SECRET = "pw-9f8e7d6c5b4a"


def test_replies_are_stored_without_credentials(tmp_path):
    cache = ReplyCache(tmp_path)
    key = cache_key("http://127.0.0.1:1", "m", "v1", {"answer": "x"})
    claim = f"Reports run on postgres://ro:{SECRET}@replica/app."
    reply = {
        "claims": [
            {
                "text": claim,
                "verdict": "unsupported",
                "evidence_chunk_id": None,
                "evidence": None,
                "reason": f"no chunk names Bearer {SECRET}",
            }
        ],
        "refused": False,
        "answer_correctness": 0.5,
    }
    cache.put(key, reply, {"prompt_tokens": 3, "completion_tokens": 2}, Served("m", None))
    stored = b"".join(p.read_bytes() for p in tmp_path.rglob("*.json"))
    assert SECRET.encode() not in stored
    back = cache.get(key)
    assert back["reply"]["claims"][0]["text"] == "Reports run on postgres://***@replica/app."
    assert back["reply"]["answer_correctness"] == 0.5 and back["usage"]["prompt_tokens"] == 3


# ---------------------------------------------------------------------------- where it lives

GOOD = {
    "claims": [
        {
            "text": "The museum opened in 1998.",
            "verdict": "supported",
            "evidence_chunk_id": "museum#1",
            "evidence": "opened in 1998",
            "reason": "stated",
        }
    ],
    "refused": False,
    "answer_correctness": 1.0,
}


def _judge(server, **extra):
    from rageval_core.judges import make_judge

    # The cache's place is under test, not the reply schema: the two oldest parts suffice.
    config = {"kind": "openai", "base_url": server.base_url, "model": "m", **extra}
    return make_judge({"metrics": ["faithfulness", "answer_correctness"], **config})


def _entries(folder):
    return sorted(p.relative_to(folder) for p in folder.rglob("*.json"))


def test_default_cache_is_the_users_cache_folder(chat, sample_input, own_cache_home):
    with chat.ChatServer([chat.Step(content=GOOD)]) as srv:
        first = _judge(srv).judge(sample_input)
        again = _judge(srv).judge(sample_input)
        assert srv.calls == 1  # a second judge (another run, any results location): no call
    assert again.claims == first.claims and again.cost_usd == 0
    entries = _entries(own_cache_home / "rageval" / "judge")
    assert len(entries) == 1 and entries[0].parent.name == entries[0].stem[:2]
    assert (own_cache_home / "rageval" / "judge").stat().st_mode & 0o077 == 0  # private


def test_another_endpoint_serving_the_same_model_name_is_asked(chat, sample_input, own_cache_home):
    """One model name on two servers may be two models: the cache keeps their replies apart."""
    with (
        chat.ChatServer([chat.Step(content=GOOD)]) as one,
        chat.ChatServer([chat.Step(content=GOOD)]) as two,
    ):
        _judge(one).judge(sample_input)
        _judge(two).judge(sample_input)
        _judge(one).judge(sample_input)
        assert (one.calls, two.calls) == (1, 1)
    assert len(_entries(own_cache_home / "rageval" / "judge")) == 2


def test_a_relative_xdg_cache_home_is_ignored(monkeypatch, tmp_path):
    from rageval_core.judges.reply_cache import default_cache_dir

    monkeypatch.setenv("XDG_CACHE_HOME", "relative/cache")
    monkeypatch.setenv("HOME", str(tmp_path))
    assert default_cache_dir() == tmp_path / ".cache" / "rageval" / "judge"


def test_cache_dir_in_the_config_overrides_and_cache_false_disables(
    chat, sample_input, own_cache_home, tmp_path, monkeypatch
):
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    with chat.ChatServer([chat.Step(content=GOOD)]) as srv:
        _judge(srv, cache_dir="~/team-cache").judge(sample_input)
        _judge(srv, cache_dir=str(tmp_path / "home" / "team-cache")).judge(sample_input)
        assert srv.calls == 1  # `~` expanded: the same folder
        _judge(srv, cache=False).judge(sample_input)
        _judge(srv, cache=False).judge(sample_input)
        assert srv.calls == 3
    assert len(_entries(tmp_path / "home" / "team-cache")) == 1
    assert not (own_cache_home / "rageval" / "judge").exists()


def test_bad_cache_settings_are_config_errors():
    import pytest

    from rageval_core.errors import ConfigError
    from rageval_core.judges import make_judge

    base = {"kind": "openai", "base_url": "http://127.0.0.1:9/v1", "model": "m"}
    with pytest.raises(ConfigError) as err:
        make_judge({**base, "cache_dir": "  ", "cache": "yes"})
    text = str(err.value)
    assert "judge.cache_dir must be a folder path" in text
    assert "judge.cache must be bool" in text
    with pytest.raises(ConfigError, match="judge.cache_dir is not a setting of kind 'offline'"):
        make_judge({"kind": "offline", "cache_dir": "/tmp/x"})


def test_an_unwritable_cache_costs_calls_never_a_verdict(chat, sample_input, tmp_path, caplog):
    blocked = tmp_path / "not-a-folder"
    blocked.write_text("a file where the cache folder should be")
    with chat.ChatServer([chat.Step(content=GOOD)]) as srv:
        judge = _judge(srv, cache_dir=str(blocked))
        results = [judge.judge(sample_input) for _ in range(2)]
        assert srv.calls == 2
    assert all(r.error is None and r.faithfulness == 1.0 for r in results)
    warnings = [r for r in caplog.records if "not writable" in r.getMessage()]
    assert len(warnings) == 1  # said once, not once per question


def _reference_answers(question: str) -> dict:
    """A pipeline for `rageval_core.evaluate`: the reference answer, the gold chunks."""
    q = _EXAMPLE[question]
    return {
        "answer": q.reference_answer or "I don't know.",
        "retrieved": [{"id": g, "text": f"text of {g}"} for g in q.gold_chunk_ids],
    }


def _example_questions() -> dict:
    from rageval_core.dataset import example_dataset_path, load_dataset

    return {q.question: q for q in load_dataset(example_dataset_path()).questions}


_EXAMPLE = _example_questions()


def test_a_run_into_another_results_folder_pays_no_call_again(chat, tmp_path):
    """Issue 12: a run into a new folder used to pay for every call again."""
    import rageval_core
    from rageval_core.dataset import example_dataset_path

    claim = {**GOOD["claims"][0], "evidence_chunk_id": None, "evidence": None}
    unsourced = {**GOOD, "claims": [claim]}  # quotes no chunk of the example dataset
    with chat.ChatServer(chat.echoing(unsourced)) as srv:
        for folder in ("here", "there"):
            run = rageval_core.evaluate(
                _reference_answers,
                example_dataset_path(),
                judge={
                    "kind": "openai",
                    "base_url": srv.base_url,
                    "model": "m",
                    "metrics": ["faithfulness"],
                },
                results=tmp_path / folder,
                run_id="r",
                progress=False,
            )
            assert run.status == "complete" and run.rows["judge_error"].isna().all()
        assert srv.calls == len(_EXAMPLE)  # the second run, elsewhere, made none
