"""Scoring fused test cases (`audit/fused.py`) with real detectors on cases built here (Pillow
text cards, a WAV), and the report's EFR section checked against values computed in the test,
both straight from the detector and from the logged `case_scores` rows."""
from __future__ import annotations

import json
from collections import defaultdict
from typing import Sequence

import pytest
from fused_helpers import card, record, text_image, wav

from modlens.analysis.report import report_from_db
from modlens.audit.fused import score_cases
from modlens.detectors import registry
from modlens.detectors.base import Detector, LabelScores, MediaScore
from modlens.fusion.case import PARTS, FusedCase
from modlens.media import MediaBlob, MediaInput
from modlens.media.store import MediaStore
from modlens.studylog.store import StudyLog
from realtools import requires



def cases() -> list[FusedCase]:
    pig = FusedCase("abuse_hate", "A is/are B", "women", "are", "pigs", "women are pigs", "T+E", "women are 🐷", (),
                    MediaInput("women"), MediaInput("🐷"), {"emoji": "🐷"})
    sound = wav()
    spoken = FusedCase("abuse_hate", "A is/are B", "gays", "are", "idiots", "gays are idiots", "A+T", "gays are",
                       (sound,), MediaInput("gays"), MediaInput("", (sound,)), {"voice": "en"})
    bitches = text_image("abuse_hate", "women", "are", "bitches")
    again = FusedCase(**{**bitches.__dict__, "params": {"font_size": 40}})  # same seed sentence, another case
    return [bitches, again, text_image("abuse_hate", "immigrants", "are", "shit", image_half="a"), pig, spoken,
            text_image("sexual", "suck", "my", "dick"), text_image("spam", "cigarettes", ":", "call 555 0134")]


class CaptionNoAudio(Detector):
    """profanity-check on the text, and no answer for audio it cannot hear (what a media
    detector without speech-to-text reports)."""
    name, version, labels, toxicity_label = "caption-no-audio", "1", ("offensive",), "offensive"
    modalities = ("text", "image")

    def __init__(self) -> None:
        self.inner = registry.create("profanity-check")

    def score(self, texts: Sequence[str]) -> list[LabelScores | None]:
        return self.inner.score(texts)

    def score_media(self, inputs: Sequence[MediaInput]) -> list[MediaScore]:
        out = []
        for inp, labels in zip(inputs, self.score([i.text for i in inputs])):
            audio = inp.of_kind("audio")
            out.append(MediaScore(None, {"unscored_media": [{"sha256": a.sha256, "kind": "audio"} for a in audio]})
                       if audio else MediaScore(labels))
        return out


class FailsOnMedia(Detector):
    """A detector that crashes on any batch holding media (a broken image model)."""
    name, version, labels, toxicity_label = "fails-on-media", "1", ("offensive",), "offensive"

    def __init__(self) -> None:
        self.inner = registry.create("profanity-check")

    def score(self, texts: Sequence[str]) -> list[LabelScores | None]:
        return self.inner.score(texts)

    def score_media(self, inputs: Sequence[MediaInput]) -> list[MediaScore]:
        if any(i.media for i in inputs):
            raise RuntimeError("image model crashed")
        return super().score_media(inputs)


@pytest.fixture
def study(tmp_path):
    db, store = tmp_path / "fuse.sqlite", MediaStore(tmp_path / "media")
    log = StudyLog(db)
    made = cases()
    ids = [record(log, store, c) for c in made]
    yield db, log, store, dict(zip(ids, made))
    log.close()


def rows(log: StudyLog, sql: str = "") -> list[dict]:
    return log.query("SELECT s.*, d.name, d.threshold FROM case_scores s JOIN detectors d USING (detector_id) "
                     + sql + " ORDER BY s.case_id, s.part")


def efr_from_rows(log: StudyLog) -> dict[tuple[str, str, str], tuple[int, int]]:
    """(detector, content type, fusion) -> (errors, n), recomputed from case_scores and fused_cases."""
    info = {r["case_id"]: r for r in log.query("SELECT case_id, content_type, fusion, seed_text_id FROM fused_cases")}
    got: dict[tuple[str, int, str], float | None] = {}
    thr, first_seed = {}, {}
    for r in rows(log):
        unread = "unscored_media" in json.loads(r["details_json"])  # media the detector did not read: no test
        got[(r["name"], r["case_id"], r["part"])] = None if unread else r["toxicity"]
        thr[r["name"]] = r["threshold"]
    for (name, cid, part), tox in sorted(got.items(), key=lambda kv: kv[0][1]):
        key = (name, info[cid]["content_type"], info[cid]["seed_text_id"])
        if part == "seed" and tox is not None:
            first_seed.setdefault(key, tox >= thr[name])
    out: dict[tuple[str, str, str], list[int]] = defaultdict(lambda: [0, 0])
    for (name, cid, part), tox in got.items():
        c = info[cid]
        if part != "case" or tox is None or not first_seed.get((name, c["content_type"], c["seed_text_id"])):
            continue
        for fusion in (c["fusion"], "all"):
            out[(name, c["content_type"], fusion)][0] += tox < thr[name]
            out[(name, c["content_type"], fusion)][1] += 1
    return {k: (e, n) for k, (e, n) in out.items()}


def section_efr(report: dict) -> dict[tuple[str, str, str], tuple[int, int]]:
    s = report["sections"]["fusion"]
    return {(d["detector"], r["content_type"], r["fusion"]): (r["errors"], r["n"])
            for d in s["detectors"] for r in d["efr"] if r["n"]}


def test_every_part_scored_and_efr_matches_independent_computations(study):
    from profanity_check import predict_prob

    db, log, store, made = study
    summary = score_cases(log, {"prof": registry.create("profanity-check"), "noaudio": CaptionNoAudio()}, store,
                          batch_size=5)
    assert summary["cases"] == len(made) == 7
    assert {k: (t["pending"], t["scored"], t["errors"]) for k, t in summary["detectors"].items()} == {
        "prof": (28, 28, 0), "noaudio": (28, 26, 0)}
    assert summary["detectors"]["noaudio"]["not_scored_locally"] == 2  # the A+T case and its audio half
    assert len(rows(log)) == 2 * len(made) * len(PARTS)
    # the text-only detector saw only the caption beside the media, and says so
    case_rows = {(r["name"], r["case_id"]): r for r in rows(log, "WHERE s.part = 'case'")}
    for cid, c in made.items():
        assert ('"ignored_media":true' in case_rows[("profanity-check", cid)]["details_json"]) == bool(c.media)

    # 1. straight from the detector: seed and caption scored here, nothing read from the log
    direct: dict[tuple[str, str], list[int]] = defaultdict(lambda: [0, 0])
    by_seed: dict[str, float] = {}
    for c in made.values():
        seed_p, case_p = (float(p) for p in predict_prob([c.seed_text, c.caption]))
        by_seed.setdefault(c.seed_text, seed_p)
        if by_seed[c.seed_text] >= 0.5:
            for fusion in (c.fusion, "all"):
                direct[(c.content_type, fusion)][0] += case_p < 0.5
                direct[(c.content_type, fusion)][1] += 1
    report = report_from_db(db)
    got = section_efr(report)
    assert {k[1:]: v for k, v in got.items() if k[0] == "profanity-check"} == {k: tuple(v) for k, v in direct.items()}
    # 2. from the logged rows, for both detectors
    assert got == efr_from_rows(log)
    # the caption alone ("women are") misses the slur on the card; "suck my" is flagged on its own
    assert got[("profanity-check", "abuse_hate", "T+I")] == (2, 2)
    assert got[("profanity-check", "sexual", "T+I")] == (0, 1)

    s = report["sections"]["fusion"]
    prof = next(d for d in s["detectors"] if d["detector"] == "profanity-check")
    assert prof["text_only"] is True
    oracle = {r["content_type"]: (r["seeds"], r["toxic"]) for r in prof["oracle"]}
    assert oracle == {"abuse_hate": (4, 4), "sexual": (1, 1), "spam": (1, 0)}  # 5 abuse cases share 4 seeds
    spam = next(r for r in prof["efr"] if r["content_type"] == "spam" and r["fusion"] == "all")
    assert (spam["cases"], spam["seed_not_toxic"], spam["n"], spam["efr"]) == (1, 1, 0, None)
    abuse = next(r for r in prof["efr"] if (r["content_type"], r["fusion"]) == ("abuse_hate", "all"))
    assert abuse["ci"][0] <= abuse["efr"] <= abuse["ci"][1] and abuse["media_ignored"] == 4
    # baseline: the halves alone and the case, per cell, equal the rows' verdicts
    base = {(b["content_type"], b["fusion"]): b["parts"] for b in prof["baseline"]}
    ti = [cid for cid, c in made.items() if (c.content_type, c.fusion) == ("abuse_hate", "T+I")]
    for part in PARTS:
        flags = [r["toxicity"] >= 0.5 for r in rows(log, f"WHERE d.name = 'profanity-check' AND s.part = '{part}'")
                 if r["case_id"] in ti]
        assert (base[("abuse_hate", "T+I")][part]["n"], base[("abuse_hate", "T+I")][part]["toxic"]) == (
            len(flags), sum(flags))
    assert base[("abuse_hate", "T+I")]["seed"]["share"] == 1.0 and base[("abuse_hate", "T+I")]["part_b"]["share"] == 0.0


def test_media_a_detector_cannot_read_is_not_scored_locally_and_listed(study):
    db, log, store, made = study
    score_cases(log, {"noaudio": CaptionNoAudio()}, store)
    (spoken,) = [cid for cid, c in made.items() if c.fusion == "A+T"]
    unread = rows(log, "WHERE s.labels_json IS NULL")
    assert {(r["case_id"], r["part"], r["error"]) for r in unread} == {(spoken, "case", None), (spoken, "part_b", None)}
    s = report_from_db(db)["sections"]["fusion"]
    assert s["not_scored_locally"]["total"] == 2
    assert {(e["case_id"], e["part"], e["reason"]) for e in s["not_scored_locally"]["listed"]} == {
        (spoken, "case", "no local reader for audio"), (spoken, "part_b", "no local reader for audio")}
    (det,) = s["detectors"]
    cell = next(r for r in det["efr"] if r["fusion"] == "A+T")
    assert (cell["seed_toxic"], cell["not_scored_locally"], cell["n"], cell["errors"], cell["efr"]) == (1, 1, 0, 0, None)
    base = next(b for b in det["baseline"] if b["fusion"] == "A+T")["parts"]
    assert base["part_b"]["not_scored_locally"] == 1 and base["part_b"]["n"] == 0 and base["part_a"]["n"] == 1


def test_rerun_scores_nothing_new(study):
    _, log, store, _ = study
    dets = {"prof": registry.create("profanity-check")}
    score_cases(log, dets, store)
    before = rows(log)
    again = score_cases(log, dets, store)
    assert again["detectors"]["prof"]["pending"] == 0 and again["detectors"]["prof"]["scored"] == 0
    assert rows(log) == before  # same rows, same created_at: nothing rewritten
    # a second key for the same detector version is not a second detector
    twice = score_cases(log, {"a": dets["prof"], "b": registry.create("profanity-check")}, store)
    assert list(twice["detectors"]) == ["a"] and rows(log) == before


def test_a_failing_detector_is_recorded_per_row_and_the_run_goes_on(study):
    db, log, store, made = study
    progress: list[tuple[str, int, int]] = []
    summary = score_cases(log, {"broken": FailsOnMedia(), "prof": registry.create("profanity-check")}, store,
                          batch_size=4, progress=lambda *a: progress.append(a))
    assert progress[-1] == ("prof", 28, 28) and ("broken", 28, 28) in progress
    broken = rows(log, "WHERE d.name = 'fails-on-media'")
    # batches of 4 = one case's four parts: only the case without media (T+E) gets through
    no_media = {cid for cid, c in made.items() if not c.media}
    assert {r["case_id"] for r in broken if r["error"] is None} == no_media
    failed = [r for r in broken if r["error"] is not None]
    assert len(failed) == 4 * (len(made) - len(no_media)) == summary["detectors"]["broken"]["errors"]
    assert all(r["error"] == "RuntimeError: image model crashed" and r["toxicity"] is None for r in failed)
    assert all(r["error"] is None for r in rows(log, "WHERE d.name = 'profanity-check'"))
    assert summary["n_errors"] == len(failed) and "image model crashed" in summary["errors"][0]
    # failed rows are not errors found: the report counts them apart
    s = report_from_db(db)["sections"]["fusion"]
    det = next(d for d in s["detectors"] if d["detector"] == "fails-on-media")
    cell = next(r for r in det["efr"] if (r["content_type"], r["fusion"]) == ("abuse_hate", "T+I"))
    assert (cell["n"], cell["failed"] + cell["seed_unscored"]) == (0, 2)
    # the next run retries exactly the failed rows
    retry = score_cases(log, {"broken": FailsOnMedia()}, store)
    assert retry["detectors"]["broken"]["pending"] == len(failed)


def test_a_missing_media_file_gives_an_error_row_saying_which_and_how_to_fix(study):
    _, log, store, made = study
    gone = card("bitches")
    store.path(gone).unlink()
    summary = score_cases(log, {"prof": registry.create("profanity-check")}, store)
    errors = rows(log, "WHERE s.error IS NOT NULL")
    hit = {cid for cid, c in made.items() if gone in c.media}
    assert len(hit) == 2 and {(r["case_id"], r["part"]) for r in errors} == {(c, p) for c in hit for p in ("case", "part_b")}
    assert all(gone.sha256[:12] in r["error"] and "--media-dir" in r["error"] for r in errors)
    assert summary["detectors"]["prof"]["errors"] == 4 and summary["detectors"]["prof"]["scored"] == 24
    # put the file back: a rerun scores exactly those four
    store.put(gone)
    assert score_cases(log, {"prof": registry.create("profanity-check")}, store)["detectors"]["prof"]["scored"] == 4
    assert not rows(log, "WHERE s.error IS NOT NULL")


@requires("tesseract")
def test_ocr_pipeline_reads_the_card_and_logs_what_it_read(study):
    db, log, store, made = study
    # a PNG whose header is right but whose pixels are not: Tesseract fails on it
    broken = MediaBlob(b"\x89PNG\r\n\x1a\n" + b"not pixels" * 8, "image/png")
    bad = record(log, store, FusedCase("abuse_hate", "A is/are B", "women", "are", "bitches", "women are bitches",
                                       "T+I", "women are", (broken,), MediaInput("women"), MediaInput("", (broken,)),
                                       {"broken": True}))
    ocr = registry.create("ocr", text_detector="profanity-check")
    summary = score_cases(log, {"ocr": ocr, "prof": registry.create("profanity-check")}, store)
    assert summary["detectors"]["ocr"]["ocr_rows"] > 0
    read = {r["sha256"]: r for r in log.query(
        "SELECT m.sha256, t.text, o.engine, o.confidence FROM ocr_results o JOIN media m USING (media_id) "
        "JOIN texts t ON t.text_id = o.text_id")}
    slur = card("bitches")
    assert "bitches" in read[slur.sha256]["text"].lower() and read[slur.sha256]["confidence"] > 0.5
    assert read[slur.sha256]["engine"] == "tesseract" and broken.sha256 not in read  # a failed read is no text
    # the failed read is an error row (retried by the next run), on the two parts showing that image
    errors = rows(log, "WHERE s.error IS NOT NULL")
    assert {(r["case_id"], r["part"]) for r in errors} == {(bad, "case"), (bad, "part_b")}
    assert all("OCR failed" in r["error"] for r in errors) and summary["detectors"]["ocr"]["errors"] == 2
    got = section_efr(report_from_db(db))
    assert got == efr_from_rows(log)
    # caption + OCR text is the seed sentence again: the OCR pipeline catches what the text-only detector misses
    assert got[("profanity-check", "abuse_hate", "T+I")] == (3, 3)
    assert got[(ocr.name, "abuse_hate", "T+I")] == (0, 2)
    # OCR does not hear the A+T case's audio: scored on its caption, but not a test of the fusion
    s = report_from_db(db)["sections"]["fusion"]
    det = next(d for d in s["detectors"] if d["detector"] == ocr.name)
    cell = next(r for r in det["efr"] if r["fusion"] == "A+T")
    assert (cell["n"], cell["not_scored_locally"]) == (0, 1) and det["text_only"] is False
    (spoken,) = [cid for cid, c in made.items() if c.fusion == "A+T"]
    assert {(e["case_id"], e["part"]) for e in s["not_scored_locally"]["listed"] if e["detector"] == det["label"]} == {
        (spoken, "case"), (spoken, "part_b")}
