"""Scoring fused test cases (DUO, docs/FUSION.md "Scoring and the EFR report"): every detector
scores every part of every case in the log (the seed sentence, which is the oracle; each half
alone, the baseline; the fused case, the test) and the scores go into `case_scores`.

Inputs are rebuilt from the log alone: texts from `fused_cases` / `case_parts`, media from
`case_media` and the content-addressed `MediaStore`, so a log and its media folder are enough to
score cases made elsewhere. Resumable and idempotent: a detector version scores only the
(case, part) pairs it has no good score for (`studylog.records.media.scored_case_parts`); an error row is
retried by the next run. A failing detector batch becomes error rows and the run goes on.

Scores go through the engine (`Engine.score_media`: the batchers and worker threads the daemon's
comment media use), so a case part is scored exactly as a live comment with the same images.
"""
from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from typing import Any, Callable

from modlens.config import StudyConfig
from modlens.detectors.base import Detector
from modlens.engine import DetectorResult, Engine
from modlens.fusion.case import PARTS
from modlens.media import MediaBlob, MediaError, MediaInput
from modlens.media.answers import DEFAULT_OCR_ENGINE, ocr_failures, unscored_reason
from modlens.media.store import MediaStore
from modlens.studylog.records import media as media_records
from modlens.studylog.store import StudyLog

Progress = Callable[[str, int, int], None]
"""progress(detector key, pairs done, pairs to do), called after each batch is written"""

MAX_LISTED_ERRORS = 20


@dataclass(frozen=True)
class _Media:
    media_id: int
    sha256: str
    kind: str
    path: str | None


@dataclass
class _Case:
    seed_text: str
    caption: str
    texts: dict[str, str] = field(default_factory=dict)               # part_a / part_b -> text
    media: dict[str, list[_Media]] = field(default_factory=dict)       # part -> media in order

    def text(self, part: str) -> str:
        return {"seed": self.seed_text, "case": self.caption}.get(part) or self.texts.get(part, "")


class MissingMedia(MediaError):
    """A case's media file is not in the media folder (or no longer holds the logged bytes)."""


def _load_cases(log: StudyLog) -> dict[int, _Case]:
    cases = {r["case_id"]: _Case(r["seed_text"], r["caption"]) for r in log.query(
        "SELECT f.case_id, s.text AS seed_text, c.text AS caption FROM fused_cases f "
        "JOIN texts s ON s.text_id = f.seed_text_id JOIN texts c ON c.text_id = f.caption_text_id")}
    for r in log.query("SELECT p.case_id, p.part, t.text FROM case_parts p JOIN texts t ON t.text_id = p.text_id"):
        cases[r["case_id"]].texts[r["part"]] = r["text"]
    for r in log.query("SELECT cm.case_id, cm.part, m.media_id, m.sha256, m.kind, m.path FROM case_media cm "
                       "JOIN media m ON m.media_id = cm.media_id ORDER BY cm.case_id, cm.part, cm.position"):
        cases[r["case_id"]].media.setdefault(r["part"], []).append(_Media(r["media_id"], r["sha256"], r["kind"], r["path"]))
    return cases


def _blob(store: MediaStore, m: _Media, cache: dict[str, MediaBlob]) -> MediaBlob:
    if m.sha256 not in cache:
        try:
            blob = store.get(m.sha256)
        except MediaError:
            where = f" (logged as {m.path})" if m.path else " (only its hash was logged)"
            raise MissingMedia(
                f"{m.kind} {m.sha256[:12]}…{where} is not in the media folder {store.root}: pass --media-dir "
                "pointing at the folder `modlens fuse` wrote the case media to, or regenerate the cases") from None
        if blob.sha256 != m.sha256:
            raise MissingMedia(f"{store.root}/{m.path or m.sha256[:12]} no longer holds the logged bytes "
                               f"({m.sha256[:12]}…): restore the file or regenerate the cases")
        cache[m.sha256] = blob
    return cache[m.sha256]


def _input(case: _Case, part: str, store: MediaStore, cache: dict[str, MediaBlob]) -> MediaInput:
    """The part as the detector sees it; the seed is the sentence alone, with no media."""
    media = () if part == "seed" else tuple(_blob(store, m, cache) for m in case.media.get(part, []))
    return MediaInput(case.text(part), media)


@dataclass
class _Tally:
    detector: str
    pending: int
    scored: int = 0
    errors: int = 0
    not_scored_locally: int = 0
    ocr_rows: int = 0
    asr_rows: int = 0
    first_error: str | None = None  # the first error row this run wrote, in the order it scored the parts

    def to_dict(self) -> dict[str, Any]:
        return {"detector": self.detector, "pending": self.pending, "scored": self.scored, "errors": self.errors,
                "first_error": self.first_error, "not_scored_locally": self.not_scored_locally,
                "ocr_rows": self.ocr_rows, "asr_rows": self.asr_rows}


def _row(detector_id: int, r: DetectorResult) -> media_records.ScoreRow:
    """One case_scores row from the engine's answer; no answer and no reason is an error (retried)."""
    details = dict(r.details or {})
    if r.labels is None:
        failed = ocr_failures(details)
        if r.error is not None and r.error.startswith("bad answer"):  # labels without the toxicity label
            error: str | None = r.error
        elif failed:
            error = str(details.get("reason") or f"OCR failed: {failed[0]}")
        elif unscored_reason(None, details):
            error = None
        else:
            error = "missing: the detector gave no answer for this input"
        return (detector_id, None, None, r.latency_ms, error, details)
    return (detector_id, dict(r.labels), r.toxicity, r.latency_ms, None, details)


def score_cases(log: StudyLog, detectors: dict[str, Detector], store: MediaStore, *, batch_size: int = 16,
                progress: Progress | None = None) -> dict[str, Any]:
    """Score every (case, part) each detector version has not scored yet; returns a summary:
    `cases`, per detector key `{detector, pending, scored, errors, first_error, not_scored_locally, ocr_rows,
    asr_rows}`,
    `n_errors`, and the first 20 lines of `errors`, which says every error row counted (a line per
    missing media part, and per distinct error a detector answered with, with its count). The
    detectors stay open (they are the caller's)."""
    return asyncio.run(_score_cases(log, detectors, store, batch_size, progress))


async def _score_cases(log: StudyLog, detectors: dict[str, Detector], store: MediaStore, batch_size: int,
                       progress: Progress | None) -> dict[str, Any]:
    cases = _load_cases(log)
    media_ids = {m.sha256: m.media_id for c in cases.values() for ms in c.media.values() for m in ms}
    tallies: dict[str, _Tally] = {}
    messages: list[str] = []
    seen_ids: set[int] = set()
    engine = Engine(StudyConfig(normalizer={"enabled": False}, perturbation={"enabled": False}), detectors=detectors)
    try:
        for key, det in detectors.items():
            with log.transaction():
                detector_id = log.ensure_detector(det.name, det.version, det.toxicity_label, det.threshold, det.config())
            if detector_id in seen_ids:  # two keys naming one detector version would score everything twice
                continue
            seen_ids.add(detector_id)
            done = media_records.scored_case_parts(log, detector_id)
            todo = [(cid, part) for cid in sorted(cases) for part in PARTS if (cid, part) not in done]
            tally = tallies[key] = _Tally(f"{det.name}@{det.version}", len(todo))
            size = max(1, min(batch_size, det.max_batch))
            for start in range(0, len(todo), size):
                rows, ocr, asr = await _score_batch(engine, key, detector_id, cases, todo[start:start + size], store,
                                                    media_ids, tally, messages)
                with log.transaction():
                    media_records.add_case_scores_many(log, rows)
                    for media_id, entry in ocr:
                        media_records.add_ocr(log, media_id, str(entry.get("engine") or DEFAULT_OCR_ENGINE),
                                           str(entry.get("version", "")), str(entry.get("text", "")),
                                           entry.get("confidence"))
                    for media_id, entry in asr:
                        media_records.add_asr(log, media_id, str(entry["engine"]), str(entry.get("version", "")),
                                           str(entry.get("text", "")), entry.get("confidence"))
                tally.ocr_rows += len(ocr)
                tally.asr_rows += len(asr)
                if progress is not None:
                    progress(key, min(start + size, len(todo)), len(todo))
    finally:
        await engine.close(detectors=False)
    return {"cases": len(cases), "detectors": {k: t.to_dict() for k, t in tallies.items()},
            "errors": messages[:MAX_LISTED_ERRORS], "n_errors": sum(t.errors for t in tallies.values())}


async def _score_batch(engine: Engine, key: str, detector_id: int, cases: dict[int, _Case],
                       batch: list[tuple[int, str]], store: MediaStore, media_ids: dict[str, int], tally: _Tally,
                       messages: list[str]) -> tuple[list[tuple[int, str, media_records.ScoreRow]],
                                                     list[tuple[int, dict[str, Any]]],
                                                     list[tuple[int, dict[str, Any]]]]:
    rows: list[tuple[int, str, media_records.ScoreRow]] = []
    ready: list[tuple[int, str, MediaInput]] = []
    cache: dict[str, MediaBlob] = {}
    for cid, part in batch:
        try:
            ready.append((cid, part, _input(cases[cid], part, store, cache)))
        except MediaError as err:  # this part cannot be shown to any detector: say which file and how to fix
            rows.append((cid, part, (detector_id, None, None, None, str(err), {})))
            messages.append(f"case {cid} {part}: {err}")
    answers = [r[key] for r in await engine.score_media([inp for _, _, inp in ready], only=[key])] if ready else []
    # every error row of the detector's answers (a call that raised: its error on every input of the call;
    # a failed OCR read, no answer, a bad answer), one line per distinct error: the list says what
    # `errors` counts, the missing media files above included
    failed: dict[str, int] = {}
    ocr: list[tuple[int, dict[str, Any]]] = []
    asr: list[tuple[int, dict[str, Any]]] = []  # transcripts (the asr detector), logged like OCR text
    for (cid, part, _), r in zip(ready, answers):
        if r.details is None:  # no answer at all: the call failed (a detector failure costs this batch, never the run)
            row: media_records.ScoreRow = (detector_id, None, None, None, r.error, {})
        else:
            row = _row(detector_id, r)
            for entry in r.details.get("ocr") or []:  # what was read, not the reads that failed
                if isinstance(entry, dict) and entry.get("sha256") in media_ids and not entry.get("error"):
                    ocr.append((media_ids[entry["sha256"]], entry))
            for entry in r.details.get("asr") or []:
                if isinstance(entry, dict) and entry.get("sha256") in media_ids and not entry.get("error"):
                    asr.append((media_ids[entry["sha256"]], entry))
        rows.append((cid, part, row))
        if row[4] is not None:
            failed[row[4]] = failed.get(row[4], 0) + 1
    messages += [f"{tally.detector} on {n} input{'s' * (n != 1)}: {error}" for error, n in failed.items()]
    for _, _, score in sorted(rows, key=lambda r: (r[0], PARTS.index(r[1]))):  # in the order scored
        if score[4] is not None:  # error
            tally.errors += 1
            tally.first_error = tally.first_error or score[4]
        elif unscored_reason(score[1], score[5]):  # media it cannot read here, with the reason
            tally.not_scored_locally += 1
        else:
            tally.scored += 1
    return rows, ocr, asr
