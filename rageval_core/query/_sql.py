"""Named SQL of the query layer.

`{src}`-style placeholders are filled only with FROM-clause text built in this package
(a run's files, the cache files) or identifiers from a whitelist; every user value is a
`$name` bound parameter.
"""

from rageval_core.labels.verdict import JUDGED_SQL, VERDICT_SQL

# ---- runs overview -----------------------------------------------------------------------

# {nan}: "" or ` REPLACE (...)` of the figures NULL in every run (views.nan_when_empty).
RUNS_OVERVIEW = """
SELECT * EXCLUDE (fingerprint, segment){nan}
FROM {summary}
WHERE ($status IS NULL OR status = $status)
  AND ($config IS NULL OR config_name = $config)
  AND ($dataset IS NULL OR dataset_name = $dataset)
  AND ($dataset_version IS NULL OR dataset_version = $dataset_version)
  AND (len($tags) = 0 OR list_has_all(tags, $tags))
ORDER BY created_at DESC, run_id DESC
"""

# The newest $limit runs that match, oldest first (a chart of 10,000 points draws in
# seconds and shows nothing more than one of 1,000).
METRIC_TREND = """
SELECT * FROM (
  SELECT run_id, created_at, config_name, dataset_name, dataset_version, status,
         {value} AS value, {p10} AS p10
  FROM {summary}
  WHERE ($config IS NULL OR config_name = $config)
    AND ($dataset IS NULL OR dataset_name = $dataset)
    AND ($dataset_version IS NULL OR dataset_version = $dataset_version)
    AND (len($tags) = 0 OR list_has_all(tags, $tags))
  ORDER BY created_at DESC, run_id DESC
  LIMIT $limit
)
ORDER BY created_at, run_id
"""

RECALL_CURVE = """
SELECT s.run_id, s.created_at, s.config_name, k.k,
       CASE k.k {cases} END AS recall
FROM {summary} s, (SELECT unnest($ks) AS k) k
WHERE len($run_ids) = 0 OR list_contains($run_ids, s.run_id)
ORDER BY s.created_at, s.run_id, k.k
"""

# The runs named, else the newest $limit with a value.
COST_QUALITY = """
SELECT * FROM (
  SELECT run_id, created_at, config_name, dataset_name, dataset_version,
         {quality} AS quality,
         total_ms_p95 AS latency_p95_ms,
         total_cost_per_question AS cost_per_question,
         retrieval_ms_p95, generation_ms_p95, ttft_ms_p95
  FROM {summary}
  WHERE (len($run_ids) = 0 OR list_contains($run_ids, run_id))
    AND {quality} IS NOT NULL
  ORDER BY created_at DESC, run_id DESC
  LIMIT CASE WHEN len($run_ids) = 0 THEN $limit END
)
ORDER BY quality DESC, run_id
"""

FAILURE_COUNTS = """
SELECT s.run_id, s.created_at, f.failure_type,
       CASE f.failure_type {cases} END AS n,
       CASE f.failure_type {cases} END / nullif(s.n_questions, 0) AS share
FROM {summary} s, (SELECT unnest($types) AS failure_type) f
WHERE len($run_ids) = 0 OR list_contains($run_ids, s.run_id)
ORDER BY s.created_at DESC, s.run_id, f.failure_type
"""

# ---- one run, by path ---------------------------------------------------------------------

QUESTION_WHERE = """
  ($no_ft OR list_contains($failure_types, failure_type))
  AND (len($tags) = 0 OR list_has_any(tags, $tags))
  AND ($answerable IS NULL OR answerable = $answerable)
  AND ($search IS NULL
       OR question ILIKE $search ESCAPE '\\'
       OR answer ILIKE $search ESCAPE '\\')
"""

QUESTION_COUNT = """
SELECT count(*) FROM {src} WHERE {where}
"""

QUESTION_PAGE = """
SELECT run_id, question_id, question, answer, answerable, tags, failure_type, refused,
       {metric_cols}, retrieval_ms, generation_ms, ttft_ms, total_ms,
       cost_usd, judge_cost_usd, error,
       len(unsupported_claims) AS n_unsupported_claims
FROM {src}
WHERE {where}
ORDER BY {order}, question_id
LIMIT $limit OFFSET $offset
"""

# The worst ceil(n × $pct / 100) of the n questions with a value (NULL, NaN and ±inf have
# none), worst first ({direction} ASC, or DESC when higher is worse), ties broken by
# question_id so a run of equal scores cannot swell the tail; n_within counts the scored
# questions as bad as the last one kept ({within} <= or >=, {edge} max or min), ties cut
# included. isfinite, not isnan: DuckDB 2.0 folds isnan to false from Parquet min/max
# statistics, which pyarrow writes without the NaNs.
BOTTOM_QUESTIONS = """
WITH scored AS (
  SELECT question_id, question, answer, failure_type, tags, value,
         row_number() OVER (ORDER BY value {direction}, question_id) AS rank,
         count(*) OVER () AS n_scored
  FROM (
    SELECT question_id, question, answer, failure_type, tags,
           TRY_CAST({value} AS DOUBLE) AS value
    FROM {src}
  )
  WHERE isfinite(value)
),
kept AS (SELECT * FROM scored WHERE rank <= ceil(n_scored * $pct / 100.0))
SELECT question_id, question, answer, failure_type, tags, value, n_scored,
       (SELECT count(*) FROM scored
        WHERE value {within} (SELECT {edge}(value) FROM kept)) AS n_within
FROM kept
ORDER BY rank
"""

RERANK_CANDIDATES = """
WITH r AS (
  SELECT question_id, question, failure_type, gold_ids, retrieved_ids,
         recall_at_5, recall_at_20, mrr,
         CASE WHEN len(gold_spans) > 0 THEN list_min(gold_ranks)  -- a span question
              ELSE list_min(list_transform(list_distinct(gold_ids),
                                           lambda g: list_position(retrieved_ids, g)))
         END AS first_gold_rank
  FROM {src}
  WHERE answerable
)
SELECT question_id, question, failure_type, first_gold_rank, recall_at_5, recall_at_20, mrr
FROM r
WHERE first_gold_rank BETWEEN $lo AND $hi
ORDER BY first_gold_rank, question_id
"""

QUESTION_ONE = """
SELECT * FROM {src} WHERE question_id = $question_id LIMIT 1
"""

# The claims of some questions of one run: the judge's reasons `rageval calibrate` prints
QUESTION_CLAIMS = """
SELECT question_id, claims FROM {src} WHERE list_contains($question_ids, question_id)
"""

QUESTION_TAGS = """
SELECT DISTINCT unnest(tags) AS tag FROM {src} ORDER BY tag
"""

DISTRIBUTION = """
SELECT question_id, value
FROM (SELECT question_id, {value} AS value FROM {src})
WHERE value IS NOT NULL
ORDER BY value, question_id
"""

# ---- cross-run, from the narrow cache ----------------------------------------------------

# In the newest $limit runs that have the question, oldest first.
QUESTION_HISTORY = """
SELECT * FROM (
  SELECT m.run_id, s.created_at, s.config_name, s.dataset_name, s.dataset_version, s.status,
         m.* EXCLUDE (run_id)
  FROM {metrics} m JOIN {summary} s USING (run_id)
  WHERE m.question_id = $question_id
    AND ($dataset IS NULL OR s.dataset_name = $dataset)
  ORDER BY s.created_at DESC, m.run_id DESC
  LIMIT $limit
)
ORDER BY created_at, run_id
"""

# Runs of the dataset are numbered in time order first (a few hundred summary rows), so the
# window over a million narrow rows partitions and orders on integers, not on text
# (about 2x faster than ordering by created_at, run_id in the window itself).
FLAKY_QUESTIONS = """
WITH s AS (
  SELECT run_id, row_number() OVER (ORDER BY created_at, run_id) AS run_order
  FROM {summary}
  WHERE dataset_name = $dataset
    AND ($dataset_version IS NULL OR dataset_version = $dataset_version)
    AND ($config IS NULL OR config_name = $config)
    AND ($any_run OR list_contains($runs::VARCHAR[], run_id))
    AND NOT list_contains($exclude::VARCHAR[], run_id)
),
h AS (
  SELECT m.question_id, s.run_order, m.answer_correctness,
         (m.failure_type = 'ok') AS is_ok,
         (m.answer_correctness >= $threshold) AS is_correct
  FROM {metrics} m JOIN s USING (run_id)
),
t AS (
  SELECT question_id, answer_correctness, is_ok, is_correct,
         lag(is_ok) OVER w AS prev_ok,
         lag(is_correct) OVER w AS prev_correct
  FROM h
  WINDOW w AS (PARTITION BY question_id ORDER BY run_order)
)
SELECT question_id,
       count(*) AS n_runs,
       count(*) FILTER (WHERE is_ok) AS n_ok,
       count(*) FILTER (WHERE is_ok <> prev_ok) AS verdict_flips,
       count(*) FILTER (WHERE is_correct <> prev_correct) AS correctness_flips,
       min(answer_correctness) AS correctness_min,
       max(answer_correctness) AS correctness_max
FROM t
GROUP BY question_id
HAVING count(*) >= $min_runs AND (verdict_flips > 0 OR correctness_flips > 0)
ORDER BY verdict_flips + correctness_flips DESC, question_id
"""

# ---- comparison ----------------------------------------------------------------------------

PAIRED_ROWS = """
SELECT $run_id::VARCHAR AS run_id, b.question_id, b.question,
       b.failure_type AS base_failure_type, c.failure_type AS failure_type,
       {pairs}
FROM {base} b JOIN {cand} c USING (question_id)
ORDER BY b.question_id
"""

RUN_MEANS = """
SELECT count(*) AS n_questions, {cols} FROM {src}
"""

# Per-question changes of every candidate against the baseline: one CHANGES_METRIC branch
# per metric ({metric} from the whitelist, {worse} '<' or '>'), one CHANGES_FLIPS branch.
CHANGES = """
SELECT run_id, question_id, question, metric, kind, base, value, delta,
       base_failure_type, failure_type
FROM (
{branches}
)
ORDER BY run_id, kind, coalesce(abs(delta), 'inf'::DOUBLE) DESC, question_id, metric_order
"""

# A change counts when it is more than the tolerance: the 1e-9 slack keeps a move of
# exactly the tolerance (0.70 - 0.75 = -0.05000000000000004 in floating point) out.
CHANGES_METRIC = """
SELECT run_id, question_id, question, '{metric}' AS metric, {order} AS metric_order,
       CASE WHEN {delta} {worse} 0 THEN 'regression' ELSE 'improvement' END AS kind,
       "base_{metric}"::DOUBLE AS base, "{metric}"::DOUBLE AS value, {delta}::DOUBLE AS delta,
       base_failure_type, failure_type
FROM {paired}
WHERE NOT isnan({delta}) AND abs({delta}) > $tolerance + 1e-9
"""

CHANGES_FLIPS = """
SELECT run_id, question_id, question, 'failure_type' AS metric, {order} AS metric_order,
       CASE WHEN base_failure_type = 'ok' THEN 'regression' ELSE 'improvement' END AS kind,
       NULL::DOUBLE AS base, NULL::DOUBLE AS value, NULL::DOUBLE AS delta,
       base_failure_type, failure_type
FROM {paired}
WHERE base_failure_type IS NOT NULL AND failure_type IS NOT NULL
  AND (base_failure_type = 'ok') <> (failure_type = 'ok')
"""

# The CHANGES rows in {changes} folded to one row per (candidate run, question), worst
# first. $metrics is the compared metrics' order (equal moves keep it, as in CHANGES),
# $raw those of them that are not 0..1 scores (latency, cost, counts: four significant
# digits, never ranked against a score), $kinds the kinds worst first, $run_ids the runs'
# order. A flip counts towards the kind but is not a metric that moved; NULL failure types
# group together and read as —.
QUESTION_CHANGES = """
WITH c AS (
  SELECT *, kind = 'regression' AS worse, metric = 'failure_type' AS flip,
         list_contains($raw, metric) AS raw
  FROM {changes}
),
q AS (
  SELECT run_id, question_id, question, base_failure_type, failure_type,
         CASE WHEN bool_or(worse) AND bool_or(NOT worse) THEN 'mixed'
              WHEN bool_or(worse) THEN 'regression'
              ELSE 'improvement' END AS kind,
         coalesce(
           string_agg(
             metric || ' ' || replace(
               format(CASE WHEN raw THEN '{{:.4g}}→{{:.4g}} ({{:+.4g}})'
                           ELSE '{{:.2f}}→{{:.2f}} ({{:+.2f}})' END, base, value, delta),
               '-', '−'),
             '; ' ORDER BY NOT worse, abs(delta) DESC, list_position($metrics, metric)
           ) FILTER (WHERE NOT flip),
           '') AS changes,
         bool_or(flip AND worse) AS to_failure,
         bool_or(flip AND NOT worse) AS to_ok,
         coalesce(max(abs(delta)) FILTER (WHERE worse AND NOT flip AND NOT raw), 0.0)
           AS worst_drop,
         coalesce(max(abs(delta)) FILTER (WHERE NOT worse AND NOT flip AND NOT raw), 0.0)
           AS best_gain,
         count(*) FILTER (WHERE worse AND NOT flip) AS n_worse,
         count(*) FILTER (WHERE NOT worse AND NOT flip) AS n_better
  FROM c
  GROUP BY run_id, question_id, question, base_failure_type, failure_type
)
SELECT run_id, question_id, question, kind,
       CASE WHEN coalesce(base_failure_type, '—') = coalesce(failure_type, '—')
            THEN 'unchanged'
            ELSE coalesce(base_failure_type, '—') || ' → ' || coalesce(failure_type, '—')
       END AS failure_change,
       changes, base_failure_type, failure_type, to_failure, to_ok,
       worst_drop, best_gain, n_worse, n_better
FROM q
ORDER BY list_position($kinds, kind),
         CASE WHEN kind = 'improvement' THEN to_ok ELSE to_failure END DESC,
         CASE WHEN kind = 'improvement' THEN best_gain ELSE worst_drop END DESC,
         list_position($run_ids, run_id), question_id
"""

# ---- human labels (query/_review.py) ------------------------------------------------------
# {claims}: the narrow claims rows (claims_cache: cached files UNION ALL BY NAME live rows);
# {labels}: the LabelSet as registered Arrow; {runs}: run id -> dataset version and judge.

# Human vs judge, one row per (judge, label, judge's value): the same claim judged the same
# way in several runs of one judge is one observation (`runs` counts the copies; `run_id`
# is the newest, for a link). A label is its row number in {labels} (`idx`): the caller
# holds the labels. Claims meet labels on their own columns (dataset version, question,
# claim key), and only then the small runs table for the judge: labels joined to runs
# first would pair every label with every run of its dataset. Only short columns are read.
# The end of both pair queries: their matches `m` (run, judge's value, label) per judge.
_PAIRS_BY_JUDGE = """
SELECT r.judge_kind, r.judge_model, r.judge_prompt, m.idx, m.verdict AS judge,
       max(m.run_id) AS run_id, count(*) AS runs
FROM m JOIN {runs} r ON r.run_id = m.run_id
GROUP BY r.judge_kind, r.judge_model, r.judge_prompt, m.idx, m.verdict
"""

LABEL_CLAIM_PAIRS = (
    """
WITH lab AS (
  SELECT idx, dataset_sha256, question_id, claim_key FROM {labels} WHERE claim_key IS NOT NULL
),
m AS (
  SELECT c.run_id, c.verdict, l.idx
  FROM {claims} c
  JOIN lab l ON l.dataset_sha256 = c.dataset_sha256 AND l.question_id = c.question_id
            AND l.claim_key = c.claim_key
  WHERE c.claim_key IS NOT NULL AND c.verdict IN ('supported', 'unsupported', 'contradicted')
)
"""
    + _PAIRS_BY_JUDGE
)

# Question labels: pass/fail by the one rule of `labels/verdict.py`; a question the judge
# gave no faithfulness (refusal, no claims) pairs with nothing.
# A question label is about an answer: it pairs with the runs that gave the same answer
# as the run it was made on (its copies, rescored runs); one without a run with every run.
LABEL_QUESTION_PAIRS = (
    """
WITH lab AS (
  SELECT idx, dataset_sha256, question_id, run_id FROM {labels} WHERE claim_key IS NULL
),
q AS (
  SELECT run_id, dataset_sha256, question_id, answer_key,
         {verdict} AS verdict, {judged} AS judged
  FROM {claims}
  WHERE claim_key IS NULL AND question_id IN (SELECT question_id FROM lab)
),
la AS (
  SELECT l.*, q.answer_key
  FROM lab l LEFT JOIN q ON q.run_id = l.run_id AND q.question_id = l.question_id
),
m AS (
  SELECT q.run_id, q.verdict, l.idx
  FROM q
  JOIN la l ON l.dataset_sha256 = q.dataset_sha256 AND l.question_id = q.question_id
           AND (l.run_id IS NULL OR l.answer_key = q.answer_key)
  WHERE q.judged
)
""".replace("{verdict}", VERDICT_SQL).replace("{judged}", JUDGED_SQL)
    + _PAIRS_BY_JUDGE
)

# The claims rows label keys can meet ({need}: dataset version, question, claim key; a NULL
# key for a question label, which meets the question's own row): the label side of the
# joins, kept per claims fingerprint so a save scans only for its new keys.
CLAIMS_FOR_KEYS = """
SELECT c.* FROM {claims} c
SEMI JOIN {need} n ON n.dataset_sha256 = c.dataset_sha256 AND n.question_id = c.question_id
                  AND n.claim_key IS NOT DISTINCT FROM c.claim_key
"""

# Per run: its judged claims (no label involved), and of them how many carry a human
# label; RUN_CLAIM_PAIRS the human x judge counts behind the run's kappa (every reviewer's
# label is a pair).
RUN_CLAIM_TOTALS = """
SELECT run_id, count(*) AS claims FROM {claims} WHERE claim_key IS NOT NULL GROUP BY run_id
"""

RUN_CLAIM_CHECKED = """
WITH lk AS (
  SELECT DISTINCT dataset_sha256, question_id, claim_key FROM {labels}
  WHERE claim_key IS NOT NULL
)
SELECT c.run_id, count(*) AS checked
FROM {claims} c
JOIN lk ON lk.dataset_sha256 = c.dataset_sha256 AND lk.question_id = c.question_id
       AND lk.claim_key = c.claim_key
GROUP BY c.run_id
"""

RUN_CLAIM_PAIRS = """
SELECT c.run_id, l.value AS human, c.verdict AS judge, count(*) AS n
FROM {claims} c
JOIN {labels} l ON l.dataset_sha256 = c.dataset_sha256 AND l.question_id = c.question_id
               AND l.claim_key = c.claim_key
WHERE c.claim_key IS NOT NULL AND c.verdict IN ('supported', 'unsupported', 'contradicted')
GROUP BY ALL
"""

# A review queue's candidates in one run ({mine}: its claims; {others}: claims of runs of
# the same dataset version by another judge; {done}: question ids already labelled), in a
# seeded pseudo-random order: the question's worst verdict (its stratum), whether the
# judge flagged a claim of a correct answer, and a run whose judge disagrees on a claim.
REVIEW_CANDIDATES = """
WITH cl AS (SELECT question_id, claim_key, verdict FROM {mine} WHERE claim_key IS NOT NULL),
corr AS (SELECT question_id, answer_correctness FROM {mine} WHERE claim_key IS NULL),
dis AS (
  SELECT cl.question_id, min(o.run_id) AS other
  FROM cl JOIN {others} o ON o.question_id = cl.question_id AND o.claim_key = cl.claim_key
  WHERE o.claim_key IS NOT NULL AND o.verdict <> cl.verdict
  GROUP BY cl.question_id
),
worst AS (
  SELECT question_id,
         max(CASE verdict WHEN 'contradicted' THEN 2 WHEN 'unsupported' THEN 1 ELSE 0 END)
           AS worst
  FROM cl GROUP BY question_id
)
SELECT w.question_id, w.worst,
       coalesce(w.worst > 0 AND c.answer_correctness >= $correct_min, false) AS flagged_correct,
       d.other
FROM worst w
LEFT JOIN corr c ON c.question_id = w.question_id
LEFT JOIN dis d ON d.question_id = w.question_id
WHERE w.question_id NOT IN (SELECT question_id FROM {done})
ORDER BY md5(w.question_id || ':' || $seed::VARCHAR), w.question_id
"""

RELEVANCE_ROWS = """
SELECT question_id, answer, chunk_verdicts, answer_relevancy FROM {src}
WHERE list_contains($question_ids, question_id)
"""

# ---- how a run cut its text --------------------------------------------------------------

# The mean length of the retrieved chunks that hold a text (an import of ids has none).
MEAN_CHUNK_CHARS = """
SELECT avg(length(t)) FILTER (WHERE length(t) > 0)
FROM (SELECT unnest(retrieved_texts) AS t FROM {src})
"""


# ---- judge drift (_drift.py) -------------------------------------------------------------

# What served one run's judge ({served} = runs.summary.SERVED_SELECT).
RUN_SERVED = """
SELECT {served}
FROM {src}
"""

# Consecutive runs (by creation) of one config and judge that both record what served
# them, where it differs; _drift.drifted says how (models, else fingerprints). A list is
# NULL when none was said, so a comparison with it is NULL: never a pair.
JUDGE_DRIFT_PAIRS = """
SELECT judge_kind, judge_model, before_run, before_models, before_fingerprints,
       run_id, judge_served_models, judge_fingerprints
FROM (
  SELECT run_id, created_at, judge_kind, judge_model, judge_served_models, judge_fingerprints,
         lag(run_id) OVER w AS before_run,
         lag(judge_served_models) OVER w AS before_models,
         lag(judge_fingerprints) OVER w AS before_fingerprints
  FROM {summary}
  WHERE judge_served_models IS NOT NULL OR judge_fingerprints IS NOT NULL
  WINDOW w AS (PARTITION BY config_name, judge_kind, judge_model ORDER BY created_at, run_id)
)
WHERE before_models <> judge_served_models OR before_fingerprints <> judge_fingerprints
ORDER BY created_at DESC, run_id DESC
LIMIT $limit
"""
