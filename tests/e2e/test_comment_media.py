"""Images attached to comments, in the wild: the x-media fixture (a reply photo from pbs.twimg.com,
a data: URL photo, an avatar and an emoji that are not attachments) through the real extension
into a real `modlens serve` whose study collects media. The worker fetches the photos itself and
the study log holds their hashes, their place under the right comment, the OCR text and the media
score; a study that does not collect media gets the comments and nothing of the images."""
from __future__ import annotations

import base64
import hashlib
import re
import json
from contextlib import contextmanager

import pytest

from .harness import FIXTURES, own_daemon_and_browser, wait_for
from realtools import need


pytestmark = [pytest.mark.browser]

FOLDER = FIXTURES / "x-media"
PHOTO_URL = "https://pbs.twimg.com/media/GmXa1Bc2De3Fg4H?format=png&name=small"

MEDIA_STUDY = """
study_id = "e2e-media"
title = "comment images"
display = "blind"

[[detectors]]
name = "profanity-check"

[[detectors]]
name = "ocr"
options = { text_detector = "profanity-check", workers = 1 }

[perturbation]
enabled = false

[sampling]
mode = "all"

[media]
collect = {collect}
keep_bytes = false
max_bytes = 200000
max_per_comment = 4
"""


def pumping_wait(page, predicate, timeout: float, what: str):
    """harness.wait_for, but sleeping inside Playwright: the sync API runs the route handler that
    serves the worker's image fetch only while Python is in a Playwright call."""
    return wait_for(predicate, timeout, what, sleep=lambda seconds: page.wait_for_timeout(seconds * 1000))


def expected_images() -> dict[str, tuple[int, str, str | None]]:
    """comment key -> (position, sha256, source_url) computed from the fixture's own files."""
    page = (FOLDER / "page.html").read_text(encoding="utf-8")
    data_url = re.search(r'data-testid="tweetPhoto"><img[^>]*src="(data:image/png;base64,[^"]+)"', page).group(1)
    data_png = base64.b64decode(data_url.split(",", 1)[1])
    return {
        "1890200000000000002": (0, hashlib.sha256((FOLDER / "photo.png").read_bytes()).hexdigest(), PHOTO_URL),
        "1890200000000000003": (0, hashlib.sha256(data_png).hexdigest(), None),
    }


@contextmanager
def run_fixture(playwright_instance, tmp_path, collect: bool):
    """(daemon, browser, page): the x-media page open and its comments in the study log."""
    need("tesseract")
    study = MEDIA_STUDY.replace("{collect}", "true" if collect else "false")
    with own_daemon_and_browser(playwright_instance, tmp_path, study) as (daemon, browser):
        page, _ = browser.open_fixture(FOLDER)
        keys = {e["key"] for e in json.loads((FOLDER / "expected.json").read_text(encoding="utf-8"))["before"]}
        pumping_wait(page, lambda: keys <= set(daemon.comments("x")), 60, "the x-media comments in the study log")
        yield daemon, browser, page


def test_reply_photos_are_fetched_by_the_worker_hashed_and_logged(playwright_instance, tmp_path):
    with run_fixture(playwright_instance, tmp_path, collect=True) as (daemon, browser, page):
        want = expected_images()
        sql = ("SELECT c.comment_key, cm.position, m.sha256, cm.source_url, m.mime, m.path FROM comment_media cm "
               "JOIN comments c USING (comment_id) JOIN media m USING (media_id)")
        try:
            rows = pumping_wait(page, lambda: len(daemon.query(sql)) >= len(want) and daemon.query(sql), 60,
                                "the reply photos in comment_media")
        except AssertionError as err:
            got = [tuple(r) for r in daemon.query(sql)]
            raise AssertionError(f"{err}; logged {got}; worker totals {browser.state()['totals']}; "
                                 f"dead letters {browser.ask_worker({'type': 'dead_letters'})}") from None
        got = {r["comment_key"]: (r["position"], r["sha256"], r["source_url"]) for r in rows}
        assert got == want  # exactly these: no avatar, no emoji, no image of another comment
        assert {r["mime"] for r in rows} == {"image/png"} and all(r["path"] is None for r in rows)  # keep_bytes off
        photo_sha = want["1890200000000000002"][1]
        ocr = pumping_wait(page, lambda: daemon.query(
            "SELECT t.text FROM ocr_results o JOIN media m USING (media_id) JOIN texts t USING (text_id) "
            "WHERE m.sha256 = ?", (photo_sha,)), 30, "the photo's OCR text")
        assert "idiots" in ocr[0]["text"].lower()
        score = daemon.query("SELECT d.name, s.toxicity FROM comment_media_scores s JOIN detectors d USING (detector_id) "
                             "JOIN comments c USING (comment_id) WHERE c.comment_key = '1890200000000000002'")
        assert [r["name"] for r in score] == ["ocr+profanity-check"] and score[0]["toxicity"] > 0.5
        totals = pumping_wait(page, lambda: (t := browser.state()["totals"]).get("media_scored", 0) >= 2 and t, 30,
                              "the popup's image counters")
        assert totals["media_sent"] == 2 and totals["media_failed"] == 0
        assert "Images attached to the comments" in browser.state()["study"]["consent_text"]


def test_a_study_without_media_collect_gets_no_images(playwright_instance, tmp_path):
    with run_fixture(playwright_instance, tmp_path, collect=False) as (daemon, browser, page):
        state = browser.state()
        assert state["study"]["media"]["collect"] is False
        assert "image" not in state["study"]["consent_text"].lower()
        # the comments are there (run_fixture waited for them); an image is fetched and queued right behind its
        # comment, so once the worker has every comment's score back and nothing left in its outbox (the page
        # pumped meanwhile, as images are fetched through it) no image is on its way
        pumping_wait(page, lambda: (lambda st: st["totals"]["queued"] == 0 and st["pages"] and all(
            p["counts"]["scored"] >= p["counts"]["found"] > 0 for p in st["pages"] if p.get("adapter") == "x"))(
            browser.state()), 60, "every comment scored and the outbox empty")
        assert daemon.query("SELECT count(*) AS n FROM media")[0]["n"] == 0
        assert daemon.query("SELECT count(*) AS n FROM comment_media")[0]["n"] == 0
        totals = browser.state()["totals"]
        assert totals.get("media_sent", 0) == 0 and totals.get("media_failed", 0) == 0
