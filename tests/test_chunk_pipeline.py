"""The one chunk pipeline (`modlens.chunks`): the same items give the same rows whatever the sink
(the study log directly, or Parquet shards loaded by `modlens import`); a normalizer that fails
for one text is recorded and the audit goes on; fused cases are scored through the engine."""
from __future__ import annotations

import csv
import random
import sqlite3
from pathlib import Path
from typing import Any, Sequence

import pytest
from fused_helpers import record, text_image

from modlens.audit import run_audit
from modlens.audit.fused import score_cases
from modlens.chunks.parquet import import_parquet
from modlens.detectors import registry
from modlens.detectors.base import Detector, LabelScores, MediaScore
from modlens.engine import Engine
from modlens.media import MediaInput
from modlens.media.store import MediaStore
from modlens.studylog.store import StudyLog


WORDS = "you are an idiot great post thanks stupid nice hate love this trash fool damn moron kind loser".split()


def comments(path: Path, n: int) -> Path:
    rng = random.Random(7)
    with open(path, "w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(["text", "toxic", "platform"])
        for i in range(n):
            w.writerow([" ".join(rng.choice(WORDS) for _ in range(rng.randint(3, 10))) + f" #{i}",
                        rng.randint(0, 1), rng.choice(["reddit", "twitter"])])
    return path


def tables(db: Path) -> dict[str, list[tuple[Any, ...]]]:
    """Every row an audit writes, by content (ids and timestamps left out)."""
    con = sqlite3.connect(db)
    queries = {
        "comments": "SELECT c.platform, c.comment_key, t.text, p.page_key FROM comments c JOIN texts t USING (text_id) "
                    "JOIN pages p USING (page_id)",
        "labels": "SELECT c.comment_key, l.name, l.value, l.source FROM labels l JOIN comments c USING (comment_id)",
        "gold_labels": "SELECT s.source, s.definition, c.comment_key, g.value FROM gold_labels g "
                       "JOIN label_sets s USING (label_set_id) JOIN comments c USING (comment_id)",
        "scores": "SELECT t.text, d.name, d.version, s.toxicity, s.labels_json, s.error FROM scores s "
                  "JOIN texts t USING (text_id) JOIN detectors d USING (detector_id)",
        "normalizations": "SELECT a.text, n.normalizer, n.version, b.text, n.edits_json FROM normalizations n "
                          "JOIN texts a ON a.text_id = n.source_text_id JOIN texts b ON b.text_id = n.result_text_id",
        "variants": "SELECT c.comment_key, a.text, t.text, v.strategy, v.params_json, v.seed, v.positions_json, "
                    "v.target_detector FROM variants v JOIN comments c USING (comment_id) "
                    "JOIN texts t ON t.text_id = v.text_id JOIN texts a ON a.text_id = v.source_text_id",
        "step_errors": "SELECT t.text, e.step, e.component, e.version, e.message FROM step_errors e JOIN texts t USING (text_id)",
        "runs": "SELECT dataset, path, params_json, status, n_items, n_done FROM audit_runs",
        "run_items": "SELECT c.comment_key FROM run_items JOIN comments c USING (comment_id)",
    }
    try:
        return {name: sorted(con.execute(sql).fetchall(), key=repr) for name, sql in queries.items()}
    finally:
        con.close()


def test_local_engine_into_the_log_and_into_parquet_then_import_give_identical_rows(tmp_path):
    data = comments(tmp_path / "c.csv", 40)
    opts: dict[str, Any] = {"detectors": ["profanity-check"], "normalize": True, "perturb": ["homoglyph"],
                            "progress": False, "chunk_size": 16}
    direct = run_audit(str(data), db=tmp_path / "direct.sqlite", **opts)
    shards = run_audit(str(data), db=tmp_path / "unused.sqlite", out_parquet=tmp_path / "shards", **opts)
    assert not (tmp_path / "unused.sqlite").exists()
    assert (direct.n_items, direct.n_scored) == (shards.n_items, shards.n_scored) == (40, direct.n_scored)
    counts = import_parquet(tmp_path / "shards", tmp_path / "imported.sqlite")
    assert counts["items"] == 40 and counts["chunks"] == 3
    a, b = tables(tmp_path / "direct.sqlite"), tables(tmp_path / "imported.sqlite")
    assert a["variants"] and a["normalizations"] and a["gold_labels"] and len(a["run_items"]) == 40
    for name in a:
        assert a[name] == b[name], name
    # importing again adds nothing
    assert import_parquet(tmp_path / "shards", tmp_path / "imported.sqlite")["items"] == 0
    assert tables(tmp_path / "imported.sqlite") == b


class _Fragile:
    """A normalizer that raises on one text (a bug it has), and normalizes the others."""

    def __init__(self, inner: Any, bad: str) -> None:
        self.inner, self.bad = inner, bad
        self.name, self.version = inner.name, inner.version

    def normalize(self, text: str) -> Any:
        if text == self.bad:
            raise ValueError("cannot segment this text")
        return self.inner.normalize(text)


@pytest.mark.parametrize("sink", ["log", "parquet"])
def test_a_normalizer_failing_on_one_text_records_a_step_error_and_the_audit_finishes(tmp_path, monkeypatch, sink):
    from modlens.normalize import pipeline

    data = comments(tmp_path / "c.csv", 20)
    with open(data, newline="") as fh:
        bad = list(csv.DictReader(fh))[5]["text"]
    real = pipeline.build_normalizer
    monkeypatch.setattr(pipeline, "build_normalizer", lambda steps=None: _Fragile(real(steps), bad))
    db = tmp_path / "log.sqlite"
    opts: dict[str, Any] = {"detectors": ["profanity-check"], "normalize": True, "progress": False, "chunk_size": 8}
    if sink == "log":
        result = run_audit(str(data), db=db, **opts)
    else:
        result = run_audit(str(data), db=tmp_path / "unused.sqlite", out_parquet=tmp_path / "shards", **opts)
        import_parquet(tmp_path / "shards", db)
    assert result.n_items == 20
    rows = tables(db)
    assert len(rows["run_items"]) == 20 and rows["runs"][0][3] == "finished"
    normalizer = real(None)
    assert rows["step_errors"] == [(bad, "normalize", normalizer.name, normalizer.version,
                                    "ValueError: cannot segment this text")]
    normalized = {r[0] for r in rows["normalizations"]}
    assert bad not in normalized and len(normalized) == 19
    assert bad in {r[0] for r in rows["scores"]}  # the text itself is still scored


class _Reader(Detector):
    """A media detector that reads the text on images (an OCR reading without an engine name)."""
    name, version, labels, toxicity_label = "card-reader", "1", ("offensive",), "offensive"
    modalities = ("text", "image")

    def __init__(self) -> None:
        self.inner = registry.create("profanity-check")

    def score(self, texts: Sequence[str]) -> list[LabelScores | None]:
        return self.inner.score(texts)

    def score_media(self, inputs: Sequence[MediaInput]) -> list[MediaScore]:
        out = []
        for inp, labels in zip(inputs, self.score([i.text for i in inputs])):
            read = [{"sha256": m.sha256, "text": "read", "confidence": 90.0} for m in inp.of_kind("image")]
            out.append(MediaScore(labels, {"ocr": read} if read else {}))
        return out


def test_fused_cases_are_scored_through_the_engine_with_the_one_ocr_name(tmp_path, monkeypatch):
    calls: list[tuple[int, tuple[str, ...] | None]] = []
    real = Engine.score_media

    async def spy(self: Engine, inputs: Sequence[MediaInput], only: Sequence[str] | None = None) -> Any:
        calls.append((len(inputs), tuple(only) if only else None))
        return await real(self, inputs, only)

    monkeypatch.setattr(Engine, "score_media", spy)
    log, store = StudyLog(tmp_path / "fuse.sqlite"), MediaStore(tmp_path / "media")
    try:
        for case in (text_image("abuse_hate", "women", "are", "bitches"), text_image("spam", "cigarettes", ":", "call")):
            record(log, store, case)
        reader = _Reader()
        summary = score_cases(log, {"reader": reader}, store, batch_size=4)
        assert summary["detectors"]["reader"]["scored"] == 8
        assert calls == [(4, ("reader",)), (4, ("reader",))]
        engines = {r["engine"] for r in log.query("SELECT engine FROM ocr_results")}
        assert engines == {"tesseract"}  # the daemon's default OCR name (services/comment_media.py)
        reader.inner.score(["still open"])  # the caller's detector stays usable after the run
    finally:
        log.close()
