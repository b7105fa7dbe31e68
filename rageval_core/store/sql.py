"""Named SQL of the derived cache: what it reads from runs' files and how it writes.

`{src}`-style placeholders are filled only with FROM-clause text built by `runs/source.py`
or names registered here; every user value is a `$name` bound parameter.
"""

# ---- cache maintenance -------------------------------------------------------------------

# The narrow per-question rows kept for cross-run views (history, flakiness, failures).
NARROW_FROM_RUN = """
SELECT $run_id::VARCHAR AS run_id, {cols}
FROM {src}
"""

# Many finished runs at once, their files sharing one schema: {files} maps each file to
# its run (`filename`, `owner`), {proj} is the run-schema projection of the columns the
# cache needs; the summaries then aggregate those rows ({rows}, registered Arrow) with
# {select} = runs.summary.SUMMARY_SELECT.
NARROW_BATCH = """
SELECT f.owner AS run_id, r.* EXCLUDE (filename)
FROM (
  SELECT {proj}, filename FROM read_parquet($paths, union_by_name=true, filename=true)
) r
JOIN {files} f ON r.filename = f.filename
"""

SUMMARY_BATCH = """
SELECT run_id AS __run, {select}
FROM {rows}
GROUP BY run_id
"""

# A narrow segment: sorted so a one-question lookup reads one small row group.
WRITE_SEGMENT = """
COPY (SELECT * FROM segment_rows ORDER BY question_id, run_id)
TO $path (FORMAT parquet, COMPRESSION zstd, ROW_GROUP_SIZE {row_group})
"""

# ---- the claims table (claims.py) ----------------------------------------------------

# What a run's claims cache file is made of: one run ({src}, `open_run`), or the Parquet
# files of many ({files} maps each file to its run) read at once.
CLAIMS_READ = """
SELECT $run_id::VARCHAR AS run_id, $sha::VARCHAR AS dataset_sha256, question_id,
       list_transform(claims, lambda c: struct_pack(text := c.text, verdict := c.verdict))
         AS claims,
       faithfulness, judge_error IS NOT NULL AS judge_failed, answer_correctness,
       md5(coalesce(answer, '')) AS answer_key
FROM {src}
"""

CLAIMS_BATCH = """
SELECT f.owner AS run_id, f.sha AS dataset_sha256, r.question_id::VARCHAR AS question_id,
       list_transform(
         r.claims, lambda c: struct_pack(text := c.text::VARCHAR, verdict := c.verdict::VARCHAR)
       ) AS claims,
       TRY_CAST(r.faithfulness AS DOUBLE) AS faithfulness,
       r.judge_error IS NOT NULL AS judge_failed,
       TRY_CAST(r.answer_correctness AS DOUBLE) AS answer_correctness,
       md5(coalesce(r.answer::VARCHAR, '')) AS answer_key
FROM read_parquet($paths, union_by_name=true, filename=true) r
JOIN {files} f ON r.filename = f.filename
"""
