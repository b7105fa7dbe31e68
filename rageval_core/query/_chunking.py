"""Whether two runs cut their text into chunks differently, for `compare` and `check`.

Figures that count chunks (the catalogue's `chunked` group: context relevance and
precision by chunk, the @k retrieval and span figures, MRR, nDCG) move when the same
text is cut into other chunks, though no character changed. Two runs cut differently
when their mean retrieved-chunk length differs by more than `CUT_SHARE` of the shorter
(docs/metrics.md, "Comparing runs"); then both commands say so and list the figures
that do not depend on the cut first.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import duckdb

from rageval_core.catalogue import BUILTIN, Catalogue
from rageval_core.query import _sql as sql
from rageval_core.runs.reading import RunInfo
from rageval_core.runs.source import bind, open_run, reading_results
from rageval_core.store.results import ResultsStore

CUT_SHARE = 0.25
"""Mean chunk lengths further apart than this share of the shorter read as another cut."""


def mean_chunk_chars(
    store: ResultsStore, cur: duckdb.DuckDBPyConnection, info: RunInfo
) -> float | None:
    """The mean length in characters of `info`'s retrieved chunks; None when none has a
    text (an import that kept ids only)."""
    with open_run(cur, info, fs=store.fs, to_url=store.to_url, columns=("retrieved_texts",)) as src:
        q = sql.MEAN_CHUNK_CHARS.format(src=src.sql)
        with reading_results(info.run_id):
            ((value,),) = cur.execute(q, bind(q, src.params)).fetchall()  # to the end
    return None if value is None else float(value)


def cut_differently(base: float | None, other: float | None) -> bool:
    """Whether two mean chunk lengths differ by more than `CUT_SHARE` of the shorter."""
    if not base or not other:
        return False
    return max(base, other) > (1 + CUT_SHARE) * min(base, other)


def cut_note(run_id: str, length: float | None, base_id: str, base: float | None) -> str | None:
    """The sentence `compare` and `check` print when `run_id` cut its text differently from
    `base_id`, else None."""
    if not cut_differently(base, length):
        return None
    return (
        f"{run_id} cuts text differently from {base_id} (mean chunk "
        f"{round(length or 0):,} vs {round(base or 0):,} characters): "
        "figures that count chunks (context relevance and precision, @k, MRR, nDCG) move "
        "with the cut; those by characters and of the answer are listed first"
    )


def chunking_notes(store: ResultsStore, infos: Sequence[RunInfo]) -> list[str]:
    """One `cut_note` per run after the first (the baseline) that cut its text differently."""
    with store.cursor() as cur:
        lengths = [mean_chunk_chars(store, cur, i) for i in infos]
    base = infos[0]
    notes = (
        cut_note(i.run_id, n, base.run_id, lengths[0])
        for i, n in zip(infos[1:], lengths[1:], strict=True)
    )
    return [n for n in notes if n]


def uncut_first(names: Iterable[str], catalogue: Catalogue = BUILTIN) -> list[str]:
    """`names` with the figures that do not count chunks first, each part in its order."""
    names = list(names)
    chunked = [n for n in names if counts_chunks(n, catalogue)]
    return [n for n in names if n not in chunked] + chunked


def counts_chunks(name: str, catalogue: Catalogue = BUILTIN) -> bool:
    """Whether figure or measure `name` counts chunks (the catalogue's `chunked` group)."""
    entry = catalogue.metric(name)
    if entry is None:
        return False
    measure = catalogue.measures.get(entry.of or entry.name)
    return measure is not None and "chunked" in measure.groups
