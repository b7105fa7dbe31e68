"""What the HTTP judge costs and how fast it keeps up, against a rate-limited loopback server.

    .venv/bin/python bench/judge_cost.py [--questions 1000] [--latency 0.5] [--rpm 600]
                                         [--burst 10] [--no-headers] [--threads 32]
                                         [--concurrency N] [--metrics faithfulness,...]

The server speaks the chat-completions protocol on 127.0.0.1: every answer takes
`--latency` seconds (plus `--ms-per-token` per completion token), and a token bucket of
`--rpm` requests a minute (`--burst` at once) refuses the rest with 429 and the wait in
`retry-after-ms` and `Retry-After`, as hosted APIs do. Its answers carry OpenAI's
`x-ratelimit-limit-requests` header unless `--no-headers`. Each reply is valid for the
metrics asked (claims restating the answer, evidence quoted from a chunk, every chunk
judged, the reference as one statement) with `usage` of characters / 4.

The judge runs at its default settings (`concurrency` only with `--concurrency`), no
reply cache, called from `--threads` threads as a runner's pool would. Prints calls, prompt
and completion tokens per question, wall time against the limit's floor (questions /
requests per second), the server's 429s and the questions that ended in a judge error.
Target (issue 32): 1,000 questions at 0.5 s and 600 requests a minute within 1.15x the
100 s floor, no question lost to a 429.
"""

from __future__ import annotations

import argparse
import json
import math
import random
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from rageval_core.judges import make_judge
from rageval_core.models import JUDGE_METRICS, JudgeInput, RetrievedChunk

WORDS = (
    "rebase commit branch worktree merge remote fetch index stash tag history hook config "
    "object tree blob ref reflog patch diff cherry bisect submodule sparse checkout prune"
).split()


def _sentence(rng: random.Random) -> str:
    a, b, c = rng.sample(WORDS, 3)
    return f"The {a} option keeps {rng.randint(2, 900)} {b} entries for each {c} it reads."


def make_inputs(n: int, seed: int = 7) -> list[JudgeInput]:
    """Five ~800-character chunks, a two-sentence answer and a reference per question."""
    rng = random.Random(seed)
    inputs = []
    for i in range(n):
        chunks = tuple(
            RetrievedChunk(f"doc{i}#{k}", " ".join(_sentence(rng) for _ in range(11)))
            for k in range(5)
        )
        first = chunks[0].text.split(". ")[0] + "."
        inputs.append(
            JudgeInput(
                f"What does the option keep? ({i})", f"{first} {_sentence(rng)}", chunks, first
            )
        )
    return inputs


def _reply(system: str, material: dict[str, Any]) -> dict[str, Any]:
    chunks = material.get("retrieved_chunks") or []
    reply: dict[str, Any] = {"refused": False}
    if '"claims":' in system:
        reply["claims"] = [
            {
                "text": material["answer"],
                "verdict": "supported",
                "evidence_chunk_id": None,
                "evidence": None,
                "reason": "the first chunk says so",
            }
        ]
    if '"answer_correctness":' in system:
        reply["answer_correctness"] = 1.0
    if '"chunks":' in system:
        reply["chunks"] = [{"id": c["id"], "relevant": True, "reason": "on topic"} for c in chunks]
    if '"answer_relevancy":' in system:
        reply["answer_relevancy"] = {"score": 1.0, "reason": "answers it"}
    if '"statements":' in system:
        ref = material.get("reference_answer")
        reply["statements"] = [
            {
                "text": ref,
                "attributed": True,
                "evidence_chunk_id": chunks[0]["id"],
                "evidence": ref,
                "reason": "quoted",
            }
        ]
    return reply


class Server:
    """The rate-limited loopback endpoint (module docstring); counts what it did."""

    def __init__(
        self, latency: float, ms_per_token: float, rpm: float, burst: float, headers: bool
    ):
        self.rate, self.burst = rpm / 60, burst
        self.level, self.at = burst, time.monotonic()
        self.calls = self.refused = self.prompt_tokens = self.completion_tokens = 0
        self._lock = threading.Lock()
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                wait = server.admit()
                if wait is not None:
                    extra = {
                        "retry-after-ms": f"{wait * 1000:.0f}",
                        "Retry-After": str(math.ceil(wait)),
                    }
                    return self._send(429, {"error": {"message": "rate limited"}}, extra)
                system, user = (m["content"] for m in body["messages"][:2])
                text = json.dumps(_reply(system, json.loads(user)))
                prompt = sum(len(m["content"]) for m in body["messages"]) // 4
                completion = len(text) // 4
                with server._lock:
                    server.prompt_tokens += prompt
                    server.completion_tokens += completion
                time.sleep(latency + completion * ms_per_token / 1000)
                envelope = {
                    "model": body["model"],
                    "choices": [{"index": 0, "message": {"role": "assistant", "content": text}}],
                    "usage": {"prompt_tokens": prompt, "completion_tokens": completion},
                }
                extra = {"x-ratelimit-limit-requests": f"{rpm:g}"} if headers else {}
                self._send(200, envelope, extra)

            def _send(self, status: int, payload: dict[str, Any], headers: dict[str, str]) -> None:
                data = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                for k, v in headers.items():
                    self.send_header(k, v)
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args: Any) -> None:
                """Quiet."""

        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._httpd.daemon_threads = True
        self._httpd.request_queue_size = 256
        threading.Thread(target=self._httpd.serve_forever, daemon=True).start()

    def admit(self) -> float | None:
        """None when the request may go on, else the seconds until it could."""
        with self._lock:
            self.calls += 1
            now = time.monotonic()
            self.level = min(self.burst, self.level + (now - self.at) * self.rate)
            self.at = now
            if self.level >= 1:
                self.level -= 1
                return None
            self.refused += 1
            return (1 - self.level) / self.rate

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self._httpd.server_address[1]}/v1"

    def close(self) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--questions", type=int, default=1000)
    ap.add_argument("--latency", type=float, default=0.5, help="seconds per answer")
    ap.add_argument("--ms-per-token", type=float, default=0.0, help="per completion token")
    ap.add_argument("--rpm", type=float, default=600, help="the server's requests a minute")
    ap.add_argument("--burst", type=float, default=10, help="requests the server takes at once")
    ap.add_argument("--no-headers", action="store_true", help="no x-ratelimit-limit-requests")
    ap.add_argument("--threads", type=int, default=32, help="callers, as a runner's pool")
    ap.add_argument(
        "--concurrency", type=int, default=None, help="judge ceiling (default: its own)"
    )
    ap.add_argument("--metrics", default=",".join(JUDGE_METRICS))
    args = ap.parse_args()

    inputs = make_inputs(args.questions)
    server = Server(args.latency, args.ms_per_token, args.rpm, args.burst, not args.no_headers)
    config: dict[str, Any] = {
        "kind": "openai",
        "base_url": server.base_url,
        "model": "bench-judge",
        "cache": False,
        "metrics": args.metrics.split(","),
    }
    if args.concurrency is not None:
        config["concurrency"] = args.concurrency
    judge = make_judge(config)
    start = time.perf_counter()
    try:
        with ThreadPoolExecutor(args.threads) as pool:
            results = list(pool.map(judge.judge, inputs))
    finally:
        wall = time.perf_counter() - start
        judge.close()
        server.close()
    n = len(inputs)
    floor = max(0.0, n - args.burst) / (args.rpm / 60) if args.rpm else 0.0
    floor = max(floor, args.latency)
    errors = [r.error for r in results if r.error]
    limiter = judge.limiter
    print(f"questions            {n}")
    print(f"metrics              {args.metrics}")
    print(
        f"server               {args.latency:g} s latency, {args.rpm:g} requests/min, "
        f"burst {args.burst:g}, headers {'off' if args.no_headers else 'on'}"
    )
    print(
        f"calls                {server.calls} ({server.calls / n:.2f} per question, "
        f"{server.calls - server.refused} answered)"
    )
    print(f"prompt tokens        {server.prompt_tokens / n:,.0f} per question")
    print(f"completion tokens    {server.completion_tokens / n:,.0f} per question")
    print(f"wall time            {wall:.1f} s (floor {floor:.1f} s: {wall / floor:.2f}x)")
    print(
        f"429s                 {server.refused} ({limiter.counts.decreases} back-offs, "
        f"window {limiter.window.slots} of {judge.settings.concurrency} at the end)"
    )
    print(
        f"judge errors         {len(errors)}" + (f" (first: {errors[0][:120]})" if errors else "")
    )
    print(
        f"target               {'met' if wall <= 1.15 * floor and not errors else 'MISSED'} "
        "(within 1.15x the floor, no question lost)"
    )


if __name__ == "__main__":
    main()
