"""Merging participant bundles into one study log (`modlens merge`), which `modlens report` reads as usual.

Rules (docs/MULTI.md):
- one transaction per bundle: a bundle is verified completely first, then merged whole or not at all;
- the same bundle twice adds nothing (its checksum is recorded in `bundles`), and every row is
  merged by its natural key, so a later, larger export of the same participant adds only what is new;
- texts by sha256; pages by platform + page key; comments by platform + comment key + text hash (a
  comment whose text differs from the one already merged under its key, i.e. edited between
  visits, is kept apart under `<key>#<first 12 hex of its text hash>`); detectors by name + version,
  so scores stay per detector version (a score replaces an earlier error, never the reverse);
  ratings per study + rater + client rating id, so every rater's ratings are kept;
- provenance: `bundles` (checksum, raters, versions, when merged, from which file) and `row_sources`
  (which bundle held each study, rater, session, page, comment, detector, score and rating, and
  whether it added it); texts, sightings, labels, normalizations, variants and rating values follow
  the comment, text or rating they belong to;
- refused, with nothing written: a bundle of another study (study key), a damaged, truncated or
  tampered bundle, a newer bundle format or schema, and a target log that is not a merged log;
- signatures: a bundle whose signature does not verify is refused when read; an unsigned one unless
  `allow_unsigned`; one whose rater was merged before under another key is refused (`check_signer`).
Older bundle schemas are upgraded on the fly: a column the bundle lacks is filled with NULL or its
default; a column that needs a value has an entry in UPGRADES.
"""
from __future__ import annotations

import hashlib
import json
import sqlite3
from pathlib import Path
from typing import Any, Callable

from modlens.studylog import schema
from modlens.studylog.bundle import TABLES, Bundle, BundleError, read_bundle
from modlens.studylog.records.labels import GOLD, LEGACY_DEFINITION
from modlens.studylog.codec import now_iso
from modlens.studylog.store import StudyLog

# schema version of a bundle -> function upgrading its {table: (columns, rows)} to the next version.
# 1 -> 2 added only the merge tables (bundles, row_sources), which bundles never carry;
# 2 -> 3 added only new tables (media), which older bundles lack and read as empty;
# 3 -> 4 added sessions.ended_by (NULL: not known) and the label-set tables.
Tables = dict[str, tuple[list[str], list[tuple[Any, ...]]]]


def _gold_into_label_sets(tables: Tables) -> None:
    """3 -> 4: gold `toxic` labels leave `labels` for one label set per source, as migration 4 moves a log's."""
    cols, rows = tables["labels"]
    at = {c: n for n, c in enumerate(cols)}
    gold = [r for r in rows if r[at["name"]] == GOLD] if rows else []
    if not gold:
        return
    tables["labels"] = (cols, [r for r in rows if r[at["name"]] != GOLD])
    set_ids = {src: n for n, src in enumerate(dict.fromkeys(r[at["source"]] for r in gold), 1)}
    tables["label_sets"] = (["label_set_id", "source", "definition", "created_at"],
                            [(n, src, LEGACY_DEFINITION, now_iso()) for src, n in set_ids.items()])
    tables["gold_labels"] = (["label_set_id", "comment_id", "value"],
                             [(set_ids[r[at["source"]]], r[at["comment_id"]], r[at["value"]]) for r in gold])


UPGRADES: dict[int, Callable[[Tables], None]] = {
    1: lambda tables: None, 2: lambda tables: None, 3: _gold_into_label_sets}
OLDEST_SCHEMA = 1


class MergeError(ValueError):
    """A bundle that is refused; nothing of it was written."""


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


def _target_study_keys(log: StudyLog) -> set[str]:
    return {r[0] for r in log.conn.execute("SELECT DISTINCT study_key FROM bundles")}


def _check_target(log: StudyLog) -> None:
    """Merging into a participant's own log would mix unconsented and merged rows: refuse."""
    if _target_study_keys(log):
        return
    used = [t for t in ("studies", "comments", "ratings") if log.conn.execute(f"SELECT 1 FROM {t} LIMIT 1").fetchone()]
    if used:
        raise MergeError(f"{log.path} is not a merged study log (it has {', '.join(used)} but no merged bundles) — "
                         "fix: merge into a new file, e.g. --out merged.sqlite")


def _upgraded(bundle: Bundle, log: StudyLog) -> dict[str, tuple[list[str], list[tuple[Any, ...]]]]:
    """The bundle's tables as {table: (current columns, rows)}, upgraded from its schema version."""
    from modlens.studylog.bundle import column_types

    version = int(bundle.manifest["schema_version"])
    tables: dict[str, tuple[list[str], list[tuple[Any, ...]]]] = {}
    for name in TABLES:
        table = bundle.table(name)
        if table is None:
            tables[name] = ([], [])
            continue
        tables[name] = (list(table.column_names), list(zip(*(col.to_pylist() for col in table.columns))))
    for v in range(version, schema.SCHEMA_VERSION):
        UPGRADES[v](tables)
    for name in TABLES:
        have, rows = tables[name]
        want = [c for c, _ in column_types(log.conn, name)]
        extra = [c for c in have if c not in want]
        if extra:
            raise MergeError(f"{bundle.name}: table {name} has columns {extra} this modlens does not know")
        # a table the bundle's schema did not have yet has no rows: nothing to fill in
        fill = _defaults(log, name, [c for c in want if c not in have], bundle.name) if rows else {}
        index = {c: i for i, c in enumerate(have)}
        tables[name] = (want, [tuple(row[index[c]] if c in index else fill[c] for c in want) for row in rows])
    return tables


def _defaults(log: StudyLog, table: str, missing: list[str], name: str) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for _cid, col, _decl, notnull, default, pk in log.conn.execute(f"PRAGMA main.table_info([{table}])"):
        if col not in missing:
            continue
        if default is not None:
            out[col] = log.conn.execute(f"SELECT {default}").fetchone()[0]
        elif notnull or pk:
            raise MergeError(f"{name}: table {table} lacks column {col}, which needs a value, and no upgrade rule "
                             "fills it — fix: ask the participant to export with a current modlens")
        else:
            out[col] = None
    return out


def _check_texts(bundle: Bundle, tables: dict[str, tuple[list[str], list[tuple[Any, ...]]]]) -> None:
    """Texts are deduplicated by their hash, so a wrong hash would attach ratings to another text."""
    cols, rows = tables["texts"]
    h, t = cols.index("text_hash"), cols.index("text")
    for row in rows:
        if not isinstance(row[t], str) or hashlib.sha256(row[t].encode("utf-8")).hexdigest() != row[h]:
            raise MergeError(f"{bundle.name}: texts: text_id {row[cols.index('text_id')]} does not match its text_hash")


def verify_for(log: StudyLog, bundle: Bundle, study_key: str | None = None) -> None:
    """Everything that refuses a bundle before anything is written."""
    m = bundle.manifest
    version = m.get("schema_version")
    if not isinstance(version, int) or version > schema.SCHEMA_VERSION:
        raise MergeError(f"{bundle.name}: exported from study-log schema {version}, newer than this modlens "
                         f"merges ({schema.SCHEMA_VERSION}) — fix: upgrade modlens")
    if version < OLDEST_SCHEMA:
        raise MergeError(f"{bundle.name}: schema {version} is older than any this modlens can upgrade ({OLDEST_SCHEMA})")
    for key, holder in [(k, str(log.path)) for k in _target_study_keys(log)] + [(study_key, "--study")]:
        if key and m["study_key"] != key:
            raise MergeError(f"{bundle.name}: belongs to another study ({m['study_id']!r}, key {m['study_key']}); "
                             f"{holder} is study key {key} — fix: merge each study into its own file; "
                             "participants of one study must join the same study.modlens")
    studies = {r for r, in _rows(bundle, "studies", "study_id")}
    if studies - {m["study_id"]}:
        raise MergeError(f"{bundle.name}: holds rows of studies {sorted(studies)}, the manifest says {m['study_id']!r}")


def check_signer(log: StudyLog, bundle: Bundle, allow_unsigned: bool = False) -> None:
    """A participant's bundle is signed by their bundle key (read_bundle verified the signature);
    a rater merged before under another key is not that participant's bundle: an edited one,
    re-signed. Unsigned bundles (older modlens, or a signature stripped) only with allow_unsigned."""
    if bundle.signer is None:
        if not allow_unsigned:
            raise MergeError(f"{bundle.name}: unsigned, so it cannot be told from an edited bundle — fix: ask the "
                             "participant to export it again with this modlens, or pass --allow-unsigned")
        return
    raters = bundle.manifest["rater_ids"]
    other = log.conn.execute(
        f"SELECT j.value, b.signer FROM bundles b, json_each(b.rater_ids_json) j WHERE b.signer IS NOT NULL "
        f"AND b.signer != ? AND j.value IN ({', '.join('?' * len(raters))}) LIMIT 1",
        (bundle.signer, *raters)).fetchone()
    if other:
        raise MergeError(f"{bundle.name}: rater {other[0]}'s earlier bundles were signed by {other[1]}, this one by "
                         f"{bundle.signer}: not that participant's bundle (edited and signed again?) — fix: ask the "
                         "participant to export and send it again")


def _rows(bundle: Bundle, table: str, *columns: str) -> list[tuple[Any, ...]]:
    t = bundle.table(table)
    return [] if t is None else list(zip(*(t.column(c).to_pylist() for c in columns)))


def merge_bundle(log: StudyLog, bundle: Bundle, study_key: str | None = None, allow_unsigned: bool = False) -> dict[str, Any]:
    """Merge one verified bundle in one transaction; returns {"status": "merged"|"already merged", ...}."""
    done = log.conn.execute("SELECT merged_at, source_name FROM bundles WHERE bundle_sha256 = ?", (bundle.sha256,)).fetchone()
    if done:
        return {"status": "already merged", "merged_at": done[0], "source": done[1], "added": {}}
    _check_target(log)
    verify_for(log, bundle, study_key)
    check_signer(log, bundle, allow_unsigned)
    tables = _upgraded(bundle, log)
    _check_texts(bundle, tables)
    m = bundle.manifest
    conn = log.conn
    conn.execute("BEGIN IMMEDIATE")
    try:
        before = {t: conn.execute(f"SELECT coalesce(max({col}), 0) FROM {t}").fetchone()[0]
                  for t, (col, _q) in _ID_PROVENANCE.items()}
        bundle_id = conn.execute(
            "INSERT INTO bundles (bundle_sha256, study_id, study_key, rater_ids_json, modlens_version, schema_version, "
            "exported_at, merged_at, source_name, rows_json, signer) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, '{}', ?)",
            (bundle.sha256, m["study_id"], m["study_key"], json.dumps(m["rater_ids"]), m["modlens_version"],
             m["schema_version"], m["exported_at"], now_iso(), Path(bundle.name).name, bundle.signer)).lastrowid
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
        rows_info = {t: {"in_bundle": len(tables[t][1]), "added": added.get(t, 0)} for t in TABLES}
        conn.execute("UPDATE bundles SET rows_json = ? WHERE bundle_id = ?", (json.dumps(rows_info), bundle_id))
        for name in TABLES:
            conn.execute(f"DROP TABLE temp.bt_{name}")
        for name in _TEMP:
            conn.execute(f"DROP TABLE temp.{name}")
        conn.execute("COMMIT")
    except sqlite3.Error as err:  # e.g. a row pointing at one the bundle lacks
        conn.execute("ROLLBACK")
        raise MergeError(f"{bundle.name}: {err}; rolled back, nothing of it was merged") from None
    except BaseException:
        conn.execute("ROLLBACK")
        raise
    return {"status": "merged", "bundle_id": bundle_id, "rows": rows_info}


def merge_files(db: str | Path, paths: list[str | Path], study_key: str | None = None,
                report: Callable[[str, dict[str, Any] | Exception], None] | None = None,
                allow_unsigned: bool = False) -> list[dict[str, Any] | Exception]:
    """Merge each file in turn; a refused one is reported and skipped, the others still merge.
    A target that did not exist is created only if some bundle merges into it."""
    target = Path(db)
    existed = target.exists()
    results: list[dict[str, Any] | Exception] = []
    log: StudyLog | None = None
    try:
        for path in paths:
            outcome: dict[str, Any] | Exception
            try:
                bundle = read_bundle(path)
            except (BundleError, FileNotFoundError) as err:
                outcome = err
            else:
                try:
                    log = log or StudyLog(db)
                    outcome = merge_bundle(log, bundle, study_key, allow_unsigned)
                except (MergeError, BundleError) as err:  # BundleError: a table that does not read
                    outcome = err
                except (KeyError, TypeError, ValueError, AttributeError, IndexError) as err:
                    # rows no modlens wrote, past every check above: still one line, and the next bundle
                    outcome = MergeError(f"{bundle.name}: cannot be merged ({type(err).__name__}: {err}); "
                                         "nothing of it was merged")
                finally:
                    bundle.close()
            results.append(outcome)
            if report:
                report(str(path), outcome)
    finally:
        if log is not None:
            log.close()
        if not existed and not any(isinstance(r, dict) and r["status"] == "merged" for r in results):
            for suffix in ("", "-wal", "-shm", "-journal"):
                target.with_name(target.name + suffix).unlink(missing_ok=True)
    return results


def listing(db: str | Path) -> list[dict[str, Any]]:
    """One entry per merged bundle and rater: ratings in the merged log, consent time, checksum."""
    with StudyLog(db, readonly=True) as log:
        out = []
        for b in log.query("SELECT * FROM bundles ORDER BY bundle_id"):
            for rater in json.loads(b["rater_ids_json"]):
                row = log.conn.execute(
                    "SELECT r.consent_at, (SELECT count(*) FROM ratings x WHERE x.study_id = r.study_id "
                    "AND x.rater_id = r.rater_id) FROM raters r WHERE r.study_id = ? AND r.rater_id = ?",
                    (b["study_id"], rater)).fetchone()
                out.append({"bundle_id": b["bundle_id"], "rater_id": rater, "ratings": row[1] if row else 0,
                            "consent_at": row[0] if row else None, "bundle_sha256": b["bundle_sha256"],
                            "source": b["source_name"], "merged_at": b["merged_at"], "study_id": b["study_id"],
                            "schema_version": b["schema_version"], "modlens_version": b["modlens_version"]})
        return out
