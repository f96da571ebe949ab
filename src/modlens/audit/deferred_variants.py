"""`modlens rescore --variants`: make the variants the daemon deferred (its live variant budget was
reached, `deferred_variants`), as the daemon would have: same generator settings (the study's
`perturbation`), same batched engine path, scored by every detector, recorded per comment and
marked done in the same transaction. Resumable: a rerun takes only what is still to do."""
from __future__ import annotations

import asyncio
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from modlens.chunks import StepError, record_results
from modlens.chunks.pipeline import count_errors
from modlens.chunks.steps import VARIANTS, generator_identity
from modlens.config import StudyConfig
from modlens.detectors.base import Detector
from modlens.engine import Engine
from modlens.services.detectors import load_detectors
from modlens.services.errors import SetupError
from modlens.services.recording import record_variants, register
from modlens.studylog.records.deferred import deferred_counts, mark_deferred_done, pending_deferred
from modlens.studylog.store import StudyLog


@dataclass
class DeferredResult:
    db: str
    comments: int      # deferred comments whose variants were made in this run
    variants: int
    failed: int        # generation failed: a step_errors row, the comment is done (as live)
    still_to_do: int
    seconds: float
    # the study's detectors that could not load here (key -> why): its variants have none of their scores
    unavailable: dict[str, str] = field(default_factory=dict)
    # per detector key whose scores of the variants include errors: {"scores": variant texts it scored,
    # "errors": of them those whose score is an error, "first": the first one}, as `AuditResult.score_errors`
    score_errors: dict[str, dict[str, Any]] = field(default_factory=dict)
    # the texts whose generation failed ("failed" counts comments), as `AuditResult.step_errors`:
    # {"variants": {"component": name@version, "errors": texts, "first": the first one's message}}
    step_errors: dict[str, dict[str, Any]] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def run_deferred_variants(db: str | Path, *, study: StudyConfig | None = None, chunk: int = 64,
                          detector_objects: dict[str, Detector] | None = None) -> DeferredResult:
    """Make the variants of every deferred comment in the log at `db`. `study`: default the
    log's own. Raises SetupError when it cannot start (no log, no generator, no detector that loads)."""
    from modlens.audit.rescore import LogNotFound, logged_study

    t0 = time.perf_counter()
    db = Path(db)
    if not db.is_file():
        raise LogNotFound(f"no study log at {db}: rescore works on what a log holds and never creates one")
    study = study or logged_study(db) or StudyConfig()  # read-only: a refusal below leaves the log as it was
    unavailable: dict[str, str] = {}
    if detector_objects is None:
        loaded = load_detectors(study.detectors)
        # none loads: variants made now would be marked done with no score, never made again
        loaded.require()
        detector_objects, unavailable = loaded.detectors, loaded.unavailable
    with StudyLog(db) as log:
        engine = Engine(study, detectors=detector_objects)
        if engine.generator is None:
            why = engine.component_errors.get("perturbation", "perturbation is off in the study")
            raise SetupError(f"no variant generator: {why}")
        with log.transaction():
            det_ids = register(log, study, engine.detectors)
        tally: dict[str, dict[str, Any]] = {}
        step_failed: dict[str, str] = {}  # text -> why its generation failed (its step_errors row)
        made, failed, n_variants = asyncio.run(_drive(log, engine, det_ids, study, chunk, tally, step_failed))
        left = deferred_counts(log)["to_do"]
    name, version = generator_identity(study.perturbation)
    steps = {VARIANTS: {"component": f"{name}@{version}", "errors": len(step_failed),
                        "first": next(iter(step_failed.values()))}} if step_failed else {}
    return DeferredResult(str(db), made, n_variants, failed, left, time.perf_counter() - t0, unavailable,
                          {k: t for k, t in tally.items() if t["errors"]}, steps)


def _count_scores(tally: dict[str, dict[str, Any]], good: dict[str, set[str]], failing: dict[str, set[str]],
                  variants: Any, scores: Any) -> None:
    """The variants' scores into `tally` (`chunks.pipeline.count_errors`), each text once per detector:
    a text with a good score (`good`: in the log before the chunk's records, or met before in the chunk)
    is not counted, its logged score staying good (an error never replaces it)."""
    rows = []
    for v, answers in zip(variants, scores):
        for key, r in answers.items():
            if v.text in good.setdefault(key, set()):
                continue
            if r.error is None:
                good[key].add(v.text)
            rows.append((v.text, key, r))
    count_errors(tally, rows, failing)


async def _drive(log: StudyLog, engine: Engine, det_ids: dict[str, int], study: StudyConfig,
                 chunk: int, tally: dict[str, dict[str, Any]], step_failed: dict[str, str]) -> tuple[int, int, int]:
    name, version = generator_identity(study.perturbation)
    done = failed = n_variants = 0
    after = 0
    failing: dict[str, set[str]] = {}
    try:
        while todo := pending_deferred(log, after=after, limit=max(1, chunk)):
            got = await engine.variants_scored([t for _, t in todo])
            with log.transaction():  # the variants and their "done" mark commit together
                # the variant texts the log holds a good score for, per detector (another comment's,
                # live or by an earlier run): an error now leaves that score, so it is no error of this run
                _, logged = log.seen_texts({v.text for vs in got.made.values() for v in vs}, list(det_ids.values()))
                good = {key: set(logged[det_id]) for key, det_id in det_ids.items()}
                if got.errors:
                    record_results(log, {}, errors=[StepError(t, VARIANTS, name, version, why)
                                                    for t, why in got.errors.items()])
                    for t, why in got.errors.items():
                        step_failed.setdefault(t, why)
                for cid, text in todo:
                    if text in got.errors:
                        failed += 1
                        continue
                    vs = got.made[text]
                    record_variants(log, cid, vs, detector_ids=det_ids, scores=got.scores_of(vs))
                    _count_scores(tally, good, failing, vs, got.scores_of(vs))
                    n_variants += len(vs)
                    done += 1
                mark_deferred_done(log, [cid for cid, _ in todo])
            after = todo[-1][0]
    finally:
        await engine.close(detectors=False)
    return done, failed, n_variants
