"""`modlens rescore`: a log where two participants scored with different detectors gets every
text scored by both, exactly once; an interrupted rescore resumes without duplicates or gaps;
errors are retried; bad input fails clearly, before anything is written."""
from __future__ import annotations

import asyncio
import json
import sqlite3

import pytest

from modlens.audit.rescore import UnknownDetector, run_rescore
from modlens.services.detectors import DetectorsNotLoaded
from modlens.cli import main
from modlens.config import DetectorConfig, StudyConfig
from modlens.detectors.base import Detector
from modlens.engine import Engine
from modlens.rows import Variant
from modlens.services.detectors import load_detectors
from modlens.services.recording import record_normalization, record_scores, register, score_rows
from modlens.studylog.store import LogWriter

STUDY = StudyConfig(study_id="pilot", detectors=[DetectorConfig(name="profanity-check"),
                                                 DetectorConfig(name="minilm-toxicity")])
COMMENTS = {  # key -> text; c3..c5 are seen by both participants
    "c1": "you are a stupid idiot", "c2": "have a nice day", "c3": "what a dumb take, moron",
    "c4": "thanks for sharing this", "c5": "st*pid idiooot", "c6": "I disagree, but fair point",
    "c7": "get lost, loser",
}
PARTICIPANTS = {"alice": ("profanity-check", ["c1", "c2", "c3", "c4", "c5"]),
                "bob": ("minilm-toxicity", ["c3", "c4", "c5", "c6", "c7"])}


@pytest.fixture(scope="module")
def detectors():
    loaded = load_detectors(STUDY.detectors)
    assert set(loaded.detectors) == {"profanity-check", "minilm-toxicity"}, loaded.warnings()
    yield loaded.detectors
    loaded.close()


async def _participant(db, rater: str, key: str, comment_keys: list[str], detector: Detector) -> None:
    """What a participant's daemon writes, through the single writer: rater, session, comments,
    the scores of the one detector this participant's daemon had, a normalization, a variant, ratings."""
    study = STUDY.model_copy(update={"perturbation": STUDY.perturbation.model_copy(update={"enabled": False})})
    engine = Engine(study, detectors={key: detector})
    writer = LogWriter(db)
    await writer.start()
    try:
        det_ids = await writer.submit(lambda lg: register(lg, STUDY, {key: detector}))
        await writer.submit(lambda lg: lg.ensure_rater("pilot", rater, "2026-01-01T00:00:00Z"))
        await writer.submit(lambda lg: lg.start_session(f"s-{rater}", "pilot", rater, "extension", "1", 1))
        page = await writer.submit(lambda lg: lg.ensure_page("youtube", "v1", None, None))
        texts = [COMMENTS[k] for k in comment_keys]
        normalized = [engine.normalize(t) for t in texts]
        variant = Variant(f"{texts[0]}!!!", "repeat_char", {"n": 3}, 0, [(0, 1)])
        all_texts = [*texts, *(n.text for n in normalized), variant.text]
        scores = await engine.score(all_texts)

        def write(lg):
            for i, (k, t, n) in enumerate(zip(comment_keys, texts, normalized)):
                cid = lg.add_comment("youtube", k, page, t)
                lg.add_sighting(cid, f"s-{rater}")
                record_normalization(lg, t, n)
                lg.add_rating("pilot", rater, f"{rater}-{i}", f"s-{rater}", cid, {"toxicity": "toxic"}, None, "toxic",
                              False, 1000)
                if i == 0:
                    lg.add_variant(cid, variant)
            record_scores(lg, det_ids, score_rows(all_texts, scores))
        await writer.submit(write)
    finally:
        await writer.stop()
        for r in engine.runners.values():  # the detectors are shared by the module: keep them open
            await r.batcher.close()


@pytest.fixture()
def merged_log(tmp_path, detectors):
    db = tmp_path / "study.sqlite"
    for rater, (key, keys) in PARTICIPANTS.items():
        asyncio.run(_participant(db, rater, key, keys, detectors[key]))
    return db


def _scores(db) -> dict[str, dict[str, int]]:
    """detector name -> {text: number of score rows without error}"""
    conn = sqlite3.connect(db)
    try:
        texts = [r[0] for r in conn.execute(
            "SELECT t.text FROM texts t WHERE t.text_id IN (SELECT text_id FROM comments UNION "
            "SELECT text_id FROM variants UNION SELECT result_text_id FROM normalizations)")]
        out = {}
        for (name,) in conn.execute("SELECT name FROM detectors"):
            rows = dict(conn.execute(
                "SELECT t.text, count(*) FROM scores s JOIN texts t USING (text_id) JOIN detectors d USING (detector_id) "
                "WHERE d.name = ? AND s.error IS NULL GROUP BY t.text", (name,)).fetchall())
            out[name] = {t: rows.get(t, 0) for t in texts}
        return out
    finally:
        conn.close()


class Counting(Detector):
    """Delegates to a real detector and remembers every text it was asked to score."""

    def __init__(self, inner: Detector, fail_after: int | None = None):
        self.inner, self.seen, self.fail_after, self.calls = inner, [], fail_after, 0
        self.name, self.version, self.labels = inner.name, inner.version, inner.labels
        self.toxicity_label, self.threshold, self.max_batch = inner.toxicity_label, inner.threshold, inner.max_batch

    def score(self, texts):
        self.calls += 1
        if self.fail_after is not None and self.calls > self.fail_after:
            raise RuntimeError("model crashed")
        self.seen += list(texts)
        return self.inner.score(texts)

    def config(self):
        return self.inner.config()


def test_the_log_starts_with_gaps(merged_log):
    scores = _scores(merged_log)
    assert scores["profanity-check"][COMMENTS["c7"]] == 0 and scores["minilm-toxicity"][COMMENTS["c1"]] == 0
    assert scores["profanity-check"][COMMENTS["c3"]] == 1 and scores["minilm-toxicity"][COMMENTS["c3"]] == 1
    assert len(scores["profanity-check"]) > len(COMMENTS)  # normalized forms and a variant are in the log too


def test_rescore_fills_every_gap_exactly_once(merged_log, detectors):
    before = _scores(merged_log)
    counting = {k: Counting(d) for k, d in detectors.items()}
    result = run_rescore(merged_log, detector_objects=counting, progress=False)
    after = _scores(merged_log)
    for name, per_text in after.items():
        assert set(per_text.values()) == {1}, (name, per_text)  # every text, once
        missing = [t for t, n in before[name].items() if n == 0]
        assert sorted(counting[name].seen) == sorted(missing)  # only the gaps were scored, each once
        assert result.detectors[name].scored == len(missing) and result.detectors[name].errors == 0
        assert result.detectors[name].already == result.texts - len(missing)
    again = run_rescore(merged_log, detector_objects={k: Counting(d) for k, d in detectors.items()}, progress=False)
    assert all(t.scored == 0 for t in again.detectors.values())


def test_default_detectors_are_the_logged_study_s_and_the_cli_prints_counts(merged_log, capsys):
    assert main(["rescore", str(merged_log), "--quiet"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["study_id"] == "pilot" and out["detectors_from"] == "study log"
    assert set(out["detectors"]) == {"profanity-check", "minilm-toxicity"}
    assert all(set(per_text.values()) == {1} for per_text in _scores(merged_log).values())


def test_interrupted_rescore_resumes_without_duplicates_or_gaps(merged_log, detectors):
    before = _scores(merged_log)
    first = {k: Counting(d) for k, d in detectors.items()}

    def stop(n_done):
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        run_rescore(merged_log, detector_objects=first, chunk_size=2, progress=False, on_chunk=stop)
    middle = _scores(merged_log)
    assert 0 < sum(n for per in middle.values() for n in per.values()) - \
        sum(n for per in before.values() for n in per.values()) <= 4  # one chunk of 2 texts, both detectors at most
    second = {k: Counting(d) for k, d in detectors.items()}
    run_rescore(merged_log, detector_objects=second, chunk_size=2, progress=False)
    for name, per_text in _scores(merged_log).items():
        assert set(per_text.values()) == {1}
        missing = [t for t, n in before[name].items() if n == 0]
        assert sorted(first[name].seen + second[name].seen) == sorted(missing)  # nothing scored twice


def test_errors_are_retried_by_the_next_run(merged_log, detectors):
    flaky = {"minilm-toxicity": Counting(detectors["minilm-toxicity"], fail_after=1)}
    result = run_rescore(merged_log, detector_objects=flaky, chunk_size=2, progress=False)
    tally = result.detectors["minilm-toxicity"]
    assert tally.errors > 0 and tally.scored > tally.errors
    retry = run_rescore(merged_log, detector_objects={"minilm-toxicity": Counting(detectors["minilm-toxicity"])},
                        progress=False)
    assert retry.detectors["minilm-toxicity"].scored == tally.errors
    assert set(_scores(merged_log)["minilm-toxicity"].values()) == {1}


def test_errors_are_clear_and_write_nothing(merged_log, tmp_path, capsys, monkeypatch):
    before = _scores(merged_log)
    assert main(["rescore", str(tmp_path / "nope.sqlite")]) == 3
    assert "no study log at" in capsys.readouterr().err and not (tmp_path / "nope.sqlite").exists()
    assert main(["rescore", str(merged_log), "--detectors", "minilm-toxicty"]) == 2
    err = capsys.readouterr().err
    assert "unknown detector 'minilm-toxicty'" in err and "did you mean minilm-toxicity" in err
    monkeypatch.delenv("PERSPECTIVE_API_KEY", raising=False)
    assert main(["rescore", str(merged_log), "--detectors", "profanity-check", "perspective"]) == 1
    err = capsys.readouterr().err
    assert "detector perspective cannot load" in err and "PERSPECTIVE_API_KEY" in err
    with pytest.raises(UnknownDetector):
        run_rescore(merged_log, detectors=["profanity-chek"], progress=False)
    with pytest.raises(DetectorsNotLoaded):
        run_rescore(merged_log, detectors=["perspective"], progress=False)
    assert _scores(merged_log) == before
    (tmp_path / "junk.sqlite").write_text("not a database")
    assert main(["rescore", str(tmp_path / "junk.sqlite")]) == 1
    assert "not a modlens study log" in capsys.readouterr().err


def test_a_study_config_adds_its_detectors(merged_log, detectors, tmp_path):
    """A detector added to the study later: --config names it; scores of the others stay as they are."""
    only_new = StudyConfig(study_id="pilot", detectors=[DetectorConfig(name="minilm-toxicity")])
    result = run_rescore(merged_log, study=only_new, progress=False,
                         detector_objects={"minilm-toxicity": Counting(detectors["minilm-toxicity"])})
    assert list(result.detectors) == ["minilm-toxicity"]
    scores = _scores(merged_log)
    assert set(scores["minilm-toxicity"].values()) == {1} and 0 in scores["profanity-check"].values()
