"""The judge reply cache sits in the results folder: a credential an answer echoed (and the
judge's claims quote) must not be stored in clear there."""

from __future__ import annotations

from rageval_core.judges.cache import ReplyCache, cache_key

SECRET = "pw-9f8e7d6c5b4a"


def test_replies_are_stored_without_credentials(tmp_path):
    cache = ReplyCache(tmp_path)
    key = cache_key("m", "v1", {"answer": "x"})
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
    cache.put(key, reply, {"prompt_tokens": 3, "completion_tokens": 2})
    stored = b"".join(p.read_bytes() for p in tmp_path.rglob("*.json"))
    assert SECRET.encode() not in stored
    back = cache.get(key)
    assert back["reply"]["claims"][0]["text"] == "Reports run on postgres://***@replica/app."
    assert back["reply"]["answer_correctness"] == 0.5 and back["usage"]["prompt_tokens"] == 3
