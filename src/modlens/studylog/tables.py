"""The study log's tables, declared once: per table its meaning, per column its name, SQL type,
constraints and meaning, its keys and indexes, and what a participant's bundle carries of it
(`Travel`); then the exported tables, built on those columns.

Everything that describes or builds the log is derived from here: the `CREATE TABLE` text of a
fresh log and of every migration step (`studylog/schema.py`, whose schema versions name only what
changed: the tables and columns each one added, and the rows it moved), the data dictionary
(docs/DATA.md, `dictionary.render_markdown`), the exporter's table list (every SQLite table is
exported), and the bundles, merge and scrubbing of `modlens.exchange` (which rows leave, how merge
finds them again, which columns are cleaned). tests/test_table_description.py checks that a log
holds exactly the tables, columns, keys and indexes declared here, and
tests/test_studylog_schema_snapshot.py that fresh and upgraded logs of every version hold the
schema the committed snapshot recorded.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field

# --- the SQLite tables --------------------------------------------------------------------

_EXPORT_TYPES = {"INTEGER": "int", "REAL": "float", "TEXT": "str"}
_SPEC = re.compile(r"(?P<type>INTEGER|REAL|TEXT)(?P<not_null> NOT NULL)?(?: DEFAULT (?P<default>\S+))?"
                   r"(?: REFERENCES (?P<references>\w+\(\w+\)))?")


@dataclass(frozen=True)
class Column:
    name: str
    type: str  # SQL type: INTEGER | REAL | TEXT
    doc: str
    not_null: bool = False
    default: str | None = None  # SQL literal
    references: str | None = None  # "table(column)"
    flag: bool = False  # 0/1, exported as a boolean

    @property
    def parent(self) -> str | None:
        """The table it references, if any."""
        return self.references.split("(")[0] if self.references else None

    @property
    def export_type(self) -> str:
        """int | float | str | bool (JSON columns are str holding JSON)."""
        return "bool" if self.flag else _EXPORT_TYPES[self.type]

    @property
    def constraints(self) -> str:
        """The column's constraints as SQL (without the primary key, which is the table's)."""
        parts = ["NOT NULL"] if self.not_null else []
        if self.default is not None:
            parts.append(f"DEFAULT {self.default}")
        if self.references:
            parts.append(f"REFERENCES {self.references}")
        return " ".join(parts)


def col(name: str, spec: str, doc: str, *, flag: bool = False) -> Column:
    """A column from its SQL spec, written as in the DDL: `INTEGER NOT NULL DEFAULT 0 REFERENCES t(c)`."""
    m = _SPEC.fullmatch(spec)
    if not m:
        raise ValueError(f"column {name}: cannot read spec {spec!r}")
    return Column(name, m["type"], doc, bool(m["not_null"]), m["default"], m["references"], flag)


@dataclass(frozen=True)
class Index:
    name: str
    columns: tuple[str, ...]

    def create_sql(self, table: str) -> str:
        return f"CREATE INDEX {self.name} ON {table}({', '.join(self.columns)});"


@dataclass(frozen=True)
class Travel:
    """What a participant's bundle carries of a table, and how `modlens merge` takes it in
    (`modlens.exchange` builds both from this; docs/MULTI.md).

    `rows`: which rows leave the participant's computer, as an SQL condition on the table's columns.
    It may use `:study` (the study bundled) and the sets a bundle is built from, all recorded under
    consent (`exchange/bundle.py`): {raters} of the study who consented, their {sessions} and
    {ratings}, the {comments} those sessions saw or rated (less one whose recorded text none of them was
    sent) plus the study's gold and anchor comments,
    the {texts} of those comments and of those sessions' sightings of them (their live variants and normalized forms, OCR text), their
    {media} and the {media_detectors} that scored them with their media; and the raters who gave
    consent and withdrew it ({withdrawn}), whose consents alone travel.
    `merge_key`: the columns that find the row again in the merged log (references already mapped):
    a row already there under that key is not inserted twice. A table with an integer row id gets
    new ids there, and the columns referencing it are mapped to them; a reference to a table that
    never travels arrives as NULL.
    `verbatim`: text columns carried as recorded (the study's data, keys merge matches by,
    timestamps). Every other text column is free text (configurations, versions, messages) that may
    quote this computer's paths, user or host names: the bundle scrubs it (`exchange/scrub.py`), and
    `export --bundle --show` says which.
    `local`: columns that never leave (NULL in the bundle and in the merged log): local file paths.
    `fill`: columns a later bundle fills where the merged row has NULL (a value, once there, stays).
    `replace_if`: when a bundle's row replaces the merged one with the same key, whole: an SQL
    condition on the merged row (the table's name) and the bundle's (`excluded`).
    `rewrite`: (column, SQL expression) set before the key is matched, on the bundle's row `m`
    (references mapped).
    `tracked`: merge records in `row_sources` which bundle held each row and whether it added it;
    the row's key there is its id in the merged log, else its `merge_key`, ids joined by ':', names by '/'.
    `compare`: the columns holding what was measured or said (a score, a label's value, a rating):
    a bundle's row found under its key with another value there is a conflict merge resolves (the
    merged row kept, or replaced per `replace_if`), so it counts them and `modlens merge` says so.
    """
    rows: str
    merge_key: tuple[str, ...]
    verbatim: tuple[str, ...] = ()
    local: tuple[str, ...] = ()
    fill: tuple[str, ...] = ()
    replace_if: str | None = None
    rewrite: tuple[tuple[str, str], ...] = ()
    tracked: bool = False
    compare: tuple[str, ...] = ()


# a table that never leaves the participant's computer (audit runs, merge provenance, fused cases ...)
STAYS: Travel | None = None


@dataclass(frozen=True)
class Table:
    name: str
    doc: str
    columns: tuple[Column, ...]
    primary_key: tuple[str, ...]
    unique: tuple[tuple[str, ...], ...] = ()
    indexes: tuple[Index, ...] = ()
    without_rowid: bool = False
    travel: Travel | None = STAYS

    def column(self, name: str) -> Column:
        for c in self.columns:
            if c.name == name:
                return c
        raise KeyError(f"{self.name} has no column {name!r}")

    @property
    def row_id(self) -> str | None:
        """The integer primary key (the rowid) that merge maps to new ids, if the table has one."""
        if len(self.primary_key) == 1 and self.column(self.primary_key[0]).type == "INTEGER":
            return self.primary_key[0]
        return None

    @property
    def parents(self) -> tuple[str, ...]:
        """The tables its columns reference."""
        return tuple(dict.fromkeys(c.parent for c in self.columns if c.parent))

    @property
    def free_text(self) -> tuple[str, ...]:
        """The text columns a bundle scrubs: every one not carried verbatim (none of a table that stays)."""
        if self.travel is None:
            return ()
        return tuple(c.name for c in self.columns if c.type == "TEXT" and c.name not in self.travel.verbatim)

    def create_sql(self, *, without: frozenset[str] = frozenset()) -> str:
        """This table's `CREATE TABLE` (and `CREATE INDEX`) text; `without`: columns and indexes a later
        schema version adds (`schema.create_script` of an older version, and the step that made the table)."""
        columns = [c for c in self.columns if c.name not in without]
        width = max(len(c.name) for c in columns)
        inline = {u[0] for u in self.unique if len(u) == 1}  # a one-column UNIQUE is written on its column
        lines = []
        for c in columns:
            pk = " PRIMARY KEY" if self.primary_key == (c.name,) else ""
            constraints = " ".join(filter(None, (c.constraints, "UNIQUE" if c.name in inline else "")))
            lines.append(f"    {c.name.ljust(width)} {c.type}{pk}{' ' + constraints if constraints else ''}")
        if len(self.primary_key) > 1:
            lines.append(f"    PRIMARY KEY ({', '.join(self.primary_key)})")
        lines += [f"    UNIQUE ({', '.join(u)})" for u in self.unique if len(u) > 1]
        tail = " WITHOUT ROWID" if self.without_rowid else ""
        out = [f"CREATE TABLE {self.name} (", ",\n".join(lines), f"){tail};"]
        out += [i.create_sql(self.name) for i in self.indexes if i.name not in without]
        return "\n".join(out)


def _table(name: str, doc: str, *columns: Column, key: tuple[str, ...], travel: Travel | None,
           unique: tuple[tuple[str, ...], ...] = (), indexes: tuple[Index, ...] = (), without_rowid: bool = False) -> Table:
    """`travel` has no default: every table says whether and how it leaves in a bundle (or STAYS)."""
    return Table(name, doc, columns, key, unique, indexes, without_rowid, travel)


_SCORE_COLUMNS = (
    col("labels_json", "TEXT", "{label: probability} as JSON; NULL on error."),
    col("toxicity", "REAL", "The detector's toxicity score; NULL on error or missing."),
    col("latency_ms", "REAL", "Wall time of the batch call that produced it, in ms."),
    col("error", "TEXT", "Error or reason for no score ('missing' ...); NULL when scored. A later success "
                         "replaces an error."),
)

TABLES: tuple[Table, ...] = (
    _table(
        "studies", "One row per study (from study.toml).",
        col("study_id", "TEXT", "Study identifier from the study config."),
        col("title", "TEXT NOT NULL", "Human-readable study title."),
        col("config_json", "TEXT NOT NULL", "The full study configuration as first seen (canonical JSON)."),
        col("created_at", "TEXT NOT NULL", "When the study was first written to this log (UTC ISO 8601)."),
        key=("study_id",),
        travel=Travel("study_id = :study", merge_key=("study_id",), verbatim=("study_id", "created_at"), tracked=True)),
    _table(
        "raters", "People who rate comments, per study; ids are chosen by the client, never names.",
        col("study_id", "TEXT NOT NULL REFERENCES studies(study_id)", "Study the rater takes part in."),
        col("rater_id", "TEXT NOT NULL", "Pseudonymous rater id sent by the extension."),
        col("consent_at", "TEXT", "When the rater first gave consent (UTC ISO 8601), NULL if not yet; which text each "
                                  "consent was for: `consents`."),
        col("first_seen", "TEXT NOT NULL", "When the rater was first seen."),
        key=("study_id", "rater_id"),
        travel=Travel("study_id = :study AND rater_id IN {raters}", merge_key=("study_id", "rater_id"),
                      verbatim=("study_id", "rater_id", "consent_at", "first_seen"), fill=("consent_at",), tracked=True)),
    _table(
        "consent_texts", "Every consent text a rater agreed to, once per text: what each consent in `consents` was "
                         "for, found by its hash. A text belongs to no one study: its studies are those whose "
                         "consents name it (a pilot and the main study may share one).",
        col("consent_sha256", "TEXT", "SHA-256 (hex) of the exact UTF-8 consent text, as the extension sends it "
                                      "at hello (`consent_sha256`)."),
        col("text", "TEXT NOT NULL", "The consent text as the daemon showed it (hello_ok `study.consent_text`, "
                                     "with the sentences it adds, e.g. on comment images)."),
        col("first_seen", "TEXT NOT NULL", "When a rater first agreed to it in this log."),
        key=("consent_sha256",),
        travel=Travel("consent_sha256 IN (SELECT consent_sha256 FROM consents WHERE study_id = :study "
                      "AND (rater_id IN {raters} OR rater_id IN {withdrawn}))", merge_key=("consent_sha256",),
                      verbatim=("consent_sha256", "text", "first_seen"))),
    _table(
        "consents", "Which consent text each rater agreed to, and when: one row per rater and text (a study whose "
                    "text changed asks again), and a new one for a consent given again after a withdrawal.",
        col("consent_id", "INTEGER", "Row id."),
        col("study_id", "TEXT NOT NULL REFERENCES studies(study_id)", "The study."),
        col("rater_id", "TEXT NOT NULL", "The rater (`raters.rater_id`)."),
        col("consent_sha256", "TEXT REFERENCES consent_texts(consent_sha256)",
            "The text agreed to (`consent_texts`); NULL for a consent a participant's log recorded before schema 7, "
            "whose text it did not record (migration 7 copied `raters.consent_at`). A bundle carries those "
            "withdrawn (so the researcher's merge marks the withdrawal, also of a rater who agreed again since) "
            "and no other: in a merged log NULL marks such a withdrawn consent (a consenting rater of such a log, or of an older bundle, has "
            "`raters.consent_at` alone)."),
        col("consented_at", "TEXT NOT NULL", "When the rater agreed to it, as the client reported (UTC ISO 8601)."),
        col("withdrawn_at", "TEXT", "When the rater withdrew this consent, as the client reported (hello "
                                    "`consent_withdrawn_at`); NULL while it holds. A rater whose every consent is "
                                    "withdrawn is left out of bundles (`exchange/bundle.py`) but for these rows, "
                                    "so a merged log learns of the withdrawal (`modlens merge` says what "
                                    "earlier bundles brought of theirs), and `modlens report` leaves their "
                                    "ratings out of every count and figure. A consent given after it counts "
                                    "from then on: what the rater recorded before it (before the "
                                    "withdrawal, and while withdrawn) stays out of bundles and reports, and `modlens merge "
                                    "--forget-withdrawn --delete` deletes it."),
        key=("consent_id",), unique=(("study_id", "rater_id", "consent_sha256", "consented_at"),),
        # a withdrawn rater's consents travel too (ids and times, none of their data), so the researcher's
        # merge learns of the withdrawal: it fills `withdrawn_at` on the rows an earlier bundle brought. A
        # withdrawn consent travels with the text unknown too (recorded before schema 7), also of a rater who
        # agreed again since: else a withdrawal of such a consent would never reach the researcher
        travel=Travel("study_id = :study AND ((rater_id IN {raters} AND (consent_sha256 IS NOT NULL "
                      "OR withdrawn_at IS NOT NULL)) OR rater_id IN {withdrawn})",
                      merge_key=("study_id", "rater_id", "consent_sha256", "consented_at"),
                      verbatim=("study_id", "rater_id", "consent_sha256", "consented_at", "withdrawn_at"),
                      fill=("withdrawn_at",))),
    _table(
        "sessions", "One client connection (extension, CLI feed, audit).",
        col("session_id", "TEXT", "Session id chosen by the daemon."),
        col("study_id", "TEXT NOT NULL REFERENCES studies(study_id)", "Study this session belongs to."),
        col("rater_id", "TEXT", "Rater of the session, NULL for clients without one."),
        col("client", "TEXT NOT NULL", "Kind of client (extension, feed, audit ...)."),
        col("client_version", "TEXT", "Client software version."),
        col("protocol_version", "INTEGER", "Protocol version announced at hello."),
        col("started_at", "TEXT NOT NULL", "When the session started."),
        col("ended_at", "TEXT", "When it ended (for `recovery`: its last activity), NULL while open."),
        col("ended_by", "TEXT", "How it ended: `client` (the client closed it), `shutdown` (the daemon stopped "
                                "cleanly), `recovery` (closed at the next start after the daemon died, or after a "
                                "stop that could not write its end); NULL while "
                                "open or when ended before schema 4."),
        key=("session_id",),
        travel=Travel("session_id IN {sessions}", merge_key=("session_id",),
                      verbatim=("session_id", "study_id", "rater_id", "started_at", "ended_at"), tracked=True)),
    _table(
        "pages", "A page comments were found on, deduplicated by platform + page key.",
        col("page_id", "INTEGER", "Row id."),
        col("platform", "TEXT NOT NULL", "youtube, x, news site name, dataset name for audits ..."),
        col("page_key", "TEXT NOT NULL", "Stable page identifier on that platform (video id, status id, URL path); "
                                         "an X or YouTube address sent as the key is kept as the status or video id "
                                         "on its own platform, else as its address without the author."),
        col("url", "TEXT", "Page URL as the client first sent it, less an author the site names in it, whoever sent "
                           "it (studylog/page_address.py; the extension's adapters send the same): X "
                           "https://x.com/i/status/<id>, no handle; YouTube the video's URL alone, no ab_channel. "
                           "Pages of logs written before schema 7 were rewritten so, two that became one page "
                           "merged (their comments moved to the first)."),
        col("title", "TEXT", "Page title as first known; X: the post's text without the '<name> on X:' prefix, "
                             "YouTube: without ' - YouTube' (whoever sent it; older logs rewritten at schema 7)."),
        col("first_seen", "TEXT NOT NULL", "When the page was first seen."),
        key=("page_id",), unique=(("platform", "page_key"),),
        travel=Travel("page_id IN (SELECT page_id FROM comments WHERE comment_id IN {comments})",
                      merge_key=("platform", "page_key"), verbatim=("platform", "page_key", "url", "title", "first_seen"),
                      fill=("url", "title"), tracked=True)),
    _table(
        "texts", "Every distinct string that was stored: comments, normalized forms, variants, OCR output.",
        col("text_id", "INTEGER", "Row id; joins `scores.text_id`."),
        col("text_hash", "TEXT NOT NULL", "sha256 (hex) of the exact UTF-8 text; the natural key."),
        col("text", "TEXT NOT NULL", "The text itself."),
        key=("text_id",), unique=(("text_hash",),),
        travel=Travel("text_id IN {texts}", merge_key=("text_hash",), verbatim=("text_hash", "text"))),
    _table(
        "comments", "A comment, deduplicated by platform + comment key; its first text is kept.",
        col("comment_id", "INTEGER", "Row id; joins ratings, variants, labels, sightings, run items and media."),
        col("platform", "TEXT NOT NULL", "Platform the comment was found on."),
        col("comment_key", "TEXT NOT NULL", "The site's key for the comment (or the dataset row id for audits)."),
        col("page_id", "INTEGER REFERENCES pages(page_id)", "Page it was found on (NULL for datasets without pages)."),
        col("parent_key", "TEXT", "comment_key of the comment it replies to, if any."),
        col("text_id", "INTEGER NOT NULL REFERENCES texts(text_id)", "Its text (in `texts`; joins `scores`)."),
        col("author_hash", "TEXT", "Salted hash of the author handle made by the client; never the raw handle."),
        col("time_shown", "TEXT", "Time shown next to the comment on the site, as displayed."),
        col("truncated", "INTEGER NOT NULL DEFAULT 0", "1 when the text was cut to the study's maximum comment length.",
            flag=True),
        col("original_length", "INTEGER NOT NULL", "Length in characters before truncation."),
        col("first_seen", "TEXT NOT NULL", "When the comment was first stored."),
        key=("comment_id",), unique=(("platform", "comment_key"),),
        indexes=(Index("comments_page", ("page_id",)),),
        travel=Travel(
            "comment_id IN {comments}", merge_key=("platform", "comment_key"),
            verbatim=("platform", "comment_key", "parent_key", "author_hash", "first_seen"), tracked=True,
            # a comment edited between two participants' visits is kept apart under its key + text hash
            rewrite=(("comment_key", "CASE WHEN EXISTS (SELECT 1 FROM comments c WHERE c.platform = m.platform "
                                     "AND c.comment_key = m.comment_key AND c.text_id <> m.text_id) "
                                     "THEN m.comment_key || '#' || substr((SELECT text_hash FROM texts t "
                                     "WHERE t.text_id = m.text_id), 1, 12) ELSE m.comment_key END"),))),
    _table(
        "sightings", "Which session saw which comment.",
        col("comment_id", "INTEGER NOT NULL REFERENCES comments(comment_id)", "The comment."),
        col("session_id", "TEXT NOT NULL REFERENCES sessions(session_id)", "The session that saw it."),
        col("seen_at", "TEXT NOT NULL", "First time that session saw it."),
        col("text_id", "INTEGER REFERENCES texts(text_id)",
            "The text that session was sent then: the comment's own (`comments.text_id`, its first text) or an "
            "edited one a site showed later; NULL where unknown (sightings recorded before schema 7, or by a "
            "client that did not send a text)."),
        key=("comment_id", "session_id"),
        travel=Travel("session_id IN {sessions} AND comment_id IN {comments}", merge_key=("comment_id", "session_id"),
                      verbatim=("session_id", "seen_at"))),
    _table(
        "labels", "Labels attached to comments from datasets or the study (one per name and source); gold "
                  "`toxic` labels live in `gold_labels`.",
        col("comment_id", "INTEGER NOT NULL REFERENCES comments(comment_id)", "The comment."),
        col("name", "TEXT NOT NULL", "Label name (e.g. functionality, target)."),
        col("value", "TEXT", "Label value (text, or canonical JSON for structured values)."),
        col("source", "TEXT NOT NULL", "Where it came from (dataset name, `study-config`, ...; `extension`: the "
                                       "browser extension's `parent_via`, how the comment's parent was determined; "
                                       "`api`: a Perspective-compatible call's `api.*` labels, such as the "
                                       "attributes asked for, answered and dropped, docs/PERSPECTIVE.md)."),
        key=("comment_id", "name", "source"),
        travel=Travel("comment_id IN {comments}", merge_key=("comment_id", "name", "source"), verbatim=("name", "value"),
                      compare=("value",))),
    _table(
        "detectors", "A detector at one version (weights + configuration).",
        col("detector_id", "INTEGER", "Row id."),
        col("name", "TEXT NOT NULL", "Registry name of the detector."),
        col("version", "TEXT NOT NULL", "Version string; changes whenever weights or configuration change."),
        col("toxicity_label", "TEXT", "Label whose probability is the toxicity score."),
        col("threshold", "REAL", "Decision threshold on the toxicity score: one per version in a log (a run asking "
                                 "another is refused), which reports judge its scores by."),
        col("config_json", "TEXT NOT NULL", "Options that define its behaviour (never secrets)."),
        col("first_used", "TEXT NOT NULL", "When it was first used in this log."),
        key=("detector_id",), unique=(("name", "version"),),
        travel=Travel("detector_id IN (SELECT detector_id FROM scores WHERE text_id IN {texts}) "
                      "OR detector_id IN {media_detectors}",
                      merge_key=("name", "version"), verbatim=("name", "first_used"), tracked=True,
                      compare=("threshold",))),  # a log judges a version at one threshold: say a bundle's other one
    _table(
        "scores", "One detector's answer for one text (comment, normalized form or variant).",
        col("text_id", "INTEGER NOT NULL REFERENCES texts(text_id)",
            "The scored text (comments.text_id, variants.text_id, normalizations.result_text_id)."),
        col("detector_id", "INTEGER NOT NULL REFERENCES detectors(detector_id)", "The detector version that scored it."),
        *_SCORE_COLUMNS,
        col("created_at", "TEXT NOT NULL", "When the score was stored."),
        key=("text_id", "detector_id"),
        travel=Travel("text_id IN {texts}", merge_key=("text_id", "detector_id"), verbatim=("created_at",), tracked=True,
                      replace_if="scores.error IS NOT NULL AND excluded.error IS NULL", compare=("toxicity",))),
    _table(
        "normalizations", "A normalizer's output for one text.",
        col("source_text_id", "INTEGER NOT NULL REFERENCES texts(text_id)", "The original text."),
        col("normalizer", "TEXT NOT NULL", "Normalizer name."),
        col("version", "TEXT NOT NULL", "Normalizer version."),
        col("result_text_id", "INTEGER NOT NULL REFERENCES texts(text_id)", "The normalized text (joins scores)."),
        col("edits_json", "TEXT NOT NULL",
            "Per-token edits as a JSON list (span, original, normalized, step, confidence, hidden)."),
        col("created_at", "TEXT NOT NULL", "When it was stored."),
        key=("source_text_id", "normalizer", "version"),
        travel=Travel("source_text_id IN {texts}", merge_key=("source_text_id", "normalizer", "version"),
                      verbatim=("created_at",), compare=("result_text_id",))),
    _table(
        "variants", "A perturbed variant of a comment, with everything needed to reproduce it.",
        col("variant_id", "INTEGER", "Row id."),
        col("comment_id", "INTEGER NOT NULL REFERENCES comments(comment_id)", "The comment it was made from."),
        col("source_text_id", "INTEGER NOT NULL REFERENCES texts(text_id)",
            "The exact text that was perturbed (usually the comment's text)."),
        col("text_id", "INTEGER NOT NULL REFERENCES texts(text_id)", "The variant text (joins scores)."),
        col("strategy", "TEXT NOT NULL", "Registry key of the strategy or attack that made it."),
        col("params_json", "TEXT NOT NULL", "Its parameters (canonical JSON)."),
        col("seed", "INTEGER NOT NULL", "Random seed."),
        col("positions_json", "TEXT NOT NULL", "Edited character spans in the source text, JSON [[start, end], ...]."),
        col("target_detector", "TEXT", "Detector key the search targeted (attacks / importance guidance)."),
        col("attack_json", "TEXT", "For attacks: goal, status, number of queries ... (JSON)."),
        col("run_id", "INTEGER REFERENCES audit_runs(run_id)", "Audit run that made it, NULL for the daemon."),
        col("created_at", "TEXT NOT NULL", "When it was stored."),
        key=("variant_id",), unique=(("comment_id", "text_id", "strategy", "params_json", "seed"),),
        indexes=(Index("variants_comment", ("comment_id",)),),
        travel=Travel("comment_id IN {comments} AND run_id IS NULL",
                      merge_key=("comment_id", "text_id", "strategy", "params_json", "seed"), verbatim=("created_at",))),
    _table(
        "ratings", "One rater's judgement of one comment, keyed by study + rater + client rating id.",
        col("rating_id", "INTEGER", "Row id."),
        col("study_id", "TEXT NOT NULL REFERENCES studies(study_id)", "Study."),
        col("rater_id", "TEXT NOT NULL", "Rater."),
        col("client_rating_id", "TEXT NOT NULL", "Id chosen by the client; resending it creates no duplicate."),
        col("session_id", "TEXT REFERENCES sessions(session_id)", "Session it arrived in."),
        col("comment_id", "INTEGER NOT NULL REFERENCES comments(comment_id)", "Rated comment."),
        col("values_json", "TEXT NOT NULL", "{attribute: level} as JSON (the same as rating_values)."),
        col("anchors_json", "TEXT", "Anchor comparisons as JSON (e.g. {\"vs_hard\": \"more\", \"vs_extreme\": \"less\"})."),
        col("derived_toxicity", "TEXT", "Toxicity derived from the anchor comparisons (the human-centred Perspective study, Table 1)."),
        col("inconsistent", "INTEGER NOT NULL DEFAULT 0",
            "1 when the anchor answers contradict each other (excluded from analysis).", flag=True),
        col("time_spent_ms", "INTEGER", "Time the rater spent on the comment, in ms; NULL when unknown (none "
            "reported, or time_spent_over_limit_ms holds an implausible one)."),
        col("created_at", "TEXT NOT NULL", "When the rating was committed."),
        col("time_spent_over_limit_ms", "INTEGER",
            "The time the client reported when it was over the daemon's limit of a day (a rating panel left open): "
            "the answer is kept, time_spent_ms is NULL (unknown) and this holds what was reported; NULL otherwise."),
        key=("rating_id",), unique=(("study_id", "rater_id", "client_rating_id"),),
        travel=Travel("rating_id IN {ratings}", merge_key=("study_id", "rater_id", "client_rating_id"),
                      verbatim=("study_id", "rater_id", "client_rating_id", "session_id", "values_json", "anchors_json",
                                "created_at"), tracked=True, compare=("comment_id", "values_json"))),
    _table(
        "rating_values", "One attribute value of one rating (long form of values_json).",
        col("rating_id", "INTEGER NOT NULL REFERENCES ratings(rating_id)", "The rating."),
        col("attribute", "TEXT NOT NULL", "Attribute name (formality, respectfulness, stereotypes, toxicity, ...)."),
        col("value", "TEXT NOT NULL", "The chosen level, as text."),
        key=("rating_id", "attribute"),
        travel=Travel("rating_id IN {ratings}", merge_key=("rating_id", "attribute"), verbatim=("attribute", "value"),
                      compare=("value",))),
    _table(
        "audit_runs", "A batch audit over a dataset.",
        col("run_id", "INTEGER", "Row id."),
        col("dataset", "TEXT NOT NULL", "Dataset name."),
        col("path", "TEXT", "Dataset path as given."),
        col("params_json", "TEXT NOT NULL", "Parameters of the run (JSON)."),
        col("status", "TEXT NOT NULL", "running, done, failed, interrupted ..."),
        col("n_items", "INTEGER NOT NULL DEFAULT 0", "Comments registered in the run."),
        col("n_done", "INTEGER NOT NULL DEFAULT 0", "Comments processed so far."),
        col("started_at", "TEXT NOT NULL", "Start time."),
        col("finished_at", "TEXT", "End time, NULL while running or after a crash."),
        col("label_set_id", "INTEGER REFERENCES label_sets(label_set_id)",
            "The label set its gold labels were read from, NULL when it used none."),
        key=("run_id",),
        travel=STAYS),
    _table(
        "run_items", "Which comments belong to which audit run.",
        col("run_id", "INTEGER NOT NULL REFERENCES audit_runs(run_id)", "The run."),
        col("comment_id", "INTEGER NOT NULL REFERENCES comments(comment_id)", "The comment."),
        key=("run_id", "comment_id"),
        travel=STAYS),
    _table(
        "bundles", "A participant bundle merged into this log by `modlens merge` (empty in a participant's own log).",
        col("bundle_id", "INTEGER", "Row id."),
        col("bundle_sha256", "TEXT NOT NULL", "The bundle's checksum (manifest); merging the same bundle again adds "
                                              "nothing."),
        col("study_id", "TEXT NOT NULL", "Study of the bundle."),
        col("study_key", "TEXT NOT NULL", "Hash of study id and study salt; every bundle of a merged log has the same."),
        col("rater_ids_json", "TEXT NOT NULL", "Pseudonymous ids of the raters the bundle carries (JSON list): the "
                                               "manifest's `rater_ids` (raters who consented, with their data), then "
                                               "the raters whose withdrawal it carries (their consents alone, no "
                                               "data), so a later bundle of theirs is checked against its signer. "
                                               "`modlens merge --list` lists both and marks a rater whose every "
                                               "consent in the log is withdrawn (`consents.withdrawn_at`) as "
                                               "withdrawn, counted apart from the raters who consent."),
        col("modlens_version", "TEXT NOT NULL", "modlens version that exported it."),
        col("schema_version", "INTEGER NOT NULL", "Study-log schema version it was exported from."),
        col("exported_at", "TEXT NOT NULL", "When the participant exported it."),
        col("merged_at", "TEXT NOT NULL", "When it was merged into this log."),
        col("source_name", "TEXT NOT NULL", "File name it was merged from."),
        col("rows_json", "TEXT NOT NULL", "Rows per table: in the bundle, added by it, and (scores, labels, "
                                            "ratings ...) those whose values differed from the merged log's, kept or "
                                            "replaced (JSON)."),
        col("signer", "TEXT", "Fingerprint of the participant's bundle key that signed it (`ed25519:` + 32 hex); "
                              "NULL: merged unsigned with --allow-unsigned."),
        key=("bundle_id",), unique=(("bundle_sha256",),),
        travel=STAYS),
    _table(
        "row_sources", "Which bundle each merged row came from (provenance), one row per row and bundle.",
        col("table_name", "TEXT NOT NULL", "Table of the row (comments, ratings, scores ...)."),
        col("row_key", "TEXT NOT NULL", "The row's key in this log (its id, or text_id:detector_id for scores, ...)."),
        col("bundle_id", "INTEGER NOT NULL REFERENCES bundles(bundle_id)", "The bundle that held it."),
        col("added", "INTEGER NOT NULL", "1 when this bundle inserted the row, 0 when it was already there "
                                         "(deduplicated).", flag=True),
        key=("table_name", "row_key", "bundle_id"), indexes=(Index("row_sources_bundle", ("bundle_id",)),),
        without_rowid=True,
        travel=STAYS),
    _table(
        "media", "Images, audio and video, once per content hash: attached to comments or made for fused test "
                 "cases (docs/FUSION.md).",
        col("media_id", "INTEGER", "Row id."),
        col("sha256", "TEXT NOT NULL", "SHA-256 of the bytes (hex); the file name in the media folder."),
        col("kind", "TEXT NOT NULL", "image, audio or video."),
        col("mime", "TEXT NOT NULL", "MIME type read from the bytes (image/png, image/jpeg, audio/wav, video/mp4 ...)."),
        col("n_bytes", "INTEGER NOT NULL", "Size in bytes."),
        col("path", "TEXT", "Path under the study's media folder, NULL when the bytes were not kept (only the hash)."),
        col("meta_json", "TEXT NOT NULL", "Width and height (images), duration in seconds and streams (audio, video)."),
        col("first_seen", "TEXT NOT NULL", "When these bytes were first logged."),
        key=("media_id",), unique=(("sha256",),),
        travel=Travel("media_id IN {media}", merge_key=("sha256",), verbatim=("sha256", "kind", "mime", "first_seen"),
                      local=("path",), tracked=True)),
    _table(
        "comment_media", "Media attached to a comment on a page, in page order.",
        col("comment_id", "INTEGER NOT NULL REFERENCES comments(comment_id)", "The comment."),
        col("media_id", "INTEGER NOT NULL REFERENCES media(media_id)", "The media."),
        col("position", "INTEGER NOT NULL", "0-based order of the media in the comment."),
        col("source_url", "TEXT", "The address the page showed it from, as shown (its query too); NULL for a data: URL."),
        key=("comment_id", "media_id"),
        travel=Travel("comment_id IN {comments}", merge_key=("comment_id", "media_id"), verbatim=("source_url",))),
    _table(
        "ocr_results", "Text read from an image by an OCR engine.",
        col("media_id", "INTEGER NOT NULL REFERENCES media(media_id)", "The image."),
        col("engine", "TEXT NOT NULL", "OCR engine (tesseract)."),
        col("version", "TEXT NOT NULL", "Engine version and settings (language, page segmentation)."),
        col("text_id", "INTEGER NOT NULL REFERENCES texts(text_id)", "The text read (possibly empty)."),
        col("confidence", "REAL", "Mean word confidence in [0, 1], NULL when no word was read."),
        col("created_at", "TEXT NOT NULL", "When it was read."),
        key=("media_id", "engine", "version"),
        travel=Travel("media_id IN {media}", merge_key=("media_id", "engine", "version"), verbatim=("created_at",))),
    _table(
        "asr_results", "Speech heard in an audio clip or a video's sound track by a speech recogniser (the asr "
                       "detector, docs/FUSION.md).",
        col("media_id", "INTEGER NOT NULL REFERENCES media(media_id)", "The audio or video."),
        col("engine", "TEXT NOT NULL", "Speech recogniser (pocketsphinx, hf-asr)."),
        col("version", "TEXT NOT NULL", "Engine version and model (pocketsphinx's en-us, a Hugging Face model id@commit)."),
        col("text_id", "INTEGER NOT NULL REFERENCES texts(text_id)", "The transcript (possibly empty)."),
        col("confidence", "REAL", "Posterior probability of the transcript in [0, 1] (pocketsphinx), NULL when "
                                  "the engine gives none."),
        col("created_at", "TEXT NOT NULL", "When it was heard."),
        key=("media_id", "engine", "version"),
        travel=STAYS),
    _table(
        "fused_cases", "DUO semantic-fusion test cases: a toxic seed sentence split across modalities.",
        col("case_id", "INTEGER", "Row id."),
        col("case_key", "TEXT NOT NULL",
            "Hash of seed, keyword pair, template, fusion, parameters and seed (idempotent reruns)."),
        col("content_type", "TEXT NOT NULL", "abuse_hate, spam or sexual."),
        col("template", "TEXT NOT NULL", "Template name, e.g. \"A is/are B\"."),
        col("keyword_a", "TEXT NOT NULL", "Keyword A (a group, a product, a verb)."),
        col("middle", "TEXT NOT NULL", "The template's middle word(s) (are, :, your)."),
        col("keyword_b", "TEXT NOT NULL", "Keyword B (a negative noun, contact information, a body part)."),
        col("seed_text_id", "INTEGER NOT NULL REFERENCES texts(text_id)",
            "The seed sentence (the template filled with the pair), the oracle's input."),
        col("caption_text_id", "INTEGER NOT NULL REFERENCES texts(text_id)",
            "The text shown beside the media (possibly empty)."),
        col("fusion", "TEXT NOT NULL", "Fusion type (e.g. T+E, T+I, I+T, V+T, V+A, A+T, V+A+T)."),
        col("params_json", "TEXT NOT NULL",
            "Every parameter of the transforms (font size, position, voice, durations ...)."),
        col("seed", "INTEGER NOT NULL", "Random seed the case was generated with."),
        col("run_id", "INTEGER REFERENCES audit_runs(run_id)", "The `modlens fuse` run that made it."),
        col("created_at", "TEXT NOT NULL", "When it was generated."),
        key=("case_id",), unique=(("case_key",),),
        indexes=(Index("fused_cases_fusion", ("content_type", "fusion")),),
        travel=STAYS),
    _table(
        "case_media", "The media of each part of a fused case.",
        col("case_id", "INTEGER NOT NULL REFERENCES fused_cases(case_id)", "The case."),
        col("part", "TEXT NOT NULL", "case (the fused whole), part_a or part_b (each half alone)."),
        col("position", "INTEGER NOT NULL", "0-based order within the part."),
        col("media_id", "INTEGER NOT NULL REFERENCES media(media_id)", "The media."),
        key=("case_id", "part", "position"),
        travel=STAYS),
    _table(
        "case_parts", "The text of each part of a fused case (the baselines the report shows).",
        col("case_id", "INTEGER NOT NULL REFERENCES fused_cases(case_id)", "The case."),
        col("part", "TEXT NOT NULL", "part_a or part_b."),
        col("text_id", "INTEGER NOT NULL REFERENCES texts(text_id)", "Text shown with that part alone (possibly empty)."),
        key=("case_id", "part"),
        travel=STAYS),
    _table(
        "case_scores", "A detector's score for a fused case, its seed or one of its parts.",
        col("case_id", "INTEGER NOT NULL REFERENCES fused_cases(case_id)", "The case."),
        col("part", "TEXT NOT NULL", "case, seed, part_a or part_b."),
        col("detector_id", "INTEGER NOT NULL REFERENCES detectors(detector_id)", "The detector version that scored it."),
        *_SCORE_COLUMNS,
        col("details_json", "TEXT NOT NULL", "What the detector saw (OCR text and confidence, ignored media ...)."),
        col("created_at", "TEXT NOT NULL", "When it was scored."),
        key=("case_id", "part", "detector_id"),
        travel=STAYS),
    _table(
        "comment_media_scores", "A detector's score for a comment together with its media (text + OCR, images).",
        col("comment_id", "INTEGER NOT NULL REFERENCES comments(comment_id)", "The comment."),
        col("detector_id", "INTEGER NOT NULL REFERENCES detectors(detector_id)", "The detector version that scored it."),
        *_SCORE_COLUMNS,
        col("details_json", "TEXT NOT NULL", "What the detector saw (OCR text and confidence ...)."),
        col("created_at", "TEXT NOT NULL", "When it was scored."),
        key=("comment_id", "detector_id"),
        travel=Travel("comment_id IN {comments}", merge_key=("comment_id", "detector_id"),
                      verbatim=("created_at",), compare=("toxicity",))),
    _table(
        "label_sets", "Gold labels as versioned sets: one per (source, label definition). A new `--label` adds a "
                      "set and never rewrites one; runs record the set they used.",
        col("label_set_id", "INTEGER", "Row id."),
        col("source", "TEXT NOT NULL", "The labelled source (the dataset and its identity)."),
        col("definition", "TEXT NOT NULL", "How the gold value was read from the source (the `--label` definition); "
                                           "`as recorded before label sets (schema 3)` for labels of older logs."),
        col("created_at", "TEXT NOT NULL", "When the set was first written."),
        key=("label_set_id",), unique=(("source", "definition"),),
        travel=Travel("label_set_id IN (SELECT label_set_id FROM gold_labels WHERE comment_id IN {comments})",
                      merge_key=("source", "definition"), verbatim=("created_at",), tracked=True)),
    _table(
        "gold_labels", "The gold label of a comment within one label set.",
        col("label_set_id", "INTEGER NOT NULL REFERENCES label_sets(label_set_id)", "The label set."),
        col("comment_id", "INTEGER NOT NULL REFERENCES comments(comment_id)", "The comment."),
        col("value", "TEXT", "Gold value (text), NULL when the source gives none."),
        key=("label_set_id", "comment_id"), indexes=(Index("gold_labels_comment", ("comment_id",)),),
        travel=Travel("comment_id IN {comments}", merge_key=("label_set_id", "comment_id"), verbatim=("value",),
                      compare=("value",))),
    _table(
        "step_errors", "A step that failed for one text (a normalizer, a variant generator): recorded, and the run "
                       "goes on, as a detector's failure is a score row with an error.",
        col("text_id", "INTEGER NOT NULL REFERENCES texts(text_id)", "The text it failed on."),
        col("step", "TEXT NOT NULL", "The pipeline step (normalize, perturb ...)."),
        col("component", "TEXT NOT NULL", "The normalizer or generator that failed."),
        col("version", "TEXT NOT NULL", "Its version."),
        col("run_id", "INTEGER REFERENCES audit_runs(run_id)", "Audit run it happened in, NULL for the daemon."),
        col("message", "TEXT NOT NULL", "The error (type and message)."),
        col("created_at", "TEXT NOT NULL", "When it was recorded."),
        key=("text_id", "step", "component", "version"),
        travel=STAYS),
    _table(
        "deferred_variants", "A live comment whose variants the daemon did not make while the participant browsed "
                             "(over the study's variant budget; its connection closed or the daemon stopped "
                             "before they were made; the study log refused the round's rows; or the round itself "
                             "failed): recorded with why, made later by `modlens rescore --variants`.",
        col("comment_id", "INTEGER REFERENCES comments(comment_id)", "The comment."),
        col("reason", "TEXT NOT NULL", "Why it was deferred: the budget that was reached, or what cut it short; its "
                                       "last parenthesis names the setting or event (the daemon's deferred_by_reason). "
                                       "A comment deferred again while still to do keeps its first reason."),
        col("created_at", "TEXT NOT NULL", "When it was deferred."),
        col("done_at", "TEXT", "When its variants were made; NULL while still to do."),
        key=("comment_id",),
        travel=STAYS),
    _table(
        "rater_reviews", "The acceptance of one rater's work on one task of an item-set study (the human-centred Perspective study, Table 11), "
                         "written by `modlens rate`; the report uses only ratings of tasks decided `accept`.",
        col("study_id", "TEXT NOT NULL REFERENCES studies(study_id)", "Study."),
        col("rater_id", "TEXT NOT NULL", "Rater (imported crowd workers: `<format>:<worker id>`)."),
        col("task", "TEXT NOT NULL", "Task id of the study's assignment.json (e.g. t01)."),
        col("source", "TEXT NOT NULL", "Where the ratings came from: protocol, labelstudio, potato or survey."),
        col("decision", "TEXT NOT NULL", "accept, accept_unused (approved, data not used) or reject."),
        col("reason", "TEXT NOT NULL", "The counts and the Table 11 rule that decided."),
        col("n_items", "INTEGER NOT NULL", "Items in the task (gold included)."),
        col("missed", "INTEGER NOT NULL", "Items of the task the rater left unrated."),
        col("inconsistent_gold", "INTEGER NOT NULL", "Gold items with an inconsistent anchor pair (Table 1)."),
        col("wrong_gold", "INTEGER NOT NULL", "Gold items rated other than expected (or left unrated)."),
        col("inconsistent", "INTEGER NOT NULL", "Other items with an inconsistent anchor pair (or left unrated)."),
        col("comment_ids_json", "TEXT NOT NULL", "The task's comments (JSON list of comment ids, gold included)."),
        col("reviewed_at", "TEXT NOT NULL", "When the decision was (re)computed."),
        col("platform_status", "TEXT", "The crowd platform's word for a submission of this task it marked as no "
                                       "valid work after `modlens rate` had imported it (e.g. `Prolific Status "
                                       "REJECTED`), read from its export: the task is rejected whatever Table 11 "
                                       "gives, and its ratings are no data; NULL when the platform marked none."),
        key=("study_id", "rater_id", "task"),
        travel=STAYS),
    _table(
        "crowd_imports", "One import of a crowd platform's export by `modlens rate FILE` (Label Studio, Potato, a "
                         "survey CSV): what it imported, and the records it left out and why, as it printed them.",
        col("import_id", "INTEGER", "Row id (one per import; importing the same file again is another row)."),
        col("study_id", "TEXT NOT NULL REFERENCES studies(study_id)", "Study."),
        col("format", "TEXT NOT NULL", "labelstudio, potato or survey."),
        col("source", "TEXT NOT NULL", "The export's file or folder name (the name only, not its path)."),
        col("source_sha256", "TEXT NOT NULL", "SHA-256 of the export's bytes (a folder: of each file's path "
                                              "in it and bytes, in path order)."),
        col("records", "TEXT NOT NULL", "What one record of the export is: rows, annotations, user states."),
        col("skipped_json", "TEXT NOT NULL", "The records left out as carrying no valid work (a rejected, returned "
                                             "or timed-out submission, a preview, a cancelled annotation, a row "
                                             "without a worker or assignment), counted by kind as the platform "
                                             "names it: JSON object, kind -> count."),
        col("workers", "INTEGER NOT NULL", "Workers whose answers were read (blank or part-answered ones included; "
                                           "records carrying no valid work left out)."),
        col("ratings_new", "INTEGER NOT NULL", "Ratings this import stored (a changed answer stored with "
                                               "`on_change` replace among them)."),
        col("ratings_known", "INTEGER NOT NULL", "Answers already in the log as they are (an earlier import of them)."),
        col("changed", "INTEGER NOT NULL", "Answers that differ from the worker's answer an earlier import stored (an "
                                           "annotation edited in the tool since), as `modlens rate` prints them: "
                                           "what became of them is `on_change`."),
        col("on_change", "TEXT NOT NULL", "What the import did with changed answers (`--on-change`): keep (the "
                                          "stored answer stays, the new one is not stored) or replace (the new one "
                                          "stored as the worker's latest rating, counted in ratings_new)."),
        col("empty", "INTEGER NOT NULL", "Answers with no question answered (not imported)."),
        col("incomplete", "INTEGER NOT NULL", "Comments answered in part (not imported; a miss)."),
        col("repeated", "INTEGER NOT NULL", "Answers repeating a worker's earlier answer in the same file (not "
                                            "imported; the first is kept)."),
        col("imported_at", "TEXT NOT NULL", "When the import was written (in the transaction of its ratings)."),
        key=("import_id",),
        travel=STAYS),
)

TABLE: dict[str, Table] = {t.name: t for t in TABLES}


def _parents_first(tables: tuple[Table, ...]) -> tuple[Table, ...]:
    """The tables, each after the ones among them it references (in description order otherwise)."""
    names = {t.name for t in tables}
    out: list[Table] = []
    pending = list(tables)
    while pending:
        placed = {t.name for t in out}
        ready = next((t for t in pending if all(p in placed or p == t.name for p in t.parents if p in names)), None)
        if ready is None:
            raise RuntimeError(f"tables referencing each other in a loop: {[t.name for t in pending]}")
        out.append(ready)
        pending.remove(ready)
    return tuple(out)


# the tables a bundle carries, parents before children: the order bundles list them and merge inserts them
TRAVELLING: tuple[Table, ...] = _parents_first(tuple(t for t in TABLES if t.travel is not None))


# --- the exported tables --------------------------------------------------------------------


@dataclass(frozen=True)
class ExportColumn:
    name: str
    type: str  # int | float | str | bool  (JSON columns are str holding JSON)
    doc: str


@dataclass(frozen=True)
class ExportTable:
    """One exported file. `carries` names the SQLite table whose every row (and, but for
    `omits`, every column, under its own name) it holds; derived views carry none."""
    name: str
    doc: str
    sql: str
    columns: tuple[ExportColumn, ...]
    carries: str | None = None
    omits: dict[str, str] = field(default_factory=dict)  # carried column -> why it is not exported


def ref(path: str, name: str | None = None, doc: str | None = None) -> ExportColumn:
    """An exported column that is the table column `path` ("table.column"): its type and meaning
    come from the table's description; `name` renames it, `doc` says what it is here when the
    column is joined in from another table."""
    table, column = path.split(".")
    c = TABLE[table].column(column)
    return ExportColumn(name or column, c.export_type, doc or c.doc)


def derived(name: str, type_: str, doc: str) -> ExportColumn:
    """An exported column computed by the export query (a count, a JSON field)."""
    return ExportColumn(name, type_, doc)


def plain(table: Table) -> ExportTable:
    """A table exported as it is: every column, ordered by its key."""
    names = [c.name for c in table.columns]
    sql = f"SELECT {', '.join(names)} FROM {table.name} ORDER BY {', '.join(table.primary_key)}"
    return ExportTable(table.name, table.doc, sql, tuple(ref(f"{table.name}.{n}") for n in names), table.name)


def _carried(table: str, *names: str) -> tuple[ExportColumn, ...]:
    return tuple(ref(f"{table}.{n}") for n in names)


_DETECTOR = (ref("detectors.name", "detector", "Detector name."),
             ref("detectors.version", "detector_version", "Detector version."))

# Tables exported joined with what a reader needs beside them; the others are exported plain.
_VIEWS: tuple[ExportTable, ...] = (
    ExportTable(
        "pages", "Pages comments were found on.",
        "SELECT p.page_id, p.platform, p.page_key, p.url, p.title, p.first_seen, "
        "(SELECT count(*) FROM comments c WHERE c.page_id = p.page_id) AS n_comments FROM pages p ORDER BY p.page_id",
        (*_carried("pages", "page_id", "platform", "page_key", "url", "title", "first_seen"),
         derived("n_comments", "int", "Comments stored for this page.")), "pages"),
    ExportTable(
        "comments", "Comments with their page, platform and text.",
        "SELECT c.comment_id, c.platform, c.comment_key, c.page_id, p.page_key, p.url AS page_url, "
        "p.title AS page_title, c.parent_key, c.author_hash, c.time_shown, c.text_id, t.text_hash, t.text, "
        "c.truncated, c.original_length, c.first_seen FROM comments c JOIN texts t USING (text_id) "
        "LEFT JOIN pages p USING (page_id) ORDER BY c.comment_id",
        (*_carried("comments", "comment_id", "platform", "comment_key", "page_id"),
         ref("pages.page_key"), ref("pages.url", "page_url", "Page URL."), ref("pages.title", "page_title", "Page title."),
         *_carried("comments", "parent_key", "author_hash", "time_shown", "text_id"),
         ref("texts.text_hash"), ref("texts.text", doc="Comment text (possibly truncated)."),
         *_carried("comments", "truncated", "original_length", "first_seen")), "comments"),
    ExportTable(
        "scores", "Long format: one row per text x detector version.",
        "SELECT s.text_id, s.detector_id, t.text_hash, d.name AS detector, d.version AS detector_version, s.toxicity, "
        "s.labels_json, s.latency_ms, s.error, s.created_at FROM scores s JOIN texts t USING (text_id) "
        "JOIN detectors d USING (detector_id) ORDER BY s.text_id, d.name, d.version",
        (*_carried("scores", "text_id", "detector_id"), ref("texts.text_hash", doc="sha256 of the scored text."),
         *_DETECTOR, *_carried("scores", "toxicity", "labels_json", "latency_ms", "error", "created_at")), "scores"),
    ExportTable(
        "score_labels", "Longer format: one row per text x detector version x label.",
        "SELECT s.text_id, d.name AS detector, d.version AS detector_version, j.key AS label, "
        "j.value AS probability FROM scores s JOIN detectors d USING (detector_id), json_each(s.labels_json) j "
        "WHERE s.labels_json IS NOT NULL ORDER BY s.text_id, d.name, d.version, j.key",
        (ref("scores.text_id"), *_DETECTOR, derived("label", "str", "Label name."),
         derived("probability", "float", "Probability of that label."))),
    ExportTable(
        "normalizations", "Normalizer outputs.",
        "SELECT n.source_text_id, st.text AS source_text, n.normalizer, n.version, n.result_text_id, "
        "rt.text AS result_text, json_array_length(n.edits_json) AS n_edits, n.edits_json, n.created_at "
        "FROM normalizations n JOIN texts st ON st.text_id = n.source_text_id "
        "JOIN texts rt ON rt.text_id = n.result_text_id ORDER BY n.source_text_id, n.normalizer, n.version",
        (ref("normalizations.source_text_id"), ref("texts.text", "source_text", "Original text."),
         *_carried("normalizations", "normalizer", "version", "result_text_id"),
         ref("texts.text", "result_text", "Normalized text."), derived("n_edits", "int", "Number of edits."),
         *_carried("normalizations", "edits_json", "created_at")), "normalizations"),
    ExportTable(
        "normalization_edits", "Long format: one row per normalizer edit.",
        "SELECT n.source_text_id, n.normalizer, n.version, e.key AS edit_index, "
        "json_extract(e.value, '$.start') AS start, json_extract(e.value, '$.end') AS end, "
        "json_extract(e.value, '$.original') AS original, json_extract(e.value, '$.normalized') AS normalized, "
        "json_extract(e.value, '$.step') AS step, json_extract(e.value, '$.confidence') AS confidence, "
        "json_extract(e.value, '$.hidden') AS hidden FROM normalizations n, json_each(n.edits_json) e "
        "ORDER BY n.source_text_id, n.normalizer, n.version, e.key",
        (*_carried("normalizations", "source_text_id", "normalizer", "version"),
         derived("edit_index", "int", "Position of the edit in the list."),
         derived("start", "int", "Span start in the original text."), derived("end", "int", "Span end."),
         derived("original", "str", "Original token."), derived("normalized", "str", "Normalized token."),
         derived("step", "str", "Step that made the edit."), derived("confidence", "float", "Step's confidence."),
         derived("hidden", "str", "Word spelled by capitals in mixed-case tokens, empty if none."))),
    ExportTable(
        "variants", "Perturbed variants with strategy and parameters.",
        "SELECT v.variant_id, v.comment_id, v.source_text_id, v.text_id, t.text, v.strategy, v.params_json, "
        "v.seed, v.positions_json, v.target_detector, v.attack_json, v.run_id, v.created_at "
        "FROM variants v JOIN texts t USING (text_id) ORDER BY v.variant_id",
        (*_carried("variants", "variant_id", "comment_id", "source_text_id", "text_id"),
         ref("texts.text", doc="Variant text."),
         *_carried("variants", "strategy", "params_json", "seed", "positions_json", "target_detector", "attack_json",
                   "run_id", "created_at")), "variants"),
    ExportTable(
        "ratings", "Long format: one row per rating x attribute (a rating without attribute values still has one "
                   "row with an empty attribute).",
        "SELECT r.rating_id, r.study_id, r.rater_id, r.client_rating_id, r.session_id, r.comment_id, "
        "v.attribute, v.value, r.anchors_json, r.derived_toxicity, r.inconsistent, r.time_spent_ms, "
        "r.time_spent_over_limit_ms, r.created_at "
        "FROM ratings r LEFT JOIN rating_values v USING (rating_id) ORDER BY r.rating_id, v.attribute",
        (*_carried("ratings", "rating_id", "study_id", "rater_id", "client_rating_id", "session_id", "comment_id"),
         *_carried("rating_values", "attribute", "value"),
         *_carried("ratings", "anchors_json", "derived_toxicity", "inconsistent", "time_spent_ms",
                   "time_spent_over_limit_ms", "created_at")),
        "ratings", {"values_json": "its values are the attribute and value columns (as in rating_values)"}),
    ExportTable(
        "case_scores", "Scores of fused cases with the detector's name and version.",
        "SELECT s.case_id, s.part, s.detector_id, d.name AS detector, d.version AS detector_version, s.labels_json, "
        "s.toxicity, s.latency_ms, s.error, s.details_json, s.created_at FROM case_scores s "
        "JOIN detectors d USING (detector_id) ORDER BY s.case_id, s.part, d.name, d.version",
        (*_carried("case_scores", "case_id", "part", "detector_id"), *_DETECTOR,
         *_carried("case_scores", "labels_json", "toxicity", "latency_ms", "error", "details_json", "created_at")),
        "case_scores"),
    ExportTable(
        "comment_media_scores", "Scores of comments with their media, with the detector's name and version.",
        "SELECT s.comment_id, s.detector_id, d.name AS detector, d.version AS detector_version, s.labels_json, "
        "s.toxicity, s.latency_ms, s.error, s.details_json, s.created_at FROM comment_media_scores s "
        "JOIN detectors d USING (detector_id) ORDER BY s.comment_id, d.name, d.version",
        (*_carried("comment_media_scores", "comment_id", "detector_id"), *_DETECTOR,
         *_carried("comment_media_scores", "labels_json", "toxicity", "latency_ms", "error", "details_json",
                   "created_at")), "comment_media_scores"),
)

# Views derived from a table are exported right after the table's own export.
_DERIVED_AFTER = {"score_labels": "scores", "normalization_edits": "normalizations"}


def _exports() -> tuple[ExportTable, ...]:
    views = {v.name: v for v in _VIEWS}
    out: list[ExportTable] = []
    for table in TABLES:
        out.append(views.get(table.name) or plain(table))
        out += [views[name] for name, after in _DERIVED_AFTER.items() if after == table.name]
    lost = set(views) - {t.name for t in out}
    if lost:  # a view named after no table, nor placed after one, would silently not be exported
        raise RuntimeError(f"exported views without a place: {sorted(lost)}")
    return tuple(out)


EXPORT_TABLES: tuple[ExportTable, ...] = _exports()
EXPORTS: dict[str, ExportTable] = {t.name: t for t in EXPORT_TABLES}


# --- the wide per-row table -------------------------------------------------------------------
# One row per comment, one column per detector: what a researcher otherwise joins from comments,
# gold labels and scores. Its detector columns are the log's, so it is described here by its fixed
# columns and the pair each detector adds, and built above the storage layer (`analysis/wide.py`:
# the gold label set and the in-sample marks are the report's).

WIDE_NAME = "comment_scores_wide"
WIDE_DOC = ("Wide format: one row per comment, its gold label and one score column per detector version, each "
            "with its in-sample mark; the figures the report's labelled-data section computes, per row. Detectors "
            "are named as in the report (the name, or name#1, name#2, … when the log has several versions of "
            "one; manifest.json and the report's Detectors table give each one's version). Built from the "
            "same log by `modlens export` (all tables, or `--tables " + WIDE_NAME + "`), in its own read.")
WIDE_COLUMNS: tuple[ExportColumn, ...] = (
    ref("comments.comment_id"), ref("comments.platform", "source", "Platform, or `dataset:NAME` for an audited file."),
    ref("comments.comment_key"), ref("comments.text_id"), ref("texts.text", doc="Comment text (possibly truncated)."),
    derived("gold_toxic", "int", "Gold label: 1 toxic, 0 not, empty without one (from the label set the report uses "
                                 "for the source: docs/ANALYSIS.md#label-sets)."),
    derived("label_set_id", "int", "The label set the gold label comes from, empty without one."),
)
# per detector, in the order the log registered them: (name template, type, meaning)
WIDE_PER_DETECTOR: tuple[tuple[str, str, str], ...] = (
    ("score:{detector}", "float", "The detector's toxicity score of the comment's text; empty when it did not "
                                  "score it (or failed)."),
    ("in_sample:{detector}", "bool", "1 when the text is among the detector's training data (trained on the data set "
                                     "whole, or the row found in its fit texts by hash), 0 when checked and not "
                                     "among them, empty when unknown (undeclared, or not checkable row by row)."),
)


def wide_table(detectors: list[str]) -> ExportTable:
    """The wide table with the columns of these detectors (their report names)."""
    columns = [*WIDE_COLUMNS, *(ExportColumn(name.format(detector=d), type_, doc)
                                for d in detectors for name, type_, doc in WIDE_PER_DETECTOR)]
    return ExportTable(WIDE_NAME, WIDE_DOC, "", tuple(columns))
