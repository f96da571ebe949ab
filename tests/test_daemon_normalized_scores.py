"""`scores.items[].normalized.detectors` is "the scores of the normalized text (empty when unchanged:
same as the comment's)". A comment whose normalized text is another comment's text on the same page
(`idi0t` and `idiot` side by side: copypasta, spam, a quoted reply) got an empty map, which says its
normalized text scores as the comment itself does, though that text was scored, as the other
comment, and scores otherwise. It now carries those scores; only an unchanged text's map is empty."""
from __future__ import annotations

from daemon_helpers import Client, comments_msg, connect, running_daemon, study


async def test_a_normalized_text_that_is_another_comment_on_the_page_carries_its_scores(tmp_path):
    async with running_daemon(tmp_path, study(normalizer={"enabled": True})) as (url, _app):
        async with connect(url) as ws:
            c = Client(ws)
            await c.hello()
            await c.send(comments_msg("p1", [("a", "you are an idiot"), ("b", "you are an idi0t")]))
            scores = await c.until(lambda m: m.get("id") == "p1" and m["type"] in ("scores", "error"))
    assert scores["type"] == "scores", scores
    items = {it["key"]: it for it in scores["items"]}
    plain, leet = items["a"], items["b"]
    assert plain["normalized"]["text"] == "you are an idiot" and plain["normalized"]["detectors"] == {}  # unchanged
    assert leet["normalized"]["text"] == "you are an idiot"
    assert leet["detectors"]["wordlist"]["toxicity"] == 0.0  # "idi0t" is no word of the list
    normalized = leet["normalized"]["detectors"]
    assert normalized, "the normalized text changed and was scored: its scores are not the comment's"
    assert normalized["wordlist"]["toxicity"] == plain["detectors"]["wordlist"]["toxicity"] == 0.25
