"""A new version of a dataset folder with its file changed as little as possible.

A golden set is curated by hand and reviewed in version control: `labels to-gold` (and
every later writer of a version) must leave what the team wrote as they wrote it —
comments, quotes as quotes, key order, flow or block style, scalar types — and add only
what changed. The dataset file is edited as a YAML document (ruamel.yaml's round trip),
never re-dumped. The new folder is written beside `out`, read back and checked, and moved
into place only then: never an invalid or half-written `out`.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from ruamel.yaml import YAML
from ruamel.yaml.comments import CommentedMap, CommentedSeq
from ruamel.yaml.error import YAMLError
from ruamel.yaml.scalarstring import ScalarString
from ruamel.yaml.util import load_yaml_guess_indent

from rageval_core.dataset.anchoring import occurrences
from rageval_core.dataset.documents import YAML_SUFFIXES
from rageval_core.dataset.load import load_dataset
from rageval_core.dataset.versions import VERSIONS_KEY
from rageval_core.dataset.writing import DATASET_FILE, YAML_WIDTH, question_dict
from rageval_core.errors import ConfigError, DatasetError
from rageval_core.models import GoldenDataset, GoldenQuestion, GoldSpan

QUOTE_CHARS = 300
"""A new gold span up to this long is written with its text as well, so a reviewer reads
the quote in the diff; longer ones are offsets only."""

_REFERENCES = ("corpus", "documents")


def write_revision(
    source: GoldenDataset,
    version: str,
    questions: Sequence[GoldenQuestion],
    out_dir: str | os.PathLike[str],
    *,
    expected_sha256: str | None = None,
    documents: Path | None = None,
    moved: Mapping[GoldSpan, GoldSpan] | None = None,
    document_versions: Mapping[str, str] | None = None,
) -> Path:
    """Write version `version` of `source` with `questions` (the source's, changed, and
    new ones after them) into the empty or absent folder `out_dir`; return its dataset
    file. `expected_sha256`, when given, is what the written version must hash to.

    `documents`, when given, is a documents file the new version has instead of the
    source's (under the source's name when of the same kind); `moved` maps a span to
    where it now stands (its written item gets the new offsets in place, its quote
    kept); `document_versions` is what the new version records under that key."""
    out = Path(out_dir)
    _check_new(out)
    src = Path(source.path)
    yaml = _round_trip()
    try:
        text = src.read_text(encoding="utf-8")
        _, indent, offset = load_yaml_guess_indent(text)
        top = yaml.load(text)
    except (OSError, UnicodeDecodeError, YAMLError) as exc:
        raise DatasetError(f"{src}: cannot be read to write a new version: {exc}") from exc
    yaml.indent(mapping=indent or 2, sequence=indent or 2, offset=offset or 0)
    top["version"] = _like(top.get("version"), version)
    _revise_questions(top["questions"], source, questions, moved or {})
    if document_versions is not None:
        _record_versions(top, document_versions)
    with staged_folder(out) as work:
        for key in _REFERENCES:
            if key == "documents" and documents is not None:
                ref = _replace_documents(src.parent, str(top.get(key, "")), documents, work)
                if key in top:
                    top[key] = ref
                else:  # beside the corpus or the version, not after the questions
                    _insert_after(top, key, ref, "corpus" if "corpus" in top else "version")
            elif key in top:
                top[key] = _carry(src.parent, str(top[key]), work)
        with (work / DATASET_FILE).open("w", encoding="utf-8") as f:
            yaml.dump(top, f)
        written = load_dataset(work / DATASET_FILE)
        if expected_sha256 is not None and written.sha256 != expected_sha256:
            raise ConfigError(
                f"{out / DATASET_FILE}: the written version does not read back as planned "
                "(a bug in rageval); nothing was written"
            )
    return out / DATASET_FILE


def _check_new(out: Path) -> None:
    if (out / DATASET_FILE).exists() or (out.is_dir() and any(out.iterdir())):
        raise ConfigError(
            f"{out} already exists and is not empty: a new version goes into a new folder"
        )


@contextmanager
def staged_folder(out: Path) -> Iterator[Path]:
    """A temporary folder beside `out` (which must be absent or empty) to write a new
    version into; renamed to `out` when the block ends without an error, removed when it
    raises: never a half-written `out`. The block validates what it wrote."""
    _check_new(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix=f".{out.name}.", dir=out.parent))
    try:
        yield work
        if out.is_dir():
            out.rmdir()
        work.rename(out)
    except BaseException:
        shutil.rmtree(work, ignore_errors=True)
        raise


def _round_trip() -> YAML:
    """A YAML that writes back what it read: quotes kept, lines not re-wrapped, `null`
    written as `null`."""
    yaml = YAML(typ="rt")
    yaml.preserve_quotes = True
    yaml.width = YAML_WIDTH
    yaml.representer.add_representer(
        type(None), lambda r, _: r.represent_scalar("tag:yaml.org,2002:null", "null")
    )
    return yaml


def _like(old: Any, new: str) -> Any:
    """`new` written the way `old` was: a number stays a number (`version: 3` -> `4`),
    a quoted string keeps its quotes."""
    if isinstance(old, ScalarString):
        return type(old)(new)
    if isinstance(old, int | float) and not isinstance(old, bool):
        try:
            as_old = type(old)(new)
        except ValueError:
            return new
        return as_old if str(as_old) == new else new
    return new


def _inside(folder: Path, ref: str) -> bool:
    return (folder / ref).resolve().is_relative_to(folder.resolve()) and not Path(ref).is_absolute()


def _carry(folder: Path, ref: str, work: Path, source: Path | None = None) -> str:
    """A data file the dataset names (or `source` in its place), copied beside the new
    version under the same name; one outside the dataset's folder is named by its
    absolute path instead."""
    if source is None:
        source = (folder / ref).resolve()
        if not _inside(folder, ref):
            return str(source)
    target = work / ref
    target.parent.mkdir(parents=True, exist_ok=True)
    try:
        shutil.copy2(source, target)
    except OSError as exc:
        raise ConfigError(f"cannot copy {source} into the new version: {exc}") from exc
    return ref


def _replace_documents(folder: Path, ref: str, documents: Path, work: Path) -> str:
    """The new documents file copied into the new version: under the source's name when
    that is in its folder and of the same kind (JSONL or YAML: the `documents:` line
    stays as written), else under its own name."""
    yaml_kind = documents.suffix.lower() in YAML_SUFFIXES
    same = ref and _inside(folder, ref) and (Path(ref).suffix.lower() in YAML_SUFFIXES) == yaml_kind
    return _carry(folder, ref if same else documents.name, work, documents)


def _record_versions(top: CommentedMap, versions: Mapping[str, str]) -> None:
    """`document_versions:` set to `versions`, edited in place when the file has it."""
    recorded = top.get(VERSIONS_KEY)
    if not isinstance(recorded, CommentedMap):
        recorded = CommentedMap()
        _insert_after(top, VERSIONS_KEY, recorded, "documents")
    for gone in [d for d in recorded if d not in versions]:
        del recorded[gone]
    for doc_id, digest in versions.items():
        if recorded.get(doc_id) != digest:  # an unchanged entry keeps its quotes
            recorded[doc_id] = digest


def _revise_questions(
    raw: CommentedSeq,
    source: GoldenDataset,
    questions: Sequence[GoldenQuestion],
    moved: Mapping[GoldSpan, GoldSpan],
) -> None:
    before = {q.id: q for q in source.questions}
    entries = {str(m.get("id")): m for m in raw if isinstance(m, CommentedMap)}
    texts = {d.id: d.text for d in source.documents}
    for q in questions:
        old = before.get(q.id)
        if old is None:
            raw.append(_new_question(q, texts))
        elif q != old:
            _revise(entries[q.id], old, q, texts, moved)


def _new_question(q: GoldenQuestion, texts: dict[str, str]) -> CommentedMap:
    m = CommentedMap(question_dict(q))
    for key in ("gold_chunk_ids", "tags"):
        if key in m:
            m[key] = _flow(m[key])
    if "gold_spans" in m:
        m["gold_spans"] = CommentedSeq(_span_entry(s, texts) for s in q.gold_spans)
    return m


def _revise(
    entry: CommentedMap,
    old: GoldenQuestion,
    new: GoldenQuestion,
    texts: dict[str, str],
    moved: Mapping[GoldSpan, GoldSpan],
) -> None:
    """`entry` (the question as written) changed from `old` to `new` in place: only the
    gold keys and the stale mark are touched, items kept in their order and form (a
    moved span gets its new offsets), new ones appended."""
    if new.gold_chunk_ids != old.gold_chunk_ids:
        ids = entry.get("gold_chunk_ids")
        if not isinstance(ids, CommentedSeq):
            ids = _flow([])
            _insert_after(entry, "gold_chunk_ids", ids, "reference_answer")
        for gone in [g for g in ids if g not in new.gold_chunk_ids]:
            ids.remove(gone)
        ids.extend(g for g in new.gold_chunk_ids if g not in ids)
    if new.gold_spans != old.gold_spans:
        spans = entry.get("gold_spans")
        if not isinstance(spans, CommentedSeq):
            spans = CommentedSeq()
            _insert_after(entry, "gold_spans", spans, "gold_chunk_ids")
        if old.stale is None:  # the written items resolve, in order, to its spans
            written = list(zip(list(spans), old.gold_spans, strict=False))
        else:  # written against older texts, some may resolve no more: each read again
            written = [(item, _written_span(item, texts)) for item in spans]
        for item, span in written:
            if span in moved and "start" in item:
                item["start"] = _like(item["start"], str(moved[span].start))
                item["end"] = _like(item["end"], str(moved[span].end))
        kept = [moved.get(s, s) for _, s in written]
        for (item, _), span in reversed(list(zip(written, kept, strict=True))):
            if span not in new.gold_spans:
                spans.remove(item)
        spans.extend(_span_entry(s, texts) for s in new.gold_spans if s not in kept)
    if new.stale != old.stale:
        _mark_stale(entry, new.stale)
    if not new.answerable or "answerable" not in entry:
        return
    del entry["answerable"]  # gold given: `answerable: false` would contradict it


def _written_span(item: Any, texts: dict[str, str]) -> GoldSpan | None:
    """The span a written `gold_spans` item names in `texts`: its offsets when given,
    else its quote where it stands exactly once; None when it names none."""
    if not isinstance(item, CommentedMap):
        return None
    doc_id, start, end, quote = (item.get(k) for k in ("doc_id", "start", "end", "text"))
    if isinstance(start, int) and isinstance(end, int):
        return GoldSpan(str(doc_id), start, end)
    places = occurrences(texts.get(str(doc_id), ""), quote) if isinstance(quote, str) else []
    return GoldSpan(str(doc_id), places[0], places[0] + len(quote)) if len(places) == 1 else None


def _mark_stale(entry: CommentedMap, reason: str | None) -> None:
    """`stale: true` and its reason set on a question, or both removed."""
    if reason is None:
        entry.pop("stale", None)
        entry.pop("stale_reason", None)
        return
    entry["stale"] = True
    entry["stale_reason"] = reason


def _span_entry(span: GoldSpan, texts: dict[str, str]) -> CommentedMap:
    """A new span on one line, with its quote when short (`QUOTE_CHARS`)."""
    m = CommentedMap(doc_id=span.doc_id, start=span.start, end=span.end)
    quote = texts.get(span.doc_id, "")[span.start : span.end]
    if len(quote) <= QUOTE_CHARS:
        m["text"] = quote
    m.fa.set_flow_style()
    return m


def _flow(items: list[Any]) -> CommentedSeq:
    seq = CommentedSeq(items)
    seq.fa.set_flow_style()
    return seq


def _insert_after(entry: CommentedMap, key: str, value: Any, after: str) -> None:
    keys = list(entry)
    at = keys.index(after) + 1 if after in keys else len(keys)
    entry.insert(at, key, value)
