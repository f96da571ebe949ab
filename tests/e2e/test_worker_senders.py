"""The extension's trust boundary in a real Chromium: a content script (the part of the extension that runs inside a web
page) cannot change the settings or read the token, and the daemon admits only the extension
copies it was paired with."""
from __future__ import annotations

import json

import pytest

from modlens import pairing
from modlens.cli.browse import prepare_extension as browse_prepare

from .harness import REPO, Browser, wait_for
from .pages import youtube_page

pytestmark = pytest.mark.browser


def content_script_world(page) -> tuple[object, int]:
    """A CDP session and the id of the content script's isolated world in `page`'s top frame."""
    cdp = page.context.new_cdp_session(page)
    worlds: list[dict] = []
    cdp.on("Runtime.executionContextCreated", lambda ev: worlds.append(ev["context"]))
    cdp.send("Runtime.enable")  # replays the contexts that exist already

    def modlens_world():
        return next((w["id"] for w in worlds if w.get("auxData", {}).get("type") == "isolated" and w.get("name") == "modlens"), None)
    return cdp, wait_for(modlens_world, 15, "the content script's isolated world")


def from_content_script(cdp, world: int, message: dict) -> dict:
    answer = cdp.send("Runtime.evaluate", {
        "expression": f"chrome.runtime.sendMessage({json.dumps(message)})",
        "contextId": world, "awaitPromise": True, "returnByValue": True})
    assert "exceptionDetails" not in answer, answer
    return answer["result"]["value"]


def test_the_computed_id_is_chromiums(browser):
    copy = browser.profile.parent / "extension"  # where conftest.make_browser prepared it
    assert pairing.chromium_unpacked_origin(copy) == f"chrome-extension://{browser.extension_id}"


def test_a_content_script_cannot_change_settings_nor_read_the_token(browser, daemon, tmp_path):
    html, _ = youtube_page("Senders0036", ["a comment on a page whose content script turned hostile"])
    (tmp_path / "page.html").write_text(html, encoding="utf-8")
    url = "https://www.youtube.com/watch?v=Senders0036"
    browser.routes[url] = tmp_path / "page.html"
    page = browser.context.new_page()
    try:
        page.goto(url)
        cdp, world = content_script_world(page)
        before = browser.state()
        for message in ({"type": "set_settings", "settings": {"daemonUrl": "ws://evil.example/ws", "token": "x"}},
                        {"type": "consent", "accept": False, "study_id": before["study"]["study_id"]},
                        {"type": "join_study", "pack": "{}", "file_name": "x.modlens", "replace": True},
                        {"type": "get_state"}, {"type": "dead_letters"}, {"type": "reconnect"}):
            answer = from_content_script(cdp, world, message)
            assert "own pages only" in answer.get("error", ""), (message["type"], answer)
            assert daemon.token not in json.dumps(answer)
        config = from_content_script(cdp, world, {"type": "content_hello"})
        assert config["consented"] is True and daemon.token not in json.dumps(config)
        after = browser.state()
        assert (after["conn"], after["consented"], after["settings"]["daemonUrl"]) == ("ready", True, daemon.url)
        # the extension's own pages see whether a token is stored, never the token
        assert after["settings"]["tokenSet"] is True and daemon.token not in json.dumps(after)
        refused = browser.set_settings({"daemonUrl": "ws://192.168.1.4:8765/ws"})
        assert "on this computer" in refused["error"] and browser.state()["settings"]["daemonUrl"] == daemon.url
    finally:
        page.close()


def test_an_extension_the_daemon_was_not_paired_with_is_refused(playwright_instance, daemon, tmp_path):
    # a copy with the right token and address whose id nobody paired (the shared daemon has paired others)
    ext = browse_prepare(REPO / "extension", tmp_path / "unpaired", daemon.url, daemon.token)
    b = Browser(playwright_instance, tmp_path / "profile", ext)
    try:
        origin = f"chrome-extension://{b.extension_id}"
        st = wait_for(lambda: (s := b.state())["conn"] == "refused" and s, 20, "the daemon to refuse the unpaired extension")
        assert f"modlens pair --extension {origin}" in st["lastError"] and st["extensionOrigin"] == origin
        daemon.pair_extension(origin)
        b.ask_worker({"type": "reconnect"}, "options.html")
        wait_for(lambda: b.state()["conn"] == "ready", 20, "the extension, once paired, to connect")
    finally:
        b.close()
