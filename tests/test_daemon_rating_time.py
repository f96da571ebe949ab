"""A rating whose time_spent_ms is over the daemon's limit (a panel left open over a day) is the
participant's answer with an implausible timing: the daemon stores the answer, records the time as
unknown (NULL) with what was reported beside it, and says so in `rating_ok`; a rating that is
really malformed is still refused."""
from __future__ import annotations

import csv

from modlens.protocol.messages import MAX_TIME_SPENT_MS
from modlens.studylog.export import export

from daemon_helpers import Client, comments_msg, connect, consent_sha256, rating_msg, running_daemon, study
from log_helpers import rows


def _rating(rid: str, key: str, ms) -> dict:
    msg = rating_msg(rid, key)
    msg["time_spent_ms"] = ms
    return msg


async def test_rating_over_the_time_limit_is_stored_with_its_time_unknown(tmp_path):
    over = MAX_TIME_SPENT_MS + 3_600_000  # the panel stayed open a day and an hour
    async with running_daemon(tmp_path, study()) as (url, app):
        async with connect(url) as ws:
            c = Client(ws)
            await c.hello(consent_at="2025-01-31T12:00:00Z", consent_sha256=consent_sha256(app), study_id="test")
            await c.request(comments_msg("page-1", [("k1", "you are a stupid idiot"), ("k2", "a lovely day")]),
                            "comments_ok")
            ok = await c.request(_rating("r-long", "k1", over), "rating_ok")
            assert ok["type"] == "rating_ok" and ok["time_spent_over_limit"] is True and ok["duplicate"] is False
            again = await c.request(_rating("r-long", "k1", over), "rating_ok")  # resent: still said, nothing new
            assert again["duplicate"] is True and again["time_spent_over_limit"] is True
            assert again["rating_id"] == ok["rating_id"]
            fine = await c.request(_rating("r-fine", "k2", MAX_TIME_SPENT_MS), "rating_ok")
            assert fine["type"] == "rating_ok" and fine["time_spent_over_limit"] is False
            for bad in (-1, 2.5, True, 2 ** 53):  # malformed, not merely implausible: refused
                err = await c.request(_rating(f"r-bad-{bad}", "k2", bad), "rating_ok")
                assert err["type"] == "error" and err["code"] == "invalid_fields" and "time_spent_ms" in err["message"]

    db = tmp_path / "study.sqlite"
    assert rows(db, "SELECT client_rating_id, time_spent_ms, time_spent_over_limit_ms FROM ratings "
                    "ORDER BY rating_id") == [("r-long", None, over), ("r-fine", MAX_TIME_SPENT_MS, None)]
    assert rows(db, "SELECT count(*) FROM rating_values WHERE rating_id = ?", ok["rating_id"]) == [(4,)]
    out = tmp_path / "export"
    manifest = export(db, out, "csv")
    with open(out / manifest["tables"]["ratings"]["file"], newline="") as fh:
        exported = {r["client_rating_id"]: r for r in csv.DictReader(fh)}
    assert exported["r-long"]["time_spent_ms"] == "" and exported["r-long"]["time_spent_over_limit_ms"] == str(over)
    assert exported["r-fine"]["time_spent_over_limit_ms"] == ""
