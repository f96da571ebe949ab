"""`variants`, `normalizations` and `step_errors`: texts derived from a comment (perturbations,
attacks, normalized forms), each with everything needed to derive it again, and the steps that
failed for one text (kept like a score's error; the run goes on)."""
from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any, Iterable

from modlens.rows import NormalizationRow, StepErrorRow, Variant
from modlens.studylog import codec, connection
from modlens.studylog.codec import canonical_json, now_iso
from modlens.studylog.connection import LogConnection, StudyLogError
from modlens.studylog.records.batch import write_rows
from modlens.studylog.records.comments import comment_text
from modlens.studylog.records.texts import text_ids

INSERT_VARIANT = (
    "INSERT OR IGNORE INTO variants (comment_id, source_text_id, text_id, strategy, params_json, seed, "
    "positions_json, target_detector, attack_json, run_id, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)")
# (position in the JSON array, variant_id) for an array of [comment_id, text_id, strategy, params_json, seed]
VARIANT_IDS = ("SELECT j.key, v.variant_id FROM json_each(?) j JOIN variants v ON v.comment_id = j.value ->> 0 "
               "AND v.text_id = j.value ->> 1 AND v.strategy = j.value ->> 2 AND v.params_json = j.value ->> 3 "
               "AND v.seed = j.value ->> 4")
VARIANT_ID = ("SELECT variant_id FROM variants WHERE comment_id = ? AND text_id = ? AND strategy = ? "
              "AND params_json = ? AND seed = ?")
INSERT_NORMALIZATION = (
    "INSERT OR IGNORE INTO normalizations (source_text_id, normalizer, version, result_text_id, edits_json, "
    "created_at) VALUES (?, ?, ?, ?, ?, ?)")
# json.dumps(edits, ensure_ascii=False), its encoder built once (`JSONEncoder.encode` builds a new one
# per call, a third of the cost of a normalization row)
_edits_json = codec.json_dumper()
# the model-dependent checks of a logged attack (audit/attack_checks.py), kept inside its attack record
SET_ATTACK_CHECKS = "UPDATE variants SET attack_json = json_set(attack_json, '$.checks', json(?)) WHERE variant_id = ?"
# an attack record an older modlens wrote without saying what happened (`perturb.attack_record.result_known`),
# replaced by the record of the same attack run again (same comment, text, strategy, params and seed)
REPLACE_ATTACK = "UPDATE variants SET attack_json = ? WHERE variant_id = ?"
# the latest failure of a step for a text is kept (a rerun that fails again says why, this time)
UPSERT_STEP_ERROR = (
    "INSERT INTO step_errors (text_id, step, component, version, run_id, message, created_at) "
    "VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT (text_id, step, component, version) DO UPDATE SET "
    "run_id = excluded.run_id, message = excluded.message, created_at = excluded.created_at")


def add_variants(db: LogConnection, rows: Iterable[tuple[int, Variant]], run_id: int | None = None) -> list[int]:
    """(comment_id, variant) rows; a variant already logged (same comment, text, strategy,
    parameters and seed) keeps its row. One variant_id per row, in order. A variant without
    `source_text` was made from its comment's text."""
    rows = list(rows)
    if not rows:
        return []
    with db.locked():
        sources: dict[int, str] = {}
        for cid, v in rows:
            if not v.source_text and cid not in sources:
                text = comment_text(db, cid)
                if text is None:
                    raise StudyLogError(f"no comment with id {cid}")
                sources[cid] = text
        src = [v.source_text or sources[cid] for cid, v in rows]
        ids = text_ids(db, [t for (_, v), s in zip(rows, src) for t in (v.text, s)])
        now = now_iso()
        keys = [(cid, ids[v.text], v.strategy, canonical_json(v.params), int(v.seed)) for cid, v in rows]
        db.write_many(INSERT_VARIANT, [
            (k[0], ids[s], k[1], k[2], k[3], k[4], json.dumps([list(p) for p in v.positions]), v.target_detector,
             None if v.attack is None else canonical_json(v.attack), run_id, now)
            for k, s, (_, v) in zip(keys, src, rows)])
        if len(keys) == 1:  # one row (a row-at-a-time caller): its id by the unique key, no JSON
            return [db.scalar(VARIANT_ID, keys[0])]
        out: list[int] = []
        chunk = connection.LOOKUP_CHUNK
        for start in range(0, len(keys), chunk):  # the ids back by their unique key
            part = keys[start:start + chunk]
            found = dict(db.conn.execute(VARIANT_IDS, (json.dumps(part, ensure_ascii=False),)).fetchall())
            out += [found[i] for i in range(len(part))]
        return out


def add_variant(db: LogConnection, comment_id: int, variant: Variant, run_id: int | None = None) -> int:
    return add_variants(db, [(comment_id, variant)], run_id)[0]


def set_attack_checks(db: LogConnection, rows: Iterable[tuple[int, dict[str, Any]]]) -> None:
    """(variant_id, checks) rows: `checks` becomes the attack record's `checks` key."""
    rows = list(rows)
    if not rows:
        return
    with db.locked():
        db.write_many(SET_ATTACK_CHECKS, [(canonical_json(checks), vid) for vid, checks in rows])


def replace_attacks(db: LogConnection, rows: Iterable[tuple[int, Mapping[str, Any]]]) -> None:
    """(variant_id, attack record) rows: the record replaces the row's. Only for a row whose record
    left its result unknown, attacked again (`audit.auditor.Auditor`); every other record is kept."""
    rows = list(rows)
    if not rows:
        return
    with db.locked():
        db.write_many(REPLACE_ATTACK, [(canonical_json(attack), vid) for vid, attack in rows])


def add_normalizations(db: LogConnection, rows: Iterable[NormalizationRow]) -> None:
    """(source_text, normalizer, version, result_text, edits) rows (the edits as mappings, or their
    JSON already written: `normalize.base.edits_json`); the first one of a (source, normalizer
    version) is kept."""
    rows = list(rows)
    if not rows:
        return
    with db.locked():
        ids = text_ids(db, [t for r in rows for t in (r[0], r[3])])
        now = now_iso()
        edits_json = _edits_json
        write_rows(db, INSERT_NORMALIZATION, [
            (ids[src], normalizer, version, ids[result], edits if isinstance(edits, str) else edits_json(edits), now)
            for src, normalizer, version, result, edits in rows])


def add_normalization(db: LogConnection, source_text: str, normalizer: str, version: str,
                      result_text: str, edits: Sequence[Mapping[str, object]]) -> None:
    add_normalizations(db, [(source_text, normalizer, version, result_text, edits)])


def add_step_errors(db: LogConnection, rows: Iterable[StepErrorRow]) -> None:
    """(text, step, component, version, run_id, message) rows: `step` ("normalize", "generate")
    of `component` at `version` failed for `text` with `message`."""
    rows = list(rows)
    if not rows:
        return
    with db.locked():
        ids = text_ids(db, [r[0] for r in rows])
        now = now_iso()
        db.write_many(UPSERT_STEP_ERROR, [(ids[text], step, component, version, run_id, message, now)
                                          for text, step, component, version, run_id, message in rows])


def add_step_error(db: LogConnection, text: str, step: str, component: str, version: str,
                   run_id: int | None, message: str) -> None:
    add_step_errors(db, [(text, step, component, version, run_id, message)])
