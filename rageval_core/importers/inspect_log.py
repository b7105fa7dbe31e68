"""Inspect (`inspect_ai`) eval logs: `.eval` (a zip of zstd-compressed JSON: `header.json`
and one `samples/<id>_epoch_<n>.json` per sample) or `.json` (the whole log, `samples[]`),
read with the standard library and pyarrow's zstd codec; checked on inspect-ai 0.3.285.

Per sample: `id` is the question id, `input` the question (text, or the last user
message), `target` the reference, `output.completion` (else the first choice's message)
the answer, `total_time` (seconds) the latency, `model_usage` the tokens, `error.message`
the error, `metadata.retrieved_ids` (when the task recorded them) the retrieved ids; each
scorer's `value` is a declared metric (`C`/`I`/`P`/`N` read as Inspect's
`value_to_float`: 1, 0, 0.5, 0; a dict value gives one metric per key). A scorer's
`explanation` is question-level, not a claim's reason, and is not kept (docs/import.md).
Only epoch 1 of each sample is imported: a run holds each question once.
"""

from __future__ import annotations

import struct
import zipfile
import zlib
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any

import pyarrow as pa

from rageval_core.errors import SourceError, shown
from rageval_core.importers.common import (
    Fields,
    Imported,
    bad,
    declare,
    json_value,
    load_json,
    metric_name,
)
from rageval_core.models import JudgeRef

LETTERS = {"C": 1.0, "I": 0.0, "P": 0.5, "N": 0.0}
MAX_MEMBER = 256 << 20  # bytes of one zip member read: a sample is kilobytes
MAX_TOTAL = 1 << 30  # bytes inflated from all members of one log together
CHUNK = 1 << 16  # bytes inflated per step: a member never inflates past its budget by more
ZSTD = 93  # zip compression method number of Zstandard


class _Budget:
    """Bytes left to inflate from one log: every member draws on the same total, so many
    members at the per-member limit cannot add up to gigabytes."""

    def __init__(self, total: int):
        self.left = total


def _zstd_stream(z: zipfile.ZipFile, info: zipfile.ZipInfo) -> IO[bytes]:
    """A zstd-compressed member (method 93, what Inspect writes), which `zipfile` reads
    only from Python 3.14: its raw bytes from behind the local header, inflated as a
    stream by pyarrow's zstd codec (pyarrow is a dependency already)."""
    fh = z.fp
    fh.seek(info.header_offset)
    header = fh.read(30)
    if header[:4] != b"PK\x03\x04":
        raise zipfile.BadZipFile(f"bad local header for {info.filename}")
    name_len, extra_len = struct.unpack("<HH", header[26:30])
    fh.seek(info.header_offset + 30 + name_len + extra_len)
    raw = pa.BufferReader(fh.read(info.compress_size))
    return pa.CompressedInputStream(raw, "zstd")


def _inflate(z: zipfile.ZipFile, info: zipfile.ZipInfo, budget: _Budget, source: str) -> bytes:
    """A member's bytes, inflated in steps of `CHUNK`: stops as soon as it passes its own
    limit, its declared size or the log's budget, and checks size and CRC-32 itself
    (whatever the directory claims, nothing larger is ever held)."""
    name = info.filename
    limit = min(MAX_MEMBER, budget.left)
    if info.file_size > limit:
        raise SourceError(
            f"{source}: {name} is {info.file_size} bytes, more than a sample holds "
            f"({limit} bytes left of the log's {MAX_TOTAL})"
        )
    stream = _zstd_stream(z, info) if info.compress_type == ZSTD else z.open(info)
    parts, size, crc = [], 0, 0
    with stream:
        while chunk := stream.read(CHUNK):
            size += len(chunk)
            if size > info.file_size:
                raise SourceError(
                    f"{source}: {name} inflates past its declared {info.file_size} bytes"
                )
            crc = zlib.crc32(chunk, crc)
            parts.append(chunk)
    if size != info.file_size or crc != info.CRC:
        raise SourceError(f"{source}: {name} is damaged (size or CRC-32 does not match)")
    budget.left -= size
    return b"".join(parts)


def _member(z: zipfile.ZipFile, name: str, source: str, budget: _Budget) -> Any:
    try:
        raw = _inflate(z, z.getinfo(name), budget, source)
    except (zipfile.BadZipFile, NotImplementedError, OSError, EOFError, pa.ArrowException) as exc:
        raise SourceError(
            f"{source}: {name} cannot be read ({shown(exc, 120, bare=True)})"
        ) from None
    return json_value(raw, f"{source}: {name}")


def _load(path: Path) -> tuple[dict[str, Any], Iterator[tuple[str, Any]]]:
    """The log's header and its samples as (where, sample JSON) pairs, read one at a
    time (a sample is parsed when it is reached, and dropped once imported)."""
    source = str(path)
    if path.suffix == ".json":
        log = Fields(load_json(path), source, "")
        if log.raw("eval") is None or log.raw("samples") is None:
            raise SourceError(f"{source}: eval or samples is missing: not an Inspect log")
        samples = log.items("samples")
        return dict(log.value), iter([(f"samples[{i}]", s) for i, s in enumerate(samples)])
    try:
        z = zipfile.ZipFile(path)
    except (zipfile.BadZipFile, OSError) as exc:
        raise SourceError(f"{source}: not an Inspect .eval log (a zip): {exc}") from None
    budget = _Budget(MAX_TOTAL)
    names = set(z.namelist())
    if "header.json" not in names:
        z.close()
        raise SourceError(f"{source}: header.json is missing: not an Inspect .eval log")
    try:
        header = _member(z, "header.json", source, budget)
    except SourceError:
        z.close()
        raise
    if not isinstance(header, dict):
        z.close()
        raise bad(source, "header.json", "an object", header)
    members = sorted(n for n in names if n.startswith("samples/") and n.endswith(".json"))

    def samples() -> Iterator[tuple[str, Any]]:
        with z:
            for m in members:
                yield m, _member(z, m, source, budget)

    return header, samples()


def _text(value: Any, source: str, where: str) -> str | None:
    """A message or message list as its text (the last user message of a list)."""
    if value is None or isinstance(value, str):
        return value
    if isinstance(value, list):
        texts = [m for m in value if isinstance(m, dict) and m.get("role", "user") == "user"]
        if not texts:
            return None
        return _content(texts[-1].get("content"), source, f"{where}[-1].content")
    raise bad(source, where, "text or a list of messages", value)


def _content(value: Any, source: str, where: str) -> str | None:
    if value is None or isinstance(value, str):
        return value
    if isinstance(value, list):  # content parts: keep the text ones
        return "".join(
            p.get("text", "") for p in value if isinstance(p, dict) and p.get("type") == "text"
        )
    raise bad(source, where, "text or content parts", value)


def _score_values(name: str, value: Any, source: str, where: str) -> dict[str, float | None]:
    if isinstance(value, dict):
        out: dict[str, float | None] = {}
        for k, v in value.items():
            key = metric_name(f"{name} {k}", "inspect")  # keys are the scorer's free text
            out.update(_score_values(key, v, source, f"{where}.{shown(k, 40, bare=True)}"))
        return out
    if isinstance(value, bool):
        return {name: float(value)}
    if isinstance(value, int | float):
        return {name: float(value)}
    if isinstance(value, str) and value in LETTERS:
        return {name: LETTERS[value]}
    if value is None:
        return {name: None}
    raise bad(source, where, "a number, C/I/P/N or a mapping of numbers", value)


def _sample(where: str, raw: Any, source: str, labels: dict[str, str]) -> dict[str, Any]:
    s = Fields(raw, source, where)
    output = s.obj("output")
    answer = output.text("completion") if output else None
    if not answer and output:
        choices = output.items("choices")
        if choices:
            msg = Fields(choices[0], source, output.path("choices[0]")).obj("message")
            answer = _content(msg.raw("content"), source, msg.path("content")) if msg else None
    target = s.raw("target")
    if isinstance(target, list):
        target = "; ".join(str(t) for t in target)
    elif target is not None and not isinstance(target, str):
        raise bad(source, s.path("target"), "text or a list of text", target)
    scores: dict[str, float | None] = {}
    for scorer, score in (s.obj("scores").value if s.obj("scores") else {}).items():
        sc = Fields(score, source, s.path(f"scores.{scorer}"))
        values = _score_values(
            metric_name(str(scorer), "inspect"), sc.raw("value"), source, sc.path("value")
        )
        for n in values:
            labels[n] = n if n != metric_name(str(scorer), "inspect") else str(scorer)
        scores.update(values)
    usage = s.obj("model_usage")
    tokens = {"input_tokens": 0.0, "output_tokens": 0.0}
    for model in usage.value if usage else {}:
        u = usage.obj(str(model), required=True)
        for k in tokens:
            tokens[k] += u.number(k) or 0.0
    seconds = s.number("total_time")
    error = s.obj("error")
    meta = s.obj("metadata")
    ids = meta.texts("retrieved_ids") if meta else None
    sid = s.raw("id")
    if sid is not None and (isinstance(sid, bool) or not isinstance(sid, str | int)):
        raise bad(source, s.path("id"), "text or an integer", sid)
    return {
        "question_id": None if sid is None else str(sid),
        "question": _text(s.raw("input"), source, s.path("input")),
        "reference": target,
        "answer": answer,
        "retrieved": ids,
        "total_ms": None if seconds is None else seconds * 1000,
        "input_tokens": tokens["input_tokens"] if usage else None,
        "output_tokens": tokens["output_tokens"] if usage else None,
        "error": error.text("message") if error else None,
        "judge_error": None,
        "scores": scores,
        "_epoch": s.raw("epoch") or 1,
    }


def read(path: Path) -> Imported:
    source = str(path)
    header, samples = _load(path)
    labels: dict[str, str] = {}
    records = []
    for where, raw in samples:
        rec = _sample(where, raw, source, labels)
        if rec.pop("_epoch") != 1:
            continue
        records.append(rec)
    if not records and header.get("status") not in (None, "success"):
        raise SourceError(f"{source}: the log holds no samples (status {header.get('status')!r})")
    all_scores = [r["scores"] for r in records]
    for r in records:
        r["scores"] = {n: r["scores"].get(n) for n in labels}
    ev = Fields(header.get("eval") or {}, source, "eval")
    task = ev.text("task")
    model = ev.text("model")
    packages = ev.obj("packages")
    version = packages.text("inspect_ai") if packages else None
    return Imported(
        records=records,
        metrics=declare(labels, all_scores),
        config={"pipeline": {"task": task, "model": model}, "eval_id": ev.raw("eval_id")},
        judge=JudgeRef(kind="inspect", model=model, version=version),
        name=task,
        tool_version=version,
    )
