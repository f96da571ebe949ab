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
