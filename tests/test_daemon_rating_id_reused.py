"""`rating_ok` with `duplicate: true` says the rating was already recorded under its id (a resend), and
nothing new was written. A rating of ANOTHER comment, or other answers, sent under an id already
used (a client that numbers its ratings per page, per run) got that same ack, naming the first
rating's row and this message's derived toxicity: the client took a rating the log does not hold
for a stored one. It is refused now (`invalid_fields`, the id named; nothing stored), and a true
resend's ack describes the stored rating."""
from __future__ import annotations

from daemon_helpers import Client, comments_msg, connect, rating_msg, running_daemon, study
from log_helpers import rows


async def test_a_rating_id_reused_for_another_rating_is_refused_not_acknowledged(tmp_path):
    async with running_daemon(tmp_path, study()) as (url, _app):
        async with connect(url) as ws:
            c = Client(ws)
            await c.hello()
            await c.request(comments_msg("p1", [("k1", "you idiot"), ("k2", "a fine take")]), "comments_ok")
            first = await c.request(rating_msg("r1", "k1", anchors=("more", "less")), "rating_ok")
            assert first["type"] == "rating_ok" and not first["duplicate"]

            resend = await c.request(rating_msg("r1", "k1", anchors=("more", "less")), "rating_ok")
            assert resend["type"] == "rating_ok" and resend["duplicate"] and resend["rating_id"] == first["rating_id"]

            other_comment = await c.request(rating_msg("r1", "k2", anchors=("less", "less"),
                                                       toxicity="not toxic"), "rating_ok")
            assert other_comment["type"] == "error" and other_comment["code"] == "invalid_fields", other_comment
            assert "r1" in other_comment["message"] and "nothing stored" in other_comment["message"]

            assert "derived_toxicity" in resend and resend["derived_toxicity"] == first["derived_toxicity"]

            other_answer = await c.request(rating_msg("r1", "k1", anchors=None, toxicity="not toxic"), "rating_ok")
            assert other_answer["type"] == "error" and other_answer["code"] == "invalid_fields", other_answer
    db = tmp_path / "study.sqlite"
    assert rows(db, "SELECT client_rating_id, c.comment_key, derived_toxicity FROM ratings "
                    "JOIN comments c USING (comment_id)") == [("r1", "k1", first["derived_toxicity"])]
