"""Multi-participant studies in the browser, against the real `modlens serve`: two participants
(two Chromium profiles, two rater ids, one daemon) open the same task page, comments arriving in
opposite orders, and are asked about exactly the same comments (deciles sampling decided by the
study salt, not by arrival order); the popup lists the study's task pages with progress that
moves when a comment is rated there; with free browsing off, a page outside the task list
sends nothing and the popup says why."""
from __future__ import annotations

import html
import uuid

import pytest

from .conftest import make_browser
from .closed_shadow import Marker
from .harness import Daemon, wait_for

pytestmark = [pytest.mark.browser, pytest.mark.slow]

TASK_VIDEO, OFF_VIDEO = "Tk9mQ2xR7aB", "Of5nW3pL8cD"
TASK_URL = f"https://www.youtube.com/watch?v={TASK_VIDEO}"
OFF_URL = f"https://www.youtube.com/watch?v={OFF_VIDEO}"
STUDY = f"""
study_id = "e2e-multi"
title = "modlens multi-participant study"
display = "blind"
free_browsing = false

[[detectors]]
name = "profanity-check"

[perturbation]
enabled = false

[sampling]
mode = "deciles"
per_decile = 50

[[tasks]]
url = "{TASK_URL}&t=12s"
title = "The task video"
target = 2

[[tasks]]
url = "https://news.example/story"
title = "A news story"
"""
TEXTS = [
    "Lovely restoration, the sound is warm.", "This is complete shit and you are an idiot.",
    "What model of oscillator is that?", "Go to hell, nobody wants your damn opinion.",
    "Thanks for the parts list.", "You stupid moron, that is not how capacitors work.",
    "The panel looks brand new now.", "Absolute garbage video, what a fucking waste.",
    "I had the same synth in 1984.", "Shut up, loser.", "The filter sweep at the end is great.",
    "Crap soldering, honestly.", "Nice job on the keys.", "Who cares, dumbass.",
    "Could you share the service manual?", "Bloody brilliant work mate.", "Great lighting in this one.",
    "That voice board fix was clever.", "Idiotic advice in the comments here.", "Subscribed!",
    "How long did the recap take?", "What a joke of a repair, you clown.", "Beautiful wood panels.",
    "Damn, that drift is charming.",
]


def youtube_page(video: str, comments: list[tuple[str, str]]) -> str:
    """A YouTube watch page (the markup of tests/e2e/pages.py) with these (key, text) comments, in this order."""
    blocks = "".join(f"""
<ytd-comment-thread-renderer><div id="comment-container"><ytd-comment-view-model id="comment">
  <div id="header-author"><h3><a id="author-text" href="/@user{i}"><span>@user{i}</span></a></h3>
  <span id="published-time-text"><a href="/watch?v={video}&amp;lc={key}">1 hour ago</a></span></div>
  <div id="expander"><yt-attributed-string id="content-text"><span>{html.escape(text)}</span></yt-attributed-string></div>
</ytd-comment-view-model></div></ytd-comment-thread-renderer>""" for i, (key, text) in enumerate(comments))
    return (f'<!doctype html><html><head><meta charset="utf-8"><title>Video {video} - YouTube</title></head>'
            f'<body><ytd-app><ytd-comments id="comments"><div id="contents">{blocks}</div></ytd-comments></ytd-app></body></html>')


@pytest.fixture(scope="module")
def multi_daemon(tmp_path_factory):
    d = Daemon(tmp_path_factory.mktemp("multi-home"), STUDY)
    d.start()
    yield d
    d.stop()


@pytest.fixture(scope="module")
def raters(playwright_instance, tmp_path_factory, multi_daemon):
    browsers = [make_browser(playwright_instance, tmp_path_factory, multi_daemon, grant=[]) for _ in range(2)]
    yield browsers
    for b in browsers:
        b.close()


def serve_html(browser, url: str, body: str, tmp) -> None:
    path = tmp / f"{uuid.uuid4().hex}.html"
    path.write_text(body, encoding="utf-8")
    browser.routes[url] = path


def scored_on(browser, n: int) -> bool:
    return any((p.get("counts") or {}).get("scored", 0) >= n for p in browser.state()["pages"])


def sampled_keys(page) -> set[str]:
    return set(page.evaluate("[...document.querySelectorAll('modlens-marker')].map(m => m.dataset.modlensKey)"))


def test_two_participants_get_the_same_sample_and_task_progress(raters, multi_daemon, tmp_path):
    a, b = raters
    run = uuid.uuid4().hex[:10]
    comments = [(f"Ugz{run}{i:03d}AaABAg", t) for i, t in enumerate(TEXTS)]
    assert a.state()["settings"]["raterId"] != b.state()["settings"]["raterId"]

    # the same task page, its comments in opposite orders (lazy loading, sorting differ per person)
    pages = []
    for browser, order in ((a, comments), (b, comments[::-1])):
        serve_html(browser, TASK_URL, youtube_page(TASK_VIDEO, order), tmp_path)
        page = browser.context.new_page()
        page.goto(TASK_URL)
        pages.append(page)
    for browser in (a, b):
        wait_for(lambda b=browser: scored_on(b, len(comments)), 40, "every comment of the task page scored")
    pa, pb = pages
    pa.wait_for_timeout(300)  # markers are drawn as the scores arrive
    sample = sampled_keys(pa)
    assert sample == sampled_keys(pb), "two participants were asked about different comments"
    assert 0 < len(sample) < len(comments), f"deciles at 50 % sampled {len(sample)} of {len(comments)}"
    assert a.state()["study"]["sampling"]["salt"] == b.state()["study"]["sampling"]["salt"]

    # the popup (as a tab, about the task page): both task pages, links, progress 0/2
    popup = a.context.new_page()
    popup.goto(a.ext_url("popup.html") + "?page=" + TASK_URL)
    items = popup.locator("#task-list li")
    wait_for(lambda: items.count() == 2, 10, "the two task pages in the popup")
    first = items.nth(0)
    assert first.locator("a").inner_text() == "The task video"
    assert first.locator("a").get_attribute("href") == f"{TASK_URL}&t=12s"
    assert "here" in first.get_attribute("class")
    assert first.locator(".progress").inner_text() == "0/2"
    assert items.nth(1).locator(".progress").inner_text() == "0 rated"
    assert "0/2 rated" in popup.locator("#tasks-overall").inner_text()
    assert popup.locator("#tasks-only").is_hidden()

    # rate one sampled comment on the task page: the open popup moves to 1/2
    rated_before = a.state()["totals"]["rated"]
    key = sorted(sample)[0]
    Marker(pa, key).rate()  # its closed shadow root, clicked with trusted input
    wait_for(lambda: first.locator(".progress").inner_text() == "1/2", 10, "task progress 1/2 in the popup")
    # the news story asks for no number of ratings: it is never done, so not one of the pages counted
    assert "0/1 page with a target done · 1/2 rated" in popup.locator("#tasks-overall").inner_text()
    rows = wait_for(lambda: [r for r in multi_daemon.ratings() if r["comment_key"] == key], 15, "the rating in the study log")
    assert len(rows) == 1
    wait_for(lambda: a.state()["totals"]["rated"] == rated_before + 1, 10, "the rating counted as rated")
    popup.close()
    # the task page of each comment, the rating and the rated count are what the worker stored
    # (cc: records): a restarted worker reads the same progress back
    a.stop_service_worker()
    popup = a.context.new_page()
    popup.goto(a.ext_url("popup.html") + "?page=" + TASK_URL)
    first = popup.locator("#task-list li").nth(0)
    wait_for(lambda: first.locator(".progress").inner_text() == "1/2", 10, "task progress 1/2 after a worker restart")
    assert a.state()["totals"]["rated"] == rated_before + 1
    popup.close()
    for page in pages:
        page.close()


def test_free_browsing_off_sends_nothing_from_other_pages(raters, multi_daemon, tmp_path):
    a = raters[0]
    run = uuid.uuid4().hex[:10]
    comments = [(f"Ugx{run}{i:03d}AaABAg", t) for i, t in enumerate(TEXTS[:4])]
    serve_html(a, OFF_URL, youtube_page(OFF_VIDEO, comments), tmp_path)
    page = a.context.new_page()
    page.goto(OFF_URL)
    wait_for(lambda: any("not a task page" in (p.get("reason") or "") for p in a.state()["pages"]), 30,
             "the page status saying it is not a task page")
    popup = a.context.new_page()
    popup.goto(a.ext_url("popup.html") + "?page=" + OFF_URL)
    note = popup.locator("#tasks-only")
    note.wait_for(state="visible", timeout=10000)
    assert "not one of the study's pages" in note.inner_text()
    wait_for(lambda: "not a task page" in popup.locator("#adapter").inner_text(), 10, "the page status in the popup")
    logged = multi_daemon.comments("youtube")
    assert not any(k in logged for k, _ in comments)
    assert page.locator("modlens-marker").count() == 0
    popup.close()
    page.close()
