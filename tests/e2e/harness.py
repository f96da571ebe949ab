"""End-to-end harness: a real `modlens serve` subprocess, a Chromium with the extension
(prepared exactly as `modlens browse` prepares it), fixture pages served under the real
sites' URLs by Playwright request routing, and read-only queries of the study log."""
from __future__ import annotations

import json
import mimetypes
import os
import signal
import socket
import sqlite3
import subprocess
import sys
import threading
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Callable, Iterator
from urllib.parse import urlsplit

from cli_inprocess import run_modlens

REPO = Path(__file__).resolve().parents[2]
FIXTURES = REPO / "tests" / "fixtures" / "sites"
CHROMIUM = "/usr/lib/chromium/chromium"

STUDY_TOML = """
study_id = "e2e"
title = "modlens end-to-end study"
display = "blind"

[[detectors]]
name = "profanity-check"

[perturbation]
enabled = false

[sampling]
mode = "all"
"""


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_for(predicate: Callable[[], Any], timeout: float, what: str, interval: float = 0.2,
             sleep: Callable[[float], Any] = time.sleep) -> Any:
    deadline = time.monotonic() + timeout
    last = None
    while time.monotonic() < deadline:
        last = predicate()
        if last:
            return last
        sleep(interval)
    raise AssertionError(f"timed out after {timeout:.0f}s waiting for {what} (last: {last!r})")


def modlens_in(home: Path, *args: str) -> str:
    """`modlens ARGS` with MODLENS_HOME=`home`, in this process (`cli_inprocess`): its standard output; it
    must exit 0."""
    code, out, err = run_modlens(list(args), home)
    assert code == 0, f"modlens {' '.join(args)}: exit {code}\n{out}\n{err}"
    return out


class Daemon:
    """`modlens serve` on a fixed free port, so the extension's address survives restarts.
    `study_toml` None: no --config, the daemon serves the study the home joined (`modlens join`)."""

    def __init__(self, home: Path, study_toml: str | None = STUDY_TOML):
        self.home = home
        self.home.mkdir(parents=True, exist_ok=True)
        self.db = home / "study.sqlite"
        self.config = None if study_toml is None else home / "study.toml"
        if self.config is not None:
            self.config.write_text(study_toml, encoding="utf-8")
        self.port = free_port()
        self.url = f"ws://127.0.0.1:{self.port}/ws"
        self.env = {**os.environ, "MODLENS_HOME": str(home)}
        self.proc: subprocess.Popen | None = None
        self.started = False  # once started, the port is the extension's: restarts keep it
        self.log = home / "serve.log"
        self.token = json.loads(modlens_in(home, "pair", "--json"))["token"]

    def pair_extension(self, origin: str) -> None:
        """`modlens pair --extension ORIGIN` in this daemon's home (which is not the test's)."""
        from modlens import pairing
        pairing.pair_extension(origin, pairing.extensions_file(self.home))

    def start(self) -> None:
        # free_port() let the port go before serve binds it (seconds later, after loading detectors): an
        # outgoing connection (Chromium's, another test's) may take it meanwhile. Before any start, no
        # browser knows the port yet, so a first start refused for it takes another; a restart keeps it.
        for _ in range(3):
            logf = open(self.log, "a", encoding="utf-8")
            self.proc = subprocess.Popen(
                [sys.executable, "-m", "modlens", "serve", *(["--config", str(self.config)] if self.config else []),
                 "--db", str(self.db), "--port", str(self.port), "--log-level", "WARNING"],
                env=self.env, stdout=logf, stderr=subprocess.STDOUT)
            wait_for(lambda: "listening" in self.log.read_text(encoding="utf-8") or self.proc.poll() is not None,
                     60, "modlens serve to listen")
            said = self.log.read_text(encoding="utf-8")
            if self.proc.poll() is None or self.started or "address already in use" not in said:
                break
            self.port = free_port()
            self.url = f"ws://127.0.0.1:{self.port}/ws"
            self.log.write_text("", encoding="utf-8")
        if self.proc.poll() is not None:
            raise RuntimeError(f"modlens serve exited: {self.log.read_text(encoding='utf-8')[-2000:]}")
        self.started = True
        self.log.write_text("", encoding="utf-8")  # next start waits for its own "listening"

    def stop(self) -> None:
        if self.proc and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.proc = None

    # --- the study log (read-only; the daemon is the only writer) -------------------------
    def query(self, sql: str, params: tuple = ()) -> list[sqlite3.Row]:
        if not self.db.exists():
            return []
        con = sqlite3.connect(f"file:{self.db}?mode=ro", uri=True, timeout=5)
        con.row_factory = sqlite3.Row
        try:
            return con.execute(sql, params).fetchall()
        except sqlite3.OperationalError as err:  # schema not created yet
            if "no such table" in str(err):
                return []
            raise
        finally:
            con.close()

    def comments(self, platform: str) -> dict[str, dict]:
        rows = self.query(
            "SELECT c.comment_key, t.text, c.parent_key, c.author_hash, p.page_key, c.time_shown, "
            "(SELECT l.value FROM labels l WHERE l.comment_id = c.comment_id AND l.name = 'parent_via' "
            "AND l.source = 'extension') AS parent_via "
            "FROM comments c JOIN texts t ON t.text_id = c.text_id LEFT JOIN pages p ON p.page_id = c.page_id "
            "WHERE c.platform = ?", (platform,))
        return {r["comment_key"]: dict(r) for r in rows}

    def ratings(self) -> list[dict]:
        rows = self.query("SELECT r.*, c.comment_key, c.platform FROM ratings r JOIN comments c ON c.comment_id = r.comment_id")
        return [dict(r) for r in rows]


# Adapters whose pages the manifest covers (host_permissions + static content scripts); every
# other fixture runs on a site the participant must switch on (optional host permission). The
# Facebook comments plugin's frame has a static content script too, but captures only on a page
# whose site is switched on: its fixtures get their article's site granted like the news sites.
BUILT_IN_ADAPTERS = {"youtube", "x", "disqus"}


def site_pattern(url: str) -> str:
    """The match pattern the popup asks for: scheme and host, any path (ports are not part of it)."""
    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.hostname}/*"


def prepare_extension(target: Path, daemon: Daemon, grant: list[str] | tuple[str, ...] = (), start: str | None = None,
                      timings: dict[str, int] | None = None) -> Path:
    """The extension as `modlens browse` prepares it. `grant`: site patterns to grant at install,
    standing in for the participant's "Enable modlens on this site" click, whose permission prompt
    headless Chromium cannot show: they are added to the copy's `host_permissions`, which Chromium
    grants to an unpacked extension. The worker still finds them through permissions.getAll() and
    registers the content scripts for them, as after a real grant. `timings`: shorter waits for the
    worker and content scripts ({"SILENT_AFTER_MS": 6000, ...}, lib/constants.js applyTimings), in
    seed.json where only tests put them."""
    from modlens import pairing
    from modlens.cli.browse import prepare_extension as prep
    ext = prep(REPO / "extension", target, daemon.url, daemon.token, start=start)
    daemon.pair_extension(pairing.chromium_unpacked_origin(ext))  # as `modlens browse` pairs its copy
    if timings:
        seed_file = ext / "seed.json"
        seed_file.write_text(json.dumps(json.loads(seed_file.read_text(encoding="utf-8")) | {"timings": timings}), encoding="utf-8")
    if grant:
        path = ext / "manifest.json"
        manifest = json.loads(path.read_text(encoding="utf-8"))
        manifest["host_permissions"] = manifest.get("host_permissions", []) + [g for g in grant if g not in manifest.get("host_permissions", [])]
        path.write_text(json.dumps(manifest, indent=2), encoding="utf-8")
    return ext


class Browser:
    """Headless Chromium (persistent context: extensions need one) with routing of fixture URLs."""

    opened: list[Browser] = []  # every one this process opened, in order: a failed test shows its own ones' consoles (conftest)

    def __init__(self, playwright, profile: Path, ext: Path):
        self.profile = profile
        self.context = playwright.chromium.launch_persistent_context(
            str(profile), executable_path=CHROMIUM, headless=True,
            ignore_default_args=["--disable-extensions"],
            args=[f"--disable-extensions-except={ext}", f"--load-extension={ext}", "--no-sandbox"],
            viewport={"width": 1100, "height": 900})
        self.console: list[str] = []
        Browser.opened.append(self)
        self.context.on("console", lambda m: self.console.append(f"[{'worker' if getattr(m, 'worker', None) else 'page'}] {m.text}"))
        sw = self.context.service_workers[0] if self.context.service_workers else self.context.wait_for_event("serviceworker", timeout=15000)
        self.extension_id = sw.url.split("/")[2]
        self.routes: dict[str, Path] = {}
        self.context.route(lambda url: True, self._route)

    def _route(self, route) -> None:
        url = route.request.url.split("#", 1)[0]
        target = self.routes.get(url)
        if target is None:  # the longest prefix wins (docs/FIXTURES.md): a frame's route over the site's catch-all
            prefixes = [p for p in self.routes if p.endswith("*") and url.startswith(p[:-1])]
            target = self.routes[max(prefixes, key=len)] if prefixes else None
        if target is not None:
            # documents as HTML; a fixture's images (comment media) as what they are
            kind = mimetypes.guess_type(target.name)[0] if target.suffix != ".html" else None
            route.fulfill(status=200, body=target.read_bytes(), content_type=kind or "text/html; charset=utf-8")
        elif url.startswith(("http://127.0.0.1", "http://localhost")) or not url.startswith(("http:", "https:")):
            route.continue_()
        else:
            route.abort()  # no internet here, and a test must never depend on it

    def serve_fixture(self, folder: Path, fixture: dict) -> None:
        for url, name in fixture["routes"].items():
            self.routes[url] = folder / name

    def open_fixture(self, folder: Path) -> tuple[Any, dict]:
        """The fixture in `folder` served at its real URLs and its start page opened in a new tab:
        (the page, the fixture)."""
        fixture = json.loads((folder / "fixture.json").read_text(encoding="utf-8"))
        self.serve_fixture(folder, fixture)
        page = self.context.new_page()
        page.goto(fixture["start_url"])
        return page, fixture

    def ext_url(self, page: str) -> str:
        return f"chrome-extension://{self.extension_id}/{page}"

    def ask_worker(self, message: dict, page_name: str = "popup.html", timeout_ms: int = 15000):
        """Send the service worker a message from an extension page, as the popup does. Bounded:
        a worker that never answers fails the test instead of hanging it (evaluate has no timeout)."""
        page = self.context.new_page()
        try:
            page.goto(self.ext_url(page_name))
            return page.evaluate(
                """([msg, ms]) => Promise.race([chrome.runtime.sendMessage(msg),
                     new Promise((_, no) => setTimeout(() => no(new Error(`worker gave no answer in ${ms} ms`)), ms))])""",
                [message, timeout_ms])
        finally:
            page.close()

    def state(self) -> dict:
        """The worker's state, asked the way the popup asks it."""
        return self.ask_worker({"type": "get_state"})

    def consent(self, timeout: float = 30) -> None:
        page = self.context.new_page()
        try:
            page.goto(self.ext_url("options.html"))
            page.locator("#accept-consent:not([disabled])").wait_for(timeout=timeout * 1000)
            # the text agreed to is the study's, as the worker has it from the daemon's hello_ok
            shown = " ".join(page.locator("#consent-text").inner_text().split())
            assert shown and shown == " ".join(self.state()["study"]["consent_text"].split()), shown
            page.click("#accept-consent")
            page.locator("#withdraw-consent:visible").wait_for(timeout=10000)
        finally:
            page.close()

    def withdraw(self):
        """Withdraw consent on the options page, as a participant does; the page is left open (a test
        may read what it says next)."""
        page = self.context.new_page()
        page.goto(self.ext_url("options.html"))
        page.click("#withdraw-consent")
        page.locator("#accept-consent:not([disabled])").wait_for(timeout=10000)
        return page

    def set_settings(self, settings: dict) -> dict:
        return self.ask_worker({"type": "set_settings", "settings": settings}, "options.html")

    def stop_service_worker(self) -> None:
        page = self.context.new_page()
        try:
            page.goto(self.ext_url("popup.html"))
            cdp = self.context.new_cdp_session(page)
            cdp.send("ServiceWorker.enable")
            cdp.send("ServiceWorker.stopAllWorkers")
            cdp.detach()
        finally:
            page.close()

    def close(self, timeout: float = 30) -> None:
        # A browser that does not close in time is killed, so the next test gets a fresh one
        # instead of the whole run hanging on it.
        watchdog = threading.Timer(timeout, kill_processes_using, args=(self.profile,))
        watchdog.start()
        try:
            self.context.close()
        finally:
            watchdog.cancel()


def paired_browser(playwright, root: Path, daemon: Daemon, grant: list[str] | tuple[str, ...] = (), consent: bool = True,
                   timings: dict[str, int] | None = None) -> Browser:
    """A Chromium (profile `root`/profile) with the extension prepared and paired as `modlens browse`
    does it (`root`/extension; `grant`, `timings`: prepare_extension), the participant agreed to the
    study's text when `consent`."""
    browser = Browser(playwright, root / "profile", prepare_extension(root / "extension", daemon, grant, timings=timings))
    if consent:
        try:
            browser.consent()
        except BaseException:
            browser.close()
            raise
    return browser


@contextmanager
def own_daemon_and_browser(playwright, root: Path, study_toml: str | None = STUDY_TOML, consent: bool = True,
                           grant: list[str] | tuple[str, ...] = ()) -> Iterator[tuple[Daemon, Browser]]:
    """A `modlens serve` of the test's own (home `root`/home) and a paired_browser (by default nothing
    granted beyond the manifest); both stopped when the block ends, however it ends (the log stays to be read)."""
    daemon = Daemon(root / "home", study_toml)
    daemon.start()
    browser = None
    try:
        browser = paired_browser(playwright, root, daemon, grant, consent)
        yield daemon, browser
    finally:
        if browser:
            browser.close()
        daemon.stop()


def kill_processes_using(profile: Path) -> None:
    """SIGKILL every process whose command line names this browser profile."""
    needle = str(profile).encode()
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            if needle in (proc / "cmdline").read_bytes():
                os.kill(int(proc.name), signal.SIGKILL)
        except (OSError, ProcessLookupError):
            pass


def load_fixtures() -> list[tuple[Path, dict, dict]]:
    folders: list[Path] = []
    roots = [FIXTURES] + [Path(p) for p in os.environ.get("MODLENS_EXTRA_FIXTURES", "").split(os.pathsep) if p]
    for root in roots:
        if root.is_dir():
            folders += sorted(p for p in root.iterdir() if (p / "fixture.json").is_file())
    out = []
    for folder in folders:
        fixture = json.loads((folder / "fixture.json").read_text(encoding="utf-8"))
        expected = json.loads((folder / "expected.json").read_text(encoding="utf-8"))
        out.append((folder, fixture, expected))
    return out


def fixture_grants() -> list[str]:
    """Site patterns of the fixtures on sites outside the built-in platforms (news sites)."""
    return sorted({site_pattern(f["start_url"]) for _, f, _ in load_fixtures() if f["adapter"] not in BUILT_IN_ADAPTERS})
