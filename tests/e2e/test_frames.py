"""Comment iframes are keyed by the top-level site the participant switched on.

- The Facebook comments plugin's frame (static content script) is captured under an article on a
  granted site, and NOT under the same frame embedded by a site the participant never enabled; a rating
  its content script sends there is refused by the worker, and taken under the granted site.
- A custom selector stored for the article's host reaches comments that the page writes into a
  srcdoc iframe (no URL of its own: the registered script reaches it by its creator's origin), and
  they are logged under the article's page key.
Fresh comment keys and texts per run, so nothing here can pass on what another test logged."""
from __future__ import annotations

import html
import json
import uuid

import pytest

from .conftest import make_browser
from .harness import FIXTURES, wait_for

pytestmark = [pytest.mark.browser, pytest.mark.slow]
GRANTED = "https://news-granted.example.com"
OTHER = "https://news-other.example.com"
PLUGIN = "https://www.facebook.com/v19.0/plugins/comments.php"


@pytest.fixture(scope="module")
def browser(playwright_instance, tmp_path_factory, daemon):
    b = make_browser(playwright_instance, tmp_path_factory, daemon, grant=[f"{GRANTED}/*"])
    yield b
    b.close()


def plugin_frame(tmp_path, run: str) -> tuple[str, list[str]]:
    """The facebook-plugin fixture's frame with this run's keys and texts; returns (file, texts)."""
    src = (FIXTURES / "facebook-plugin" / "frame.html").read_text(encoding="utf-8")
    texts = {"Finally. My kids showed goats last July and we spent more time hosing the animals down than in the ring.",
             "September is harvest. Half the farm families won't be able to come at all."}
    for t in texts:
        assert t in src, t
        src = src.replace(t, f"{t} [{run}]")
    src = src.replace("7301845520194471_", f"9{run}_")
    path = tmp_path / f"plugin-{run}.html"
    path.write_text(src, encoding="utf-8")
    return path, [f"{t} [{run}]" for t in texts]


def article(tmp_path, origin: str, name: str, body: str) -> str:
    url = f"{origin}/2026/03/{name}/"
    path = tmp_path / f"{name}.html"
    path.write_text(f'<!doctype html><html><head><meta charset="utf-8"><title>{name}</title>'
                    f'<link rel="canonical" href="{url}"></head><body><h1>{name}</h1>{body}</body></html>', encoding="utf-8")
    return url, path


def plugin_iframe(url: str) -> str:
    from urllib.parse import quote
    return f'<iframe title="fb:comments Facebook Social Plugin" src="{PLUGIN}?app_id=1&amp;href={quote(url, safe="")}&amp;sdk=joey"></iframe>'


def logged_texts(daemon, platform: str, needle: str) -> dict[str, dict]:
    return {r["text"]: r for r in daemon.comments(platform).values() if needle in r["text"]}


def test_facebook_plugin_only_under_a_switched_on_site(browser, daemon, tmp_path):
    run = uuid.uuid4().hex[:8]
    frame, texts = plugin_frame(tmp_path, run)
    browser.routes[f"{PLUGIN}*"] = frame
    off_url, off_path = article(tmp_path, OTHER, f"off-{run}", plugin_iframe(f"{OTHER}/2026/03/off-{run}/"))
    on_url, on_path = article(tmp_path, GRANTED, f"on-{run}", plugin_iframe(f"{GRANTED}/2026/03/on-{run}/"))
    browser.routes[off_url] = off_path
    browser.routes[on_url] = on_path

    off = browser.context.new_page()
    off.goto(off_url)
    off.frame_locator("iframe").locator("span._5mdd").first.wait_for()

    on = browser.context.new_page()
    on.goto(on_url)
    got = wait_for(lambda: (lambda g: g if set(texts) <= set(g) else None)(logged_texts(daemon, "facebook", run)),
                   20, "the plugin's comments under the granted article")
    # the same plugin frame under the switched-on article, opened after the other one had loaded, got all the
    # way to the log (the positive event, instead of a fixed wait): the frame under the other site sent nothing
    assert {r["page_key"] for r in got.values()} == {f"news-granted.example.com/2026/03/on-{run}/"}, \
        "the plugin frame of a site not switched on was captured"
    # a rating sent from the frame's content script (as a Save pressed before the frame heard its page's site
    # was switched off): the worker refuses it under the other site, from its tab and frame, and takes it under
    # the switched-on one
    key = next(iter(got.values()))["comment_key"]
    rate = {"type": "rate", "comment": {"platform": "facebook", "key": key}, "values": {"toxicity": "not toxic"},
            "anchors": None, "time_spent_ms": 900}
    refused = from_frame_content_script(browser, off.frames[1], rate)
    assert refused == {"queued": False, "reason": "the page's site is not switched on: switch it on from the popup to rate"}, refused
    assert from_frame_content_script(browser, on.frames[1], rate).get("queued") is True
    off.close()
    on.close()
    assert all(r["page_key"].startswith("news-granted.") for r in logged_texts(daemon, "facebook", run).values())


def from_frame_content_script(browser, frame, message: dict) -> dict:
    """`message` sent to the worker from the content script's isolated world in `frame` (a cross-origin frame:
    a target of its own, reached by a CDP session on it)."""
    cdp = browser.context.new_cdp_session(frame)
    worlds: list[dict] = []
    cdp.on("Runtime.executionContextCreated", lambda ev: worlds.append(ev["context"]))
    cdp.send("Runtime.enable")  # replays the contexts that exist already
    world = wait_for(lambda: next((w["id"] for w in worlds if w.get("auxData", {}).get("type") == "isolated"
                                   and w.get("name") == "modlens"), None), 15, "the frame's content script world")
    answer = cdp.send("Runtime.evaluate", {"expression": f"chrome.runtime.sendMessage({json.dumps(message)})",
                                           "contextId": world, "awaitPromise": True, "returnByValue": True})
    assert "exceptionDetails" not in answer, answer
    return answer["result"]["value"]


def test_custom_selector_reaches_a_srcdoc_frame(browser, daemon, tmp_path):
    run = uuid.uuid4().hex[:8]
    texts = [f"written into a srcdoc frame, first [{run}]", f"written into a srcdoc frame, second [{run}]"]
    inner = "".join(f'<div class="rc"><b class="rc-who">reader{i}</b><p class="rc-text">{html.escape(t)}</p></div>'
                    for i, t in enumerate(texts))
    url, path = article(tmp_path, GRANTED, f"srcdoc-{run}",
                        f'<iframe title="comments" srcdoc="{html.escape("<!doctype html><body>" + inner + "</body>")}"></iframe>')
    browser.routes[url] = path
    browser.set_settings({"customSelectors": [{"host": "news-granted.example.com", "comment": "div.rc", "text": ".rc-text",
                                               "author": ".rc-who", "key": ""}]})
    page = browser.context.new_page()
    try:
        page.goto(url)
        got = wait_for(lambda: (lambda g: g if set(texts) <= set(g) else None)(logged_texts(daemon, "generic", run)),
                       20, "the srcdoc frame's comments")
        assert {r["page_key"] for r in got.values()} == {f"news-granted.example.com/2026/03/srcdoc-{run}/"}
        assert all(r["author_hash"] for r in got.values())
    finally:
        page.close()
