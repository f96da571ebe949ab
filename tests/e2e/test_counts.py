"""What the popup's counts say, against what the real daemon did: a comment counts as saved once
the daemon acknowledged its row (comments_ok), not when the worker put it in its outbox; a
comment counts as scored only when a detector scored it; a rating the daemon refused for good
is not shown as rated."""
from __future__ import annotations

import os
import re
import signal
from urllib.parse import quote

import pytest

from .closed_shadow import Marker
from .conftest import make_browser
from .harness import own_daemon_and_browser, wait_for
from .pages import logged_keys, serve_youtube_page

pytestmark = [pytest.mark.browser, pytest.mark.slow]


def popup_totals(browser, url) -> dict[str, str]:
    """The popup's "In total" table as it renders it: header -> number shown."""
    popup = browser.context.new_page()
    try:
        popup.goto(browser.ext_url(f"popup.html?page={quote(url, safe='')}"))
        table = popup.locator("section:has(h2:text-is('In total')) table")
        wait_for(lambda: all(c.strip() for c in table.locator("td").all_inner_texts()), 10, "the popup's totals")
        return dict(zip(table.locator("th").all_inner_texts(), table.locator("td").all_inner_texts()))
    finally:
        popup.close()


def outbox_entries(browser) -> list[dict]:
    """The worker's outbox as stored (lib/outbox.js: one `ob:` key per message), read from an extension page."""
    page = browser.context.new_page()
    try:
        page.goto(browser.ext_url("popup.html"))
        stored = page.evaluate("chrome.storage.local.get(null)")
        return [v for k, v in stored.items() if k.startswith("ob:")]
    finally:
        page.close()


def popup_line(browser, url, element_id) -> str:
    popup = browser.context.new_page()
    try:
        popup.goto(browser.ext_url(f"popup.html?page={quote(url, safe='')}"))
        line = popup.locator(f"#{element_id}")
        wait_for(lambda: popup.locator("#t-queued").inner_text().strip(), 10, "the popup's totals")
        return line.inner_text() if line.is_visible() else ""
    finally:
        popup.close()


def test_comments_count_as_saved_when_the_daemon_acknowledged_them_not_when_queued(browser, daemon, tmp_path):
    before = browser.state()["totals"]
    daemon.stop()
    try:
        wait_for(lambda: browser.state()["conn"] != "ready", 15, "the worker to notice the daemon is gone")
        url, items = serve_youtube_page(browser, tmp_path, "CountsT0001", ["said while the daemon is down", "a second one", "a third"])
        page = browser.context.new_page()
        page.goto(url)
        # the page's comments are in the outbox: nothing of them reached the daemon
        wait_for(lambda: browser.state()["totals"]["queued"] > before["queued"], 20, "the page's comments in the outbox")
        shown = popup_totals(browser, url)
        assert logged_keys(daemon, items) == []
        assert "sent" not in shown, f"the popup counts queued comments as sent: {shown}"
        assert int(shown["saved"]) == before.get("saved", 0), shown
        assert int(shown["queued"]) == before["queued"] + 3, shown
    finally:
        daemon.start()
    wait_for(lambda: browser.state()["totals"]["queued"] == before["queued"], 40, "the outbox to drain", interval=1)
    assert sorted(logged_keys(daemon, items)) == sorted(it["key"] for it in items)
    after = browser.state()["totals"]
    assert after["saved"] - before.get("saved", 0) == 3
    assert int(popup_totals(browser, url)["saved"]) == after["saved"]
    page.close()


def test_a_page_loaded_again_counts_its_comments_once(browser, daemon, tmp_path):
    """The same page loaded again (and once more after the service worker stopped) sends its
    comments each time and each time the daemon acknowledges them: they are the log's same rows, so
    *saved* and *scored* count them once."""
    url, items = serve_youtube_page(browser, tmp_path, "CountsT0008", ["a comment seen twice", "and its neighbour"])
    before = browser.state()["totals"]
    for load in range(3):
        if load == 2:
            browser.stop_service_worker()
        wait_for(lambda: page_counts(browser, "CountsT0008") is None, 10, "the last load's tab forgotten")
        page = browser.context.new_page()
        try:
            page.goto(url)
            # this load's comments were taken into the outbox (queued) and scored; the outbox back where
            # it was means the daemon's comments_ok for them was handled
            wait_for(lambda: (c := page_counts(browser, "CountsT0008")) and c["queued"] == 2 and c["scored"] == 2, 20,
                     "this load's comments queued and scored")
            after = wait_for(lambda: (t := browser.state()["totals"])["queued"] == before["queued"] and t, 20,
                             "the outbox to drain")
            assert sorted(logged_keys(daemon, items)) == sorted(it["key"] for it in items)
            assert (after["saved"] - before["saved"], after["scored"] - before["scored"]) == (2, 2), (load, after)
            assert int(popup_totals(browser, url)["saved"]) == after["saved"]
        finally:
            page.close()


def page_counts(browser, video_id) -> dict | None:
    for p in browser.state()["pages"]:
        if p.get("page") and p["page"]["page_key"] == video_id:
            return p.get("counts")
    return None


def test_a_comment_no_detector_scored_is_not_counted_as_scored(browser, daemon, tmp_path):
    """A zero-width space is a text to the page and blank to the daemon (`not_scored`): it is logged,
    answered in `scores` with no detector's score, and must not be counted as scored."""
    before = browser.state()["totals"]
    url, items = serve_youtube_page(browser, tmp_path, "CountsT0002", ["a comment with words", "\u200b", "another comment with words"])
    page = browser.context.new_page()
    try:
        page.goto(url)
        wait_for(lambda: len(logged_keys(daemon, items)) == 3, 20, "the page's 3 comments in the log")
        blank = daemon.comments("youtube")[items[1]["key"]]
        assert blank["text"] == "\u200b"
        # one `scores` message answers the page: once it counted anything, it counted everything
        counts = wait_for(lambda: (c := page_counts(browser, "CountsT0002")) and c["scored"] and c, 20, "the page's scores")
        assert counts["scored"] == 2, counts
        assert browser.state()["totals"]["scored"] - before["scored"] == 2
    finally:
        page.close()


def rating_message(key: str, time_spent_ms: int, formality: str = "formal") -> dict:
    """The `rate` request the rating panel sends (lib/messages.js rate)."""
    return {"type": "rate", "comment": {"platform": "youtube", "key": key},
            "values": {"formality": formality, "respectfulness": "respectful", "stereotypes": "not present"},
            "anchors": {"vs_hard": "less", "vs_extreme": "less"}, "time_spent_ms": time_spent_ms}


def marker_text(page, key: str) -> str:
    html = Marker(page, key).html()
    return re.sub(r"<style>.*?</style>|<[^>]+>", " ", html or "", flags=re.S)


def test_a_rating_the_daemon_refused_for_good_is_not_shown_as_rated(browser, daemon, tmp_path):
    """A rating with a level the study does not have is refused (invalid_fields): the rating is a
    dead letter, never in the log, so the comment is not rated and can be rated again. A panel left
    open longer than a day is not a refusal: the answer is logged with its time unknown."""
    url, items = serve_youtube_page(browser, tmp_path, "CountsT0003", ["a comment rated with no such level",
                                                               "a comment rated after a day away"])
    key, late = items[0]["key"], items[1]["key"]
    page = browser.context.new_page()
    try:
        page.goto(url)
        page.locator(f'modlens-marker[data-modlens-key="{late}"]').wait_for(timeout=30000)
        assert browser.ask_worker(rating_message(late, 90_000_000), "calibration.html").get("queued")
        row = wait_for(lambda: [r for r in daemon.ratings() if r["comment_key"] == late], 20, "the late rating in the log")
        assert row[0]["time_spent_ms"] is None and row[0]["time_spent_over_limit_ms"] == 90_000_000, row
        kept_aside = browser.state()["totals"].get("not_delivered", 0)
        answer = browser.ask_worker(rating_message(key, 1500, formality="no such level"), "calibration.html")
        assert answer.get("queued"), answer
        dead = wait_for(lambda: [d for d in browser.ask_worker({"type": "dead_letters"}) if d["id"] == answer["id"]],
                        20, "the daemon's refusal")
        assert dead[0]["error"]["code"] == "invalid_fields"
        assert [r for r in daemon.ratings() if r["comment_key"] == key] == []
        assert browser.state()["totals"]["not_delivered"] == kept_aside + 1
        assert f"not delivered: {kept_aside + 1} " in popup_line(browser, url, "not-delivered")
        # the page shown again: its comment is not marked rated, it offers the panel again
        page.reload()
        page.locator(f'modlens-marker[data-modlens-key="{key}"]').wait_for(timeout=30000)
        wait_for(lambda: "Rate" in marker_text(page, key) or "rated" in marker_text(page, key), 10, "the marker")
        shown = marker_text(page, key)
        assert "rated" not in shown and "Rate" in shown, shown
        # the late rating is saved: rated, and not 'not saved yet' nor refused
        shown = wait_for(lambda: (t := marker_text(page, late)) and "rated" in t and t, 10, "the late rating's marker")
        assert "not saved yet" not in shown and "refused" not in shown, shown
    finally:
        page.close()


def test_a_rating_reads_not_saved_until_the_daemon_acknowledged_it(browser, daemon, tmp_path):
    url, items = serve_youtube_page(browser, tmp_path, "CountsT0004", ["a comment rated while the daemon is down"])
    key = items[0]["key"]
    page = browser.context.new_page()
    try:
        page.goto(url)
        page.locator(f'modlens-marker[data-modlens-key="{key}"]').wait_for(timeout=30000)
        m = Marker(page, key)
        daemon.stop()
        try:
            wait_for(lambda: browser.state()["conn"] != "ready", 15, "the worker to notice the daemon is gone")
            m.rate()
            shown = wait_for(lambda: (t := marker_text(page, key)) and "rated" in t and t, 10, "the answer in the marker")
            assert "not saved yet" in shown, shown
            # queued as it will go: naming the study it was given in (the daemon stores it in no other)
            queued = [e for e in outbox_entries(browser) if e["message"]["type"] == "rating" and e["message"]["comment"]["key"] == key]
            assert [(e["study"], e["message"].get("study_id")) for e in queued] == [("e2e", "e2e")], queued
        finally:
            daemon.start()
        rows = wait_for(lambda: [r for r in daemon.ratings() if r["comment_key"] == key], 40, "the rating in the log", interval=1)
        assert [r["study_id"] for r in rows] == ["e2e"]
        wait_for(lambda: "not saved yet" not in marker_text(page, key), 10, "the marker to say the rating is saved")
        assert "rated · not toxic" in marker_text(page, key)
    finally:
        page.close()


def test_what_was_collected_under_one_study_is_not_delivered_to_the_next(playwright_instance, tmp_path_factory, tmp_path):
    """Comments queued while the daemon was down, under the consent to study A (and authors hashed
    with A's salt), must not enter study B's log once the daemon runs B and the participant agreed
    to B: they are set aside as dead letters, and a comment rated for A is not rated for B."""
    with own_daemon_and_browser(playwright_instance, tmp_path_factory.mktemp("study-switch")) as (daemon, b):
        rated_url, rated_items = serve_youtube_page(b, tmp_path, "CountsT0005", ["rated in the first study"])
        page = b.context.new_page()
        page.goto(rated_url)
        rated_key = rated_items[0]["key"]
        page.locator(f'modlens-marker[data-modlens-key="{rated_key}"]').wait_for(timeout=30000)
        assert b.ask_worker(rating_message(rated_key, 1200), "calibration.html").get("queued")
        wait_for(lambda: [r for r in daemon.ratings() if r["comment_key"] == rated_key], 20, "the first study's rating")
        page.close()

        daemon.stop()
        wait_for(lambda: b.state()["conn"] != "ready", 15, "the worker to notice the daemon is gone")
        url, items = serve_youtube_page(b, tmp_path, "CountsT0006", ["queued under the first study", "and a second one"])
        page = b.context.new_page()
        page.goto(url)
        wait_for(lambda: b.state()["totals"]["queued"] == 2, 20, "the page's comments in the outbox")
        page.close()

        # the daemon comes back running another study, with a log of its own
        daemon.config.write_text(daemon.config.read_text(encoding="utf-8").replace('study_id = "e2e"', 'study_id = "e2e-second"'),
                                 encoding="utf-8")
        daemon.db = daemon.home / "second.sqlite"
        daemon.start()
        wait_for(lambda: (b.state().get("study") or {}).get("study_id") == "e2e-second", 30, "the worker to learn the new study")
        b.consent()
        dead = wait_for(lambda: [d for d in b.ask_worker({"type": "dead_letters"}) if d["error"]["code"] == "study_changed"]
                        or logged_keys(daemon, items), 30, "the first study's comments set aside (or delivered)")
        assert logged_keys(daemon, items) == [], "comments collected under the first study's consent entered the second's log"
        assert {tuple(sorted(it["key"] for it in d["message"]["items"])) for d in dead} == {tuple(sorted(it["key"] for it in items))}
        assert b.state()["totals"]["queued"] == 0
        assert popup_line(b, url, "not-delivered").startswith("not delivered: 2 ")
        # the comment rated for the first study is shown again in the second: not rated there
        page = b.context.new_page()
        page.goto(rated_url)
        page.locator(f'modlens-marker[data-modlens-key="{rated_key}"]').wait_for(timeout=30000)
        wait_for(lambda: marker_text(page, rated_key).strip(), 10, "the marker")
        assert "rated" not in marker_text(page, rated_key) and "Rate" in marker_text(page, rated_key)
        page.close()


# The worker's waits shortened for one browser (seed.json `timings`, lib/constants.js applyTimings):
# a ping every 2 s instead of 20, silent after 6 s instead of 45, reconnect back-off at most 2 s;
# comments the worker did not take tried again at most every 2 s instead of 30. The rules are the
# same; only the time a test waits for them changes.
FAST = {"KEEPALIVE_MS": 2000, "SILENT_AFTER_MS": 6000, "BACKOFF_MAX_MS": 2000, "UNSENT_RETRY_MAX_MS": 2000}


def test_a_daemon_that_stopped_answering_is_not_shown_as_connected(playwright_instance, tmp_path_factory, daemon):
    """A daemon whose process is stopped keeps its socket open: the popup said 'connected' for as
    long as that lasted, while nothing was acknowledged. Unanswered pings end the session."""
    b = make_browser(playwright_instance, tmp_path_factory, daemon, timings=FAST)
    try:
        wait_for(lambda: b.state()["conn"] == "ready", 30, "the worker to be connected")
        os.kill(daemon.proc.pid, signal.SIGSTOP)
        try:
            st = wait_for(lambda: (s := b.state())["conn"] != "ready" and s, 30, "the popup to stop saying connected", interval=0.5)
            assert "not answered" in st["lastError"], st
            silent_s = int(re.search(r"not answered for (\d+) s", st["lastError"]).group(1))
            assert silent_s >= FAST["SILENT_AFTER_MS"] / 1000, st  # the silence rule, not some other drop
        finally:
            os.kill(daemon.proc.pid, signal.SIGCONT)
        wait_for(lambda: b.state()["conn"] == "ready", 30, "the worker to connect again", interval=0.5)
    finally:
        b.close()


FILL_STORAGE = """async () => {
  // the extension's storage quota (10 MB without unlimitedStorage), filled up to a few bytes
  let size = 10485760 - (await chrome.storage.local.getBytesInUse(null)) - 64;
  while (size > 0) {
    try { await chrome.storage.local.set({ filler: "x".repeat(size) }); return size; } catch (_) { size -= 256; }
  }
  return 0;
}"""


def test_comments_the_worker_could_not_take_are_said_and_sent_once_it_can(playwright_instance, tmp_path_factory, daemon, tmp_path):
    """The worker stores a page's comments before it sends them; when it cannot (its storage is full)
    the page said nothing and gave them up after five tries: found, never queued, never logged."""
    browser = make_browser(playwright_instance, tmp_path_factory, daemon, timings=FAST)
    # what a content script is told: the page below retries on FAST's 2 s cap, not the 30 s one
    assert browser.ask_worker({"type": "content_hello"})["timings"] == FAST
    ext = browser.context.new_page()
    ext.goto(browser.ext_url("popup.html"))
    try:
        assert ext.evaluate(FILL_STORAGE) > 0
        url, items = serve_youtube_page(browser, tmp_path, "CountsT0007", ["said while the browser's storage is full", "and another"])
        page = browser.context.new_page()
        page.goto(url)
        st = wait_for(lambda: next((p for p in browser.state()["pages"] if p.get("page") and p["page"]["page_key"] == "CountsT0007"
                                    and (p.get("counts") or {}).get("unsent")), None), 30, "the page to say its comments were not taken")
        assert st["counts"]["unsent"] == 2 and "quota" in st["unsent_error"].lower(), st
        assert "2 comments not taken by the extension yet" in popup_line(browser, url, "adapter")
        # longer than the five tries the page used to give up after (1 + 2 + 4 + 8 + 16 s, at FAST's
        # 2 s cap 1 + 2 + 2 + 2 + 2 = 9 s)
        page.wait_for_timeout(12000)
        ext.evaluate("() => chrome.storage.local.remove('filler')")
        wait_for(lambda: len(logged_keys(daemon, items)) == 2, 20, "the comments once the worker could store them", interval=0.5)
        page.close()
    finally:
        ext.evaluate("() => chrome.storage.local.remove('filler')")
        ext.close()
        browser.close()
