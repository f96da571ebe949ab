"""Study log schema versions (`PRAGMA user_version`): what each version changed, by name.

Every distinct string that is scored (a comment, its normalized form, a variant) is one row
of `texts`, so a score is stored once per (text, detector version) and every table that
holds text points there.

The tables are declared once, in `studylog/tables.py` (columns, types, constraints, keys,
indexes, meanings). A version here is a delta: the tables it created and the columns and indexes
it added to older tables, by name, and the SQL that moved existing rows (old logs only). From the
two come
- `create_script()`: a fresh log, created whole at the current version from the declaration;
- `MIGRATIONS[n]`: the step that brings a log written at version n to n + 1. A table appears
  there as declared, less the columns and indexes a later version adds (`ALTER TABLE ADD COLUMN`
  from the same declaration).
A new column is declared in `tables.py` and named in a new `Delta` (one that only documents,
adding nothing a log stores, needs no version). tests/test_studylog_schema_snapshot.py checks a
fresh log and a log of every older version, upgraded, against the committed snapshot of each
version's schema.
"""
from __future__ import annotations

from dataclasses import dataclass

from modlens.studylog.tables import TABLE, TABLES


@dataclass(frozen=True)
class Delta:
    """What one schema version changed. `tables`: created, as declared, in this order; `columns`
    and `indexes`: (table, name) added to a table an earlier version created; `data`: SQL run after
    them on a log upgraded through this step (a fresh log has no rows to move)."""
    doc: str
    tables: tuple[str, ...] = ()
    columns: tuple[tuple[str, str], ...] = ()
    indexes: tuple[tuple[str, str], ...] = ()
    data: str = ""


DELTAS: tuple[Delta, ...] = (
    Delta("the initial schema",
          tables=("studies", "raters", "sessions", "pages", "texts", "comments", "sightings", "labels", "detectors",
                  "scores", "normalizations", "variants", "ratings", "rating_values", "audit_runs", "run_items")),
    Delta("merged study logs (modlens merge): the participant bundles merged in, and which bundle each row came "
          "from; empty in a participant's own log",
          tables=("bundles", "row_sources")),
    Delta("media (docs/FUSION.md): images, audio and video that comments carry or that fused test cases (DUO "
          "semantic fusion) are made of, OCR results, and scores of inputs with media",
          tables=("media", "comment_media", "ocr_results", "fused_cases", "case_media", "case_parts", "case_scores",
                  "comment_media_scores")),
    Delta("a log a researcher can trust (docs/DATA.md): how each session ended; gold labels as versioned label "
          "sets that runs record, the gold `toxic` labels of older logs becoming one set per source; the errors "
          "of a step that failed for one text; each merged bundle's signer; the live comments whose variants "
          "the daemon deferred; speech recognised in audio",
          tables=("label_sets", "gold_labels", "step_errors", "deferred_variants", "asr_results"),
          columns=(("sessions", "ended_by"), ("bundles", "signer"), ("audit_runs", "label_set_id")),
          data="""
    INSERT INTO label_sets (source, definition, created_at)
        SELECT DISTINCT source, 'as recorded before label sets (schema 3)', strftime('%Y-%m-%dT%H:%M:%fZ', 'now')
        FROM labels WHERE name = 'toxic';
    INSERT INTO gold_labels (label_set_id, comment_id, value)
        SELECT s.label_set_id, l.comment_id, l.value FROM labels l JOIN label_sets s ON s.source = l.source
        WHERE l.name = 'toxic';
    DELETE FROM labels WHERE name = 'toxic';
    """),
    Delta("the acceptance of a rater's work on one task of an item-set study (the human-centred Perspective "
          "study, Table 11)",
          tables=("rater_reviews",)),
    Delta("a rating whose reported time was implausible (over a day: a panel left open) keeps the answer with "
          "its time unknown and the reported value beside it",
          columns=(("ratings", "time_spent_over_limit_ms"),)),
    Delta("which consent text each rater agreed to (`consents`, the texts in `consent_texts`) and when they "
          "withdrew it (`consents.withdrawn_at`), the text each sighting was sent (`sightings.text_id`), a consent recorded before it keeping its time with its text "
          "unknown; a rater task the crowd platform rejected after its import flagged in its own column (`rater_reviews.platform_status`), not in the review's reason; "
          "each crowd import's counts, the records it skipped among them (`crowd_imports`); X and YouTube pages "
          "kept without the author their address or title named (studylog/page_address.py), older pages rewritten, "
          "two that became one page merged with their comments",
          tables=("consent_texts", "consents", "crowd_imports"),
          columns=(("rater_reviews", "platform_status"), ("sightings", "text_id")),
          # Before this version the platform's word lived only in the reason the review wrote,
          # 'rejected on the platform (<word>); Table 11 alone: ...': read out of it here, once.
          data="""
    INSERT INTO consents (study_id, rater_id, consent_sha256, consented_at)
        SELECT study_id, rater_id, NULL, consent_at FROM raters WHERE consent_at IS NOT NULL;
    UPDATE rater_reviews SET platform_status = substr(reason, 27, instr(reason, '); Table 11 alone: ') - 27)
        WHERE decision = 'reject' AND substr(reason, 1, 26) = 'rejected on the platform ('
          AND instr(reason, '); Table 11 alone: ') > 27;
    CREATE TEMP TABLE schema7_pages AS
        SELECT page_id, platform, page_key, url, title, first_seen,
               min(page_id) OVER (PARTITION BY platform, page_key) AS keep_id
        FROM (SELECT page_id, platform, modlens_page_key(platform, page_key) AS page_key, modlens_page_url(url) AS url,
                     modlens_page_title(platform, url, title) AS title, first_seen FROM pages);
    UPDATE comments SET page_id = (SELECT keep_id FROM temp.schema7_pages m WHERE m.page_id = comments.page_id)
        WHERE page_id IN (SELECT page_id FROM temp.schema7_pages WHERE page_id <> keep_id);
    UPDATE OR IGNORE row_sources SET row_key = (SELECT CAST(keep_id AS TEXT) FROM temp.schema7_pages m
                                                WHERE CAST(m.page_id AS TEXT) = row_sources.row_key)
        WHERE table_name = 'pages'
          AND row_key IN (SELECT CAST(page_id AS TEXT) FROM temp.schema7_pages WHERE page_id <> keep_id);
    DELETE FROM row_sources WHERE table_name = 'pages'
        AND row_key IN (SELECT CAST(page_id AS TEXT) FROM temp.schema7_pages WHERE page_id <> keep_id);
    DELETE FROM pages WHERE page_id IN (SELECT page_id FROM temp.schema7_pages WHERE page_id <> keep_id);
    UPDATE pages SET
        page_key = (SELECT m.page_key FROM temp.schema7_pages m WHERE m.page_id = pages.page_id),
        url = (SELECT m.url FROM temp.schema7_pages m WHERE m.keep_id = pages.page_id AND m.url IS NOT NULL
               ORDER BY m.page_id LIMIT 1),
        title = (SELECT m.title FROM temp.schema7_pages m WHERE m.keep_id = pages.page_id AND m.title IS NOT NULL
                 ORDER BY m.page_id LIMIT 1),
        first_seen = (SELECT min(m.first_seen) FROM temp.schema7_pages m WHERE m.keep_id = pages.page_id);
    DROP TABLE temp.schema7_pages;
    """),
)

SCHEMA_VERSION = len(DELTAS)


def _added_after(version: int) -> dict[str, frozenset[str]]:
    """Per table, the columns and indexes that versions after `version` added to it."""
    added: dict[str, set[str]] = {}
    for delta in DELTAS[version:]:
        for table, name in (*delta.columns, *delta.indexes):
            added.setdefault(table, set()).add(name)
    return {table: frozenset(names) for table, names in added.items()}


def _step(version: int) -> str:
    """The SQL that takes a log from `version` to `version + 1`."""
    delta, later = DELTAS[version], _added_after(version + 1)
    out = [TABLE[t].create_sql(without=later.get(t, frozenset())) for t in delta.tables]
    for table, name in delta.columns:
        c = TABLE[table].column(name)
        out.append(f"ALTER TABLE {table} ADD COLUMN {name} {c.type}{' ' + c.constraints if c.constraints else ''};")
    for table, name in delta.indexes:
        out.append(next(i for i in TABLE[table].indexes if i.name == name).create_sql(table))
    if delta.data.strip():
        out.append(delta.data.strip())
    return "\n".join(out) + "\n"


def create_script(version: int = SCHEMA_VERSION) -> str:
    """A fresh log at `version` (the current one unless a test plays an older modlens), as SQL: every
    table as declared, in the order the versions created them, less what later versions added."""
    if not 0 < version <= SCHEMA_VERSION:
        raise ValueError(f"no schema version {version} (1 to {SCHEMA_VERSION})")
    later = _added_after(version)
    return "\n".join(TABLE[t].create_sql(without=later.get(t, frozenset()))
                     for delta in DELTAS[:version] for t in delta.tables) + "\n"


def _check() -> None:
    """Every declared table is created by exactly one version; every added column or index is declared
    on a table an earlier version created, an added column last: else a fresh log and an upgraded one
    would differ."""
    created: dict[str, int] = {}
    for version, delta in enumerate(DELTAS, 1):
        for table, name in (*delta.columns, *delta.indexes):
            if created.get(table, version) >= version:
                raise RuntimeError(f"schema {version} adds {table}.{name} to a table no earlier version created")
            if name not in {c.name for c in TABLE[table].columns} | {i.name for i in TABLE[table].indexes}:
                raise RuntimeError(f"schema {version} adds {table}.{name}, which studylog/tables.py does not declare")
        for table in delta.tables:
            if table in created or table not in TABLE:
                raise RuntimeError(f"schema {version} creates {table}: " +
                                   ("already created" if table in created else "not declared in studylog/tables.py"))
            created[table] = version
    for table in {t for delta in DELTAS for t, _name in delta.columns}:
        columns = [c.name for c in TABLE[table].columns]
        appended = [name for delta in DELTAS for t, name in delta.columns if t == table]
        if columns[len(columns) - len(appended):] != appended:
            raise RuntimeError(f"{table}: the columns later versions add ({appended}) must be declared last, in "
                               "that order (ALTER TABLE ADD COLUMN appends them)")
    missing = [t.name for t in TABLES if t.name not in created]
    if missing:
        raise RuntimeError(f"declared tables no schema version creates: {missing} (add them to a new Delta)")


_check()

MIGRATIONS: list[str] = [_step(version) for version in range(SCHEMA_VERSION)]
"""`MIGRATIONS[n]` brings a log written at schema n to n + 1; a fresh log is made by `create_script()`."""
