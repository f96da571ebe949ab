"""The same extension in Firefox ESR (background script instead of service worker), over raw
WebDriver BiDi: install it, accept the consent on its options page, open an article served
on 127.0.0.1, and see its comments arrive in the real daemon's study log."""
from __future__ import annotations

import shutil
import threading
import time
import uuid
from functools import partial
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer

import pytest

from .bidi import FIREFOX, Firefox
from .harness import prepare_extension, wait_for
from .pages import viafoura_page

pytestmark = [pytest.mark.browser, pytest.mark.slow]


@pytest.fixture
def site(tmp_path):
    (tmp_path / "article.html").write_text(viafoura_page("ff-smoke", ["Firefox sees this comment", "and this reply too"])[0])
    handler = partial(SimpleHTTPRequestHandler, directory=str(tmp_path))
    handler.log_message = lambda *a: None
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}/article.html", (tmp_path / "article.html").read_text()
    server.shutdown()


def test_firefox_esr_extension_streams_comments(tmp_path, daemon, site):
    if not shutil.which(FIREFOX):
        pytest.skip("firefox-esr not installed")
    url, html = site
    ext = prepare_extension(tmp_path / "ext", daemon)
    ext_uuid = str(uuid.uuid4())
    ff = Firefox(tmp_path / "ff-profile", ext_uuid)
    try:
        ff.send("session.new", {"capabilities": {}})
        installed = ff.send("webExtension.install", {"extensionData": {"type": "path", "path": str(ext)}})
        assert installed["extension"] == "modlens@modlens.invalid"
        # BiDi may not navigate to moz-extension:// URLs, but the extension opens its options
        # page by itself on first install (consent first); find that tab
        def options_tab():
            tree = ff.send("browsingContext.getTree", {})["contexts"]
            return next((c["context"] for c in tree if c["url"].startswith(f"moz-extension://{ext_uuid}/options.html")), None)
        opts = wait_for(options_tab, 20, "the options page the extension opens on install", 0.5)
        ctx = ff.send("browsingContext.getTree", {})["contexts"][0]["context"]
        # the background script connects (moz-extension origin) and hands the study's consent text
        wait_for(lambda: ff.evaluate(opts, "!document.getElementById('accept-consent').disabled"), 30, "study from the daemon", 0.5)
        ff.evaluate(opts, "document.getElementById('accept-consent').click()")
        wait_for(lambda: ff.evaluate(opts, "!document.getElementById('withdraw-consent').hidden"), 10, "consent stored", 0.5)
        if ctx == opts:
            ctx = ff.send("browsingContext.create", {"type": "tab"})["context"]
        ff.send("browsingContext.navigate", {"context": ctx, "url": url, "wait": "complete"})
        run = html.split("(")[1].split(")")[0]
        texts = [f"Firefox sees this comment ({run})", f"and this reply too ({run})"]

        def arrived():
            got = {r["text"]: r for r in daemon.comments("viafoura").values()}
            return all(t in got for t in texts) and got
        got = wait_for(arrived, 30, "Firefox's comments in the study log", 0.5)
        assert got[texts[0]]["page_key"] == "ff-smoke" and got[texts[0]]["author_hash"]
    finally:
        ff.close()
