"""Blank and whitespace-only texts are not comments to judge: an audit logs them without a score,
counts them per reason, and the report leaves them out of every metric."""

import pytest

from modlens.analysis import labelled
from modlens.analysis.data import load
from modlens.analysis.sections.labelled import SECTION
from modlens.audit import run_audit
from modlens.audit.rescore import run_rescore
from modlens.datasets.base import blank_reason
from modlens.detectors.base import Detector
from csv_files import labelled_csv as _write

BLANKS = ["", "", "", "", "", "", "   ", "\t\n", "\u00a0", "\u200b \u200b"]  # 6 empty, 4 whitespace only


class Recording(Detector):
    """Scores by a fixed rule and keeps every text it was asked to score."""
    labels, toxicity_label = ("toxicity",), "toxicity"

    def __init__(self, name="rec"):
        self.name, self.version, self.seen = name, "test-1", []

    def score(self, texts):
        self.seen += list(texts)
        # a blank would score 0.456 here, as minilm-toxicity scored ""
        return [{"toxicity": 0.456 if not t.strip() else (0.9 if "bad" in t else 0.2)} for t in texts]


def _rows():
    """200 rows, 10 of them blank (every 20th), gold alternating; the blank rows are all toxic."""
    rows, blanks = [], iter(BLANKS)
    for i in range(200):
        if i % 20 == 7:
            rows.append((next(blanks), 1))
        else:
            rows.append((f"comment {i} {'bad' if i % 3 == 0 else 'fine'} words", int(i % 2 == 0)))
    return rows




def test_blank_reason():
    assert [blank_reason(t) for t in BLANKS].count("empty") == 6
    assert [blank_reason(t) for t in BLANKS].count("whitespace only") == 4
    assert blank_reason(" a ") is None and blank_reason("\u200bhi") is None


def test_blank_texts_are_skipped_counted_and_left_out_of_every_metric(tmp_path):
    rows = _rows()
    f = _write(tmp_path / "with_blanks.csv", rows)
    det, db = Recording(), tmp_path / "log.sqlite"
    res = run_audit(str(f), db=db, detector_objects={"rec": det}, progress=False)
    assert res.n_items == 200 and res.not_scored == {"empty": 6, "whitespace only": 4}
    assert res.to_dict()["not_scored"] == {"empty": 6, "whitespace only": 4}  # the audit's printed JSON
    assert any(n.startswith("10 blank texts not scored (empty 6, whitespace only 4)") for n in res.notes)
    assert not [t for t in det.seen if blank_reason(t)] and len(set(det.seen)) == 190
    data = load(db)
    assert len(data.comments) == 200  # logged, as read

    out = labelled.analyze(data)
    (src,) = out["sources"]
    kept = [(t, g) for t, g in rows if not blank_reason(t)]
    assert src["not_scored"] == {"empty": 6, "whitespace only": 4}
    assert src["n"] == 190 and src["positives"] == sum(g for _, g in kept)
    (d,) = src["detectors"]
    assert d["n"] == 190
    # every figure equals the same metric computed independently (scikit-learn) on the 190 texts alone
    from sklearn import metrics as sk

    scores = [0.9 if "bad" in t else 0.2 for t, _ in kept]
    golds = [g for _, g in kept]
    predicted = [int(x >= d["threshold"]) for x in scores]
    expect = {"accuracy": sk.accuracy_score(golds, predicted), "precision": sk.precision_score(golds, predicted),
              "recall": sk.recall_score(golds, predicted), "f1": sk.f1_score(golds, predicted),
              "roc_auc": sk.roc_auc_score(golds, scores), "pr_auc": sk.average_precision_score(golds, scores),
              "brier": sk.brier_score_loss(golds, scores)}
    for k, v in expect.items():
        assert d["metrics"][k]["value"] == pytest.approx(v, abs=1e-12), k
    html = SECTION.render(out)
    assert "10 labelled comments with a blank text not scored (empty: 6, whitespace only: 4)" in html


def test_a_second_audit_and_a_rescore_never_score_a_blank(tmp_path):
    f = _write(tmp_path / "with_blanks.csv", _rows())
    db = tmp_path / "log.sqlite"
    run_audit(str(f), db=db, detector_objects={"rec": Recording()}, progress=False, limit=100)
    again = Recording()
    res = run_audit(str(f), db=db, detector_objects={"rec": again}, progress=False)
    assert res.not_scored == {"empty": 6, "whitespace only": 4}
    assert not [t for t in again.seen if blank_reason(t)]
    other = Recording("other")
    run_rescore(db, detector_objects={"other": other}, progress=False)
    assert other.seen and not [t for t in other.seen if blank_reason(t)] and len(other.seen) == 190


async def test_the_live_daemon_logs_a_blank_comment_without_scoring_it(tmp_path):
    """A page with a whitespace-only comment: acknowledged and logged like the others, answered
    with no scores and why; the detector never sees it, the log holds no score for it."""
    import sqlite3

    from daemon_helpers import Client, WordListDetector, comments_msg, connect, running_daemon, study

    det = WordListDetector()
    seen = []
    score = det.score
    det.score = lambda texts: (seen.extend(texts), score(texts))[1]
    async with running_daemon(tmp_path, study(), detectors={"wordlist": det}) as (url, _):
        async with connect(url) as ws:
            c = Client(ws)
            await c.hello()
            await c.send(comments_msg("page", [("k1", "you stupid idiot"), ("k2", " \n\u200b "), ("k3", "nice")]))
            ok = await c.until(lambda m: m.get("id") == "page" and m["type"] == "comments_ok")
            scores = await c.until(lambda m: m.get("id") == "page" and m["type"] == "scores")
    assert ok["accepted"] == 3 and set(ok["comment_ids"]) == {"k1", "k2", "k3"}
    by = {it["key"]: it for it in scores["items"]}
    assert by["k2"]["detectors"] == {} and by["k2"]["not_scored"] == "whitespace only"
    assert by["k1"]["detectors"]["wordlist"]["toxicity"] > 0 and by["k1"]["not_scored"] is None
    assert not [t for t in seen if blank_reason(t)] and sorted(seen) == ["nice", "you stupid idiot"]
    con = sqlite3.connect(tmp_path / "study.sqlite")
    try:
        scored = {k for (k,) in con.execute("SELECT c.comment_key FROM comments c JOIN scores s ON s.text_id = c.text_id")}
    finally:
        con.close()
    assert scored == {"k1", "k3"}
