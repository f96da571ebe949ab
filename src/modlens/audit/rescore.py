"""`run_rescore`: score the texts a study log already holds with detectors that have not scored
them (participants ran different configurations, a detector was added later), through the same
engine, batchers, detector loading and recording as the daemon and the audits.

Resumable by construction: the work list is read from the log (texts with no score, or only an
error, for that detector version) and each chunk's scores commit in one transaction, so a rerun
after an interruption scores only what is still missing and no row is written twice.

Texts: every comment, every variant and every normalized form the log holds. Before scoring,
logged attacks get the model-dependent checks the report reads (`attack_checks.py`: quality
verdicts, the normalized form of each success). Detectors: the
given specs, else the study's (`--config`), else the log's own study (docs/ANALYSIS.md).
"""
from __future__ import annotations

import asyncio
import difflib
import json
import sqlite3
import sys
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Callable, Sequence

from modlens.audit.attack_checks import check_attacks, unmade
from modlens.audit.run import audit_study
from modlens.chunks import LocalCompute, record_results
from modlens.config import DetectorConfig, StudyConfig, StudyConfigError, parse_study
from modlens.datasets.base import BLANK_CHARS
from modlens.detectors import registry
from modlens.detectors.base import Detector
from modlens.engine import Engine
from modlens.services.detectors import DetectorSpecError, load_detectors, parse_detector_spec
from modlens.services.errors import SetupError
from modlens.services.recording import register
from modlens.studylog.store import StudyLog
from modlens.studylog.connection import LogConnection, LogUnwritable, StudyLogError, cannot_open, unwritable
from modlens.studylog.migrate import check_readable
from modlens.studylog.schema import SCHEMA_VERSION

# every text a report reads a score of
TEXTS_SQL = ("SELECT text_id FROM comments UNION SELECT text_id FROM variants "
             "UNION SELECT result_text_id FROM normalizations")


class LogNotFound(SetupError):
    """No study log at the path (rescore never creates one)."""


class UnknownDetector(SetupError):
    """A --detectors spec that names nothing; `suggestions` are the close matches."""

    def __init__(self, message: str, suggestions: list[str]):
        super().__init__(message)
        self.suggestions = suggestions


@dataclass
class DetectorTally:
    detector: str      # name@version
    texts: int         # texts of the log this detector should have scored
    already: int       # had a score before this run
    scored: int = 0    # scored in this run
    errors: int = 0    # of those, no answer (detector error or missing): retried by a rerun
    replaced: int = 0  # of those, answers that replaced the text's earlier error row (the only rows replaced)
    first_error: str | None = None  # the first error of this run, as the log keeps it


@dataclass
class RescoreResult:
    db: str
    study_id: str
    detectors_from: str                # "--detectors", "--config" or "study log"
    texts: int
    detectors: dict[str, DetectorTally]
    unavailable: dict[str, str] = field(default_factory=dict)
    seconds: float = 0.0
    # per model-dependent check of logged attacks (`attack_checks.unmade`), the successes still without it
    # because its model is missing here: {"attacks": n, "why": ...}; a rescore that has the model makes them
    unchecked_attacks: dict[str, dict[str, Any]] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


# --- what to score ------------------------------------------------------------------------------
def study_from_log(log: StudyLog) -> StudyConfig | None:
    """The study the log was recorded for: the one study with raters (a participant's or a
    merged log), else the only study. None when the log has none; an error when ambiguous."""
    studies = log.query("SELECT study_id, config_json FROM studies ORDER BY rowid")
    with_raters = {r["study_id"] for r in log.query("SELECT DISTINCT study_id FROM raters")}
    candidates = [s for s in studies if s["study_id"] in with_raters] or studies
    if not candidates:
        return None
    if len(candidates) > 1:
        raise SetupError(f"the log holds several studies ({', '.join(s['study_id'] for s in candidates)}); "
                         "pass --config STUDY.toml or --detectors to say which detectors to score with")
    row = candidates[0]
    config = json.loads(row["config_json"] or "{}")
    try:
        return parse_study(config, f"study {row['study_id']!r} in the log")
    except StudyConfigError:  # written by another modlens version: its detectors are all rescore needs
        detectors = [DetectorConfig.model_validate(d) for d in config.get("detectors") or []]
        return StudyConfig(study_id=row["study_id"], detectors=detectors)


class _LogReader(LogConnection):
    """The log opened read-only, an older schema too (never migrated): what rescore reads before it
    knows its detectors load, so a refusal leaves the log as it was."""

    query = StudyLog.query


def logged_study(db: Path) -> StudyConfig | None:
    """`study_from_log` of the log at `db`, read without writing; None for a file with no tables yet."""
    return logged_study_and_version(db)[0]


def logged_study_and_version(db: Path) -> tuple[StudyConfig | None, int]:
    """`logged_study`, and the log's schema version (0: a file with no tables yet)."""
    reader = _LogReader(db, readonly=True)
    try:
        version = check_readable(reader, older_ok=True)
        return (study_from_log(reader) if version else None), version  # type: ignore[arg-type]
    finally:
        reader.close()


def _open_to_write(db: Path) -> StudyLog:
    try:
        return StudyLog(db)
    except sqlite3.DatabaseError as err:
        raise cannot_open(err, db) or StudyLogError(f"{db}: not a modlens study log ({err})") from None


def detector_configs(specs: Sequence[str] | None, study: StudyConfig) -> list[DetectorConfig]:
    if not specs:
        return list(study.detectors)
    known = list(dict.fromkeys([*registry.available(), *(c.key for c in study.detectors)]))
    out = []
    for spec in dict.fromkeys(specs):
        try:
            out.append(parse_detector_spec(spec, study))
        except DetectorSpecError as err:
            close = difflib.get_close_matches(spec, known, n=3, cutoff=0.6)
            raise UnknownDetector(str(err), close) from None
    return out


def pending_texts(log: StudyLog, detector_id: int) -> list[tuple[int, str]]:
    """(text_id, text) of every text of the log with no score, or only an error, for this detector
    version; blank texts are never scored (`datasets.base.blank_reason`)."""
    return [(r["text_id"], r["text"]) for r in log.query(
        f"SELECT t.text_id, t.text FROM texts t WHERE t.text_id IN ({TEXTS_SQL}) AND trim(t.text, ?) != '' "
        "AND NOT EXISTS (SELECT 1 FROM scores s WHERE s.text_id = t.text_id AND s.detector_id = ? AND s.error IS NULL) "
        "ORDER BY t.text_id", (BLANK_CHARS, detector_id))]


def errored_texts(log: StudyLog, detector_id: int) -> set[int]:
    """text_id of every text whose score by this detector version is an error row (an answer replaces it)."""
    return {r[0] for r in log.conn.execute("SELECT text_id FROM scores WHERE detector_id = ? AND error IS NOT NULL",
                                           (detector_id,))}


def n_texts(log: StudyLog) -> int:
    """The texts of the log a detector should have scored (blank ones are not)."""
    return int(log.query(f"SELECT count(*) AS n FROM texts t WHERE t.text_id IN ({TEXTS_SQL}) AND trim(t.text, ?) != ''",
                         (BLANK_CHARS,))[0]["n"])


def one_key_per_version(det_ids: dict[str, int]) -> list[str]:
    """Two keys naming the same detector version (a study key and its registry name) would
    score the same texts twice: the first key stays."""
    keys: dict[int, str] = {}
    for k, detector_id in det_ids.items():
        keys.setdefault(detector_id, k)
    return list(keys.values())


# --- the run ------------------------------------------------------------------------------------
def run_rescore(db: str | Path, *, study: StudyConfig | None = None, detectors: Sequence[str] | None = None,
                chunk_size: int = 256, progress: bool = True, on_chunk: Callable[[int], None] | None = None,
                detector_objects: dict[str, Detector] | None = None) -> RescoreResult:
    """Score every text of the log at `db` that a detector has no score for. `study`: the study
    config whose detectors (and detector keys) to use, default the log's own study.
    `detector_objects` bypasses loading (tests). `on_chunk(pairs done)` runs after each commit.
    Raises SetupError (nothing written) when it cannot start."""
    t0 = time.perf_counter()
    db = Path(db)
    if not db.is_file():
        raise LogNotFound(f"no study log at {db}: rescore scores what a log holds and never creates one")
    source = "--detectors" if detectors or detector_objects else "--config" if study else "study log"
    try:
        logged, version = logged_study_and_version(db)
    except sqlite3.DatabaseError as err:
        raise cannot_open(err, db) or StudyLogError(f"{db}: not a modlens study log ({err})") from None
    study = study or logged or StudyConfig()
    # A log of an older schema is opened to write (migrated) only once the detectors are known to load, so
    # a refusal leaves it as it was; any other is opened first, so a log that cannot be opened now (a full
    # disk, a file-size limit) says so before the models load (their loading may need files too)
    log = None if 0 < version < SCHEMA_VERSION else _open_to_write(db)
    unavailable: dict[str, str] = {}
    try:
        if detector_objects is None:
            configs = detector_configs(detectors, study)
            loaded = load_detectors(configs)
            loaded.require([c.key for c in configs] if detectors else ())  # the one rule of every command (README, "Exit codes")
            detector_objects, unavailable = loaded.detectors, loaded.unavailable
        if log is None:
            log = _open_to_write(db)
    except BaseException:
        for d in (detector_objects or {}).values():
            d.close()
        if log is not None:
            log.close()
        raise
    try:
        with log.transaction():
            det_ids = register(log, study, detector_objects)
        keys = one_key_per_version(det_ids)
        used = {k: detector_objects[k] for k in keys}
        for k in set(detector_objects) - set(keys):
            if all(detector_objects[k] is not d for d in used.values()):
                detector_objects[k].close()
        engine = Engine(audit_study(study, False, None), detectors=used)
        check_attacks(log)  # attacks logged before the report stopped loading models: their normalized forms join `pending`
        unchecked = unmade(log)  # what it could not make: said, not passed off as done
        pending = {k: pending_texts(log, det_ids[k]) for k in keys}
        errored: dict[str, set[str]] = {}  # the pending texts whose score is an error row, per key
        for k in keys:
            had = errored_texts(log, det_ids[k])
            errored[k] = {t for tid, t in pending[k] if tid in had}
        total = n_texts(log)
        tallies = {k: DetectorTally(f"{detector_objects[k].name}@{detector_objects[k].version}", total,
                                    total - len(pending[k])) for k in keys}
        try:
            asyncio.run(_drive(log, engine, {k: det_ids[k] for k in keys}, pending, tallies, chunk_size, progress,
                               on_chunk, errored))
        except (sqlite3.Error, LogUnwritable) as err:  # a full disk, a log made read-only, an I/O error, a lock
            failed = unwritable(err, db)
            if failed is None:
                raise
            # the tallies count the scores of committed chunks only
            n = sum(t.scored for t in tallies.values())
            raise failed.stopped(f"{n} scores of this rescore are in the log",
                                 ": it scores only what is still missing") from None
    finally:
        log.close()
    return RescoreResult(str(db), study.study_id, source, total, tallies, unavailable, time.perf_counter() - t0,
                         unchecked)


async def _drive(log: StudyLog, engine: Engine, det_ids: dict[str, int], pending: dict[str, list[tuple[int, str]]],
                 tallies: dict[str, DetectorTally], chunk_size: int, progress: bool,
                 on_chunk: Callable[[int], None] | None, errored: dict[str, set[str]]) -> None:
    """`errored`: per detector key, the pending texts whose score is an error row, which an answer replaces."""
    from tqdm import tqdm

    todo = {k: {tid for tid, _ in texts} for k, texts in pending.items()}
    texts = dict(sorted({tid: t for ts in pending.values() for tid, t in ts}.items()))
    n_pairs = sum(len(v) for v in todo.values())
    if progress:
        for k, tally in tallies.items():
            print(f"{k} ({tally.detector}): {len(todo[k])} of {tally.texts} texts to score", file=sys.stderr)
    bar = tqdm(total=n_pairs, desc="rescore", unit="score", disable=not progress, file=sys.stderr)
    done, ids = 0, list(texts)
    compute = LocalCompute(engine)
    try:
        for start in range(0, len(ids), max(1, chunk_size)):
            chunk = ids[start:start + chunk_size]
            work = {k: [texts[i] for i in chunk if i in todo[k]] for k in todo}
            work = {k: ts for k, ts in work.items() if ts}
            # the chunk pipeline's score step: each detector's batcher gets its texts at once, concurrently
            rows = await compute.score(work)
            record_results(log, det_ids, scores=rows)
            for t, k, r in rows:
                tallies[k].scored += 1
                tallies[k].errors += r.error is not None
                if tallies[k].first_error is None:
                    tallies[k].first_error = r.error
                tallies[k].replaced += r.error is None and t in errored[k]
            done += len(rows)
            bar.update(len(rows))
            if on_chunk:
                on_chunk(done)
    finally:
        bar.close()
        await engine.close()

