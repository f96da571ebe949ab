"""The data dictionary: every SQLite table and column of the study log, and every exported
table with the query that builds it and the type and meaning of each column.

This module is the single source of truth: `modlens export` writes it next to the exported
files, and the generated block of docs/DATA.md must equal `render_markdown()` (a test checks
both, so the documentation cannot drift from the schema or the export).
"""
from __future__ import annotations

from dataclasses import dataclass

# --- the SQLite tables --------------------------------------------------------------------

SCHEMA_DOCS: dict[str, tuple[str, dict[str, str]]] = {
    "studies": ("One row per study (from study.toml).", {
        "study_id": "Study identifier from the study config.",
        "title": "Human-readable study title.",
        "config_json": "The full study configuration as first seen (canonical JSON).",
        "created_at": "When the study was first written to this log (UTC ISO 8601).",
    }),
    "raters": ("People who rate comments, per study; ids are chosen by the client, never names.", {
        "study_id": "Study the rater takes part in.",
        "rater_id": "Pseudonymous rater id sent by the extension.",
        "consent_at": "When the rater gave consent (UTC ISO 8601), NULL if not yet.",
        "first_seen": "When the rater was first seen.",
    }),
    "sessions": ("One client connection (extension, CLI feed, audit).", {
        "session_id": "Session id chosen by the daemon.",
        "study_id": "Study this session belongs to.",
        "rater_id": "Rater of the session, NULL for clients without one.",
        "client": "Kind of client (extension, feed, audit ...).",
        "client_version": "Client software version.",
        "protocol_version": "Protocol version announced at hello.",
        "started_at": "When the session started.",
        "ended_at": "When it ended, NULL if it never ended cleanly.",
    }),
    "pages": ("A page comments were found on, deduplicated by platform + page key.", {
        "page_id": "Row id.",
        "platform": "youtube, x, news site name, dataset name for audits ...",
        "page_key": "Stable page identifier on that platform (video id, status id, URL path).",
        "url": "Page URL as first seen.",
        "title": "Page title as first known.",
        "first_seen": "When the page was first seen.",
    }),
    "texts": ("Every distinct string that was stored: comments, normalized forms, variants.", {
        "text_id": "Row id.",
        "text_hash": "sha256 (hex) of the exact UTF-8 text; the natural key.",
        "text": "The text itself.",
    }),
    "comments": ("A comment, deduplicated by platform + comment key; its first text is kept.", {
        "comment_id": "Row id.",
        "platform": "Platform the comment was found on.",
        "comment_key": "The site's key for the comment (or the dataset row id for audits).",
        "page_id": "Page it was found on (NULL for datasets without pages).",
        "parent_key": "comment_key of the comment it replies to, if any.",
        "text_id": "Its text (in `texts`).",
        "author_hash": "Salted hash of the author handle made by the client; never the raw handle.",
        "time_shown": "Time shown next to the comment on the site, as displayed.",
        "truncated": "1 when the text was cut to the study's maximum comment length.",
        "original_length": "Length in characters before truncation.",
        "first_seen": "When the comment was first stored.",
    }),
    "sightings": ("Which session saw which comment.", {
        "comment_id": "The comment.",
        "session_id": "The session that saw it.",
        "seen_at": "First time that session saw it.",
    }),
    "labels": ("Labels attached to comments from datasets or gold sets (one per name and source).", {
        "comment_id": "The comment.",
        "name": "Label name (e.g. toxicity, functionality).",
        "value": "Label value (text, or canonical JSON for structured values).",
        "source": "Where it came from (dataset name, gold set, ...; `extension`: the browser extension's "
                  "`parent_via`, how the comment's parent was determined).",
    }),
    "detectors": ("A detector at one version (weights + configuration).", {
        "detector_id": "Row id.",
        "name": "Registry name of the detector.",
        "version": "Version string; changes whenever weights or configuration change.",
        "toxicity_label": "Label whose probability is the toxicity score.",
        "threshold": "Decision threshold on the toxicity score.",
        "config_json": "Options that define its behaviour (never secrets).",
        "first_used": "When it was first used in this log.",
    }),
    "scores": ("One detector's answer for one text (comment, normalized form or variant).", {
        "text_id": "The scored text.",
        "detector_id": "The detector version that scored it.",
        "labels_json": "{label: probability} as JSON; NULL on error.",
        "toxicity": "The detector's toxicity score; NULL on error or missing.",
        "latency_ms": "Wall time of the batch call that produced it, in ms.",
        "error": "Error or 'missing' message; NULL when scored. A later success replaces an error.",
        "created_at": "When the score was stored.",
    }),
    "normalizations": ("A normalizer's output for one text.", {
        "source_text_id": "The original text.",
        "normalizer": "Normalizer name.",
        "version": "Normalizer version.",
        "result_text_id": "The normalized text.",
        "edits_json": "Per-token edits as a JSON list (span, original, normalized, step, confidence, hidden).",
        "created_at": "When it was stored.",
    }),
    "variants": ("A perturbed variant of a comment, with everything needed to reproduce it.", {
        "variant_id": "Row id.",
        "comment_id": "The comment it was made from.",
        "source_text_id": "The exact text that was perturbed (usually the comment's text).",
        "text_id": "The variant text.",
        "strategy": "Registry key of the strategy or attack that made it.",
        "params_json": "Its parameters (canonical JSON).",
        "seed": "Random seed.",
        "positions_json": "Edited character spans in the source text, JSON [[start, end], ...].",
        "target_detector": "Detector key the search targeted (attacks / importance guidance).",
        "attack_json": "For attacks: goal, status, number of queries ... (JSON).",
        "run_id": "Audit run that made it, NULL for the daemon.",
        "created_at": "When it was stored.",
    }),
    "ratings": ("One rater's judgement of one comment, keyed by study + rater + client rating id.", {
        "rating_id": "Row id.",
        "study_id": "Study.",
        "rater_id": "Rater.",
        "client_rating_id": "Id chosen by the client; resending it creates no duplicate.",
        "session_id": "Session it arrived in.",
        "comment_id": "Rated comment.",
        "values_json": "{attribute: level} as JSON (the same as rating_values).",
        "anchors_json": "Anchor comparisons as JSON (e.g. {\"vs_hard\": \"more\", \"vs_extreme\": \"less\"}).",
        "derived_toxicity": "Toxicity derived from the anchor comparisons (seed 003, Table 1).",
        "inconsistent": "1 when the anchor answers contradict each other (excluded from analysis).",
        "time_spent_ms": "Time the rater spent on the comment, in ms.",
        "created_at": "When the rating was committed.",
    }),
    "rating_values": ("One attribute value of one rating (long form of values_json).", {
        "rating_id": "The rating.",
        "attribute": "Attribute name (formality, respectfulness, stereotypes, toxicity, ...).",
        "value": "The chosen level, as text.",
    }),
    "audit_runs": ("A batch audit over a dataset.", {
        "run_id": "Row id.",
        "dataset": "Dataset name.",
        "path": "Dataset path as given.",
        "params_json": "Parameters of the run (JSON).",
        "status": "running, done, failed, interrupted ...",
        "n_items": "Comments registered in the run.",
        "n_done": "Comments processed so far.",
        "started_at": "Start time.",
        "finished_at": "End time, NULL while running or after a crash.",
    }),
    "run_items": ("Which comments belong to which audit run.", {
        "run_id": "The run.",
        "comment_id": "The comment.",
    }),
    "bundles": ("A participant bundle merged into this log by `modlens merge` (empty in a participant's own log).", {
        "bundle_id": "Row id.",
        "bundle_sha256": "The bundle's checksum (manifest); merging the same bundle again adds nothing.",
        "study_id": "Study of the bundle.",
        "study_key": "Hash of study id and study salt; every bundle of a merged log has the same.",
        "rater_ids_json": "Pseudonymous rater ids in the bundle (JSON list).",
        "modlens_version": "modlens version that exported it.",
        "schema_version": "Study-log schema version it was exported from.",
        "exported_at": "When the participant exported it.",
        "merged_at": "When it was merged into this log.",
        "source_name": "File name it was merged from.",
        "rows_json": "Rows per table: in the bundle and added by it (JSON).",
    }),
    "row_sources": ("Which bundle each merged row came from (provenance), one row per row and bundle.", {
        "table_name": "Table of the row (comments, ratings, scores ...).",
        "row_key": "The row's key in this log (its id, or text_id:detector_id for scores, ...).",
        "bundle_id": "The bundle that held it.",
        "added": "1 when this bundle inserted the row, 0 when it was already there (deduplicated).",
    }),
    "media": ("Images, audio and video, once per content hash: attached to comments or made for fused "
              "test cases (docs/FUSION.md).", {
        "media_id": "Row id.",
        "sha256": "SHA-256 of the bytes (hex); the file name in the media folder.",
        "kind": "image, audio or video.",
        "mime": "MIME type read from the bytes (image/png, image/jpeg, audio/wav, video/mp4 ...).",
        "n_bytes": "Size in bytes.",
        "path": "Path under the study's media folder, NULL when the bytes were not kept (only the hash).",
        "meta_json": "Width and height (images), duration in seconds and streams (audio, video).",
        "first_seen": "When these bytes were first logged.",
    }),
    "comment_media": ("Media attached to a comment on a page, in page order.", {
        "comment_id": "The comment.",
        "media_id": "The media.",
        "position": "0-based order of the media in the comment.",
        "source_url": "Where the page showed it (origin and path only).",
    }),
    "ocr_results": ("Text read from an image by an OCR engine.", {
        "media_id": "The image.",
        "engine": "OCR engine (tesseract).",
        "version": "Engine version and settings (language, page segmentation).",
        "text_id": "The text read (possibly empty).",
        "confidence": "Mean word confidence in [0, 1], NULL when no word was read.",
        "created_at": "When it was read.",
    }),
    "fused_cases": ("DUO semantic-fusion test cases: a toxic seed sentence split across modalities.", {
        "case_id": "Row id.",
        "case_key": "Hash of seed, keyword pair, template, fusion, parameters and seed (idempotent reruns).",
        "content_type": "abuse_hate, spam or sexual.",
        "template": "Template name, e.g. \"A is/are B\".",
        "keyword_a": "Keyword A (a group, a product, a verb).",
        "middle": "The template's middle word(s) (are, :, your).",
        "keyword_b": "Keyword B (a negative noun, contact information, a body part).",
        "seed_text_id": "The seed sentence (the template filled with the pair), the oracle's input.",
        "caption_text_id": "The text shown beside the media (possibly empty).",
        "fusion": "Fusion type (e.g. T+E, T+I, I+T, V+T, V+A, A+T, V+A+T).",
        "params_json": "Every parameter of the transforms (font size, position, voice, durations ...).",
        "seed": "Random seed the case was generated with.",
        "run_id": "The `modlens fuse` run that made it.",
        "created_at": "When it was generated.",
    }),
    "case_media": ("The media of each part of a fused case.", {
        "case_id": "The case.",
        "part": "case (the fused whole), part_a or part_b (each half alone).",
        "position": "0-based order within the part.",
        "media_id": "The media.",
    }),
    "case_parts": ("The text of each part of a fused case (the baselines the report shows).", {
        "case_id": "The case.",
        "part": "part_a or part_b.",
        "text_id": "Text shown with that part alone (possibly empty).",
    }),
    "case_scores": ("A detector's score for a fused case, its seed or one of its parts.", {
        "case_id": "The case.",
        "part": "case, seed, part_a or part_b.",
        "detector_id": "Detector (name and version).",
        "labels_json": "Label probabilities, NULL on error.",
        "toxicity": "Toxicity score, NULL on error.",
        "latency_ms": "Wall time of the batch call.",
        "error": "Error or reason for no score, NULL when scored.",
        "details_json": "What the detector saw (OCR text and confidence, ignored media ...).",
        "created_at": "When it was scored.",
    }),
    "comment_media_scores": ("A detector's score for a comment together with its media (text + OCR, images).", {
        "comment_id": "The comment.",
        "detector_id": "Detector (name and version).",
        "labels_json": "Label probabilities, NULL on error.",
        "toxicity": "Toxicity score, NULL on error.",
        "latency_ms": "Wall time of the batch call.",
        "error": "Error or reason for no score, NULL when scored.",
        "details_json": "What the detector saw (OCR text and confidence ...).",
        "created_at": "When it was scored.",
    }),
}

# --- the exported tables --------------------------------------------------------------------


@dataclass(frozen=True)
class Column:
    name: str
    type: str  # int | float | str | bool  (JSON columns are str holding JSON)
    doc: str


@dataclass(frozen=True)
class ExportTable:
    name: str
    doc: str
    sql: str
    columns: tuple[Column, ...]


def _cols(*specs: tuple[str, str, str]) -> tuple[Column, ...]:
    return tuple(Column(*s) for s in specs)


EXPORT_TABLES: tuple[ExportTable, ...] = (
    ExportTable("studies", "One row per study.",
                "SELECT study_id, title, config_json, created_at FROM studies ORDER BY study_id",
                _cols(("study_id", "str", "Study identifier."), ("title", "str", "Study title."),
                      ("config_json", "str", "Study configuration (JSON)."),
                      ("created_at", "str", "First written (UTC ISO 8601)."))),
    ExportTable("raters", "Raters per study.",
                "SELECT study_id, rater_id, consent_at, first_seen FROM raters ORDER BY study_id, rater_id",
                _cols(("study_id", "str", "Study."), ("rater_id", "str", "Pseudonymous rater id."),
                      ("consent_at", "str", "Consent time, empty if none."), ("first_seen", "str", "First seen."))),
    ExportTable("sessions", "Client sessions.",
                "SELECT session_id, study_id, rater_id, client, client_version, protocol_version, started_at, ended_at "
                "FROM sessions ORDER BY started_at, session_id",
                _cols(("session_id", "str", "Session id."), ("study_id", "str", "Study."),
                      ("rater_id", "str", "Rater, empty for clients without one."), ("client", "str", "Kind of client."),
                      ("client_version", "str", "Client version."), ("protocol_version", "int", "Protocol version."),
                      ("started_at", "str", "Start time."), ("ended_at", "str", "End time, empty if not ended cleanly."))),
    ExportTable("pages", "Pages comments were found on.",
                "SELECT p.page_id, p.platform, p.page_key, p.url, p.title, p.first_seen, "
                "(SELECT count(*) FROM comments c WHERE c.page_id = p.page_id) AS n_comments FROM pages p ORDER BY p.page_id",
                _cols(("page_id", "int", "Page id."), ("platform", "str", "Platform."),
                      ("page_key", "str", "Page identifier on the platform."), ("url", "str", "URL."),
                      ("title", "str", "Title."), ("first_seen", "str", "First seen."),
                      ("n_comments", "int", "Comments stored for this page."))),
    ExportTable("comments", "Comments with their page, platform and text.",
                "SELECT c.comment_id, c.platform, c.comment_key, c.page_id, p.page_key, p.url AS page_url, "
                "p.title AS page_title, c.parent_key, c.author_hash, c.time_shown, c.text_id, t.text_hash, t.text, "
                "c.truncated, c.original_length, c.first_seen FROM comments c JOIN texts t USING (text_id) "
                "LEFT JOIN pages p USING (page_id) ORDER BY c.comment_id",
                _cols(("comment_id", "int", "Comment id (joins scores via text_id, ratings, variants, labels)."),
                      ("platform", "str", "Platform."), ("comment_key", "str", "Site key of the comment."),
                      ("page_id", "int", "Page id, empty for datasets."), ("page_key", "str", "Page key."),
                      ("page_url", "str", "Page URL."), ("page_title", "str", "Page title."),
                      ("parent_key", "str", "Key of the comment it replies to."),
                      ("author_hash", "str", "Salted author hash from the client."),
                      ("time_shown", "str", "Time shown on the site."),
                      ("text_id", "int", "Text id (joins scores)."), ("text_hash", "str", "sha256 of the text."),
                      ("text", "str", "Comment text (possibly truncated)."),
                      ("truncated", "bool", "Whether the text was truncated."),
                      ("original_length", "int", "Characters before truncation."),
                      ("first_seen", "str", "First stored."))),
    ExportTable("texts", "Every stored text, for joining scores to normalized forms and variants.",
                "SELECT text_id, text_hash, text FROM texts ORDER BY text_id",
                _cols(("text_id", "int", "Text id."), ("text_hash", "str", "sha256 of the text."),
                      ("text", "str", "The text."))),
    ExportTable("detectors", "Detector versions.",
                "SELECT detector_id, name, version, toxicity_label, threshold, config_json, first_used FROM detectors "
                "ORDER BY detector_id",
                _cols(("detector_id", "int", "Detector id."), ("name", "str", "Detector name."),
                      ("version", "str", "Detector version."), ("toxicity_label", "str", "Label used as toxicity."),
                      ("threshold", "float", "Decision threshold."), ("config_json", "str", "Configuration (JSON)."),
                      ("first_used", "str", "First used."))),
    ExportTable("scores", "Long format: one row per text x detector version.",
                "SELECT s.text_id, t.text_hash, d.name AS detector, d.version AS detector_version, s.toxicity, "
                "s.labels_json, s.latency_ms, s.error, s.created_at FROM scores s JOIN texts t USING (text_id) "
                "JOIN detectors d USING (detector_id) ORDER BY s.text_id, d.name, d.version",
                _cols(("text_id", "int", "Scored text (comments.text_id, variants.text_id, normalizations.result_text_id)."),
                      ("text_hash", "str", "sha256 of the scored text."), ("detector", "str", "Detector name."),
                      ("detector_version", "str", "Detector version."),
                      ("toxicity", "float", "Toxicity score, empty on error."),
                      ("labels_json", "str", "All label probabilities (JSON)."),
                      ("latency_ms", "float", "Batch call wall time, ms."),
                      ("error", "str", "Error or missing message, empty when scored."),
                      ("created_at", "str", "When stored."))),
    ExportTable("score_labels", "Longer format: one row per text x detector version x label.",
                "SELECT s.text_id, d.name AS detector, d.version AS detector_version, j.key AS label, "
                "j.value AS probability FROM scores s JOIN detectors d USING (detector_id), json_each(s.labels_json) j "
                "WHERE s.labels_json IS NOT NULL ORDER BY s.text_id, d.name, d.version, j.key",
                _cols(("text_id", "int", "Scored text."), ("detector", "str", "Detector name."),
                      ("detector_version", "str", "Detector version."), ("label", "str", "Label name."),
                      ("probability", "float", "Probability of that label."))),
    ExportTable("normalizations", "Normalizer outputs.",
                "SELECT n.source_text_id, st.text AS source_text, n.normalizer, n.version, n.result_text_id, "
                "rt.text AS result_text, json_array_length(n.edits_json) AS n_edits, n.edits_json, n.created_at "
                "FROM normalizations n JOIN texts st ON st.text_id = n.source_text_id "
                "JOIN texts rt ON rt.text_id = n.result_text_id ORDER BY n.source_text_id, n.normalizer, n.version",
                _cols(("source_text_id", "int", "Original text id."), ("source_text", "str", "Original text."),
                      ("normalizer", "str", "Normalizer name."), ("version", "str", "Normalizer version."),
                      ("result_text_id", "int", "Normalized text id (joins scores)."),
                      ("result_text", "str", "Normalized text."), ("n_edits", "int", "Number of edits."),
                      ("edits_json", "str", "Edits (JSON list)."), ("created_at", "str", "When stored."))),
    ExportTable("normalization_edits", "Long format: one row per normalizer edit.",
                "SELECT n.source_text_id, n.normalizer, n.version, e.key AS edit_index, "
                "json_extract(e.value, '$.start') AS start, json_extract(e.value, '$.end') AS end, "
                "json_extract(e.value, '$.original') AS original, json_extract(e.value, '$.normalized') AS normalized, "
                "json_extract(e.value, '$.step') AS step, json_extract(e.value, '$.confidence') AS confidence, "
                "json_extract(e.value, '$.hidden') AS hidden FROM normalizations n, json_each(n.edits_json) e "
                "ORDER BY n.source_text_id, n.normalizer, n.version, e.key",
                _cols(("source_text_id", "int", "Original text id."), ("normalizer", "str", "Normalizer name."),
                      ("version", "str", "Normalizer version."), ("edit_index", "int", "Position of the edit in the list."),
                      ("start", "int", "Span start in the original text."), ("end", "int", "Span end."),
                      ("original", "str", "Original token."), ("normalized", "str", "Normalized token."),
                      ("step", "str", "Step that made the edit."), ("confidence", "float", "Step's confidence."),
                      ("hidden", "str", "Word spelled by capitals in mixed-case tokens, empty if none."))),
    ExportTable("variants", "Perturbed variants with strategy and parameters.",
                "SELECT v.variant_id, v.comment_id, v.source_text_id, v.text_id, t.text, v.strategy, v.params_json, "
                "v.seed, v.positions_json, v.target_detector, v.attack_json, v.run_id, v.created_at "
                "FROM variants v JOIN texts t USING (text_id) ORDER BY v.variant_id",
                _cols(("variant_id", "int", "Variant id."), ("comment_id", "int", "Source comment."),
                      ("source_text_id", "int", "Perturbed text id."), ("text_id", "int", "Variant text id (joins scores)."),
                      ("text", "str", "Variant text."), ("strategy", "str", "Strategy or attack key."),
                      ("params_json", "str", "Parameters (JSON)."), ("seed", "int", "Random seed."),
                      ("positions_json", "str", "Edited spans (JSON)."), ("target_detector", "str", "Targeted detector key."),
                      ("attack_json", "str", "Attack details (JSON)."), ("run_id", "int", "Audit run, empty for daemon."),
                      ("created_at", "str", "When stored."))),
    ExportTable("ratings", "Long format: one row per rating x attribute (a rating without attribute values "
                           "still has one row with an empty attribute).",
                "SELECT r.rating_id, r.study_id, r.rater_id, r.client_rating_id, r.session_id, r.comment_id, "
                "v.attribute, v.value, r.anchors_json, r.derived_toxicity, r.inconsistent, r.time_spent_ms, r.created_at "
                "FROM ratings r LEFT JOIN rating_values v USING (rating_id) ORDER BY r.rating_id, v.attribute",
                _cols(("rating_id", "int", "Rating id."), ("study_id", "str", "Study."), ("rater_id", "str", "Rater."),
                      ("client_rating_id", "str", "Client's id for the rating."), ("session_id", "str", "Session."),
                      ("comment_id", "int", "Rated comment."), ("attribute", "str", "Attribute name."),
                      ("value", "str", "Chosen level."), ("anchors_json", "str", "Anchor comparisons (JSON)."),
                      ("derived_toxicity", "str", "Toxicity derived from the anchors."),
                      ("inconsistent", "bool", "Anchor answers contradict each other."),
                      ("time_spent_ms", "int", "Time spent, ms."), ("created_at", "str", "When committed."))),
    ExportTable("labels", "Dataset and gold labels of comments.",
                "SELECT comment_id, name, value, source FROM labels ORDER BY comment_id, name, source",
                _cols(("comment_id", "int", "Comment."), ("name", "str", "Label name."), ("value", "str", "Label value."),
                      ("source", "str", "Label source."))),
    ExportTable("sightings", "Which session saw which comment.",
                "SELECT comment_id, session_id, seen_at FROM sightings ORDER BY seen_at, comment_id",
                _cols(("comment_id", "int", "Comment."), ("session_id", "str", "Session."), ("seen_at", "str", "First seen then."))),
    ExportTable("audit_runs", "Batch audits.",
                "SELECT run_id, dataset, path, params_json, status, n_items, n_done, started_at, finished_at "
                "FROM audit_runs ORDER BY run_id",
                _cols(("run_id", "int", "Run id."), ("dataset", "str", "Dataset name."), ("path", "str", "Dataset path."),
                      ("params_json", "str", "Parameters (JSON)."), ("status", "str", "Run status."),
                      ("n_items", "int", "Comments in the run."), ("n_done", "int", "Comments processed."),
                      ("started_at", "str", "Start."), ("finished_at", "str", "End, empty if unfinished."))),
    ExportTable("run_items", "Comments of each audit run.",
                "SELECT run_id, comment_id FROM run_items ORDER BY run_id, comment_id",
                _cols(("run_id", "int", "Run."), ("comment_id", "int", "Comment."))),
)

EXPORTS: dict[str, ExportTable] = {t.name: t for t in EXPORT_TABLES}


def render_markdown() -> str:
    """The dictionary as Markdown (the generated block of docs/DATA.md, and DATA.md in exports)."""
    out = ["## Exported tables", "",
           "Empty cells (CSV) / null (JSONL, Parquet) mean NULL. Columns ending in `_json` hold JSON text.", ""]
    for t in EXPORT_TABLES:
        out += [f"### `{t.name}`", "", t.doc, "", "| column | type | meaning |", "|---|---|---|"]
        out += [f"| `{c.name}` | {c.type} | {c.doc} |" for c in t.columns]
        out.append("")
    out += ["## SQLite tables", ""]
    for name, (doc, columns) in SCHEMA_DOCS.items():
        out += [f"### `{name}`", "", doc, "", "| column | meaning |", "|---|---|"]
        out += [f"| `{col}` | {text} |" for col, text in columns.items()]
        out.append("")
    return "\n".join(out).rstrip() + "\n"


if __name__ == "__main__":  # python -m modlens.studylog.dictionary > block for docs/DATA.md
    print(render_markdown(), end="")
