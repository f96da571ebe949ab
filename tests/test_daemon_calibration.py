"""Calibration items in the daemon: the study's gold comments and anchors are in the study log
after start (platform `study`, page = study id, labels from the study config), a restart adds
nothing, a rating on a gold key is accepted, bad gold is refused up front, and a rater who
fails the gold comments is flagged by the Table 11 rubric in `modlens report --format json`."""
from __future__ import annotations

import json
import sqlite3

import pytest

from modlens.cli import main as cli_main
from modlens.config import StudyConfigError
from modlens.daemon.app import create_app
from modlens.study.calibration import PLATFORM, SOURCE

from daemon_helpers import TOKEN, Client, comments_msg, connect, rating_msg, running_daemon, study

GOLD = [
    {"key": "gold-kind", "text": "Thank you, this explanation really helped me.", "expected": {"toxicity": "not toxic"}},
    {"key": "gold-insult", "text": "You are a stupid worthless idiot.",
     "expected": {"toxicity": "toxic", "respectfulness": "disrespectful"}},
    {"key": "gold-plain", "text": "The meeting moved to Thursday at noon.", "expected": {"toxicity": "not toxic"}},
]
# Table 1 answers (extreme anchor = toxic) giving each derived toxicity
ANSWERS = {"not toxic": ("less", "less"), "toxic": ("more", "same")}
WRONG = {"not toxic": "toxic", "toxic": "not toxic"}


def rows(db, sql, params=()):
    con = sqlite3.connect(db)
    try:
        return con.execute(sql, params).fetchall()
    finally:
        con.close()


def calibration_rows(db):
    return rows(db, "SELECT c.comment_id, c.comment_key, p.page_key, p.title, t.text FROM comments c "
                    "JOIN pages p USING (page_id) JOIN texts t USING (text_id) WHERE c.platform = ? ORDER BY c.comment_key",
                (PLATFORM,))


async def test_gold_and_anchors_are_logged_at_start_and_gold_rating_is_accepted(tmp_path):
    cfg = study(gold=GOLD)
    db = tmp_path / "study.sqlite"
    async with running_daemon(tmp_path, cfg) as (url, _app):
        # before any client connected: the items are already there
        logged = calibration_rows(db)
        assert [r[1] for r in logged] == ["anchor-extreme", "anchor-hard", "gold-insult", "gold-kind", "gold-plain"]
        assert {r[2] for r in logged} == {"test"} and {r[3] for r in logged} == {cfg.title}
        assert dict((r[1], r[4]) for r in logged)["gold-insult"] == GOLD[1]["text"]
        labels = rows(db, "SELECT c.comment_key, l.name, l.value FROM labels l JOIN comments c USING (comment_id) "
                          "WHERE l.source = ?", (SOURCE,))
        by_key: dict[str, dict[str, str]] = {}
        for key, name, value in labels:
            by_key.setdefault(key, {})[name] = value
        assert by_key["gold-insult"] == {"role": "gold", "expected.toxicity": "toxic", "expected.respectfulness": "disrespectful"}
        assert by_key["anchor-extreme"] == {"role": "anchor", "expected.toxicity": "toxic", "anchor_role": "extreme"}
        assert by_key["anchor-hard"]["anchor_role"] == "hard_to_say"

        async with connect(url) as ws:
            c = Client(ws)
            hello = await c.hello()
            # the extension learns the gold keys and texts, never the expected answers
            assert hello["study"]["gold"] == [{"key": g["key"], "text": g["text"]} for g in GOLD]
            ack = await c.request(rating_msg("cal-1", "gold-insult", platform=PLATFORM, anchors=("more", "same")),
                                  "rating_ok")
            assert ack["type"] == "rating_ok" and ack["derived_toxicity"] == "toxic" and not ack["duplicate"]
            # a key that is not a calibration item on platform `study` is still refused
            err = await c.request(rating_msg("cal-2", "gold-missing", platform=PLATFORM), "rating_ok")
            assert err["type"] == "error" and err["code"] == "unknown_comment"
    gold_id = dict((r[1], r[0]) for r in logged)["gold-insult"]
    assert rows(db, "SELECT comment_id, rater_id, derived_toxicity FROM ratings") == [(gold_id, "rater-1", "toxic")]

    # a restart re-uses the rows: same ids, no new comments, texts or labels
    before = rows(db, "SELECT (SELECT count(*) FROM comments), (SELECT count(*) FROM texts), (SELECT count(*) FROM labels), "
                      "(SELECT count(*) FROM pages)")
    async with running_daemon(tmp_path, cfg):
        pass
    assert calibration_rows(db) == logged
    assert rows(db, "SELECT (SELECT count(*) FROM comments), (SELECT count(*) FROM texts), (SELECT count(*) FROM labels), "
                    "(SELECT count(*) FROM pages)") == before


async def test_study_without_gold_logs_no_calibration_items(tmp_path):
    async with running_daemon(tmp_path, study()):
        pass
    assert calibration_rows(tmp_path / "study.sqlite") == []


@pytest.mark.parametrize("gold, message", [
    ([{"key": "g", "text": "x", "expected": {"toxicity": "very toxic"}}], "expected.toxicity = 'very toxic'"),
    ([{"key": "g", "text": "x", "expected": {"kindness": "kind"}}], "expected.kindness: unknown attribute"),
    ([{"key": "anchor-hard", "text": "x", "expected": {"toxicity": "toxic"}}], "keys used twice: ['anchor-hard']"),
    ([{"key": "g", "text": "x", "expected": {}}], "expected is empty"),
])
def test_bad_gold_is_refused_before_the_daemon_starts(tmp_path, gold, message):
    with pytest.raises(StudyConfigError, match="fix:") as err:
        create_app(study(gold=gold), tmp_path / "study.sqlite", TOKEN)
    assert message in str(err.value)
    assert not (tmp_path / "study.sqlite").exists()  # nothing was opened


async def _rate_all(url, rater, gold_answers, regular_keys):
    async with connect(url) as ws:
        c = Client(ws)
        await c.hello(rater=rater)
        n = 0
        for key, toxicity in gold_answers.items():
            n += 1
            ack = await c.request(rating_msg(f"{rater}-{n}", key, platform=PLATFORM, anchors=ANSWERS[toxicity],
                                             formality="formal", respectfulness="disrespectful",
                                             stereotypes="not present"), "rating_ok")
            assert ack["type"] == "rating_ok", ack
        for key in regular_keys:
            n += 1
            ack = await c.request(rating_msg(f"{rater}-{n}", key, anchors=("less", "less"), formality="formal",
                                             respectfulness="respectful", stereotypes="not present"), "rating_ok")
            assert ack["type"] == "rating_ok", ack


async def test_rater_failing_gold_is_flagged_in_the_report(tmp_path, capsys):
    regular = [(f"k{i}", f"an ordinary remark number {i}") for i in range(4)]
    async with running_daemon(tmp_path, study(gold=GOLD)) as (url, _app):
        async with connect(url) as ws:
            c = Client(ws)
            await c.hello(rater="feeder")
            await c.request(comments_msg("page-1", regular), "comments_ok")
            await c.until(lambda m: m["type"] == "scores")
        right = {g["key"]: g["expected"]["toxicity"] for g in GOLD}
        await _rate_all(url, "careful", right, [k for k, _ in regular])
        await _rate_all(url, "careless", {k: WRONG[v] for k, v in right.items()}, [k for k, _ in regular])

    assert cli_main(["report", "--db", str(tmp_path / "study.sqlite"), "--format", "json"]) == 0
    human = json.loads(capsys.readouterr().out)["sections"]["human"]
    raters = {r["rater_id"]: r for r in human["raters"]}
    assert raters["careful"]["n_gold"] == 3 and raters["careful"]["n_gold_wrong"] == 0
    assert raters["careful"]["tasks"] == ["approve, use"]
    # gold-insult also expects "disrespectful", which both gave; the toxicity answers are wrong
    assert raters["careless"]["n_gold"] == 3 and raters["careless"]["n_gold_wrong"] == 3
    assert raters["careless"]["tasks"] == ["reject"]
    assert human["excluded"]["gold comment (attention check)"] == 6
    assert human["excluded"]["rater task not used (Table 11)"] == 4  # the careless rater's regular ratings
    assert human["n_valid"] == 4


def test_serve_refuses_bad_gold_with_a_clear_message(tmp_path, capsys):
    cfg = tmp_path / "study.toml"
    cfg.write_text('study_id = "bad"\n[[gold]]\nkey = "g1"\ntext = "hi"\nexpected = { toxicity = "very toxic" }\n')
    db = tmp_path / "log.sqlite"
    assert cli_main(["serve", "--config", str(cfg), "--db", str(db), "--port", "0"]) == 2
    err = capsys.readouterr().err
    assert "gold 'g1': expected.toxicity = 'very toxic'\n    fix: use one of" in err and "Traceback" not in err
    assert not db.exists()
