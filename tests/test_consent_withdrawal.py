"""The consent text says a participant may withdraw at any time: withdrawing in the extension tells the
daemon (hello's `consent_withdrawn_at`), the log records it (`consents.withdrawn_at`) and `modlens export
--bundle` leaves that rater's data out and says so; a later consent counts again. A real daemon, the real
log, the real command line."""
from __future__ import annotations

from pathlib import Path

import pyarrow  # noqa: F401  (read_bundle's tables)
import pytest

from daemon_helpers import TOKEN, Client, comments_msg, connect, consent_sha256, rating_msg, running_daemon, study
from log_helpers import rows
from modlens.cli import main as cli_main
from modlens.exchange.bundle import read_bundle
from modlens.studylog.codec import now_iso

AGREED = "2025-03-01T10:00:00.000Z"
WITHDRAWN = "2025-03-02T10:00:00.000Z"
AGAIN = "2025-03-03T10:00:00.000Z"


async def consent_and_collect(url: str, sha: str, rater: str, items: list[tuple[str, str]], rate: str | None) -> None:
    async with connect(url) as ws:
        c = Client(ws)
        await c.hello(rater, study_id="test", consent_at=AGREED, consent_sha256=sha)
        ack = await c.request(comments_msg(f"c-{rater}", items), "comments_ok")
        assert ack["type"] == "comments_ok", ack
        if rate:
            ok = await c.request(rating_msg(f"r-{rater}", rate), "rating_ok")
            assert ok["type"] == "rating_ok", ok


async def withdraw(tmp_path, config, rater: str, at: str = WITHDRAWN) -> None:
    """`rater` withdraws their consent to the study at `at`, as the extension's hello says it to a daemon."""
    async with running_daemon(tmp_path, config) as (url, _app):
        async with connect(url) as ws:
            await Client(ws).hello(rater, study_id="test", consent_withdrawn_at=at)


def bundled(path) -> tuple[list[str], list[str], list[str]]:
    """(rater ids, rated comment keys, comment keys) the bundle carries."""
    b = read_bundle(path)
    try:
        keys = {r["comment_id"]: r["comment_key"] for r in b.table("comments").to_pylist()}
        return (b.manifest["rater_ids"], sorted(keys[r["comment_id"]] for r in b.table("ratings").to_pylist()),
                sorted(keys.values()))
    finally:
        b.close()


def exported_after_withdrawal(db: Path, capsys) -> tuple[Path, str]:
    """`modlens export --bundle` of the log beside it, to after-withdrawal.bundle: (the bundle, what export said)."""
    out = db.with_name("after-withdrawal.bundle")
    capsys.readouterr()
    assert cli_main(["export", "--db", str(db), "--bundle", str(out)]) == 0
    return out, capsys.readouterr().out


async def test_a_withdrawn_rater_is_recorded_and_left_out_of_the_bundle(tmp_path, capsys):
    db = tmp_path / "study.sqlite"
    async with running_daemon(tmp_path, study(consent_text="You may withdraw at any time.")) as (url, app):
        sha = consent_sha256(app)
        await consent_and_collect(url, sha, "rater-1", [("k1", "only rater one saw this"), ("shared", "both saw it")], "k1")
        await consent_and_collect(url, sha, "rater-2", [("shared", "both saw it")], None)
        withdrawn = now_iso()  # the real clock, as the daemon stamps the data: a withdrawal after it
        async with connect(url) as ws:  # the participant withdrew in the extension: its next hello says so
            await Client(ws).hello("rater-1", study_id="test", consent_withdrawn_at=withdrawn)
        async with connect(url) as ws:  # said again (the extension repeats it until a new consent): one withdrawal
            await Client(ws).hello("rater-1", study_id="test", consent_withdrawn_at=now_iso())
        async with connect(url) as ws:  # an earlier consent replayed after the withdrawal does not revive it
            await Client(ws).hello("rater-1", study_id="test", consent_at=AGREED, consent_sha256=sha)

    assert rows(db, "SELECT rater_id, consented_at, withdrawn_at FROM consents ORDER BY rater_id") == [
        ("rater-1", AGREED, withdrawn), ("rater-2", AGREED, None)]
    out, said = exported_after_withdrawal(db, capsys)
    assert "rater(s) rater-2," in said
    assert "left out 1 rater who withdrew consent: rater-1 (withdrew " + withdrawn + ")" in said
    # rater-1's rating and the comment only rater-1's sessions saw stay behind; rater-2 saw 'shared'
    assert bundled(out) == (["rater-2"], [], ["shared"])
    assert cli_main(["export", "--db", str(db), "--bundle", str(tmp_path / "shown.bundle"), "--show"]) == 0
    assert "left out 1 rater who withdrew consent: rater-1" in capsys.readouterr().out

    # a later consent to the study counts again from then on, recorded as a new consent beside the withdrawn
    # one: what rater-1 recorded before the withdrawal stays behind (k1, their rating of it)
    again_at = now_iso()
    async with running_daemon(tmp_path, study(consent_text="You may withdraw at any time.")) as (url, app):
        async with connect(url) as ws:
            await Client(ws).hello("rater-1", study_id="test", consent_at=again_at, consent_sha256=consent_sha256(app))
    assert rows(db, "SELECT consented_at, withdrawn_at FROM consents WHERE rater_id = 'rater-1' ORDER BY consent_id") == [
        (AGREED, withdrawn), (again_at, None)]
    again = tmp_path / "after-new-consent.bundle"
    assert cli_main(["export", "--db", str(db), "--bundle", str(again)]) == 0
    said = capsys.readouterr().out
    # the sessions of the three hellos while withdrawn (the withdrawal, it said again, an old consent replayed)
    # came before the new consent: they stay behind too
    assert ("left out what 1 rater who withdrew and agreed again recorded before agreeing again: rater-1 "
            f"(4 sessions, 1 rating; withdrew {withdrawn}); a consent given again counts from then on") in said, said
    assert "left out 1 rater who withdrew consent" not in said, said
    assert bundled(again) == (["rater-1", "rater-2"], [], ["shared"])


async def test_a_withdrawal_names_its_study_and_is_no_consent(tmp_path):
    async with running_daemon(tmp_path, study()) as (url, app):
        async with connect(url) as ws:
            c = Client(ws)
            no_study = await c.request({"type": "hello", "id": "h1", "protocol": 1, "client": "test", "token": TOKEN,
                                        "rater_id": "rater-1", "consent_withdrawn_at": WITHDRAWN})
            assert (no_study["type"], no_study["code"]) == ("error", "invalid_fields")
            assert "consent_withdrawn_at" in no_study["message"]
        async with connect(url) as ws:
            both = await Client(ws).request({
                "type": "hello", "id": "h2", "protocol": 1, "client": "test", "token": TOKEN, "rater_id": "rater-1",
                "study_id": "test", "consent_at": AGREED, "consent_sha256": consent_sha256(app),
                "consent_withdrawn_at": WITHDRAWN})
            assert (both["type"], both["code"]) == ("error", "invalid_fields")
    assert rows(tmp_path / "study.sqlite", "SELECT count(*) FROM consents") == [(0,)]


def merged(db, out, capsys) -> str:
    capsys.readouterr()
    assert cli_main(["merge", "--out", str(db), str(out)]) == 0
    return capsys.readouterr().out


def merge_listing(db, capsys, *, with_ids: bool = True) -> dict:
    """`modlens merge --list`: {(bundle, rater): the line's cells up to its merge time, joined by a space
    (without the bundle and rater cells unless `with_ids`), "total": its last line}."""
    capsys.readouterr()
    assert cli_main(["merge", "--list", str(db)]) == 0
    lines = capsys.readouterr().out.splitlines()
    out: dict = {"total": lines[-1]}
    for line in lines[1:-1]:
        cells = line.split()
        out[(cells[0], cells[1])] = " ".join(cells[0 if with_ids else 2:-3])  # the last three: merged at, sha256…, file
    return out


async def test_a_later_bundle_tells_the_researchers_merge_of_the_withdrawal(tmp_path, capsys):
    """The participant is told an earlier bundle still holds their data: the researcher's merged log
    must learn of the withdrawal from the next bundle, and merge must say what it still holds."""
    db, research = tmp_path / "study.sqlite", tmp_path / "merged.sqlite"
    text = "You may withdraw at any time."
    async with running_daemon(tmp_path, study(consent_text=text)) as (url, app):
        sha = consent_sha256(app)
        await consent_and_collect(url, sha, "rater-1", [("k1", "only rater one saw this"), ("shared", "both")], "k1")
        await consent_and_collect(url, sha, "rater-2", [("shared", "both")], None)
    first = tmp_path / "first.bundle"
    assert cli_main(["export", "--db", str(db), "--bundle", str(first)]) == 0
    assert "withdr" not in merged(research, first, capsys)

    await withdraw(tmp_path, study(consent_text=text), "rater-1")
    second = tmp_path / "second.bundle"
    assert cli_main(["export", "--db", str(db), "--bundle", str(second)]) == 0
    said = merged(research, second, capsys)
    # the withdrawal travels as the rater's consent rows, ids and times only: none of their data
    assert rows(research, "SELECT rater_id, consented_at, withdrawn_at FROM consents ORDER BY rater_id") == [
        ("rater-1", AGREED, WITHDRAWN), ("rater-2", AGREED, None)]
    assert ("rater rater-1 withdrew consent (" + WITHDRAWN + "): this log still holds, from earlier bundles, "
            "1 session, 1 rating and 2 sightings of theirs") in said, said
    assert bundled(second) == (["rater-2"], [], ["shared"])
    # the listing marks rater-1 withdrawn on every bundle (the consent time no longer says they consent)
    # and counts them apart from the raters who consent
    listed = merge_listing(research, capsys)
    assert listed[("1", "rater-1")].endswith("withdrew " + WITHDRAWN), listed
    assert AGREED not in listed[("1", "rater-1")] and "withdrew" not in listed[("1", "rater-2")], listed
    assert listed[("2", "rater-1")].endswith("withdrew " + WITHDRAWN), listed
    assert listed[("2", "rater-2")].endswith(AGREED), listed
    assert listed["total"].startswith("2 bundles, 1 raters, 1 withdrew, study"), listed


async def test_a_bundle_whose_only_rater_withdrew_carries_the_withdrawal_alone(tmp_path, capsys):
    db, research = tmp_path / "study.sqlite", tmp_path / "merged.sqlite"
    text = "You may withdraw at any time."
    async with running_daemon(tmp_path, study(consent_text=text)) as (url, app):
        await consent_and_collect(url, consent_sha256(app), "rater-1", [("k1", "only rater one saw this")], "k1")
        withdrawn = now_iso()  # the real clock: after the data the daemon stamped
        first = tmp_path / "first.bundle"
        assert cli_main(["export", "--db", str(db), "--bundle", str(first)]) == 0
        merged(research, first, capsys)
        async with connect(url) as ws:
            await Client(ws).hello("rater-1", study_id="test", consent_withdrawn_at=withdrawn)
    second = tmp_path / "second.bundle"
    capsys.readouterr()
    assert cli_main(["export", "--db", str(db), "--bundle", str(second)]) == 0
    said = capsys.readouterr().out
    assert "no consenting rater: it carries only the withdrawal of rater-1 (withdrew " + withdrawn + ")" in said, said
    assert bundled(second) == ([], [], [])
    said = merged(research, second, capsys)
    assert rows(research, "SELECT rater_id, withdrawn_at FROM consents") == [("rater-1", withdrawn)]
    assert "rater rater-1 withdrew consent (" + withdrawn + "): this log still holds, from earlier bundles, " \
           "1 session, 1 rating and 1 sighting of theirs" in said, said
    listed = merge_listing(research, capsys)
    assert listed[("1", "rater-1")].endswith("+1/1 1 withdrew " + withdrawn), listed
    assert listed[("2", "rater-1")].endswith("+0/0 1 withdrew " + withdrawn), listed
    assert listed["total"].startswith("2 bundles, 0 raters, 1 withdrew, study"), listed
    # a later consent holds again, from then on: the rater consents and no longer counts as withdrawn, and
    # --list says when they agreed again, not their first consent (what they recorded before the withdrawal,
    # stamped now by the daemon, is not covered by it: the third bundle carries none of it)
    again = now_iso()
    async with running_daemon(tmp_path, study(consent_text=text)) as (url, app):
        async with connect(url) as ws:
            await Client(ws).hello("rater-1", study_id="test", consent_at=again, consent_sha256=consent_sha256(app))
    third = tmp_path / "third.bundle"
    assert cli_main(["export", "--db", str(db), "--bundle", str(third)]) == 0
    assert bundled(third) == (["rater-1"], [], [])
    merged(research, third, capsys)
    listed = merge_listing(research, capsys)
    assert all("withdrew" not in line for line in listed.values()), listed
    assert listed[("1", "rater-1")].endswith("+1/1 1 again " + again), listed
    assert listed[("3", "rater-1")].endswith("+0/0 1 again " + again), listed
    assert listed["total"].startswith("3 bundles, 1 raters (1 agreed again after withdrawing: from then on), study"), listed


async def test_a_comment_a_withdrawn_rater_saw_first_travels_as_the_consenting_rater_saw_it(tmp_path, capsys):
    """The log keeps a comment's first text, time shown and first_seen, and its page's first_seen and
    (where that session sent them) url and title: those of the session that sent it first. When that was the withdrawn rater's, none of it
    may leave as the consenting rater's."""
    db = tmp_path / "study.sqlite"

    def shown(msg: dict) -> dict:
        for item in msg["items"]:
            item["time_shown"] = "2025-02-28T09:00:00Z"
        return msg

    async with running_daemon(tmp_path, study(consent_text="You may withdraw at any time.")) as (url, app):
        sha = consent_sha256(app)
        for rater, edited in (("rater-1", "first version only rater one saw"), ("rater-2", "the edited text rater two saw")):
            async with connect(url) as ws:
                c = Client(ws)
                await c.hello(rater, study_id="test", consent_at=AGREED, consent_sha256=sha)
                ack = await c.request(shown(comments_msg(f"c-{rater}", [("edited", edited), ("shared", "both saw it")])),
                                      "comments_ok")
                assert ack["type"] == "comments_ok", ack
                if rater == "rater-2":
                    for key in ("edited", "shared"):
                        ok = await c.request(rating_msg(f"r-{key}", key), "rating_ok")
                        assert ok["type"] == "rating_ok", ok
        async with connect(url) as ws:
            await Client(ws).hello("rater-1", study_id="test", consent_withdrawn_at=WITHDRAWN)

    [(rater_two_saw,)] = rows(db, "SELECT min(seen_at) FROM sightings JOIN sessions USING (session_id) "
                                  "WHERE rater_id = 'rater-2'")
    [(rater_one_saw,)] = rows(db, "SELECT min(seen_at) FROM sightings JOIN sessions USING (session_id) "
                                  "WHERE rater_id = 'rater-1'")
    # the log: each sighting with the text that session was sent; the comment with its first one
    assert rows(db, "SELECT x.rater_id, t.text FROM sightings s JOIN sessions x USING (session_id) JOIN texts t "
                    "ON t.text_id = s.text_id JOIN comments c USING (comment_id) WHERE c.comment_key = 'edited' "
                    "ORDER BY x.rater_id") == [("rater-1", "first version only rater one saw"),
                                               ("rater-2", "the edited text rater two saw")]
    out, said = exported_after_withdrawal(db, capsys)
    b = read_bundle(out)
    try:
        texts = [r["text"] for r in b.table("texts").to_pylist()]
        comments = {r["comment_key"]: r for r in b.table("comments").to_pylist()}
        pages = b.table("pages").to_pylist()
        ratings = b.table("ratings").to_pylist()
    finally:
        b.close()
    assert "first version only rater one saw" not in texts
    # the edited comment's recorded text is rater-1's: it stays behind, with rater-2's sighting and rating of it
    assert set(comments) == {"shared"}
    assert [r["client_rating_id"] for r in ratings] == ["r-shared"]
    assert ("left out 1 comment whose recorded text only sessions the bundle leaves out were sent (a consenting "
            "rater saw it edited), with 1 sighting and 1 rating of consenting raters") in said, said
    # the shared one: first seen when rater-2 saw it, not rater-1; the time shown and the page's address and
    # title the log keeps as rater-1's page showed them are left out
    assert rater_one_saw < rater_two_saw
    assert (comments["shared"]["first_seen"], comments["shared"]["time_shown"]) == (rater_two_saw, None)
    assert [(p["first_seen"], p["url"], p["title"]) for p in pages] == [(rater_two_saw, None, None)]
    assert "1 comment a session the bundle leaves out saw first travels with the time a consenting rater first " \
           "saw it (or, where none did, rated it) as first_seen and no time shown" in said
    # merged, each sighting keeps the text its session was sent
    research = tmp_path / "merged.sqlite"
    merged(research, out, capsys)
    assert rows(research, "SELECT c.comment_key, t.text, s.seen_at FROM sightings s JOIN comments c USING (comment_id) "
                          "JOIN texts t ON t.text_id = s.text_id") == [("shared", "both saw it", rater_two_saw)]


def reported(db, capsys) -> tuple[dict, str]:
    """`modlens report` of the log, as JSON and as the HTML page."""
    from modlens.analysis.report import render_html, report_from_db

    capsys.readouterr()
    assert cli_main(["report", "--db", str(db), "--format", "json", "--out", str(db.with_suffix(".json"))]) == 0
    import json

    report = json.loads(db.with_suffix(".json").read_text(encoding="utf-8"))
    assert report["withdrawn"] == report_from_db(db)["withdrawn"]
    return report, render_html(report)


async def test_a_report_of_the_merged_log_leaves_out_a_withdrawn_raters_ratings(tmp_path, capsys):
    """The participant was promised they may withdraw: the researcher's merged log still holds what an
    earlier bundle brought of theirs, and a report that counted it would use their data after the
    withdrawal. Two raters rate the same two comments; rater-1 withdraws, then agrees again."""
    db, research = tmp_path / "study.sqlite", tmp_path / "merged.sqlite"
    text = "You may withdraw at any time."
    items = [("k1", "you are all idiots"), ("k2", "thanks for the video")]
    async with running_daemon(tmp_path, study(consent_text=text)) as (url, app):
        sha = consent_sha256(app)
        for rater in ("rater-1", "rater-2"):
            async with connect(url) as ws:
                c = Client(ws)
                await c.hello(rater, study_id="test", consent_at=AGREED, consent_sha256=sha)
                assert (await c.request(comments_msg(f"c-{rater}", items), "comments_ok"))["type"] == "comments_ok"
                for key in ("k1", "k2"):
                    ok = await c.request(rating_msg(f"r-{rater}-{key}", key), "rating_ok")
                    assert ok["type"] == "rating_ok", ok
    first = tmp_path / "first.bundle"
    assert cli_main(["export", "--db", str(db), "--bundle", str(first)]) == 0
    merged(research, first, capsys)
    report, page = reported(research, capsys)
    assert (report["counts"]["ratings"], report["sections"]["human"]["n_raters"]) == (4, 2)
    assert all(a["n_comments_paired"] == 2 for a in report["sections"]["human"]["attributes"])
    assert report["withdrawn"] == {"raters": 0, "studies": 0, "ratings": 0, "agreed_again": 0, "still_withdrawn": 0}
    assert "withdrew consent" not in page

    withdrawn = now_iso()  # the real clock, as the daemon stamps the data: a withdrawal after it
    await withdraw(tmp_path, study(consent_text=text), "rater-1", withdrawn)
    second = tmp_path / "second.bundle"
    assert cli_main(["export", "--db", str(db), "--bundle", str(second)]) == 0
    said = merged(research, second, capsys)
    assert ("rater rater-1 withdrew consent (" + withdrawn + "): this log still holds, from earlier bundles, "
            "1 session, 2 ratings and 2 sightings of theirs, which reports leave out") in said, said
    # the log still holds them (nothing deletes them); every section of the report reads ratings through
    # one reader, which leaves them out: the counts, the human ratings' raters and alpha, the people section
    assert rows(research, "SELECT count(*) FROM ratings WHERE rater_id = 'rater-1'") == [(2,)]
    report, page = reported(research, capsys)
    human = report["sections"]["human"]
    assert report["counts"]["ratings"] == 2
    assert (human["n_ratings"], human["n_raters"], [r["rater_id"] for r in human["raters"]]) == (2, 1, ["rater-2"])
    assert all(a["n_comments_paired"] == 0 for a in human["attributes"]), human["attributes"]
    assert report["withdrawn"] == {"raters": 1, "studies": 1, "ratings": 2, "agreed_again": 0, "still_withdrawn": 1}
    assert "1 rater who withdrew consent is left out of the study they withdrew from: their 2 ratings there are" in page

    # agreeing again is a new consent, which counts from then on: what they rated before the withdrawal
    # stays left out
    again_at = now_iso()
    async with running_daemon(tmp_path, study(consent_text=text)) as (url, app):
        async with connect(url) as ws:  # and rates both comments again: those ratings count
            c = Client(ws)
            await c.hello("rater-1", study_id="test", consent_at=again_at, consent_sha256=consent_sha256(app))
            assert (await c.request(comments_msg("c-rater-1-again", items), "comments_ok"))["type"] == "comments_ok"
            for key in ("k1", "k2"):
                ok = await c.request(rating_msg(f"r-rater-1-{key}-again", key), "rating_ok")
                assert ok["type"] == "rating_ok", ok
    third = tmp_path / "third.bundle"
    assert cli_main(["export", "--db", str(db), "--bundle", str(third)]) == 0
    merged(research, third, capsys)
    assert rows(research, "SELECT consented_at, withdrawn_at FROM consents WHERE rater_id = 'rater-1' "
                          "ORDER BY consent_id") == [(AGREED, withdrawn), (again_at, None)]
    report, page = reported(research, capsys)
    assert (report["counts"]["ratings"], report["sections"]["human"]["n_raters"]) == (4, 2)
    assert report["withdrawn"] == {"raters": 1, "studies": 1, "ratings": 2, "agreed_again": 1, "still_withdrawn": 0}
    # not "left out … in no count": their ratings since the new consent are counted
    assert "1 rater who withdrew consent is left out" not in page
    assert ("1 rater who withdrew consent agreed again since: what they recorded before agreeing again is left out "
            "of the study they withdrew from, what they rated since counts; the 2 ratings left out are in no count "
            "or figure of this report (the log still holds them).") in page, page


def test_crowd_raters_have_no_consents_and_are_not_left_out(tmp_path, capsys):
    """Workers `modlens rate` imports consented on the crowd platform: the log has no `consents` rows of
    theirs, which is no withdrawal."""
    from test_crowd_import_counts import _approved_task
    from test_cli_rate import study_with_set
    from modlens.study import assignment
    from modlens.study.folder import load

    folder = study_with_set(tmp_path, capsys)
    db = tmp_path / "log.sqlite"  # the log the item set was sampled from
    assert cli_main(["rate", str(_approved_task(tmp_path, assignment.Plan.load(folder, load(folder)))),
                     "--db", str(db), "--study", str(folder)]) == 0
    [(imported,)] = rows(db, "SELECT count(*) FROM ratings")
    assert imported and rows(db, "SELECT count(*) FROM consents") == [(0,)]
    report, page = reported(db, capsys)
    assert report["counts"]["ratings"] == imported
    assert report["withdrawn"] == {"raters": 0, "studies": 0, "ratings": 0, "agreed_again": 0, "still_withdrawn": 0}


@pytest.mark.parametrize("agreed_again", [False, True])
async def test_a_withdrawal_of_a_consent_recorded_before_schema_7_reaches_the_researcher(tmp_path, capsys,
                                                                                         agreed_again):
    """Migration 7 copied each rater's raters.consent_at into a consents row whose text it did not know
    (consent_sha256 NULL), and the extension's withdrawal marks that row withdrawn: export says the bundle
    carries the withdrawal so that the researcher's merge marks it, so it must carry that row too; also when
    the rater agreed again before that export (their new consent names its text), else the merged log never
    learns of the withdrawal and counts what it covers."""
    import sqlite3

    db, research = tmp_path / "study.sqlite", tmp_path / "merged.sqlite"
    text = "You may withdraw at any time."
    async with running_daemon(tmp_path, study(consent_text=text)) as (url, app):
        sha = consent_sha256(app)
        await consent_and_collect(url, sha, "rater-1", [("k1", "rater one saw this")], "k1")
        await consent_and_collect(url, sha, "rater-2", [("k2", "rater two saw this")], "k2")
    with sqlite3.connect(db) as conn:  # rater-2 consented under an older modlens: the text is unknown
        conn.execute("UPDATE consents SET consent_sha256 = NULL WHERE rater_id = 'rater-2'")
    first = tmp_path / "first.bundle"
    assert cli_main(["export", "--db", str(db), "--bundle", str(first)]) == 0
    merged(research, first, capsys)

    withdrawn = now_iso()  # the real clock, as the daemon stamps the data: a withdrawal after it
    await withdraw(tmp_path, study(consent_text=text), "rater-2", withdrawn)
    assert rows(db, "SELECT consent_sha256, withdrawn_at FROM consents WHERE rater_id = 'rater-2'") == [(None, withdrawn)]
    again_at = None
    if agreed_again:  # a new consent, to the study's text, before the withdrawal ever travelled
        again_at = now_iso()
        async with running_daemon(tmp_path, study(consent_text=text)) as (url, app):
            async with connect(url) as ws:
                await Client(ws).hello("rater-2", study_id="test", consent_at=again_at, consent_sha256=sha)
    second = tmp_path / "second.bundle"
    capsys.readouterr()
    assert cli_main(["export", "--db", str(db), "--bundle", str(second)]) == 0
    said = capsys.readouterr().out
    assert ("carries their consent times alone so that the researcher's merge marks the withdrawal" in said) \
        is not agreed_again, said
    said = merged(research, second, capsys)
    assert rows(research, "SELECT rater_id, consent_sha256 IS NULL, consented_at, withdrawn_at FROM consents "
                          "ORDER BY rater_id, consented_at") == [
        ("rater-1", 0, AGREED, None), ("rater-2", 1, AGREED, withdrawn)] + [("rater-2", 0, again_at, None)] * agreed_again
    # what the withdrawal covers: the report leaves it out, --forget-withdrawn would delete it
    report, _page = reported(research, capsys)
    assert report["counts"]["ratings"] == 1, report["counts"]
    assert cli_main(["merge", "--forget-withdrawn", str(research)]) == 0
    assert "rater-2" in capsys.readouterr().out
    if agreed_again:
        return
    assert ("rater rater-2 withdrew consent (" + withdrawn + "): this log still holds, from earlier bundles, "
            "1 session, 1 rating and 1 sighting of theirs, which reports leave out") in said, said
    # a later export says it again: the merged log keeps one row of that consent, not one per bundle
    third = tmp_path / "third.bundle"
    assert cli_main(["export", "--db", str(db), "--bundle", str(third)]) == 0
    merged(research, third, capsys)
    assert rows(research, "SELECT count(*) FROM consents WHERE rater_id = 'rater-2'") == [(1,)]


def signed_again(path, out, key):
    """The bundle's rows, exported later and signed with `key`: what anyone holding another key can make."""
    from modlens.exchange.bundle import write_archive

    b = read_bundle(path)
    tables = {n: (b.columns(n), [tuple(r.values()) for r in b.table(n).to_pylist()]) for n in b.manifest["tables"]}
    fields = {k: v for k, v in b.manifest.items() if k not in ("format", "format_version", "tables", "bundle_sha256",
                                                              "signer")} | {"exported_at": "2025-03-05T10:00:00Z"}
    b.close()
    with open(out, "wb") as fh:
        write_archive(fh, fields, tables, key=key)
    return out


async def test_a_withdrawal_merged_first_ties_the_rater_to_its_signer(tmp_path, capsys):
    """A withdrawal only its participant may send: once merged, a bundle of that rater under another key
    (a withdrawal, or their data) is not theirs, though no bundle of their data was merged before."""
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

    db, research = tmp_path / "study.sqlite", tmp_path / "merged.sqlite"
    async with running_daemon(tmp_path, study(consent_text="You may withdraw at any time.")) as (url, app):
        await consent_and_collect(url, consent_sha256(app), "rater-1", [("k1", "only rater one saw this")], "k1")
        data = tmp_path / "data.bundle"
        assert cli_main(["export", "--db", str(db), "--bundle", str(data)]) == 0
        async with connect(url) as ws:
            await Client(ws).hello("rater-1", study_id="test", consent_withdrawn_at=WITHDRAWN)
    withdrawal = tmp_path / "withdrawal.bundle"
    assert cli_main(["export", "--db", str(db), "--bundle", str(withdrawal)]) == 0
    merged(research, withdrawal, capsys)
    assert rows(research, "SELECT rater_id, withdrawn_at FROM consents") == [("rater-1", WITHDRAWN)]
    other = Ed25519PrivateKey.generate()
    for forged in (signed_again(withdrawal, tmp_path / "withdrawal-b.bundle", other),
                   signed_again(data, tmp_path / "data-b.bundle", other)):
        capsys.readouterr()
        assert cli_main(["merge", "--out", str(research), str(forged)]) == 2
        assert "rater rater-1's earlier bundles were signed by" in capsys.readouterr().err
    assert rows(research, "SELECT count(*) FROM bundles") == [(1,)]


async def test_a_comment_only_a_withdrawn_rater_saw_and_a_consenting_one_rated_travels_without_their_visit(
        tmp_path, capsys):
    """rater-2 rated a comment (a rating sent without a sighting) that only rater-1's session recorded:
    it travels, the rating is of it, with its text, but its time shown and first_seen, and its page's
    address, title and first_seen, were rater-1's visit, and rater-1 withdrew."""
    db = tmp_path / "study.sqlite"
    async with running_daemon(tmp_path, study(consent_text="You may withdraw at any time.")) as (url, app):
        sha = consent_sha256(app)
        async with connect(url) as ws:
            c = Client(ws)
            await c.hello("rater-1", study_id="test", consent_at=AGREED, consent_sha256=sha)
            msg = comments_msg("c-rater-1", [("c", "a comment rater one saw")], page_key="video-9")
            msg["items"][0]["time_shown"] = "2025-02-28T09:00:00Z"
            assert (await c.request(msg, "comments_ok"))["type"] == "comments_ok"
        async with connect(url) as ws:
            c = Client(ws)
            await c.hello("rater-2", study_id="test", consent_at=AGREED, consent_sha256=sha)
            assert (await c.request(rating_msg("r-c", "c"), "rating_ok"))["type"] == "rating_ok"
        async with connect(url) as ws:
            await Client(ws).hello("rater-1", study_id="test", consent_withdrawn_at=WITHDRAWN)
    [(rated_at,)] = rows(db, "SELECT created_at FROM ratings")
    [(rater_one_saw,)] = rows(db, "SELECT seen_at FROM sightings")
    assert rater_one_saw < rated_at and rows(db, "SELECT url FROM pages")[0][0]
    out, said = exported_after_withdrawal(db, capsys)
    b = read_bundle(out)
    try:
        comments = b.table("comments").to_pylist()
        pages = b.table("pages").to_pylist()
        texts = [r["text"] for r in b.table("texts").to_pylist()]
    finally:
        b.close()
    assert texts == ["a comment rater one saw"]
    assert [(r["comment_key"], r["first_seen"], r["time_shown"]) for r in comments] == [("c", rated_at, None)]
    assert [(p["page_key"], p["first_seen"], p["url"], p["title"]) for p in pages] == [("video-9", rated_at, None, None)]
    assert "1 comment a session the bundle leaves out saw first travels with the time a consenting rater first " \
           "saw it (or, where none did, rated it) as first_seen and no time shown" in said, said
