"""Credentials in the shapes they take in real configs and error messages — an
`Authorization` header, a database URL with a password, `?api_key=` in an endpoint, a
cookie — never reach a file a run writes (manifest, Parquet rows, summary) or the report,
whether the config names them or a pipeline just echoes one in an error or an answer."""

from __future__ import annotations

import base64
import json
from pathlib import Path

import pyarrow.parquet as pq
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rageval_core.config import load_config
from rageval_core.report import write_report
from rageval_core.runner import RunOptions, run

UNNAMED_ENV = "RAGEVAL_TEST_UNNAMED_SECRET"

# Reads a secret the config does not name (so only its shape can give it away) and echoes
# both secrets the way client libraries do: in exception messages and, for one question,
# in the answer.
PIPELINE = f'''
import os


def build(headers=None, dsn=None, endpoint=None, cookie=None, api_key=None):
    other = os.environ["{UNNAMED_ENV}"]
    basic = __import__("base64").b64encode(("svc:" + other).encode()).decode()

    def pipe(question):
        if "fail" in question:
            raise ConnectionError(
                f"request failed: headers={{headers!r}} url={{endpoint}} db={{dsn}} "
                f"cookie={{cookie}} x-api-key: {{api_key}}; retry with "
                f"postgres://svc:{{other}}@db.internal/prod, "
                f"https://api.example.com/v1?token={{other}}&page=1, "
                f"{{{{'Authorization': 'Bearer {{other}}'}}}}, Authorization: Basic {{basic}}, "
                f"Set-Cookie: sid={{other}}; Path=/"
            )
        return {{
            "answer": f"Use the replica at mysql://ro:{{other}}@replica/app for reports.",
            "retrieved": [{{"id": "c#0", "text": "Reports run on the replica."}}],
        }}

    return pipe
'''

# A marker no result file holds by itself, so finding the value means it leaked (a bare
# random string can be a substring of a column name: "ration_ms_p5").
SECRETS = st.text(
    st.sampled_from("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-"),
    min_size=6,
    max_size=26,
).map(lambda s: f"Zq7x{s}")


def _project(root: Path, named: str) -> Path:
    (root / "shape_pipeline.py").write_text(PIPELINE)
    (root / "corpus.jsonl").write_text(
        '{"id": "c#0", "doc_id": "c", "text": "Reports run on the replica."}\n'
    )
    (root / "dataset.yaml").write_text(
        "name: shapes\nversion: '1'\ncorpus: corpus.jsonl\nquestions:\n"
        "  - {id: q1, question: Where do reports run?, reference_answer: replica,"
        " gold_chunk_ids: [c#0]}\n"
        "  - {id: q2, question: Why did it fail?, gold_chunk_ids: [c#0]}\n"
    )
    config = {
        "name": "shapes",
        "dataset": "dataset.yaml",
        "pipeline": {
            "factory": "shape_pipeline:build",
            "params": {
                "headers": {"Authorization": f"Bearer {named}", "Accept": "application/json"},
                "dsn": f"postgres://app:{named}@db.internal:5432/prod",
                "endpoint": f"https://api.example.com/v1/chat?api_key={named}&model=small",
                "cookie": f"session={named}; theme=dark",
                "api_key": named,
            },
        },
        "concurrency": 1,
    }
    path = root / "run.yaml"
    path.write_text(json.dumps(config))
    return path


def _written_text(results: Path) -> str:
    """Every byte of every file, plus the decoded Parquet rows (its pages are compressed)."""
    parts = []
    for p in sorted(results.rglob("*")):
        if p.is_file():
            parts.append(p.read_bytes().decode("utf-8", "replace"))
            if p.suffix == ".parquet":
                parts.append(json.dumps(pq.read_table(p).to_pylist(), default=str))
    return "\n".join(parts)


@settings(
    max_examples=6,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(named=SECRETS, unnamed=SECRETS)
def test_no_written_file_holds_a_secret_in_any_shape(tmp_path_factory, monkeypatch, named, unnamed):
    root = tmp_path_factory.mktemp("shapes")
    monkeypatch.setenv(UNNAMED_ENV, unnamed)
    monkeypatch.chdir(root)
    results = root / "results"
    done = run(
        load_config(_project(root, named)),
        RunOptions(results=str(results), run_id="r1", progress=False),
    )
    assert done.status == "complete" and done.totals["n_errors"] == 1
    written = _written_text(results)
    assert "request failed" in written and "replica at mysql://" in written  # rows are there
    basic = base64.b64encode(f"svc:{unnamed}".encode()).decode()
    for secret in (named, unnamed, basic):
        assert secret not in written
    manifest = json.loads((results / "r1" / "manifest.json").read_text())
    params = manifest["config"]["pipeline"]["params"]
    assert params["headers"] == {"Authorization": "***", "Accept": "application/json"}
    assert params["dsn"] == "postgres://***@db.internal:5432/prod"
    assert params["endpoint"] == "https://api.example.com/v1/chat?api_key=***&model=small"


def test_report_shows_no_secret_even_from_a_run_written_before_redaction(tmp_path, monkeypatch):
    named, unnamed = "sk-named-9f8e7d6c5b4a", "tok-unnamed-1a2b3c4d5e"
    monkeypatch.setenv(UNNAMED_ENV, unnamed)
    monkeypatch.chdir(tmp_path)
    results = tmp_path / "results"
    run(
        load_config(_project(tmp_path, named)),
        RunOptions(results=str(results), run_id="r1", progress=False),
    )
    # A run written by an older version (or another tool): secrets in clear in its files.
    manifest_path = results / "r1" / "manifest.json"
    manifest = json.loads(manifest_path.read_text())
    manifest["config"]["pipeline"]["params"]["dsn"] = f"postgres://app:{named}@db/prod"
    manifest_path.write_text(json.dumps(manifest))
    table = pq.read_table(results / "r1" / "questions.parquet")
    rows = table.to_pylist()
    for r in rows:
        r["error"] = r["error"] and f"401 for https://api.example.com/v1?api_key={unnamed}"
        r["answer"] = f"Authorization: Bearer {named}"
    pq.write_table(
        type(table).from_pylist(rows, schema=table.schema), results / "r1" / "questions.parquet"
    )
    assert named.encode() in manifest_path.read_bytes()
    out = write_report(str(results), "r1", tmp_path / "report.html")
    html = out.read_text()
    assert "r1" in html and named not in html and unnamed not in html
