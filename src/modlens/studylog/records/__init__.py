"""The row functions of the study log: the only code that writes its SQL.

One module per group of tables. Every function is batch-first: it takes many rows and serves
one as a list of one (`add_comment(...)` is `add_comments([row])[0]`, as sqlite-utils' `insert`
is `insert_all([row])`), in one transaction of its own or the caller's (`db.transaction()`), with
the same ids, deduplication and conflict rules whatever the batch size. Each takes the open log
(`connection.LogConnection`; a `StudyLog` is one) as its first argument.

- texts.py      texts by content hash
- comments.py   pages, comments, sightings, labels
- scores.py     detectors and scores of texts
- variants.py   variants, normalizations, step errors
- sessions.py   studies, raters, sessions, ratings
- runs.py       audit runs, their items, the run to resume
- media.py      media, attachments, OCR, fused cases and the scores of inputs with media
- labels.py     gold label sets
- batch.py      many rows per INSERT statement (`write_rows`), for the row functions' large batches
"""
