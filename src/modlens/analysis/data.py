"""Read-only access to a study log for analysis, through the study log's one read-only opener
(`StudyLog(path, readonly=True)`: `mode=ro`, so a report never blocks or changes the daemon
writing the same file, and a log of another schema version is refused; in a folder this user may
not write, with no -wal or -shm beside the log, `immutable=1`, refusing a read during which the file
changed: studylog/connection.py unlocked_read). Everything is loaded
into small tidy structures once; each report section takes what it needs.

Gold labels come from label sets (`studylog/records/labels.py`): per source, the set asked for
(`load(..., label_sets=[ID or DEFINITION])`, `modlens report --label-set`), else the newest one that holds labels (the
set the source's latest audit run recorded, else the last created; a newer set without labels, such as a
categories-only file's, is named in `newer_empty` and never hides an older gold set). The chosen set's values are
the comments' `toxic` label, so every section reads gold the same way; `StudyData.label_sets`
says which set each source used.

A rater who withdrew consent to the study (every consent of theirs withdrawn, `sessions.WITHDREW`) is
left out here, where every section reads ratings: their ratings and task reviews, so no count, alpha,
rater summary, people or item-set figure uses them (a merged log still holds what an earlier bundle
brought of theirs); `StudyData.withdrawn` says how many raters, studies and ratings. A consent given again
counts from then on: what the rater recorded before it stays left out (`sessions.withdrawn_row`), and they
count among the raters who withdrew while it holds any of it, and among those who agreed again
(`withdrawn["agreed_again"]`: their later ratings count; `withdrawn["still_withdrawn"]`: those a study's
withdrawal still holds, one rater id may be both); a crowd worker `modlens rate` imported has no
`consents` row and never withdrew."""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Sequence

from modlens.errors import ModlensError
from modlens.studylog.records import labels as label_records
from modlens.studylog.records.sessions import WITHDREW, withdrawn_row
from modlens.studylog.store import StudyLog
from modlens.studylog.connection import JSON_KEYS, StudyLogError

LogError = StudyLogError  # the file is missing, not a study log, or of another schema version
NEWEST, ASKED = "newest", "asked"  # how a source's label set was chosen


class LabelSetError(ModlensError, ValueError):
    """A `--label-set` the log does not have, or two asked for one source; the message lists the sets."""


class StudyChoiceError(ModlensError, ValueError):
    """A `--study` the log does not hold; the message lists the studies it holds."""


@dataclass
class DetectorRow:
    detector_id: int
    name: str
    version: str
    toxicity_label: str | None
    threshold: float
    config: dict[str, Any]

    @property
    def label(self) -> str:
        return f"{self.name}@{self.version}"


@dataclass
class StudyData:
    path: Path
    detectors: dict[int, DetectorRow]
    comments: dict[int, dict[str, Any]]            # comment_id -> {platform, key, text_id, page_id}
    labels: dict[int, dict[str, str]]              # comment_id -> {name: value}
    scores: dict[tuple[int, int], float | None]    # (text_id, detector_id) -> toxicity (None: error/missing)
    variants: list[dict[str, Any]]
    normalizations: dict[int, list[dict[str, Any]]]  # source text_id -> [{normalizer, version, result_text_id, edits}]
    texts: dict[int, str]
    ratings: list[dict[str, Any]]                  # with "values": {attribute: level}
    studies: list[dict[str, Any]]
    runs: list[dict[str, Any]] = field(default_factory=list)
    # source -> the gold label set its `toxic` labels come from: label_set_id, definition, created_at,
    # n, positives, chosen ("newest" or "asked"), others (the source's other sets), newer_empty (newer
    # sets of the source without labels, passed over)
    label_sets: dict[str, dict[str, Any]] = field(default_factory=dict)
    # item-set studies: the acceptance of each rater's task (`rater_reviews`, `modlens rate`), with
    # "comment_ids" (the task's comments) decoded
    reviews: list[dict[str, Any]] = field(default_factory=list)
    # (text_id, detector_id) -> {label: probability}, for the adversarial texts of attacks with a
    # multi-label goal only (their success is judged on those labels, not the toxicity score)
    label_probabilities: dict[tuple[int, int], dict[str, float]] = field(default_factory=dict)
    # item-set studies: each `modlens rate FILE` import (`crowd_imports`), "skipped" (kind -> records
    # left out) decoded
    imports: list[dict[str, Any]] = field(default_factory=list)
    # the raters who withdrew consent to a study (distinct rater ids: one who withdrew from two studies is
    # one rater), the studies they withdrew from, and the ratings of theirs in those studies the log holds,
    # all left out of `ratings` and `reviews` (a participant may withdraw at any time: nothing here uses
    # their data; their ratings in a study they still consent to count)
    withdrawn: dict[str, int] = field(default_factory=lambda: {"raters": 0, "studies": 0, "ratings": 0,
                                                                "agreed_again": 0, "still_withdrawn": 0})
    # `load(..., study=ID)`: the one study whose ratings, reviews and imports were read
    # ({"study_id", "other_studies_ratings": the ratings of the log's other studies, left out}); None: all
    study: dict[str, Any] | None = None

    def score(self, text_id: int, detector_id: int) -> float | None:
        return self.scores.get((text_id, detector_id))

    def platforms(self) -> list[str]:
        return sorted({c["platform"] for c in self.comments.values()})


def _loads(raw: str | None, default: Any) -> Any:
    if raw in (None, ""):
        return default
    try:
        return json.loads(raw)
    except (TypeError, json.JSONDecodeError):
        return default


def _describe(sets: list[dict[str, Any]]) -> str:
    return "; ".join(f"{s['label_set_id']} ({s['source']}: {s['definition']})" for s in sets) or "none"


def _age(s: dict[str, Any]) -> tuple[int, int]:
    return (s["last_run"] or 0, s["label_set_id"])


def _newest_with_labels(group: list[dict[str, Any]]) -> dict[str, Any]:
    """The newest set of one source that holds labels (the newest set when none does), with the
    newer sets that hold none (`newer_empty`): a categories-only audit writes an empty set, and the
    report must not lose the gold labels of an earlier audit to it."""
    held = [s for s in group if s["n"]]
    pick = max(held or group, key=_age)
    newer_empty = [{k: s[k] for k in ("label_set_id", "definition")}
                   for s in sorted(group, key=_age) if not s["n"] and _age(s) > _age(pick)]
    return dict(pick, chosen=NEWEST, newer_empty=newer_empty)


def choose_label_sets(sets: list[dict[str, Any]], asked: Sequence[str] = ()) -> dict[str, dict[str, Any]]:
    """source -> the set its gold labels come from (see the module's docstring). `asked`: label set
    ids or definitions (a definition picks that set in every source that has it)."""
    by_source: dict[str, list[dict[str, Any]]] = {}
    for s in sets:
        by_source.setdefault(s["source"], []).append(s)
    chosen = {src: _newest_with_labels(group) for src, group in by_source.items()}
    picked: set[str] = set()
    for spec in asked:
        spec = str(spec).strip()
        hits = [s for s in sets if str(s["label_set_id"]) == spec or s["definition"] == spec]
        if not hits:
            raise LabelSetError(f"--label-set {spec!r}: the log has no such label set; it has: {_describe(sets)}")
        for s in hits:
            if s["source"] in picked and chosen[s["source"]]["label_set_id"] != s["label_set_id"]:
                raise LabelSetError(f"--label-set: two label sets asked for {s['source']}; give one per source "
                                    f"(it has: {_describe(by_source[s['source']])})")
            picked.add(s["source"])
            chosen[s["source"]] = dict(s, chosen=ASKED, newer_empty=[])
    for src, s in chosen.items():
        s["others"] = [{k: o[k] for k in ("label_set_id", "definition", "n")}
                       for o in by_source[src] if o["label_set_id"] != s["label_set_id"]]
        s.pop("last_run", None)
    return dict(sorted(chosen.items()))


def chosen_gold(log: StudyLog, asked: Sequence[str] = ()) -> tuple[dict[str, dict[str, Any]], dict[int, str]]:
    """(source -> the label set chosen, `choose_label_sets`; comment_id -> its gold label in that set):
    the gold labels as every reader of them takes them (a set that gives a comment no value gives it
    no gold label)."""
    gold_sets = choose_label_sets(label_records.label_sets(log), asked)
    return gold_sets, {r["comment_id"]: r["value"]
                       for r in label_records.gold_labels(log, [s["label_set_id"] for s in gold_sets.values()])
                       if r["value"] is not None}


def load(path: str | Path, label_sets: Sequence[str] = (), log: StudyLog | None = None,
         study: str | None = None) -> StudyData:
    """The log at `path`, read in one read transaction (a daemon writing meanwhile cannot make its
    tables disagree); `label_sets`: the gold label sets to use (ids or definitions). `log`: a log the
    caller opened and reads in its own transaction (`export`: the wide table in the export's
    snapshot), read here and left open. `study`: read only that study's ratings, task reviews,
    imports and withdrawals (`modlens report --study`); comments, scores and labels are the log's."""
    if log is None:
        with StudyLog(path, readonly=True) as own, own.snapshot():
            return load(path, label_sets, own, study)
    q = log.query
    detectors = {
        r["detector_id"]: DetectorRow(r["detector_id"], r["name"], r["version"], r["toxicity_label"],
                                      0.5 if r["threshold"] is None else float(r["threshold"]),
                                      _loads(r["config_json"], {}))
        for r in q("SELECT * FROM detectors")
    }
    comments = {r["comment_id"]: {"platform": r["platform"], "key": r["comment_key"], "text_id": r["text_id"],
                                  "page_id": r["page_id"]}
                for r in q("SELECT comment_id, platform, comment_key, text_id, page_id FROM comments")}
    labels: dict[int, dict[str, str]] = {}
    # gold `toxic` comes from a label set only: a `labels` row of that name is no gold label
    for r in q("SELECT comment_id, name, value FROM labels WHERE name != ? ORDER BY source", (label_records.GOLD,)):
        labels.setdefault(r["comment_id"], {})[r["name"]] = r["value"]
    gold_sets, gold = chosen_gold(log, label_sets)
    for comment_id, value in gold.items():
        labels.setdefault(comment_id, {})[label_records.GOLD] = value
    scores = {(r["text_id"], r["detector_id"]): (None if r["error"] else r["toxicity"])
              for r in q("SELECT text_id, detector_id, toxicity, error FROM scores")}
    variants = []
    for r in q("SELECT * FROM variants ORDER BY variant_id"):
        r["params"] = _loads(r.pop("params_json"), {})
        r["attack"] = _loads(r.pop("attack_json"), None)
        variants.append(r)
    multi_label = sorted({v["text_id"] for v in variants
                          if isinstance(v["attack"], dict) and v["attack"].get("goal_labels")})
    label_probabilities: dict[tuple[int, int], dict[str, float]] = {}
    for r in q(f"SELECT text_id, detector_id, labels_json FROM scores WHERE error IS NULL AND text_id {JSON_KEYS}",
               (json.dumps(multi_label),)):
        label_probabilities[(r["text_id"], r["detector_id"])] = _loads(r["labels_json"], {})
    normalizations: dict[int, list[dict[str, Any]]] = {}
    for r in q("SELECT * FROM normalizations"):
        r["edits"] = _loads(r.pop("edits_json"), [])
        normalizations.setdefault(r["source_text_id"], []).append(r)
    texts = {r["text_id"]: r["text"] for r in q("SELECT text_id, text FROM texts")}
    values: dict[int, dict[str, str]] = {}
    for r in q("SELECT rating_id, attribute, value FROM rating_values"):
        values.setdefault(r["rating_id"], {})[r["attribute"]] = r["value"]
    studies = [dict(r, config=_loads(r.pop("config_json"), {})) for r in q("SELECT * FROM studies")]
    if study is not None and study not in {s["study_id"] for s in studies}:
        raise StudyChoiceError(f"--study {study!r}: the log holds no such study; it holds: "
                               + (", ".join(sorted(s["study_id"] for s in studies)) or "none"))

    def mine(table: str) -> tuple[str, tuple[str, ...]]:  # `study`: its rows alone, read as such
        return ("1", ()) if study is None else (f"{table}.study_id = ?", (study,))
    # the raters whose withdrawal covers any row here: all they recorded while no consent holds, what they
    # recorded before the consent they gave again when they agreed again (`sessions.withdrawn_row`)
    where, args = mine("raters")
    withdrew: set[tuple[str, str]] = {(r["study_id"], r["rater_id"]) for r in q(
        f"SELECT study_id, rater_id FROM raters WHERE {WITHDREW} AND {where}", args)}
    gone = set(withdrew)
    ratings, left_out = [], 0
    where, args = mine("ratings")
    for r in q(f"SELECT *, {withdrawn_row('ratings', 'created_at')} AS withdrawn_row FROM ratings WHERE {where} "
               "ORDER BY rating_id", args):
        if r.pop("withdrawn_row"):
            gone.add((r["study_id"], r["rater_id"]))
            left_out += 1
            continue
        r["values"] = values.get(r["rating_id"]) or _loads(r.get("values_json"), {})
        r["anchors"] = _loads(r.pop("anchors_json", None), None)
        ratings.append(r)
    # every rating row of the other studies, withdrawn ones included: none is read
    others = 0 if study is None else q("SELECT COUNT(*) AS n FROM ratings WHERE study_id IS NOT ?", (study,))[0]["n"]
    runs = q("SELECT * FROM audit_runs ORDER BY run_id")
    where, args = mine("rater_reviews")
    reviews = [dict(r, comment_ids=_loads(r.pop("comment_ids_json"), [])) for r in
               q(f"SELECT * FROM rater_reviews WHERE NOT {withdrawn_row('rater_reviews', 'reviewed_at')} AND {where} "
                 "ORDER BY study_id, rater_id, task", args)] \
        if "rater_reviews" in log.table_names() else []
    where, args = mine("crowd_imports")
    imports = [dict(r, skipped=_loads(r.pop("skipped_json"), {})) for r in
               q(f"SELECT * FROM crowd_imports WHERE {where} ORDER BY import_id", args)]
    return StudyData(Path(path), detectors, comments, labels, scores, variants, normalizations, texts,
                     ratings, studies, runs, gold_sets, reviews, label_probabilities, imports,
                     {"raters": len({rater for _, rater in gone}), "studies": len({study for study, _ in gone}),
                      "ratings": left_out,
                      # of them, those who agreed again in a study (a consent holds there): what they rated
                      # since counts there; and those still withdrawn from a study. One rater id spans the
                      # studies of an install: a rater can be both, so the two need not add up to `raters`
                      "agreed_again": len({rater for _, rater in gone - withdrew}),
                      "still_withdrawn": len({rater for _, rater in withdrew})},
                     None if study is None else {"study_id": study, "other_studies_ratings": others})
