"""A rating is recorded in the daemon's running study. A client that said which study the rating was
given in (`study_id`, as `hello` may) had the field dropped unread, so a rating given under another
study (a queued one, sent after the daemon started on a joined study) was acknowledged and stored
in the running one. It is now refused `study_mismatch`, nothing stored; one naming the running
study, or none, is stored as before."""
from __future__ import annotations

from daemon_helpers import Client, comments_msg, connect, rating_msg, running_daemon, study
from log_helpers import rows


async def test_a_rating_given_in_another_study_is_refused_and_not_stored(tmp_path):
    cfg = study()
    async with running_daemon(tmp_path, cfg) as (url, _app):
        async with connect(url) as ws:
            c = Client(ws)
            await c.hello()
            await c.request(comments_msg("m1", [("k1", "you stupid idiot")]), "comments_ok")
            other = await c.request({**rating_msg("r1", "k1", anchors=None), "study_id": "other-study"})
            same = await c.request({**rating_msg("r2", "k1", anchors=None), "study_id": cfg.study_id})
            unnamed = await c.request(rating_msg("r3", "k1", anchors=None))
    assert other["type"] == "error" and other["code"] == "study_mismatch", other
    assert "'other-study'" in other["message"] and "nothing stored" in other["message"], other
    assert same["type"] == unnamed["type"] == "rating_ok", (same, unnamed)
    assert rows(tmp_path / "study.sqlite", "SELECT DISTINCT client_rating_id, study_id FROM ratings ORDER BY 1") == [
        ("r2", cfg.study_id), ("r3", cfg.study_id)]


async def test_a_rating_stored_under_its_study_and_resent_to_another_is_acknowledged_as_that_one(tmp_path):
    # given and stored under study A, its rating_ok lost; the client resends it once the daemon runs B on the
    # same log: "nothing stored" would have the client drop a rating the log holds; it is that rating's resend
    first, second = study(study_id="study-a"), study(study_id="study-b")
    async with running_daemon(tmp_path, first) as (url, _app):
        async with connect(url) as ws:
            c = Client(ws)
            await c.hello()
            await c.request(comments_msg("m1", [("k1", "you stupid idiot")]), "comments_ok")
            stored = await c.request({**rating_msg("r1", "k1", anchors=None), "study_id": "study-a"}, "rating_ok")
    async with running_daemon(tmp_path, second) as (url, _app):
        async with connect(url) as ws:
            c = Client(ws)
            await c.hello()
            again = await c.request({**rating_msg("r1", "k1", anchors=None), "study_id": "study-a"})
            other = await c.request({**rating_msg("r1", "k1", anchors=None, toxicity="not toxic"), "study_id": "study-a"})
    assert again["type"] == "rating_ok" and again["duplicate"] is True, again
    assert again["rating_id"] == stored["rating_id"], (again, stored)
    assert other["type"] == "error" and other["code"] == "study_mismatch" and "nothing stored" in other["message"], other
    assert rows(tmp_path / "study.sqlite", "SELECT client_rating_id, study_id FROM ratings") == [("r1", "study-a")]
