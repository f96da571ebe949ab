"""The rows a participant's bundle adds to a merged log (`modlens merge`, `exchange/merge.py`, which
verifies the bundle first): one transaction, set-based INSERT ... SELECT from the bundle's tables
loaded into temp tables, rows mapped to the target's ids by their natural keys, provenance in
`row_sources` and `bundles`."""
from __future__ import annotations

import json
import sqlite3
from typing import Any

from modlens.studylog.codec import now_iso

# Each step: SQL run with :bundle bound, over the bundle in temp.bt_<table> and the maps built before.
# A step's `rows` query gives (row_key, added) of the merged rows for provenance.
_STEPS: list[tuple[str, str, str | None]] = [
    ("studies", "INSERT OR IGNORE INTO studies SELECT study_id, title, config_json, created_at FROM temp.bt_studies",
     "SELECT b.study_id AS k, NOT EXISTS (SELECT 1 FROM studies s WHERE s.study_id = b.study_id) AS a FROM temp.bt_studies b"),
    ("raters", "INSERT INTO raters (study_id, rater_id, consent_at, first_seen) "
               "SELECT study_id, rater_id, consent_at, first_seen FROM temp.bt_raters WHERE true "
               "ON CONFLICT (study_id, rater_id) DO UPDATE SET consent_at = coalesce(raters.consent_at, excluded.consent_at)",
     "SELECT b.study_id || '/' || b.rater_id AS k, NOT EXISTS (SELECT 1 FROM raters r WHERE r.study_id = b.study_id "
     "AND r.rater_id = b.rater_id) AS a FROM temp.bt_raters b"),
    ("sessions", "INSERT OR IGNORE INTO sessions (session_id, study_id, rater_id, client, client_version, "
                 "protocol_version, started_at, ended_at, ended_by) SELECT session_id, study_id, rater_id, client, "
                 "client_version, protocol_version, started_at, ended_at, ended_by FROM temp.bt_sessions",
     "SELECT b.session_id AS k, NOT EXISTS (SELECT 1 FROM sessions s WHERE s.session_id = b.session_id) AS a "
     "FROM temp.bt_sessions b"),
    ("texts", "INSERT OR IGNORE INTO texts (text_hash, text) SELECT text_hash, text FROM temp.bt_texts", None),
    ("map_texts", "CREATE TEMP TABLE map_text AS SELECT b.text_id AS old, t.text_id AS new "
                  "FROM temp.bt_texts b JOIN texts t ON t.text_hash = b.text_hash", None),
    ("pages", "INSERT INTO pages (platform, page_key, url, title, first_seen) "
              "SELECT platform, page_key, url, title, first_seen FROM temp.bt_pages WHERE true "
              "ON CONFLICT (platform, page_key) DO UPDATE SET url = coalesce(pages.url, excluded.url), "
              "title = coalesce(pages.title, excluded.title)",
     None),
    ("map_pages", "CREATE TEMP TABLE map_page AS SELECT b.page_id AS old, p.page_id AS new "
                  "FROM temp.bt_pages b JOIN pages p ON p.platform = b.platform AND p.page_key = b.page_key", None),
    # comment identity: platform + key + text hash; an edited comment gets its own key
    ("comment_keys", "CREATE TEMP TABLE key_comment AS SELECT b.comment_id AS old, b.platform AS platform, "
                     "CASE WHEN EXISTS (SELECT 1 FROM comments c JOIN texts t ON t.text_id = c.text_id "
                     "WHERE c.platform = b.platform AND c.comment_key = b.comment_key AND t.text_hash <> bt.text_hash) "
                     "THEN b.comment_key || '#' || substr(bt.text_hash, 1, 12) ELSE b.comment_key END AS key "
                     "FROM temp.bt_comments b JOIN temp.bt_texts bt ON bt.text_id = b.text_id", None),
    ("comments", "INSERT OR IGNORE INTO comments (platform, comment_key, page_id, parent_key, text_id, author_hash, "
                 "time_shown, truncated, original_length, first_seen) "
                 "SELECT k.platform, k.key, mp.new, b.parent_key, mt.new, b.author_hash, b.time_shown, b.truncated, "
                 "b.original_length, b.first_seen FROM temp.bt_comments b JOIN temp.key_comment k ON k.old = b.comment_id "
                 "JOIN temp.map_text mt ON mt.old = b.text_id LEFT JOIN temp.map_page mp ON mp.old = b.page_id "
                 "ORDER BY b.comment_id", None),
    ("map_comments", "CREATE TEMP TABLE map_comment AS SELECT k.old AS old, c.comment_id AS new FROM temp.key_comment k "
                     "JOIN comments c ON c.platform = k.platform AND c.comment_key = k.key", None),
    ("sightings", "INSERT OR IGNORE INTO sightings SELECT mc.new, b.session_id, b.seen_at FROM temp.bt_sightings b "
                  "JOIN temp.map_comment mc ON mc.old = b.comment_id", None),
    ("labels", "INSERT OR IGNORE INTO labels SELECT mc.new, b.name, b.value, b.source FROM temp.bt_labels b "
               "JOIN temp.map_comment mc ON mc.old = b.comment_id", None),
    # label sets by source + definition; a set's values are never rewritten (the first merged stays)
    ("label_sets", "INSERT OR IGNORE INTO label_sets (source, definition, created_at) "
                   "SELECT source, definition, created_at FROM temp.bt_label_sets ORDER BY label_set_id", None),
    ("map_label_sets", "CREATE TEMP TABLE map_label_set AS SELECT b.label_set_id AS old, s.label_set_id AS new "
                       "FROM temp.bt_label_sets b JOIN label_sets s ON s.source = b.source AND s.definition = b.definition",
     None),
    ("gold_labels", "INSERT OR IGNORE INTO gold_labels (label_set_id, comment_id, value) SELECT ms.new, mc.new, b.value "
                    "FROM temp.bt_gold_labels b JOIN temp.map_label_set ms ON ms.old = b.label_set_id "
                    "JOIN temp.map_comment mc ON mc.old = b.comment_id", None),
    ("detectors", "INSERT OR IGNORE INTO detectors (name, version, toxicity_label, threshold, config_json, first_used) "
                  "SELECT name, version, toxicity_label, threshold, config_json, first_used FROM temp.bt_detectors "
                  "ORDER BY detector_id", None),
    ("map_detectors", "CREATE TEMP TABLE map_detector AS SELECT b.detector_id AS old, d.detector_id AS new "
                      "FROM temp.bt_detectors b JOIN detectors d ON d.name = b.name AND d.version = b.version", None),
    ("score_rows", "CREATE TEMP TABLE m_scores AS SELECT mt.new AS text_id, md.new AS detector_id, b.labels_json, "
                   "b.toxicity, b.latency_ms, b.error, b.created_at, NOT EXISTS (SELECT 1 FROM scores s "
                   "WHERE s.text_id = mt.new AND s.detector_id = md.new) AS added FROM temp.bt_scores b "
                   "JOIN temp.map_text mt ON mt.old = b.text_id JOIN temp.map_detector md ON md.old = b.detector_id", None),
    ("scores", "INSERT INTO scores SELECT text_id, detector_id, labels_json, toxicity, latency_ms, error, created_at "
               "FROM temp.m_scores WHERE true ON CONFLICT (text_id, detector_id) DO UPDATE SET "
               "labels_json = excluded.labels_json, toxicity = excluded.toxicity, latency_ms = excluded.latency_ms, "
               "error = excluded.error, created_at = excluded.created_at "
               "WHERE scores.error IS NOT NULL AND excluded.error IS NULL",
     "SELECT text_id || ':' || detector_id AS k, added AS a FROM temp.m_scores"),
    ("normalizations", "INSERT OR IGNORE INTO normalizations SELECT ms.new, b.normalizer, b.version, mr.new, b.edits_json, "
                       "b.created_at FROM temp.bt_normalizations b JOIN temp.map_text ms ON ms.old = b.source_text_id "
                       "JOIN temp.map_text mr ON mr.old = b.result_text_id", None),
    ("variants", "INSERT OR IGNORE INTO variants (comment_id, source_text_id, text_id, strategy, params_json, seed, "
                 "positions_json, target_detector, attack_json, run_id, created_at) "
                 "SELECT mc.new, ms.new, mt.new, b.strategy, b.params_json, b.seed, b.positions_json, b.target_detector, "
                 "b.attack_json, NULL, b.created_at FROM temp.bt_variants b JOIN temp.map_comment mc ON mc.old = b.comment_id "
                 "JOIN temp.map_text ms ON ms.old = b.source_text_id JOIN temp.map_text mt ON mt.old = b.text_id "
                 "ORDER BY b.variant_id", None),
    ("ratings", "INSERT OR IGNORE INTO ratings (study_id, rater_id, client_rating_id, session_id, comment_id, values_json, "
                "anchors_json, derived_toxicity, inconsistent, time_spent_ms, created_at) "
                "SELECT b.study_id, b.rater_id, b.client_rating_id, b.session_id, mc.new, b.values_json, b.anchors_json, "
                "b.derived_toxicity, b.inconsistent, b.time_spent_ms, b.created_at FROM temp.bt_ratings b "
                "JOIN temp.map_comment mc ON mc.old = b.comment_id ORDER BY b.rating_id", None),
    ("map_ratings", "CREATE TEMP TABLE map_rating AS SELECT b.rating_id AS old, r.rating_id AS new FROM temp.bt_ratings b "
                    "JOIN ratings r ON r.study_id = b.study_id AND r.rater_id = b.rater_id "
                    "AND r.client_rating_id = b.client_rating_id", None),
    ("rating_values", "INSERT OR IGNORE INTO rating_values SELECT mr.new, b.attribute, b.value FROM temp.bt_rating_values b "
                      "JOIN temp.map_rating mr ON mr.old = b.rating_id", None),
    # comment images by content hash (bundles carry no image files, so no path)
    ("media", "INSERT OR IGNORE INTO media (sha256, kind, mime, n_bytes, path, meta_json, first_seen) "
              "SELECT sha256, kind, mime, n_bytes, NULL, meta_json, first_seen FROM temp.bt_media ORDER BY media_id", None),
    ("map_media", "CREATE TEMP TABLE map_media AS SELECT b.media_id AS old, m.media_id AS new FROM temp.bt_media b "
                  "JOIN media m ON m.sha256 = b.sha256", None),
    ("comment_media", "INSERT OR IGNORE INTO comment_media (comment_id, media_id, position, source_url) "
                      "SELECT mc.new, mm.new, b.position, b.source_url FROM temp.bt_comment_media b "
                      "JOIN temp.map_comment mc ON mc.old = b.comment_id JOIN temp.map_media mm ON mm.old = b.media_id", None),
    ("ocr_results", "INSERT OR IGNORE INTO ocr_results (media_id, engine, version, text_id, confidence, created_at) "
                    "SELECT mm.new, b.engine, b.version, mt.new, b.confidence, b.created_at FROM temp.bt_ocr_results b "
                    "JOIN temp.map_media mm ON mm.old = b.media_id JOIN temp.map_text mt ON mt.old = b.text_id", None),
    ("comment_media_scores", "INSERT OR IGNORE INTO comment_media_scores (comment_id, detector_id, labels_json, toxicity, "
                             "latency_ms, error, details_json, created_at) SELECT mc.new, md.new, b.labels_json, "
                             "b.toxicity, b.latency_ms, b.error, b.details_json, b.created_at "
                             "FROM temp.bt_comment_media_scores b JOIN temp.map_comment mc ON mc.old = b.comment_id "
                             "JOIN temp.map_detector md ON md.old = b.detector_id", None),
]

# provenance of rows with an integer id: rows with an id above the table's largest before the merge were added
_ID_PROVENANCE = {
    "pages": ("page_id", "SELECT DISTINCT new FROM temp.map_page"),
    "comments": ("comment_id", "SELECT DISTINCT new FROM temp.map_comment"),
    "detectors": ("detector_id", "SELECT DISTINCT new FROM temp.map_detector"),
    "ratings": ("rating_id", "SELECT DISTINCT new FROM temp.map_rating"),
    "media": ("media_id", "SELECT DISTINCT new FROM temp.map_media"),
    "label_sets": ("label_set_id", "SELECT DISTINCT new FROM temp.map_label_set"),
}
_TEMP = ["map_text", "map_page", "key_comment", "map_comment", "map_detector", "m_scores", "map_rating", "map_media",
         "map_label_set"]



def insert_bundle(conn: sqlite3.Connection, sha256: str, m: dict[str, Any], source_name: str, signer: str | None,
                  tables: dict[str, tuple[list[str], list[tuple[Any, ...]]]]) -> tuple[int, dict[str, Any]]:
    """Write one verified bundle's `tables` ({table: (columns, rows)}, upgraded to this schema) in one
    transaction; (bundle_id, {table: {"in_bundle": n, "added": n}}). Rolls back and re-raises on any error."""
    conn.execute("BEGIN IMMEDIATE")
    try:
        before = {t: conn.execute(f"SELECT coalesce(max({col}), 0) FROM {t}").fetchone()[0]
                  for t, (col, _q) in _ID_PROVENANCE.items()}
        bundle_id = conn.execute(
            "INSERT INTO bundles (bundle_sha256, study_id, study_key, rater_ids_json, modlens_version, schema_version, "
            "exported_at, merged_at, source_name, rows_json, signer) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, '{}', ?)",
            (sha256, m["study_id"], m["study_key"], json.dumps(m["rater_ids"]), m["modlens_version"],
             m["schema_version"], m["exported_at"], now_iso(), source_name, signer)).lastrowid
        assert bundle_id is not None  # an INSERT that succeeded has a rowid
        for name, (cols, rows) in tables.items():
            conn.execute(f"CREATE TEMP TABLE bt_{name} AS SELECT {', '.join(cols)} FROM main.[{name}] WHERE 0")
            conn.executemany(f"INSERT INTO temp.bt_{name} VALUES ({', '.join('?' * len(cols))})", rows)
        added: dict[str, int] = {}
        for step, sql, provenance in _STEPS:
            if provenance:  # before the insert: which rows are new
                conn.execute(f"INSERT OR IGNORE INTO row_sources (table_name, row_key, bundle_id, added) "
                             f"SELECT '{step}', k, ?, a FROM ({provenance})", (bundle_id,))
            cursor = conn.execute(sql)
            if not step.startswith("map_") and step not in ("comment_keys", "score_rows"):
                added[step] = max(cursor.rowcount, 0)
        for table, (_col, ids) in _ID_PROVENANCE.items():
            conn.execute(f"INSERT OR IGNORE INTO row_sources (table_name, row_key, bundle_id, added) "
                         f"SELECT '{table}', new, ?, new > ? FROM ({ids})", (bundle_id, before[table]))
        # an upsert's rowcount includes rows it only updated: count the new ones from provenance
        for table, n in conn.execute("SELECT table_name, sum(added) FROM row_sources WHERE bundle_id = ? "
                                     "GROUP BY table_name", (bundle_id,)):
            added[table] = n
        rows_info = {t: {"in_bundle": len(tables[t][1]), "added": added.get(t, 0)} for t in tables}
        conn.execute("UPDATE bundles SET rows_json = ? WHERE bundle_id = ?", (json.dumps(rows_info), bundle_id))
        for name in tables:
            conn.execute(f"DROP TABLE temp.bt_{name}")
        for name in _TEMP:
            conn.execute(f"DROP TABLE temp.{name}")
        conn.execute("COMMIT")
    except BaseException:
        conn.execute("ROLLBACK")
        raise
    return bundle_id, rows_info
