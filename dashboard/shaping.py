"""Pure helpers that shape query results for display: no Streamlit, no I/O, no SQL.

The HTML builders here are the only place the dashboard makes HTML from untrusted text
(answers, claims, chunks, judge reasons): every piece is `html.escape`d before a tag is
put around it, so a page may pass their output to `unsafe_allow_html` and nothing else.
"""

from __future__ import annotations

import functools
import html
import re
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from urllib.parse import quote_plus

import pandas as pd

from rageval_core import numbers
from rageval_core.catalogue import Catalogue, failure_label
from rageval_core.errors import shown
from rageval_core.labels import QUESTION_LABELS, VERDICTS, HumanLabel, claim_key
from rageval_core.labels.agreement import Agreement
from rageval_core.links import ViewState, md_escape, relative_url
from rageval_core.models import FAILURE_TYPES, Claim
from rageval_core.numbers import MISSING, absent
from rageval_core.query import Disagreement, QueueItem, RunCoverage
from rageval_core.runs.layout import RUN_ID_RE
from rageval_core.runs.reading import RunInfo

FLAGGED_VERDICTS = ("unsupported", "contradicted")


def key_metrics(cat: Catalogue) -> dict[str, str]:
    """The Runs table's headline figures (declared means too) and their labels."""
    return {m: cat.label(m) for m in cat.figure_names("runs")}


def quality_metrics(cat: Catalogue) -> tuple[str, ...]:
    """Measures with a mean and a p10 (trend, tails, cost vs quality, range filters)."""
    return cat.measure_names("quality")


def slider_range(
    lo: float | None, hi: float | None, bounds: tuple[float, float] = (0.0, 1.0)
) -> tuple[float, float]:
    """A (low, high) range from a URL as a slider's value: open ends filled, clamped to
    the measure's `bounds` (0..1 for a score, a declared metric's own range)."""
    first, last = bounds
    a = min(max(first if lo is None else lo, first), last)
    b = min(max(last if hi is None else hi, first), last)
    return (min(a, b), max(a, b))


# ---------------------------------------------------------------------------- runs


def with_deltas(
    runs: pd.DataFrame, metrics: Iterable[str], among: pd.DataFrame | None = None
) -> pd.DataFrame:
    """Add `<metric>_delta` = this run minus its previous run (the `previous_run` column
    of `runs_overview`), whose figures are looked up in `among` (every run: a filter may
    hide the previous run); NaN for a run without one."""
    out = runs.copy()
    values = (runs if among is None else among).set_index("run_id")
    previous = out["previous_run"].tolist()
    for m in metrics:
        before = values[m].astype(float).reindex(previous).to_numpy()
        out[f"{m}_delta"] = out[m].astype(float).to_numpy() - before
    return out


def run_tags(runs: pd.DataFrame) -> list[str]:
    """Every tag used by any run, sorted (options of the tag filter)."""
    # tolist() first, str() on the distinct tags only: iterating the Arrow column was 10 ms
    tags = {t for ts in runs["tags"].dropna().tolist() for t in ts}
    return sorted({str(t) for t in tags})


def distinct(values: pd.Series) -> list[str]:
    # pd.unique first: str() on a few distinct values, not on every one of 10,000 runs
    return sorted({str(v) for v in pd.unique(values.dropna()) if str(v)})


def run_label(runs: pd.DataFrame) -> dict[str, str]:
    """run id -> `run id (status)` for pickers; running and failed runs say so."""
    # two columns zipped, not itertuples over every column: 10,000 runs in ms, not seconds
    return {
        rid: rid if status == "complete" else f"{rid} ({status})"
        for rid, status in zip(runs["run_id"].tolist(), runs["status"].tolist(), strict=True)
    }


def problems_markdown(broken: Mapping[str, Sequence[str]], limit: int = 600) -> str:
    """One bullet per run: its id, then its problems on one line of at most `limit`
    characters. Problems quote file contents (a manifest value, a folder name), so they are
    escaped: a damaged file must not draw a link or an image in the dashboard."""
    lines = []
    for run_id, messages in broken.items():
        who = (
            f"`{run_id}`"
            if RUN_ID_RE.fullmatch(run_id)
            else md_escape(shown(run_id, 100, bare=True))
        )
        lines.append(f"- {who}: {md_escape(shown('; '.join(messages), limit, bare=True))}")
    return "\n".join(lines)


# ---------------------------------------------------------------------------- failures


def failure_headline(counts: Mapping[str, int]) -> str:
    """`23 of 99 questions failed: 9 retrieval miss, 8 unfaithful, …` (largest first)."""
    total = sum(int(n) for n in counts.values())
    failed = {ft: int(n) for ft, n in counts.items() if ft != "ok" and n}
    n_failed = sum(failed.values())
    if not total:
        return "No questions in this run yet."
    if not n_failed:
        return f"All {total} questions passed."
    parts = sorted(failed.items(), key=lambda kv: (-kv[1], FAILURE_TYPES.index(kv[0])))
    detail = ", ".join(f"{n} {failure_label(ft)}" for ft, n in parts)
    return f"{n_failed} of {total} questions failed: {detail}."


# ---------------------------------------------------------------------------- marking text


@dataclass(frozen=True)
class Mark:
    """Text to find and mark, the tooltip to give it and the CSS class of the mark."""

    needle: str
    title: str
    css: str


MAX_MARKS = 200
"""Marks placed per text; the rest come back as missed (listed, not highlighted)."""


_LINE_END = re.compile(r"\r\n|\r|\n")


def _spans(text: str, marks: Sequence[Mark]) -> tuple[list[tuple[int, int, Mark]], list[Mark]]:
    """Non-overlapping (start, end, mark) spans of each needle, first match; the misses."""
    taken: list[tuple[int, int, Mark]] = []
    missed: list[Mark] = []
    for i, m in enumerate(marks):
        if i >= MAX_MARKS:  # each mark scans the whole text: bound a pathological row
            missed.append(m)
            continue
        needle = m.needle.strip()
        start = text.find(needle) if needle else -1
        end = start + len(needle)
        if start < 0 and needle:
            # searched in the text itself: offsets found in text.lower() shift wherever
            # lowering changes a character's length ("İ" becomes two)
            hit = re.search(re.escape(needle), text, re.IGNORECASE)
            if hit:
                start, end = hit.span()
        if start < 0 or any(s < end and start < e for s, e, _ in taken):
            missed.append(m)
            continue
        taken.append((start, end, m))
    return sorted(taken, key=lambda t: t[0]), missed


def mark_text(text: str, marks: Sequence[Mark]) -> tuple[str, list[Mark]]:
    """`text` as escaped HTML with each mark's needle wrapped in `<mark>`, in place.

    Spans are found in the raw text and every segment, needle and title is escaped
    separately, so no input can open a tag. Needles not found verbatim (or overlapping an
    earlier one) come back as the second value for the caller to list.
    """
    spans, missed = _spans(text, marks)
    out, pos = [], 0
    for start, end, m in spans:
        out.append(html.escape(text[pos:start]))
        out.append(
            f'<mark class="{html.escape(m.css)}" title="{html.escape(m.title)}">'
            f"{html.escape(text[start:end])}</mark>"
        )
        pos = end
    out.append(html.escape(text[pos:]))
    # every line ending CommonMark knows (\r too): one would end the one-line HTML block
    # and let markdown in the rest of the text be parsed
    return _LINE_END.sub("<br>", "".join(out)), missed


def answer_marks(claims: Iterable[Claim]) -> list[Mark]:
    """A mark per unsupported or contradicted claim, titled with the judge's reason."""
    return [
        Mark(
            c.text,
            f"{c.verdict}: {c.reason}" if c.reason else str(c.verdict),
            f"rageval-{c.verdict}",
        )
        for c in claims
        if c.verdict in FLAGGED_VERDICTS
    ]


def evidence_marks(claims: Iterable[Claim], chunk_id: str) -> list[Mark]:
    """A mark per evidence sentence a claim cites from chunk `chunk_id`."""
    seen: dict[str, Mark] = {}
    for c in claims:
        if c.evidence_chunk_id == chunk_id and c.evidence and c.evidence not in seen:
            seen[c.evidence] = Mark(c.evidence, f"evidence for: {c.text}", "rageval-evidence")
    return list(seen.values())


MARK_STYLE = (
    "<style>"
    "mark.rageval-unsupported{background:#ffe08a;padding:0 2px}"
    "mark.rageval-contradicted{background:#ffb3b3;padding:0 2px}"
    "mark.rageval-evidence{background:#c8f0c8;padding:0 2px}"
    "mark.rageval-gold{background:#c8f0c8;padding:0}"
    "</style>"
)


MAX_TEXT = 50_000
"""Characters of one untrusted text sent to the browser; a runaway answer is cut here."""


def marked_block(text: str | None, marks: Sequence[Mark]) -> tuple[str, list[Mark]]:
    """`mark_text` wrapped in a block with the mark styles: ready for unsafe_allow_html.

    Text past MAX_TEXT is cut (with a note) so one pathological answer cannot ship
    megabytes to every viewer; marks in the cut part come back as missed.
    """
    text = text or ""
    note = ""
    if len(text) > MAX_TEXT:
        note = f'<p class="rageval-cut">… cut: showing {MAX_TEXT:,} of {len(text):,} characters</p>'
        text = text[:MAX_TEXT]
    body, missed = mark_text(text, marks)
    return f'{MARK_STYLE}<div class="rageval-text">{body}</div>{note}', missed


# ---------------------------------------------------------------------------- tables


def question_links(rows: pd.DataFrame, run_id: str | None = None) -> pd.Series:
    """Relative URL of each row's Question view (for a LinkColumn).

    The run is `run_id`, or each row's own `run_id` column when `run_id` is None.
    """
    runs = rows["run_id"].tolist() if run_id is None else [run_id] * len(rows)
    pairs = [(str(r), str(q)) for r, q in zip(runs, rows["question_id"].tolist(), strict=True)]
    # Once per distinct pair: a question × metric table names each question several times.
    once = list(set(pairs))
    urls = dict(zip(once, _urls("question", once), strict=True))
    return pd.Series([urls[p] for p in pairs], index=rows.index, dtype="object")


def run_links(run_ids: Iterable[str], page: str) -> list[str]:
    """Relative URL of each run's view on `page`."""
    return _urls(page, ((r, None) for r in run_ids))


def _urls(page: str, pairs: Iterable[tuple[object, object]]) -> list[str]:
    """`relative_url(page, ViewState(run=r, question=q))` of each (r, q); q may be None.

    The same text, built from the page's path and `quote_plus` of each value (what
    `urlencode` does): a ViewState and its twenty fields per row cost 50 ms a rerun on a
    1,000-row table.
    """
    path = relative_url(page, ViewState())
    part = functools.cache(  # one run on every row of a run's table: quoted once
        lambda key, value: (
            f"{key}={quote_plus(str(value))}" if value is not None and str(value) else ""
        )
    )
    out = []
    for run, question in pairs:
        query = "&".join(p for p in (part("run", run), part("question", question)) if p)
        out.append(f"{path}?{query}" if query else path)
    return out


def stale_note(info: RunInfo) -> str:
    """The sidebar's and Runs page's word on a run whose writer died: it stays "running"
    and will not finish unless someone resumes it."""
    ago = max(0.0, time.time() - (info.last_active or time.time())) / 60
    shards = info.manifest.shards if info.manifest else 1
    more = f" (with `--shard K/{shards}` for each unfinished shard)" if shards > 1 else ""
    return (
        f"Stale: `{info.run_id}` has shown no sign of life for {ago:.0f} min: its writer "
        f"stopped without finishing it. Finish it with "
        f"`rageval run CONFIG.yaml --resume {info.run_id}`{more}."
    )


def split_config_diff(diff: pd.DataFrame) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(keys that differ, keys that are the same), without the `differs` column."""
    differs = diff["differs"].astype(bool)
    return (
        diff[differs].drop(columns="differs").reset_index(drop=True),
        diff[~differs].drop(columns="differs").reset_index(drop=True),
    )


def default_compare(runs: pd.DataFrame) -> tuple[str, ...]:
    """(baseline, candidate) Compare opens on: the newest complete run and its previous
    run (`previous_run` of `runs_overview`, newest first); the latest two runs when no
    complete run has one."""
    done = runs[(runs["status"] == "complete") & runs["previous_run"].notna()]
    if not done.empty:
        first = done.iloc[0]
        return (str(first["previous_run"]), str(first["run_id"]))
    return tuple(reversed(runs["run_id"].head(2).tolist()))


def widest_gap_run(runs: pd.DataFrame, among: Sequence[str]) -> str | None:
    """The run in `among` whose recall@20 beats its recall@5 the most: the one with the
    most rerank candidates, so the Retrieval page opens on a run where they exist."""
    picked = runs[runs["run_id"].isin(among)]
    gap = picked["recall_at_20"] - picked["recall_at_5"]
    if picked.empty or not (gap > 0).any():
        return None
    return str(picked.loc[gap.idxmax(), "run_id"])


# ---------------------------------------------------------------------------- compare

QUESTION_CHANGE_TABS: dict[str, str] = {
    "regression": "Regressed questions",
    "improvement": "Improved questions",
    "mixed": "Mixed",
}


def paired_deltas(metrics: pd.DataFrame, baseline: str) -> tuple[pd.DataFrame, list[str]]:
    """(candidate rows of `Comparison.metrics` that have a delta, and for each candidate
    run with no delta at all a line saying why) — an empty chart explains nothing."""
    cand = metrics[metrics["run_id"] != baseline]
    has = cand["delta"].notna()
    reasons = [
        f"No change to show for {run_id}: {'; '.join(dict.fromkeys(part['note'].dropna()))}."
        for run_id, part in cand[~has].groupby("run_id", sort=False)
        if not has[part.index].any()
    ]
    return cand[has], reasons


CHANGE_TABLE = (
    "metric",
    "change",
    "run_id",
    "baseline",
    "mean",
    "delta",
    "ci_low",
    "ci_high",
    "significant",
    "n_pairs",
    "note",
    "definition",
)


def metric_changes(metrics: pd.DataFrame, baseline: str, cat: Catalogue) -> pd.DataFrame:
    """`Comparison.metrics` as Compare's table, what changed first: one row per candidate
    run and metric, with the baseline's mean beside it; significant changes first, then
    by the size of the change (as a share of the metric's range, so a declared metric on
    another scale sorts fairly), then changes with no delta; a metric no run has a value
    for is left out. `change` is the catalogue's reading (`same` within the interval),
    `metric` its label and `definition` its one line."""
    base = metrics[metrics["run_id"] == baseline].set_index("metric")["mean"]
    cand = metrics[metrics["run_id"] != baseline].copy()
    cand["baseline"] = cand["metric"].map(base)
    cand = cand[cand["mean"].notna() | cand["baseline"].notna()]
    width = cand["metric"].map(lambda m: (lambda b: (b[1] - b[0]) or 1.0)(cat.bounds(m)))
    size = (cand["delta"].abs() / width).fillna(-1.0)
    order = pd.DataFrame(
        {"sig": ~cand["significant"].fillna(False).astype(bool), "size": -size},
        index=cand.index,
    )
    ranked = cand.loc[order.sort_values(["sig", "size"], kind="stable").index].copy()
    entries = [cat.entry(m) for m in ranked["metric"]]
    ranked["change"] = [
        e.reading(d, (lo, hi)) or "no delta"
        for e, d, lo, hi in zip(
            entries, ranked["delta"], ranked["ci_low"], ranked["ci_high"], strict=True
        )
    ]
    ranked["definition"] = [e.definition for e in entries]
    ranked["note"] = ranked["note"].fillna("")  # a text column: no "None" in the grid
    ranked["metric"] = [e.label for e in entries]
    return ranked[list(CHANGE_TABLE)].reset_index(drop=True)


def shorten(text: object, width: int = 80) -> str:
    """`text` on one line, cut to `width` characters with an ellipsis."""
    t = " ".join(str(text).split()) if text is not None and not pd.isna(text) else ""
    return t if len(t) <= width else t[: width - 1] + "…"


def split_question_changes(qc: pd.DataFrame, width: int = 80) -> dict[str, pd.DataFrame]:
    """`Comparison.questions` rows by kind (tab order), order kept, question text shortened."""
    out = qc.copy()
    # Once per distinct text: 20 runs compared repeat each question up to 19 times.
    short = {q: shorten(q, width) for q in out["question"].unique()}
    out["question"] = out["question"].map(short)
    return {kind: out[out["kind"] == kind].reset_index(drop=True) for kind in QUESTION_CHANGE_TABS}


# ---------------------------------------------------------------------------- labels

JUDGE_IS_RIGHT = "judge is right"
CLAIM_CHOICES = (JUDGE_IS_RIGHT, *VERDICTS)
QUESTION_CHOICES = QUESTION_LABELS
TOO_FEW = 30
"""Labels below which an agreement figure is flagged as too few to trust: its 95%
interval is then typically wider than the gap between "fair" and "good" agreement."""


def chosen_verdict(choice: str, judge: str | None) -> str:
    """The verdict a claim form's choice stands for ("judge is right" = the judge's)."""
    if choice == JUDGE_IS_RIGHT:
        if judge not in VERDICTS:
            raise ValueError(f"the judge gave no verdict to agree with ({judge!r})")
        return str(judge)
    return choice


RELEVANCE_CHOICES = ("relevant", "irrelevant")
"""A chunk or answer label's two values, in the words of its `judge` field."""


def label_value(lab: HumanLabel) -> str:
    """The human's answer in words: a verdict, pass/fail, relevant/irrelevant."""
    kind = lab.kind
    if kind in ("chunk", "answer"):
        relevant = lab.relevant if kind == "chunk" else lab.answer_relevant
        return RELEVANCE_CHOICES[0] if relevant else RELEVANCE_CHOICES[1]
    return str(lab.verdict if kind == "claim" else lab.question_label)


def chunk_labels(labels: Iterable[HumanLabel], chunk_id: str) -> tuple[HumanLabel, ...]:
    """The relevance labels of the retrieved chunk `chunk_id`."""
    return tuple(lab for lab in labels if lab.kind == "chunk" and lab.chunk_id == chunk_id)


def answer_labels(labels: Iterable[HumanLabel], answer: str) -> tuple[HumanLabel, ...]:
    """The relevancy labels of this answer's text, matched as claims are (`claim_key`):
    a label belongs to the words of an answer, so another run's same answer shares it."""
    key = claim_key(answer)
    return tuple(lab for lab in labels if lab.kind == "answer" and claim_key(lab.answer) == key)


def label_lines(labels: Iterable[HumanLabel]) -> list[str]:
    """One plain-text line per label, newest first: who, what, against which judge
    verdict, and the note. Plain text: the caller escapes it (`ui.safe_text`)."""
    out = []
    for lab in sorted(labels, key=lambda x: x.created_at, reverse=True):
        what = label_value(lab)
        judge = f" (judge: {lab.judge})" if lab.judge and lab.judge != what else ""
        note = f" — {lab.note}" if lab.note else ""
        lines = f"{lab.reviewer}: {what}{judge}{note} · {lab.created_at[:10]}"
        out.append(" ".join(lines.split()))  # a note's line breaks stay inside its line
    return out


def human_summary(labels: Iterable[HumanLabel]) -> str:
    """`people: supported ×2, unsupported` — the verdicts people gave, for a heading."""
    counts: dict[str, int] = {}
    for lab in labels:
        what = label_value(lab)
        counts[what] = counts.get(what, 0) + 1
    parts = [f"{v} ×{n}" if n > 1 else v for v, n in counts.items()]
    return f"people: {', '.join(parts)}" if parts else ""


def queue_rows(queue: Sequence[QueueItem], labelled: Iterable[str]) -> pd.DataFrame:
    """The review queue as a table: question, why it was picked, reviewed yet."""
    done = set(labelled)
    return pd.DataFrame(
        {
            "question_id": [item.question_id for item in queue],
            "why": [item.reason for item in queue],
            "reviewed": [item.question_id in done for item in queue],
        }
    )


def reviewed_count(queue: Sequence[str], labelled: Iterable[str]) -> int:
    """How many questions of the queue carry at least one human label."""
    done = set(labelled)
    return sum(q in done for q in queue)


def first_unreviewed(queue: Sequence[str], labelled: Iterable[str]) -> int:
    """The position of the first question of the queue nobody has labelled (0 when all
    are): where a review picks up, not at "1 of 20" with 18 of 20 done."""
    done = set(labelled)
    return next((i for i, q in enumerate(queue) if q not in done), 0)


KAPPA = "Cohen's kappa"


def _share(x: float | None) -> str:
    return MISSING if absent(x) else numbers.percent(float(x))  # type: ignore[arg-type]


def agreement_table(agreements: Mapping[str, Agreement]) -> pd.DataFrame:
    """The figures of each agreement (a column per title), formatted, with the number of
    labels behind them; "unsupported" precision and recall where they are defined."""
    rows: dict[str, dict[str, str]] = {}
    for title, a in agreements.items():
        ci = (
            f"{numbers.agreement(a.kappa_low)} to {numbers.agreement(a.kappa_high)}"
            if a.kappa_low is not None and a.kappa_high is not None
            else MISSING
        )
        rows[title] = {
            KAPPA: numbers.agreement(a.kappa),
            "95% interval (bootstrap)": ci,
            "raw agreement": _share(a.raw),
            "labels behind these figures": f"{a.n:,}",
            "“unsupported” precision": _share(a.unsupported_precision),
            "“unsupported” recall": _share(a.unsupported_recall),
        }
    return pd.DataFrame(rows)


def too_few_note(a: Agreement, min_n: int = TOO_FEW) -> str | None:
    """A warning when `a` rests on too few labels to trust, else None."""
    if a.n == 0:
        return "No labels yet: label claims on the Question or Review page."
    if a.n < min_n:
        return (
            f"Only {a.n} label{'s' if a.n != 1 else ''}: too few to trust. Below {min_n} the "
            "95% interval is wide; label more before acting on these figures."
        )
    return None


def labelled_agreements(agreements: Mapping[str, Agreement]) -> dict[str, Agreement]:
    """The agreements some label stands behind: a metric nobody labelled is no figure."""
    return {title: a for title, a in agreements.items() if a.n}


def disagreement_rows(disagreements: Sequence[Disagreement]) -> pd.DataFrame:
    """One row per disagreement (run, question, claim, human, judge, reviewer, note)."""
    return pd.DataFrame(
        [
            {
                "run_id": d.run_id,
                "question_id": d.question_id,
                "claim": shorten(d.claim) if d.claim is not None else "(whole answer)",
                "human": d.human,
                "judge": d.judge,
                "reviewer": d.reviewer,
                "note": shorten(d.note),
            }
            for d in disagreements
        ],
        columns=["run_id", "question_id", "claim", "human", "judge", "reviewer", "note"],
    )


def coverage_columns(run_ids: Iterable[str], coverage: Mapping[str, RunCoverage]) -> pd.DataFrame:
    """Per run, "claims checked" (`12 of 240`) and the judge's kappa on those claims."""
    rows = []
    for r in run_ids:
        c = coverage.get(r)
        rows.append(
            {
                "claims checked": f"{c.checked:,} of {c.claims:,}" if c and c.claims else MISSING,
                "judge κ": c.kappa if c else None,
            }
        )
    return pd.DataFrame(rows, columns=["claims checked", "judge κ"])


# ---------------------------------------------------------------------------- documents

DOCUMENT_MARGIN = 300
"""Characters of a document shown before the first and after the last range drawn."""


def document_block(text: str, gold: Sequence[tuple[int, int]], chunks: Sequence[tuple]) -> str:
    """A document's text around its ranges as escaped HTML: gold spans marked, each
    chunk's start and end shown as `⟨#rank` / `#rank⟩` (`chunks`: rank, id, start, end).

    Offsets come from the run, text from the dataset: every segment is escaped on its own,
    so no document text can open a tag."""
    points = [p for s, e in gold for p in (s, e)] + [p for c in chunks for p in (c[2], c[3])]
    lo = max(0, min(points, default=0) - DOCUMENT_MARGIN)
    hi = min(len(text), max(points, default=0) + DOCUMENT_MARGIN, lo + MAX_TEXT)
    events: dict[int, list[str]] = {}
    for rank, _, s, e in chunks:
        events.setdefault(s, []).append(f"⟨#{rank}")
        events.setdefault(e, []).append(f"#{rank}⟩")
    cuts = sorted({lo, hi, *(p for p in points if lo < p < hi)})
    out = ["…" if lo > 0 else ""]
    for a, b in zip(cuts, cuts[1:], strict=False):
        out += [f"<sup><b>{html.escape(m)}</b></sup>" for m in events.get(a, ())]
        piece = html.escape(text[a:b])
        inside = any(s <= a and b <= e for s, e in gold)
        out.append(
            f'<mark class="rageval-gold" title="gold span">{piece}</mark>' if inside else piece
        )
    out += [f"<sup><b>{html.escape(m)}</b></sup>" for m in events.get(hi, ())]
    out.append("…" if hi < len(text) else "")
    body = _LINE_END.sub("<br>", "".join(out))
    return f'{MARK_STYLE}<div class="rageval-text">{body}</div>'
