"""The OpenAI-compatible judge against a real scripted HTTP server on 127.0.0.1."""

from __future__ import annotations

import json
import logging
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace

import pytest

from rageval_core.errors import ConfigError
from rageval_core.judges import make_judge
from rageval_core.judges.prompt import system_prompt
from rageval_core.models import JUDGE_METRICS

KEY_ENV = "RAGEVAL_TEST_JUDGE_KEY"
SECRET = "sk-test-DISTINCTIVE-7f3a9c2e1b"
PRICES = {"input_per_1k_tokens": 0.5, "output_per_1k_tokens": 2.0}
COST_PER_CALL = 100 * 0.5 / 1000 + 20 * 2.0 / 1000  # the server's default usage (100, 20)

GOOD = {
    "claims": [
        {
            "text": "The museum opened in 1998.",
            "verdict": "supported",
            "evidence_chunk_id": "museum#1",
            "evidence": "The museum opened in 1998 in Lyon.",
            "reason": "museum#1 states the year",
        },
        {
            "text": "It has four floors.",
            "verdict": "contradicted",
            "evidence_chunk_id": "museum#2",
            "evidence": "The building has three floors and a garden.",
            "reason": "museum#2 says three floors",
        },
    ],
    "refused": False,
    "answer_correctness": 1.0,
    "chunks": [
        {"id": "museum#1", "relevant": True, "reason": "gives the opening year"},
        {"id": "museum#2", "relevant": False, "reason": "about the building"},
    ],
    "answer_relevancy": {"score": 0.9, "reason": "says when, adds floors"},
    "statements": [
        {
            "text": "The museum opened in 1998.",
            "attributed": True,
            "evidence_chunk_id": "museum#1",
            "evidence": "The museum opened in 1998 in Lyon.",
            "reason": "museum#1 states it",
        }
    ],
}


@pytest.fixture(autouse=True)
def api_key(monkeypatch):
    monkeypatch.setenv(KEY_ENV, SECRET)


def judge_for(server, cache_dir=None, **overrides):
    config = {
        "kind": "openai",
        "base_url": server.base_url,
        "model": "judge-model",
        "api_key_env": KEY_ENV,
        "timeout_s": 2,
        "max_retries": 2,
        "backoff_base_s": 0.01,
        "prices": PRICES,
        **overrides,
    }
    # No cache unless a test asks for one: these tests count calls on the server.
    if cache_dir is None:
        config["cache"] = False
    else:
        config["cache_dir"] = str(cache_dir)
    return make_judge(config)


def test_normal_reply_request_shape_verdicts_and_cost(chat, sample_input):
    with chat.ChatServer([chat.Step(content=GOOD)]) as srv:
        judge = judge_for(srv)
        result = judge.judge(sample_input)
        judge.close()
    assert srv.calls == 1
    req = srv.requests[0]
    assert req.path == "/v1/chat/completions"
    assert req.headers["Authorization"] == f"Bearer {SECRET}"
    assert req.body["temperature"] == 0
    assert req.body["response_format"] == {"type": "json_object"}
    assert req.body["model"] == "judge-model"
    system, user = req.body["messages"]
    assert system == {"role": "system", "content": system_prompt()}
    material = json.loads(user["content"])
    assert material["question"] == sample_input.question
    assert material["reference_answer"] == "1998"
    assert [(c["rank"], c["id"]) for c in material["retrieved_chunks"]] == [
        (1, "museum#1"),
        (2, "museum#2"),
    ]
    assert result.error is None
    assert [c.verdict for c in result.claims] == ["supported", "contradicted"]
    assert result.claims[1].evidence_chunk_id == "museum#2"
    assert result.faithfulness == 0.5
    assert result.answer_correctness == 1.0
    assert result.cost_usd == pytest.approx(COST_PER_CALL)


def test_429_honours_retry_after_then_succeeds(chat, sample_input):
    script = [chat.Step(status=429, headers={"Retry-After": "0.4"}), chat.Step(content=GOOD)]
    with chat.ChatServer(script) as srv:
        judge = judge_for(srv, backoff_base_s=0.001)
        start = time.perf_counter()
        result = judge.judge(sample_input)
        elapsed = time.perf_counter() - start
    assert srv.calls == 2
    assert elapsed >= 0.4  # the jittered backoff alone would be ~1 ms
    assert result.error is None and result.faithfulness == 0.5


def test_5xx_until_give_up_records_error_not_scores(chat, sample_input):
    with chat.ChatServer([chat.Step(status=503)]) as srv:
        result = judge_for(srv, max_retries=2).judge(sample_input)
    assert srv.calls == 3  # first attempt + max_retries
    assert "gave up after 3 attempt(s)" in result.error and "HTTP 503" in result.error
    assert result.claims == () and result.faithfulness is None
    assert result.answer_correctness is None and result.cost_usd == 0


def test_client_error_is_not_retried(chat, sample_input):
    with chat.ChatServer([chat.Step(status=400)]) as srv:
        result = judge_for(srv).judge(sample_input)
    assert srv.calls == 1
    assert "HTTP 400" in result.error


def test_malformed_reply_gets_one_repair_request(chat, sample_input):
    bad = '{"claims": [ oops'
    with chat.ChatServer([chat.Step(content=bad), chat.Step(content=GOOD)]) as srv:
        result = judge_for(srv).judge(sample_input)
    assert srv.calls == 2
    repair = srv.requests[1].body["messages"]
    assert repair[2] == {"role": "assistant", "content": bad}
    assert repair[3]["role"] == "user" and "not valid JSON" in repair[3]["content"]
    assert result.error is None and len(result.claims) == 2
    assert result.cost_usd == pytest.approx(2 * COST_PER_CALL)  # the bad reply cost too


def _claim_without_verdict():
    claims = [dict(GOOD["claims"][0]), dict(GOOD["claims"][1])]
    del claims[1]["verdict"]
    return {**GOOD, "claims": claims}


@pytest.mark.parametrize(
    ("reply", "problem"),
    [
        (_claim_without_verdict(), "claims[1] has no verdict"),
        (
            {**GOOD, "claims": [{**GOOD["claims"][0], "verdict": "mostly supported"}]},
            "is not one of",
        ),
        ({**GOOD, "refused": "no"}, "'refused' must be true or false"),
        (
            {**GOOD, "claims": [{**GOOD["claims"][0], "evidence_chunk_id": "made-up#9"}]},
            "is not a retrieved chunk",
        ),
    ],
)
def test_schema_violation_twice_is_a_judge_error(chat, sample_input, reply, problem):
    with chat.ChatServer([chat.Step(content=reply)]) as srv:
        result = judge_for(srv).judge(sample_input)
    assert srv.calls == 2  # the call and its one repair
    assert problem in result.error and "after one repair retry" in result.error
    assert result.claims == () and result.faithfulness is None
    assert result.cost_usd == pytest.approx(2 * COST_PER_CALL)


def test_slow_reply_times_out_and_is_retried(chat, sample_input):
    script = [chat.Step(content=GOOD, delay_s=1.0), chat.Step(content=GOOD)]
    with chat.ChatServer(script) as srv:
        result = judge_for(srv, timeout_s=0.2).judge(sample_input)
    assert srv.calls == 2
    assert result.error is None


def test_always_slow_gives_up_with_timeout_error(chat, sample_input):
    with chat.ChatServer([chat.Step(content=GOOD, delay_s=0.6)]) as srv:
        result = judge_for(srv, timeout_s=0.15, max_retries=1).judge(sample_input)
    assert srv.calls == 2
    assert "timed out after 0.15 s" in result.error


def test_cache_makes_an_unchanged_rerun_free(chat, sample_input, tmp_path):
    with chat.ChatServer([chat.Step(content=GOOD)]) as srv:
        first = judge_for(srv, cache_dir=tmp_path).judge(sample_input)
        again = judge_for(srv, cache_dir=tmp_path).judge(sample_input)
        assert srv.calls == 1
        changed = judge_for(srv, cache_dir=tmp_path).judge(
            replace(sample_input, answer="The museum opened in 1998; it has four floors.")
        )
        assert srv.calls == 2
    assert again.claims == first.claims and again.refused == first.refused
    assert first.cost_usd > 0 and again.cost_usd == 0
    assert changed.error is None
    files = list(tmp_path.rglob("*.json"))
    assert len(files) == 2
    assert not list(tmp_path.rglob("*.tmp"))  # atomic writes leave no temporaries


def test_cache_never_stores_a_failed_reply(chat, sample_input, tmp_path):
    with chat.ChatServer([chat.Step(status=500)]) as srv:
        judge_for(srv, cache_dir=tmp_path, max_retries=0).judge(sample_input)
        judge_for(srv, cache_dir=tmp_path, max_retries=0).judge(sample_input)
    assert srv.calls == 2
    assert not list(tmp_path.rglob("*.json"))


def test_concurrency_bounds_and_uses_parallel_calls(chat, sample_input):
    n = 6
    inputs = [replace(sample_input, question=f"When did the museum open? ({i})") for i in range(n)]

    def timed(concurrency):
        with chat.ChatServer([chat.Step(content=GOOD, delay_s=0.2)]) as srv:
            judge = judge_for(srv, concurrency=concurrency)
            start = time.perf_counter()
            with ThreadPoolExecutor(max_workers=n) as pool:
                results = list(pool.map(judge.judge, inputs))
            elapsed = time.perf_counter() - start
            judge.close()
        assert all(r.error is None for r in results)
        return elapsed, srv.max_in_flight

    serial, serial_peak = timed(1)
    parallel, parallel_peak = timed(n)
    assert serial_peak == 1  # the semaphore holds six threads to one call at a time
    assert serial >= n * 0.2
    # calls overlap: the server saw them in flight together. Not a wall-clock ratio, which
    # a loaded machine breaks (a full CI run: 0.76 s parallel against 1.23 s serial)
    assert parallel_peak >= 3
    assert parallel >= 0.2


def test_conservative_keeps_the_stricter_verdict(chat, sample_input):
    lenient = {**GOOD, "claims": [{**c, "verdict": "supported"} for c in GOOD["claims"]]}
    strict = {
        **GOOD,
        "claims": [
            GOOD["claims"][0],
            {**GOOD["claims"][1], "verdict": "unsupported", "reason": "no chunk says so"},
        ],
        "answer_correctness": 0.5,
    }

    def script(n, request):
        system = request.body["messages"][0]["content"]
        return chat.Step(content=strict if system == system_prompt(sceptical=True) else lenient)

    with chat.ChatServer(script) as srv:
        judge = judge_for(srv, conservative=True)
        result = judge.judge(sample_input)
    assert srv.calls == 2
    systems = {r.body["messages"][0]["content"] for r in srv.requests}
    assert systems == {system_prompt(), system_prompt(sceptical=True)}
    assert [c.verdict for c in result.claims] == ["supported", "unsupported"]
    assert result.claims[1].reason == "no chunk says so"
    assert result.answer_correctness == 0.5
    assert result.cost_usd == pytest.approx(2 * COST_PER_CALL)
    assert judge.describe().version.endswith("+conservative")


def test_api_key_never_leaks(chat, sample_input, tmp_path, caplog):
    def script(n, request):
        if n == 0:  # a hostile server echoing the credentials back in its error body
            return chat.Step(status=401, raw=json.dumps({"auth": request.headers["Authorization"]}))
        if n in (1, 2):
            return chat.Step(status=500)
        if n in (3, 4):
            return chat.Step(content="not json at all")
        return chat.Step(content=GOOD)

    caplog.set_level(logging.DEBUG)
    errors = []
    with chat.ChatServer(script) as srv:
        judge = judge_for(srv, cache_dir=tmp_path, max_retries=1)
        errors += [judge.judge(sample_input).error for _ in range(3)]
        assert judge.judge(sample_input).error is None
        texts = [repr(judge), str(judge.describe())]
    assert srv.requests[0].headers["Authorization"] == f"Bearer {SECRET}"
    assert all(errors), errors
    assert "***" in errors[0]
    texts += errors + [caplog.text] + [p.read_text() for p in tmp_path.rglob("*") if p.is_file()]
    assert len(texts) > 5
    for text in texts:
        assert SECRET not in text
        assert "DISTINCTIVE" not in text


def test_missing_key_variable_names_the_variable(chat, monkeypatch):
    monkeypatch.delenv(KEY_ENV)
    with chat.ChatServer([chat.Step(content=GOOD)]) as srv, pytest.raises(ConfigError) as err:
        judge_for(srv)
    assert KEY_ENV in str(err.value)
    assert SECRET not in str(err.value)


def test_no_key_variable_sends_no_authorization(chat, sample_input):
    with chat.ChatServer([chat.Step(content=GOOD)]) as srv:
        judge_for(srv, api_key_env=None).judge(sample_input)
    assert "Authorization" not in srv.requests[0].headers


def test_config_errors_are_listed_together(monkeypatch):
    with pytest.raises(ConfigError) as err:
        make_judge(
            {
                "kind": "openai",
                "base_url": "ftp://x",
                "concurrency": True,
                "prices": {"input_per_1k_tokens": -1, "per_call": 2},
                "temperature": 0.3,
            }
        )
    text = str(err.value)
    for problem in (
        "judge.model is required",
        "judge.base_url must be an http",
        "judge.concurrency must be int",
        "judge.prices.input_per_1k_tokens must be >= 0",
        "judge.prices.per_call is not a price key",
        "judge.temperature is not a setting",
    ):
        assert problem in text


def test_a_key_written_into_the_config_is_refused_without_echo():
    with pytest.raises(ConfigError) as err:
        make_judge({"kind": "openai", "base_url": "http://x", "model": "m", "api_key": SECRET})
    assert "api_key_env" in str(err.value) and SECRET not in str(err.value)
    with pytest.raises(ConfigError) as err:
        make_judge({"kind": "openai", "base_url": "http://x", "model": "m", "api_key_env": SECRET})
    assert "NAME of an environment variable" in str(err.value) and SECRET not in str(err.value)


# ---------------------------------------------------------------------------- judge-v2 parts


def test_every_new_verdict_fills_the_judgement(chat, sample_input):
    with chat.ChatServer([chat.Step(content=GOOD)]) as srv:
        judge = judge_for(srv)
        result = judge.judge(sample_input)
    assert srv.calls == 1  # one call per question for all five metrics
    assert [(v.chunk_id, v.rank, v.relevant) for v in result.chunk_verdicts] == [
        ("museum#1", 1, True),
        ("museum#2", 2, False),
    ]
    assert result.context_relevance == 0.5 and result.context_precision == 1.0
    assert result.answer_relevancy == 0.9
    assert result.answer_relevancy_reason == "says when, adds floors"
    assert result.context_recall == 1.0 and result.statements[0].evidence_chunk_id == "museum#1"
    assert judge.describe().metrics == JUDGE_METRICS
    assert judge.describe().version == "judge-v3"


def _without(key):
    return {k: v for k, v in GOOD.items() if k != key}


@pytest.mark.parametrize(
    ("reply", "problem"),
    [
        (
            {**GOOD, "chunks": [{**GOOD["chunks"][0], "relevant": "yes"}, GOOD["chunks"][1]]},
            "chunks[0].relevant must be true or false",
        ),
        (
            {**GOOD, "chunks": [GOOD["chunks"][0], {**GOOD["chunks"][1], "id": "made-up#3"}]},
            "chunks[1].id 'made-up#3' is not a retrieved chunk",
        ),
        ({**GOOD, "chunks": GOOD["chunks"][:1]}, "no verdict for retrieved chunk(s) 'museum#2'"),
        ({**GOOD, "answer_relevancy": {"score": 7, "reason": "x"}}, "must lie between 0 and 1"),
        (
            {**GOOD, "statements": [{"text": "The moon is made of cheese.", "attributed": False}]},
            "is not in the reference answer",
        ),
        (_without("chunks"), "'chunks' is missing"),
        (_without("answer_relevancy"), "'answer_relevancy' is missing"),
        (_without("statements"), "'statements' is missing"),
    ],
)
def test_malformed_or_partial_new_part_is_repaired_once_then_an_error(
    chat, sample_input, reply, problem
):
    with chat.ChatServer([chat.Step(content=reply)]) as srv:
        result = judge_for(srv).judge(sample_input)
    assert srv.calls == 2
    assert problem in srv.requests[1].body["messages"][3]["content"]
    assert problem in result.error and "after one repair retry" in result.error
    assert result.chunk_verdicts is None and result.statements is None
    assert result.answer_relevancy is None
    assert result.cost_usd == pytest.approx(2 * COST_PER_CALL)


def test_a_partial_reply_repaired_is_used(chat, sample_input):
    with chat.ChatServer([chat.Step(content=_without("chunks")), chat.Step(content=GOOD)]) as srv:
        result = judge_for(srv).judge(sample_input)
    assert srv.calls == 2 and result.error is None
    assert result.context_relevance == 0.5


def test_the_selection_changes_prompt_hash_and_what_is_asked(chat, sample_input, tmp_path):
    only = {"refused": False, "answer_relevancy": {"score": 1, "reason": "on point"}}
    with chat.ChatServer([chat.Step(content=only), chat.Step(content=GOOD)]) as srv:
        narrow = judge_for(srv, cache_dir=tmp_path, metrics=["answer_relevancy"])
        result = narrow.judge(sample_input)
        wide = judge_for(srv, cache_dir=tmp_path)
        assert wide.judge(sample_input).error is None
        assert srv.calls == 2  # another selection's cached reply is not reused
    system = srv.requests[0].body["messages"][0]["content"]
    assert system == system_prompt(("answer_relevancy",))
    assert '"chunks"' not in system and '"claims"' not in system and '"statements"' not in system
    material = json.loads(srv.requests[0].body["messages"][1]["content"])
    assert set(material) == {"question", "answer"}  # no chunks, no reference: not needed
    assert narrow.describe().metrics == ("answer_relevancy",)
    assert narrow.describe().prompt_hash != wide.describe().prompt_hash
    assert result.answer_relevancy == 1.0 and result.claims == () and result.faithfulness is None
    assert result.chunk_verdicts is None and result.answer_correctness is None


def test_a_cached_rerun_of_all_metrics_makes_zero_calls(chat, sample_input, tmp_path):
    with chat.ChatServer([chat.Step(content=GOOD)]) as srv:
        first = judge_for(srv, cache_dir=tmp_path).judge(sample_input)
        again = judge_for(srv, cache_dir=tmp_path).judge(sample_input)
    assert srv.calls == 1 and again.cost_usd == 0 and first.cost_usd == pytest.approx(COST_PER_CALL)
    assert again.chunk_verdicts == first.chunk_verdicts
    assert again.statements == first.statements
    assert again.answer_relevancy == first.answer_relevancy


def test_no_reference_and_no_chunks_give_none_not_guesses(chat, sample_input):
    bare = replace(sample_input, reference_answer=None, retrieved=())
    reply = {**GOOD, "claims": [], "chunks": [], "statements": None, "answer_correctness": None}
    with chat.ChatServer([chat.Step(content=reply)]) as srv:
        result = judge_for(srv).judge(bare)
    assert result.error is None and srv.calls == 1
    assert result.chunk_verdicts is None and result.statements is None
    assert result.context_recall is None and result.answer_relevancy == 0.9
