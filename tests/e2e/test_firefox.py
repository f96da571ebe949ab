"""The same extension in Firefox ESR (background script instead of service worker), over raw
WebDriver BiDi: install it, accept the consent on its options page, then the whole site-access
flow on an article served on 127.0.0.1 (a site outside the built-in platforms): nothing is
captured before the site is switched on; a real click on the popup's "Enable modlens on this
site" grants it (Firefox grants optional permissions without a prompt under
`extensions.webextOptionalPermissionPrompts=false`), the worker registers the content scripts
and the comments reach the real daemon's study log; "Disable on this site" stops capture for
the next page."""
from __future__ import annotations

import threading
import uuid
from functools import partial
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import quote

import pytest

from .bidi import Firefox
from .harness import prepare_extension, wait_for
from .pages import viafoura_page
from realtools import need

pytestmark = [pytest.mark.browser, pytest.mark.slow]
PREFS = {"extensions.webextOptionalPermissionPrompts": False}


@pytest.fixture
def site(tmp_path):
    """Three articles, each with comments no test has logged before: {name: (url, texts)}."""
    texts = {}
    for name in ("before", "enabled", "disabled"):
        html, run = viafoura_page(f"ff-{name}", [f"Firefox {name}: this comment", f"and this reply too ({name})"])
        (tmp_path / f"{name}.html").write_text(html)
        texts[name] = [f"Firefox {name}: this comment ({run})", f"and this reply too ({name}) ({run})"]
    handler = partial(SimpleHTTPRequestHandler, directory=str(tmp_path))
    handler.log_message = lambda *a: None
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    base = f"http://127.0.0.1:{server.server_address[1]}"
    yield {name: (f"{base}/{name}.html", t) for name, t in texts.items()}
    server.shutdown()


def test_firefox_esr_extension_streams_comments_after_site_is_enabled(tmp_path, daemon, site):
    need("firefox-esr")
    ext = prepare_extension(tmp_path / "ext", daemon)  # nothing granted beyond the manifest
    ext_uuid = str(uuid.uuid4())
    daemon.pair_extension(f"moz-extension://{ext_uuid}")  # the daemon admits paired extensions only
    ff = Firefox(tmp_path / "ff-profile", ext_uuid, PREFS)

    def logged(texts):
        got = {r["text"]: r for r in daemon.comments("viafoura").values()}
        return [got[t] for t in texts if t in got]

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

        # not switched on: the page loads, no content script runs, nothing is logged
        url, texts = site["before"]
        ff.send("browsingContext.navigate", {"context": ctx, "url": url, "wait": "complete"})
        assert ff.evaluate(ctx, "document.querySelectorAll('modlens-marker').length") == 0
        # the popup, for that page (opened in the options tab: an extension page may go there)
        popup = f"popup.html?page={quote(url, safe='')}"
        ff.evaluate(opts, f"location.href = {popup!r}")
        toggle_is = lambda label: ff.evaluate(opts, f"(b => !!b && !b.hidden && b.textContent === {label!r})(document.getElementById('site-toggle'))")
        wait_for(lambda: toggle_is("Enable modlens on this site"), 10, "the popup's enable button", 0.3)
        assert logged(texts) == []

        ff.click(opts, "#site-toggle")
        wait_for(lambda: toggle_is("Disable on this site"), 10, "the site granted", 0.3)
        # the already open article is picked up at once (injected), the next one by the registered script
        wait_for(lambda: len(logged(texts)) == 2, 30, "the open article's comments", 0.5)
        url, texts = site["enabled"]
        ff.send("browsingContext.navigate", {"context": ctx, "url": url, "wait": "complete"})
        got = wait_for(lambda: len(logged(texts)) == 2 and logged(texts), 30, "Firefox's comments in the study log", 0.5)
        assert got[0]["page_key"] == "ff-enabled" and got[0]["author_hash"]

        ff.click(opts, "#site-toggle")
        wait_for(lambda: toggle_is("Enable modlens on this site"), 10, "the site switched off", 0.3)
        url, texts = site["disabled"]
        ff.send("browsingContext.navigate", {"context": ctx, "url": url, "wait": "complete"})
        wait_for(lambda: ff.evaluate(ctx, "document.readyState") == "complete", 10, "the article", 0.3)
        ff.evaluate(ctx, "new Promise(r => setTimeout(r, 2500))")
        assert logged(texts) == [] and ff.evaluate(ctx, "document.querySelectorAll('modlens-marker').length") == 0
    finally:
        ff.close()
