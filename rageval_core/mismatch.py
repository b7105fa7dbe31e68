"""What a run's retrieved chunks did not match in its dataset, said in one sentence each.

A pipeline that chunks its documents differently from the dataset retrieves ids the corpus
does not have, and every id-based retrieval figure then reads as a miss although the
right text was retrieved (docs/metrics.md). The runner counts those ids, and on a span
dataset the chunks it could not place, the chunks whose offsets did not hold their text and
the document ids the dataset does not have, into the manifest's totals
(`runs.folder.run_totals`); `rageval run`, `check`, `compare` and the Runs and Diagnose
pages say it with these sentences. Pure: reads a totals mapping, nothing else.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping
from typing import Any, Protocol

from rageval_core.errors import shown


def _count(totals: Mapping[str, Any], key: str) -> int:
    value = totals.get(key)
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else 0


def unknown_ids_warning(totals: Mapping[str, Any]) -> str | None:
    """`97 of 210 retrieved ids are not in the corpus: …`, or None when all were known."""
    unknown = _count(totals, "n_unknown_ids")
    if not unknown:
        return None
    of = _count(totals, "n_retrieved") or unknown
    return (
        f"{unknown} of {of} retrieved ids are not in the corpus: is the pipeline chunking "
        "differently? Use gold_spans"
    )


def span_scored_note(totals: Mapping[str, Any]) -> str | None:
    """`scored by spans; chunk ids differ from the corpus (…)`, or None: a pipeline with a
    chunker of its own, on a span dataset, as intended — not a warning."""
    n = _count(totals, "n_unknown_span_ids")
    if not n:
        return None
    return (
        f"scored by spans; chunk ids differ from the corpus ({n} retrieved ids are the "
        "pipeline's own chunks, placed in the documents)"
    )


def unplaced_warning(totals: Mapping[str, Any]) -> str | None:
    """`3 retrieved chunks could not be placed … (first: a, b)`, or None."""
    unplaced = _count(totals, "n_unplaced")
    if not unplaced:
        return None
    names = _names(totals, "unplaced_ids")
    first = f" (first: {names})" if names else ""
    return (
        f"{unplaced} retrieved chunk(s) could not be placed in the dataset's documents and "
        f"count as not relevant{first}: give each chunk its document id and offsets, or "
        "index the documents the dataset holds"
    )


def _names(totals: Mapping[str, Any], key: str) -> str:
    """The first five names of a totals list, `…` after them when there are more; empty
    when there are none. A long name keeps its last 60 characters: a path's file name, not
    the folders every name shares."""
    value = totals.get(key)
    names = [n for n in value if isinstance(n, str)] if isinstance(value, list) else []
    cut = [shown(n if len(n) <= 60 else f"…{n[-59:]}", bare=True) for n in names[:5]]
    return ", ".join(cut) + (", …" if len(names) > 5 else "")


def offsets_warning(totals: Mapping[str, Any]) -> str | None:
    """`235 chunks' offsets do not match their text: placed by text (…)`, or None."""
    n = _count(totals, "n_offsets_mismatched")
    if not n:
        return None
    return (
        f"{n} chunks' offsets do not match their text: placed by text (LlamaIndex sentence "
        "windows record the window)"
    )


def unknown_docs_warning(totals: Mapping[str, Any]) -> str | None:
    """`chunks named document ids the dataset does not have (a, b): 235 placed by their
    text anyway`, or None."""
    names = _names(totals, "unknown_doc_ids")
    if not names:
        return None
    placed = _count(totals, "n_unknown_doc_placed")
    return (
        f"chunks named document ids the dataset does not have ({names}): {placed} of them "
        "placed by their text anyway (do the ids depend on the folder the app ran from?)"
    )


def mismatch_warnings(totals: Mapping[str, Any] | None) -> tuple[str, ...]:
    """Every warning of a run's totals (a manifest's `totals`), in a fixed order."""
    if not isinstance(totals, Mapping):
        return ()
    found = (
        unknown_ids_warning(totals),
        unknown_docs_warning(totals),
        offsets_warning(totals),
        unplaced_warning(totals),
    )
    return tuple(w for w in found if w)


class _Run(Protocol):
    run_id: str
    manifest: Any


def run_warnings(
    infos: Iterable[_Run], only: Collection[str] | None = None, limit: int = 5
) -> tuple[tuple[str, ...], int]:
    """`run_id: warning` lines of the runs (those in `only`, when given), the first
    `limit` of them, and how many runs have one (a page's banner)."""
    lines: list[str] = []
    n = 0
    for info in infos:
        if only is not None and info.run_id not in only:
            continue
        found = mismatch_warnings(getattr(info.manifest, "totals", None))
        if found:
            n += 1
            lines += [f"{info.run_id}: {w}" for w in found]
    return tuple(lines[:limit]), n


def run_notes(infos: Iterable[_Run], only: Collection[str] | None = None) -> tuple[str, ...]:
    """`run_id: note` of the runs (those in `only`) scored by spans with chunk ids of their
    own: named, so nobody reads the ids as a mistake."""
    return tuple(
        f"{i.run_id}: {note}"
        for i in infos
        if (only is None or i.run_id in only)
        and isinstance(totals := getattr(i.manifest, "totals", None), Mapping)
        and (note := span_scored_note(totals))
    )
