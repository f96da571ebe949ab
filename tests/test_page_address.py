"""X and YouTube pages are kept without the author their address or title names, whoever sent
them (the engine's one write path for pages, `records.comments.ensure_pages`), and schema 7 rewrote
the pages of older logs the same way, merging two rows that became one page."""
from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from modlens.studylog.page_address import canonical_page
from modlens.studylog.store import StudyLog

from test_studylog_schema_snapshot import old_log

CASES = json.loads((Path(__file__).parent / "fixtures" / "page_addresses.json").read_text(encoding="utf-8"))["cases"]


@pytest.mark.parametrize("case", CASES, ids=[c["address"] for c in CASES])
def test_the_engine_keeps_a_page_as_the_extension_sends_it(case):
    """The rows extension/test/sites.test.mjs checks the adapters on: a sender that gives the address
    as the page key and the tab title (`modlens feed`, an older extension) gets the extension's row,
    and the extension's row stays as it is."""
    want = (case["platform"], case["page_key"], case["url"], case["title"])
    assert canonical_page(case["platform"], case["address"], case["address"], case["tab_title"]) == want
    assert canonical_page(*want) == want


def test_pages_from_any_sender_are_written_without_the_handle(tmp_path):
    with StudyLog(tmp_path / "log.sqlite") as log:
        fed = log.ensure_page("x", "https://x.com/alice/status/99", "https://x.com/alice/status/99",
                              "https://x.com/alice/status/99")  # what `modlens feed --url` sends
        extension = log.ensure_page("x", "99", "https://x.com/i/status/99", "the post")
        news = log.ensure_page("news", "https://x.com/alice/status/5", "https://x.com/alice/status/5", "Alice on X: \"hi\" / X")
        video = log.ensure_page("youtube", "vid1234567", "https://www.youtube.com/watch?v=vid1234567&ab_channel=Chan", None)
        pages = {r["page_id"]: (r["platform"], r["page_key"], r["url"], r["title"]) for r in log.query("SELECT * FROM pages")}
    assert fed == extension
    assert pages == {fed: ("x", "99", "https://x.com/i/status/99", "https://x.com/i/status/99"),
                     news: ("news", "https://x.com/i/status/5", "https://x.com/i/status/5", "hi"),
                     video: ("youtube", "vid1234567", "https://www.youtube.com/watch?v=vid1234567", None)}
    assert not [v for row in pages.values() for v in row if v and ("alice" in v or "Chan" in v)]


def test_a_schema_6_log_has_its_pages_rewritten_and_consents_kept_with_their_text_unknown(tmp_path):
    db = old_log(tmp_path / "v6.sqlite", 6)
    con = sqlite3.connect(db)
    with con:
        con.execute("INSERT INTO studies VALUES ('s', 'S', '{}', '2025-01-01T00:00:00Z')")
        con.executemany("INSERT INTO raters VALUES ('s', ?, ?, '2025-01-01T00:00:00Z')",
                        [("r1", "2025-01-02T00:00:00Z"), ("r2", None)])
        con.executemany("INSERT INTO pages VALUES (?, ?, ?, ?, ?, ?)", [
            (1, "x", "123", "https://x.com/alice/status/123?s=20", 'Alice on X: "hi there" / X', "2025-01-03T00:00:00Z"),
            (2, "news", "n1", "https://news.example/a?id=1", "Headline", "2025-01-02T00:00:00Z"),
            # the same post from `modlens feed`: its key was the address, its title too
            (3, "x", "https://x.com/Alice/status/123", "https://x.com/Alice/status/123",
             "https://x.com/Alice/status/123", "2025-01-01T00:00:00Z"),
            (4, "youtube", "vid1234567", "https://www.youtube.com/watch?v=vid1234567&ab_channel=Chan", "V - YouTube",
             "2025-01-01T00:00:00Z")])
        con.executemany("INSERT INTO texts VALUES (?, ?, ?)", [(1, "h1", "a"), (2, "h2", "b"), (3, "h3", "c")])
        con.executemany("INSERT INTO comments (comment_id, platform, comment_key, page_id, text_id, original_length, "
                        "first_seen) VALUES (?, ?, ?, ?, ?, 1, '2025-01-01T00:00:00Z')",
                        [(1, "x", "c1", 1, 1), (2, "x", "c2", 3, 2), (3, "youtube", "c3", 4, 3)])
        # a merged log's provenance: bundle 1 held pages 1 and 3, bundle 2 page 3 only
        con.executemany("INSERT INTO bundles VALUES (?, ?, 's', 'k', '[]', '0', 6, '', '', ?, '{}', NULL)",
                        [(1, "b1", "one.bundle"), (2, "b2", "two.bundle")])
        con.executemany("INSERT INTO row_sources VALUES ('pages', ?, ?, ?)", [("1", 1, 1), ("3", 1, 1), ("3", 2, 0)])
    con.close()
    with StudyLog(db) as log:
        pages = [tuple(r) for r in log.conn.execute("SELECT page_id, platform, page_key, url, title, first_seen "
                                                    "FROM pages ORDER BY page_id")]
        comments = log.conn.execute("SELECT comment_id, page_id FROM comments ORDER BY comment_id").fetchall()
        consents = log.conn.execute("SELECT rater_id, consent_sha256, consented_at FROM consents").fetchall()
        sources = log.conn.execute("SELECT row_key, bundle_id FROM row_sources WHERE table_name = 'pages' "
                                   "ORDER BY bundle_id").fetchall()
    assert pages == [(1, "x", "123", "https://x.com/i/status/123", "hi there", "2025-01-01T00:00:00Z"),
                     (2, "news", "n1", "https://news.example/a?id=1", "Headline", "2025-01-02T00:00:00Z"),
                     (4, "youtube", "vid1234567", "https://www.youtube.com/watch?v=vid1234567", "V", "2025-01-01T00:00:00Z")]
    assert comments == [(1, 1), (2, 1), (3, 4)]  # the feed's comment follows its page into the one row
    assert consents == [("r1", None, "2025-01-02T00:00:00Z")]
    assert sources == [("1", 1), ("1", 2)]  # each bundle still names the page it held, once
