"""Study log schema, versioned by `PRAGMA user_version`; each migration is applied once, in order.

Every distinct string that is scored (a comment, its normalized form, a variant) is one row
of `texts`, so a score is stored once per (text, detector version) and every table that
holds text points there.

The migrations are how logs are created and upgraded; what they leave is described once in
`studylog/tables.py` (columns, keys, meanings; docs/DATA.md is generated from it). A migration
that adds or changes a column or table must change that description too:
tests/test_table_description.py fails until both agree.
"""
from __future__ import annotations

MIGRATIONS: list[str] = [
    # 1: initial schema
    """
    CREATE TABLE studies (
        study_id     TEXT PRIMARY KEY,
        title        TEXT NOT NULL,
        config_json  TEXT NOT NULL,
        created_at   TEXT NOT NULL
    );
    CREATE TABLE raters (
        study_id     TEXT NOT NULL REFERENCES studies(study_id),
        rater_id     TEXT NOT NULL,
        consent_at   TEXT,
        first_seen   TEXT NOT NULL,
        PRIMARY KEY (study_id, rater_id)
    );
    CREATE TABLE sessions (
        session_id        TEXT PRIMARY KEY,
        study_id          TEXT NOT NULL REFERENCES studies(study_id),
        rater_id          TEXT,
        client            TEXT NOT NULL,
        client_version    TEXT,
        protocol_version  INTEGER,
        started_at        TEXT NOT NULL,
        ended_at          TEXT
    );
    CREATE TABLE pages (
        page_id      INTEGER PRIMARY KEY,
        platform     TEXT NOT NULL,
        page_key     TEXT NOT NULL,
        url          TEXT,
        title        TEXT,
        first_seen   TEXT NOT NULL,
        UNIQUE (platform, page_key)
    );
    CREATE TABLE texts (
        text_id      INTEGER PRIMARY KEY,
        text_hash    TEXT NOT NULL UNIQUE,
        text         TEXT NOT NULL
    );
    CREATE TABLE comments (
        comment_id       INTEGER PRIMARY KEY,
        platform         TEXT NOT NULL,
        comment_key      TEXT NOT NULL,
        page_id          INTEGER REFERENCES pages(page_id),
        parent_key       TEXT,
        text_id          INTEGER NOT NULL REFERENCES texts(text_id),
        author_hash      TEXT,
        time_shown       TEXT,
        truncated        INTEGER NOT NULL DEFAULT 0,
        original_length  INTEGER NOT NULL,
        first_seen       TEXT NOT NULL,
        UNIQUE (platform, comment_key)
    );
    CREATE INDEX comments_page ON comments(page_id);
    CREATE TABLE sightings (
        comment_id   INTEGER NOT NULL REFERENCES comments(comment_id),
        session_id   TEXT NOT NULL REFERENCES sessions(session_id),
        seen_at      TEXT NOT NULL,
        PRIMARY KEY (comment_id, session_id)
    );
    CREATE TABLE labels (
        comment_id   INTEGER NOT NULL REFERENCES comments(comment_id),
        name         TEXT NOT NULL,
        value        TEXT,
        source       TEXT NOT NULL,
        PRIMARY KEY (comment_id, name, source)
    );
    CREATE TABLE detectors (
        detector_id  INTEGER PRIMARY KEY,
        name         TEXT NOT NULL,
        version      TEXT NOT NULL,
        toxicity_label TEXT,
        threshold    REAL,
        config_json  TEXT NOT NULL,
        first_used   TEXT NOT NULL,
        UNIQUE (name, version)
    );
    CREATE TABLE scores (
        text_id      INTEGER NOT NULL REFERENCES texts(text_id),
        detector_id  INTEGER NOT NULL REFERENCES detectors(detector_id),
        labels_json  TEXT,
        toxicity     REAL,
        latency_ms   REAL,
        error        TEXT,
        created_at   TEXT NOT NULL,
        PRIMARY KEY (text_id, detector_id)
    );
    CREATE TABLE normalizations (
        source_text_id  INTEGER NOT NULL REFERENCES texts(text_id),
        normalizer      TEXT NOT NULL,
        version         TEXT NOT NULL,
        result_text_id  INTEGER NOT NULL REFERENCES texts(text_id),
        edits_json      TEXT NOT NULL,
        created_at      TEXT NOT NULL,
        PRIMARY KEY (source_text_id, normalizer, version)
    );
    CREATE TABLE variants (
        variant_id       INTEGER PRIMARY KEY,
        comment_id       INTEGER NOT NULL REFERENCES comments(comment_id),
        source_text_id   INTEGER NOT NULL REFERENCES texts(text_id),
        text_id          INTEGER NOT NULL REFERENCES texts(text_id),
        strategy         TEXT NOT NULL,
        params_json      TEXT NOT NULL,
        seed             INTEGER NOT NULL,
        positions_json   TEXT NOT NULL,
        target_detector  TEXT,
        attack_json      TEXT,
        run_id           INTEGER REFERENCES audit_runs(run_id),
        created_at       TEXT NOT NULL,
        UNIQUE (comment_id, text_id, strategy, params_json, seed)
    );
    CREATE INDEX variants_comment ON variants(comment_id);
    CREATE TABLE ratings (
        rating_id        INTEGER PRIMARY KEY,
        study_id         TEXT NOT NULL REFERENCES studies(study_id),
        rater_id         TEXT NOT NULL,
        client_rating_id TEXT NOT NULL,
        session_id       TEXT REFERENCES sessions(session_id),
        comment_id       INTEGER NOT NULL REFERENCES comments(comment_id),
        values_json      TEXT NOT NULL,
        anchors_json     TEXT,
        derived_toxicity TEXT,
        inconsistent     INTEGER NOT NULL DEFAULT 0,
        time_spent_ms    INTEGER,
        created_at       TEXT NOT NULL,
        UNIQUE (study_id, rater_id, client_rating_id)
    );
    CREATE TABLE rating_values (
        rating_id    INTEGER NOT NULL REFERENCES ratings(rating_id),
        attribute    TEXT NOT NULL,
        value        TEXT NOT NULL,
        PRIMARY KEY (rating_id, attribute)
    );
    CREATE TABLE audit_runs (
        run_id       INTEGER PRIMARY KEY,
        dataset      TEXT NOT NULL,
        path         TEXT,
        params_json  TEXT NOT NULL,
        status       TEXT NOT NULL,
        n_items      INTEGER NOT NULL DEFAULT 0,
        n_done       INTEGER NOT NULL DEFAULT 0,
        started_at   TEXT NOT NULL,
        finished_at  TEXT
    );
    CREATE TABLE run_items (
        run_id       INTEGER NOT NULL REFERENCES audit_runs(run_id),
        comment_id   INTEGER NOT NULL REFERENCES comments(comment_id),
        PRIMARY KEY (run_id, comment_id)
    );
    """,
    # 2: merged study logs (modlens merge): the participant bundles merged in, and which bundle
    # each row came from. Empty in a participant's own log.
    """
    CREATE TABLE bundles (
        bundle_id        INTEGER PRIMARY KEY,
        bundle_sha256    TEXT NOT NULL UNIQUE,
        study_id         TEXT NOT NULL,
        study_key        TEXT NOT NULL,
        rater_ids_json   TEXT NOT NULL,
        modlens_version  TEXT NOT NULL,
        schema_version   INTEGER NOT NULL,
        exported_at      TEXT NOT NULL,
        merged_at        TEXT NOT NULL,
        source_name      TEXT NOT NULL,
        rows_json        TEXT NOT NULL
    );
    CREATE TABLE row_sources (
        table_name   TEXT NOT NULL,
        row_key      TEXT NOT NULL,
        bundle_id    INTEGER NOT NULL REFERENCES bundles(bundle_id),
        added        INTEGER NOT NULL,
        PRIMARY KEY (table_name, row_key, bundle_id)
    ) WITHOUT ROWID;
    CREATE INDEX row_sources_bundle ON row_sources(bundle_id);
    """,
    # 3: media (docs/FUSION.md): images, audio and video that comments carry or that fused test
    # cases (DUO semantic fusion) are made of, OCR results, and scores of inputs with media.
    """
    CREATE TABLE media (
        media_id     INTEGER PRIMARY KEY,
        sha256       TEXT NOT NULL UNIQUE,
        kind         TEXT NOT NULL,
        mime         TEXT NOT NULL,
        n_bytes      INTEGER NOT NULL,
        path         TEXT,
        meta_json    TEXT NOT NULL,
        first_seen   TEXT NOT NULL
    );
    CREATE TABLE comment_media (
        comment_id   INTEGER NOT NULL REFERENCES comments(comment_id),
        media_id     INTEGER NOT NULL REFERENCES media(media_id),
        position     INTEGER NOT NULL,
        source_url   TEXT,
        PRIMARY KEY (comment_id, media_id)
    );
    CREATE TABLE ocr_results (
        media_id     INTEGER NOT NULL REFERENCES media(media_id),
        engine       TEXT NOT NULL,
        version      TEXT NOT NULL,
        text_id      INTEGER NOT NULL REFERENCES texts(text_id),
        confidence   REAL,
        created_at   TEXT NOT NULL,
        PRIMARY KEY (media_id, engine, version)
    );
    CREATE TABLE fused_cases (
        case_id         INTEGER PRIMARY KEY,
        case_key        TEXT NOT NULL UNIQUE,
        content_type    TEXT NOT NULL,
        template        TEXT NOT NULL,
        keyword_a       TEXT NOT NULL,
        middle          TEXT NOT NULL,
        keyword_b       TEXT NOT NULL,
        seed_text_id    INTEGER NOT NULL REFERENCES texts(text_id),
        caption_text_id INTEGER NOT NULL REFERENCES texts(text_id),
        fusion          TEXT NOT NULL,
        params_json     TEXT NOT NULL,
        seed            INTEGER NOT NULL,
        run_id          INTEGER REFERENCES audit_runs(run_id),
        created_at      TEXT NOT NULL
    );
    CREATE INDEX fused_cases_fusion ON fused_cases(content_type, fusion);
    CREATE TABLE case_media (
        case_id      INTEGER NOT NULL REFERENCES fused_cases(case_id),
        part         TEXT NOT NULL,
        position     INTEGER NOT NULL,
        media_id     INTEGER NOT NULL REFERENCES media(media_id),
        PRIMARY KEY (case_id, part, position)
    );
    CREATE TABLE case_parts (
        case_id      INTEGER NOT NULL REFERENCES fused_cases(case_id),
        part         TEXT NOT NULL,
        text_id      INTEGER NOT NULL REFERENCES texts(text_id),
        PRIMARY KEY (case_id, part)
    );
    CREATE TABLE case_scores (
        case_id      INTEGER NOT NULL REFERENCES fused_cases(case_id),
        part         TEXT NOT NULL,
        detector_id  INTEGER NOT NULL REFERENCES detectors(detector_id),
        labels_json  TEXT,
        toxicity     REAL,
        latency_ms   REAL,
        error        TEXT,
        details_json TEXT NOT NULL,
        created_at   TEXT NOT NULL,
        PRIMARY KEY (case_id, part, detector_id)
    );
    CREATE TABLE comment_media_scores (
        comment_id   INTEGER NOT NULL REFERENCES comments(comment_id),
        detector_id  INTEGER NOT NULL REFERENCES detectors(detector_id),
        labels_json  TEXT,
        toxicity     REAL,
        latency_ms   REAL,
        error        TEXT,
        details_json TEXT NOT NULL,
        created_at   TEXT NOT NULL,
        PRIMARY KEY (comment_id, detector_id)
    );
    """,
    # 4: a log a researcher can trust (docs/DATA.md): how each session ended; gold labels as
    # versioned label sets (a new `--label` adds a set, never rewrites one) that runs record; the
    # errors of a step that failed for one text (normalizer, generator), kept like scores' errors.
    # Gold `toxic` labels of older logs become one set per source, named as such. Each merged
    # bundle's signer (the fingerprint of the participant's bundle key, NULL: unsigned). The live
    # comments whose variants the daemon deferred (its variant budget), until `rescore --variants`.
    """
    ALTER TABLE sessions ADD COLUMN ended_by TEXT;
    ALTER TABLE bundles ADD COLUMN signer TEXT;
    CREATE TABLE label_sets (
        label_set_id INTEGER PRIMARY KEY,
        source       TEXT NOT NULL,
        definition   TEXT NOT NULL,
        created_at   TEXT NOT NULL,
        UNIQUE (source, definition)
    );
    CREATE TABLE gold_labels (
        label_set_id INTEGER NOT NULL REFERENCES label_sets(label_set_id),
        comment_id   INTEGER NOT NULL REFERENCES comments(comment_id),
        value        TEXT,
        PRIMARY KEY (label_set_id, comment_id)
    );
    CREATE INDEX gold_labels_comment ON gold_labels(comment_id);
    ALTER TABLE audit_runs ADD COLUMN label_set_id INTEGER REFERENCES label_sets(label_set_id);
    CREATE TABLE step_errors (
        text_id      INTEGER NOT NULL REFERENCES texts(text_id),
        step         TEXT NOT NULL,
        component    TEXT NOT NULL,
        version      TEXT NOT NULL,
        run_id       INTEGER REFERENCES audit_runs(run_id),
        message      TEXT NOT NULL,
        created_at   TEXT NOT NULL,
        PRIMARY KEY (text_id, step, component, version)
    );
    CREATE TABLE deferred_variants (
        comment_id   INTEGER PRIMARY KEY REFERENCES comments(comment_id),
        reason       TEXT NOT NULL,
        created_at   TEXT NOT NULL,
        done_at      TEXT
    );
    INSERT INTO label_sets (source, definition, created_at)
        SELECT DISTINCT source, 'as recorded before label sets (schema 3)', strftime('%Y-%m-%dT%H:%M:%fZ', 'now')
        FROM labels WHERE name = 'toxic';
    INSERT INTO gold_labels (label_set_id, comment_id, value)
        SELECT s.label_set_id, l.comment_id, l.value FROM labels l JOIN label_sets s ON s.source = l.source
        WHERE l.name = 'toxic';
    DELETE FROM labels WHERE name = 'toxic';
    CREATE TABLE asr_results (
        media_id     INTEGER NOT NULL REFERENCES media(media_id),
        engine       TEXT NOT NULL,
        version      TEXT NOT NULL,
        text_id      INTEGER NOT NULL REFERENCES texts(text_id),
        confidence   REAL,
        created_at   TEXT NOT NULL,
        PRIMARY KEY (media_id, engine, version)
    );
    """,
    # the acceptance of a rater's work on one task of an item-set study (the human-centred Perspective study, Table 11)
    """
    CREATE TABLE rater_reviews (
        study_id             TEXT NOT NULL REFERENCES studies(study_id),
        rater_id             TEXT NOT NULL,
        task                 TEXT NOT NULL,
        source               TEXT NOT NULL,
        decision             TEXT NOT NULL,
        reason               TEXT NOT NULL,
        n_items              INTEGER NOT NULL,
        missed               INTEGER NOT NULL,
        inconsistent_gold    INTEGER NOT NULL,
        wrong_gold           INTEGER NOT NULL,
        inconsistent         INTEGER NOT NULL,
        comment_ids_json     TEXT NOT NULL,
        reviewed_at          TEXT NOT NULL,
        PRIMARY KEY (study_id, rater_id, task)
    );
    """,
]

SCHEMA_VERSION = len(MIGRATIONS)
