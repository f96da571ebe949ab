"""Validates the site fixtures the extension's end-to-end runner consumes (format: docs/FIXTURES.md).

Two layers: static checks on the files (schema of fixture.json / expected.json, routes, keys, HTML
well-formedness with html.parser), then one headless Chromium WITHOUT the extension that serves each
fixture under its real URLs and checks that the expected texts really render (open shadow roots and
the cross-origin iframe included), sit next to their keys, and that the lazy / navigate calls make
the after_* comments appear. A fixture that passes here is a fair target for an adapter.
"""
from __future__ import annotations

import json
import os
import re
import shutil
import time
from html.parser import HTMLParser
from pathlib import Path
from typing import get_args
from urllib.parse import urljoin

import pytest

from modlens.protocol import ParentVia
from realtools import requires

SITES_DIR = Path(__file__).resolve().parent / "fixtures" / "sites"
CHROMIUM = os.environ.get("MODLENS_CHROMIUM", "/usr/lib/chromium/chromium")
FOUND_NOTHING = "adapter found nothing"

FIXTURE_KEYS = {"name", "adapter", "platform", "start_url", "routes", "page_key", "lazy", "tested_on"}
FIXTURE_OPTIONAL = {"navigate", "generic_selector", "markup_source", "notes"}
EXPECTED_LISTS = ("before", "after_lazy", "after_navigate")
EXPECTED_OPTIONAL = {"absent", "expect_status"}
ENTRY_KEYS = {"key", "text", "parent_key", "author"}
ENTRY_OPTIONAL = {"parent_text", "parent_via"}
# how the adapter determined the parent: the protocol's vocabulary (CommentItem.parent_via)
PARENT_VIA = set(get_args(ParentVia))
VOID_TAGS = {"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source", "track", "wbr"}
CONTENT_TYPES = {".html": "text/html; charset=utf-8", ".css": "text/css", ".js": "text/javascript",
                 ".svg": "image/svg+xml", ".png": "image/png", ".json": "application/json"}


def fixture_dirs() -> list[Path]:
    """Every fixture folder: ours plus those under MODLENS_EXTRA_FIXTURES (os.pathsep-separated);
    a named folder may itself be a fixture or contain fixtures."""
    roots = [SITES_DIR] + [Path(p) for p in os.environ.get("MODLENS_EXTRA_FIXTURES", "").split(os.pathsep) if p]
    found = []
    for root in roots:
        if (root / "fixture.json").is_file():
            found.append(root)
        elif root.is_dir():
            found.extend(sorted(d for d in root.iterdir() if (d / "fixture.json").is_file()))
    return found


def route_for(routes: dict[str, str], url: str) -> str | None:
    """File routed for a URL: exact match first, then the longest matching 'prefix*' pattern.
    The URL is compared without its #fragment (a browser never sends it)."""
    url = url.split("#", 1)[0]
    if url in routes:
        return routes[url]
    prefixes = [p for p in routes if p.endswith("*") and url.startswith(p[:-1])]
    return routes[max(prefixes, key=len)] if prefixes else None


def frame_document(routes: dict[str, str], frame_prefix: str) -> str | None:
    """File served for the frame whose URL starts with frame_prefix: the route the prefix itself
    resolves to (exact, else longest prefix, as for any request: a same-origin frame gets its own
    route, not the page's catch-all), else the longest route that extends the prefix."""
    name = route_for(routes, frame_prefix)
    if name is not None:
        return name
    longer = [p for p in routes if p.rstrip("*").startswith(frame_prefix)]
    return routes[max(longer, key=len)] if longer else None


def is_normalised(text: str) -> bool:
    return bool(text) and text == " ".join(text.split())


# <script type> values a browser runs; any other type (application/ld+json, text/x-template, …)
# is data: neither fetched (no resource) nor run (no inline code).
JS_TYPES = {"", "text/javascript", "application/javascript", "module", "text/ecmascript", "application/ecmascript",
            "text/jscript", "text/livescript", "application/x-javascript", "application/x-ecmascript", "text/x-javascript"}


def is_js_script(attrs: dict) -> bool:
    kind = (attrs.get("type") or "").split(";")[0].strip().lower()
    return kind in JS_TYPES


class _PageScan(HTMLParser):
    """Collects inline scripts, loaded resources and tag-nesting errors of one HTML document."""

    RESOURCE_ATTRS = {"script": "src", "iframe": "src", "img": "src", "source": "src", "video": "src",
                      "audio": "src", "embed": "src"}

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.stack: list[tuple[str, int]] = []
        self.errors: list[str] = []
        self.scripts: list[str] = []
        self.handlers: list[str] = []
        self.resources: list[str] = []
        self._in_script = False

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        self.handlers += [v for k, v in attrs.items() if k.startswith("on") and v]
        src_attr = self.RESOURCE_ATTRS.get(tag)
        if tag == "script" and not is_js_script(attrs):
            src_attr = None  # a data block (JSON-LD, a template): never fetched
        if src_attr and attrs.get(src_attr):
            self.resources.append(attrs[src_attr])
        if tag == "link" and attrs.get("href") and set((attrs.get("rel") or "").split()) & {"stylesheet", "icon", "preload"}:
            self.resources.append(attrs["href"])
        if tag not in VOID_TAGS:
            self.stack.append((tag, self.getpos()[0]))
        self._in_script = tag == "script" and not attrs.get("src") and is_js_script(attrs)

    def handle_startendtag(self, tag, attrs):
        if tag not in VOID_TAGS:
            self.errors.append(f"line {self.getpos()[0]}: self-closing <{tag}/> is not valid HTML")

    def handle_endtag(self, tag):
        self._in_script = False
        if tag in VOID_TAGS:
            return
        if not self.stack or self.stack[-1][0] != tag:
            open_tag = f"<{self.stack[-1][0]}> from line {self.stack[-1][1]}" if self.stack else "nothing"
            self.errors.append(f"line {self.getpos()[0]}: </{tag}> closes {open_tag}")
            if any(t == tag for t, _ in self.stack):  # recover so one slip is reported once
                while self.stack.pop()[0] != tag:
                    pass
            return
        self.stack.pop()

    def handle_data(self, data):
        if self._in_script:
            self.scripts.append(data)

    def finish(self) -> "_PageScan":
        self.close()
        self.errors += [f"<{t}> from line {line} is never closed" for t, line in self.stack]
        return self


def scan_html(path: Path) -> _PageScan:
    scan = _PageScan()
    scan.feed(path.read_text(encoding="utf-8"))
    return scan.finish()


def _check_entries(entries, where: str, problems: list[str]) -> None:
    if not isinstance(entries, list):
        problems.append(f"{where} must be a list")
        return
    for i, entry in enumerate(entries):
        label = f"{where}[{i}]"
        if not isinstance(entry, dict):
            problems.append(f"{label} must be an object")
            continue
        missing, unknown = ENTRY_KEYS - entry.keys(), entry.keys() - ENTRY_KEYS - ENTRY_OPTIONAL
        if missing or unknown:
            problems.append(f"{label}: missing {sorted(missing)}, unknown {sorted(unknown)}")
            continue
        if entry["key"] is not None and not (isinstance(entry["key"], str) and entry["key"]):
            problems.append(f"{label}: key must be a non-empty string or null")
        if entry["parent_key"] is not None and not isinstance(entry["parent_key"], str):
            problems.append(f"{label}: parent_key must be a string or null")
        if not isinstance(entry["author"], bool):
            problems.append(f"{label}: author must be true or false")
        if not isinstance(entry["text"], str) or not is_normalised(entry["text"]):
            problems.append(f"{label}: text must be non-empty, trimmed, single-spaced: {entry['text']!r}")
        if "parent_text" in entry and (entry["key"] is not None or entry["parent_key"] is not None):
            problems.append(f"{label}: parent_text is only for key-less comments (key and parent_key null)")
        if "parent_via" in entry:
            top = entry["parent_key"] is None and "parent_text" not in entry
            if entry["parent_via"] not in PARENT_VIA:
                problems.append(f"{label}: parent_via must be one of {sorted(PARENT_VIA)}")
            elif top != (entry["parent_via"] in ("none", "unknown")):
                problems.append(f"{label}: parent_via {entry['parent_via']!r} does not fit parent_key {entry['parent_key']!r}")


def _check_phase(entries: list[dict], where: str, problems: list[str]) -> None:
    """One page's comments: keys and texts unique, parents refer to comments of the same page."""
    keys = [e["key"] for e in entries if e.get("key") is not None]
    texts = [e.get("text") for e in entries]
    for dup in sorted({k for k in keys if keys.count(k) > 1}):
        problems.append(f"{where}: duplicate key {dup}")
    for dup in sorted({t for t in texts if texts.count(t) > 1}):
        problems.append(f"{where}: duplicate text {dup!r} (texts identify key-less comments)")
    for e in entries:
        if e.get("parent_key") is not None and e["parent_key"] not in keys:
            problems.append(f"{where}: parent_key {e['parent_key']} of {e.get('key')} is not a comment of this page")
        if e.get("parent_key") is not None and e["parent_key"] == e.get("key"):
            problems.append(f"{where}: {e['key']} is its own parent")
        if "parent_text" in e and e["parent_text"] not in texts:
            problems.append(f"{where}: parent_text {e['parent_text']!r} is not a comment of this page")


def check_fixture_files(folder: Path) -> list[str]:
    """Every problem with a fixture's files (empty list: valid)."""
    problems: list[str] = []
    try:
        fixture = json.loads((folder / "fixture.json").read_text(encoding="utf-8"))
        expected = json.loads((folder / "expected.json").read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        return [f"cannot read fixture.json / expected.json: {exc}"]

    missing, unknown = FIXTURE_KEYS - fixture.keys(), fixture.keys() - FIXTURE_KEYS - FIXTURE_OPTIONAL
    if missing or unknown:
        return [f"fixture.json: missing {sorted(missing)}, unknown {sorted(unknown)}"]
    if fixture["name"] != folder.name:
        problems.append(f"fixture.json: name {fixture['name']!r} differs from folder {folder.name!r}")
    for field in ("adapter", "platform", "page_key"):
        if not (isinstance(fixture[field], str) and fixture[field]):
            problems.append(f"fixture.json: {field} must be a non-empty string")
    if not (isinstance(fixture["tested_on"], list) and all(isinstance(u, str) for u in fixture["tested_on"])):
        problems.append("fixture.json: tested_on must be a list of URLs")
    routes = fixture["routes"]
    if not (isinstance(routes, dict) and routes and all(isinstance(v, str) for v in routes.values())):
        return problems + ["fixture.json: routes must map URLs to file names"]
    for url, name in routes.items():
        if not re.match(r"https?://[^/*]+/", url) or "*" in url[:-1]:
            problems.append(f"routes: {url!r} must be an http(s) URL, '*' only as the last character")
        target = (folder / name).resolve()
        if target.parent != folder.resolve() or not target.is_file():
            problems.append(f"routes: {url} -> {name}: no such file in the fixture folder")
    data_files = {p.name for p in folder.iterdir() if p.is_file()} - {"fixture.json", "expected.json"}
    for orphan in sorted(data_files - set(routes.values())):
        problems.append(f"{orphan} is not routed from any URL")
    if not isinstance(fixture["start_url"], str) or route_for(routes, fixture["start_url"]) is None:
        problems.append(f"start_url {fixture['start_url']!r} is not routed")

    # lazy / navigate calls may be any expression the document defines (fixtureLoadMore(),
    # window.__fixture.loadMore(), …): the browser check runs them; here only their shape.
    lazy, navigate = fixture["lazy"], fixture.get("navigate")
    if lazy is not None:
        if not (isinstance(lazy, dict) and set(lazy) == {"frame", "call"} and isinstance(lazy["call"], str) and lazy["call"].strip()):
            problems.append("fixture.json: lazy must be null or {\"frame\": null|URL prefix, \"call\": JS}")
        elif lazy["frame"] is not None and frame_document(routes, lazy["frame"]) is None:
            problems.append(f"lazy.frame {lazy['frame']!r} matches no routed URL")
    if navigate is not None:
        if not (isinstance(navigate, dict) and {"call", "page_key"} <= set(navigate) <= {"call", "page_key", "frame"}
                and isinstance(navigate["call"], str) and navigate["call"].strip()):
            problems.append("fixture.json: navigate must be {\"call\": JS, \"page_key\": id[, \"frame\": URL prefix]}")
        elif navigate["page_key"] == fixture["page_key"]:
            problems.append("navigate.page_key must differ from page_key (a navigation starts a new page)")
        elif navigate.get("frame") is not None and frame_document(routes, navigate["frame"]) is None:
            problems.append(f"navigate.frame {navigate['frame']!r} matches no routed URL")
    if (fixture["adapter"] == "generic") != ("generic_selector" in fixture):
        problems.append("generic_selector is required for, and only for, the generic adapter")
    if "generic_selector" in fixture:
        sel = fixture["generic_selector"]
        if not (isinstance(sel, dict) and {"comment", "text"} <= sel.keys() <= {"comment", "text", "author"}):
            problems.append("generic_selector must be {\"comment\", \"text\"[, \"author\"]} CSS selectors")

    # HTML documents: well formed, every loaded resource routed, called functions defined.
    scans = {}
    for url, name in routes.items():
        path = folder / name
        if not (path.suffix == ".html" and path.is_file()) or name in scans:
            continue
        scans[name] = scan = scan_html(path)
        problems += [f"{name}: {err}" for err in scan.errors]
        base = url.rstrip("*")
        for res in scan.resources:
            absolute = urljoin(base, res)
            if not absolute.startswith("data:") and route_for(routes, absolute) is None:
                problems.append(f"{name}: loads {absolute}, which is not routed (the test aborts unrouted requests)")

    # expected.json
    missing, unknown = set(EXPECTED_LISTS[:2]) - expected.keys(), expected.keys() - set(EXPECTED_LISTS) - EXPECTED_OPTIONAL
    if missing or unknown:
        return problems + [f"expected.json: missing {sorted(missing)}, unknown {sorted(unknown)}"]
    for field in EXPECTED_LISTS:
        _check_entries(expected.get(field, []), field, problems)
    before, after_lazy, after_nav = ([e for e in expected.get(f, []) if isinstance(e, dict)]
                                     if isinstance(expected.get(f, []), list) else [] for f in EXPECTED_LISTS)
    _check_phase(before + after_lazy, "before+after_lazy", problems)
    _check_phase(after_nav, "after_navigate", problems)
    if lazy is None and after_lazy:
        problems.append("after_lazy lists comments but lazy is null")
    if lazy is not None and not after_lazy:
        problems.append("lazy is set but after_lazy is empty (the batch would test nothing)")
    if (navigate is None) == bool(after_nav):
        problems.append("after_navigate must be non-empty exactly when navigate is set")
    status = expected.get("expect_status")
    if status is not None and status != FOUND_NOTHING:
        problems.append(f"expect_status can only be {FOUND_NOTHING!r}")
    if status == FOUND_NOTHING and (before or after_lazy or after_nav):
        problems.append(f"expect_status {FOUND_NOTHING!r} needs empty comment lists")
    if status is None and not before:
        problems.append("before is empty: list the comments, or set expect_status")
    absent = expected.get("absent", [])
    if not (isinstance(absent, list) and all(isinstance(t, str) and is_normalised(t) for t in absent)):
        problems.append("absent must be a list of normalised texts")
    elif set(absent) & {e.get("text") for e in before + after_lazy + after_nav}:
        problems.append("a text is both expected and absent")
    return problems


FIXTURES = fixture_dirs()
IDS = [f"{d.parent.name}/{d.name}" if d.parent != SITES_DIR else d.name for d in FIXTURES]


def test_required_fixtures_exist():
    names = {d.name for d in FIXTURES if d.parent == SITES_DIR}
    required = {"youtube-watch", "youtube-watch-legacy", "youtube-shorts", "x-thread", "disqus", "openweb",
                "coral", "viafoura", "generic", "changed-markup"}
    assert required <= names, f"missing fixtures: {sorted(required - names)}"


@pytest.mark.parametrize("folder", FIXTURES, ids=IDS)
def test_fixture_files(folder):
    assert check_fixture_files(folder) == []


def test_validator_reports_broken_fixtures(tmp_path):
    """The static checks are not vacuous: break a copy of a real fixture in several ways."""
    broken = tmp_path / "youtube-watch"
    shutil.copytree(SITES_DIR / "youtube-watch", broken)
    expected = json.loads((broken / "expected.json").read_text())
    expected["before"][1]["key"] = expected["before"][0]["key"]
    expected["before"][2]["text"] = "two  spaces "
    expected["after_lazy"][0]["parent_key"] = "UgzNoSuchParent"
    (broken / "expected.json").write_text(json.dumps(expected))
    fixture = json.loads((broken / "fixture.json").read_text())
    fixture["routes"]["https://disqus.com/embed/comments/*"] = "frame.html"
    (broken / "fixture.json").write_text(json.dumps(fixture))
    (broken / "stray.css").write_text("body {}")
    page = broken / "page.html"
    page.write_text(page.read_text().replace("</ytd-comments>", "", 1))

    report = "\n".join(check_fixture_files(broken))
    for needle in ("duplicate key", "single-spaced", "UgzNoSuchParent", "frame.html: no such file",
                   "stray.css is not routed", "closes <ytd-comments>"):
        assert needle in report, f"{needle!r} not reported in:\n{report}"


def test_route_matching_prefers_exact_then_longest_prefix():
    routes = {"https://a.test/x?id=1": "exact.html", "https://a.test/*": "short.html", "https://a.test/x*": "long.html"}
    assert route_for(routes, "https://a.test/x?id=1") == "exact.html"
    assert route_for(routes, "https://a.test/x?id=1#comments") == "exact.html"  # fragment ignored
    assert route_for(routes, "https://a.test/x?id=2") == "long.html"
    assert route_for(routes, "https://a.test/y") == "short.html"
    assert route_for(routes, "https://b.test/") is None


def test_same_origin_frame_resolves_to_its_own_route():
    routes = {"https://news.test/*": "page.html", "https://news.test/comments/embed*": "frame.html",
              "https://widget.test/v2/thread*": "widget.html"}
    assert frame_document(routes, "https://news.test/comments/embed") == "frame.html"
    assert frame_document(routes, "https://news.test/comments/embed?a=1") == "frame.html"
    assert frame_document(routes, "https://widget.test/v2/") == "widget.html"  # a shorter prefix of a route
    assert frame_document(routes, "https://other.test/") is None


def test_start_url_fragment_and_data_scripts(tmp_path):
    """A start URL with a #fragment is routed by its exact route; a script of a non-JavaScript
    type is data, not a resource to route; a lazy call is any expression (checked by running it)."""
    folder = tmp_path / "generic"
    shutil.copytree(SITES_DIR / "generic", folder)
    fixture = json.loads((folder / "fixture.json").read_text())
    fixture["start_url"] += "#comments"
    fixture["lazy"]["call"] = "window.__fixture && window.__fixture.more()"
    (folder / "fixture.json").write_text(json.dumps(fixture))
    page = folder / "page.html"
    page.write_text(page.read_text().replace("</head>", '<script type="application/ld+json">{"@type": "BlogPosting"}</script>\n'
                                             '<script type="text/x-template" src="https://cdn.example.net/tpl/comment.hbs"></script>\n'
                                             '<script src="https://cdn.example.net/app.js"></script>\n</head>', 1))
    report = check_fixture_files(folder)
    assert report == ["page.html: loads https://cdn.example.net/app.js, which is not routed (the test aborts unrouted requests)"], report


# ---------------------------------------------------------------- rendered in headless Chromium

# Runs in every frame. For each expected comment: is there an element whose whitespace-collapsed
# innerText is exactly the text (open shadow roots included), and walking up from it, is the
# first ancestor whose subtree carries any of the page's keys in an attribute one carrying its own?
PROBE_JS = """
({entries, keys, pageKey}) => {
  const norm = (s) => (s || "").replace(/\\s+/g, " ").trim();
  const all = [];
  const walk = (root) => { for (const el of root.querySelectorAll("*")) { all.push(el); if (el.shadowRoot) walk(el.shadowRoot); } };
  walk(document);
  const attrText = (el) => {
    let s = ""; const stack = [el];
    while (stack.length) {
      const n = stack.pop();
      for (const a of n.attributes) s += " " + a.value;
      stack.push(...n.children);
      if (n.shadowRoot) stack.push(...n.shadowRoot.children);
    }
    return s;
  };
  const up = (n) => { const p = n.parentNode; return p instanceof ShadowRoot ? p.host : (p instanceof Element ? p : null); };
  const byText = new Map();
  for (const el of all) {
    const t = norm(el.innerText);
    if (t) { if (!byText.has(t)) byText.set(t, []); byText.get(t).push(el); }
  }
  const results = entries.map(({key, text}) => {
    const els = (byText.get(text) || []).filter((el) => ![...el.children].some((c) => norm(c.innerText) === text));
    if (!els.length) return {text, present: false, keyOk: null};
    if (key === null) return {text, present: true, keyOk: null};
    const keyOk = els.some((el) => {
      for (let n = el, depth = 0; n && depth < 25; n = up(n), depth++) {
        const s = attrText(n);
        const found = keys.filter((k) => s.includes(k));
        if (found.length) return found.includes(key);
      }
      return false;
    });
    return {text, present: true, keyOk};
  });
  const pageKeyShown = pageKey ? (location.href.includes(pageKey) || attrText(document.documentElement).includes(pageKey)) : null;
  return {results, pageKeyShown, url: location.href};
}
"""

GENERIC_JS = """
(sel) => [...document.querySelectorAll(sel.comment)].map((el) => {
  const textEl = el.querySelector(sel.text);
  return {text: textEl ? textEl.innerText.replace(/\\s+/g, " ").trim() : null,
          author: sel.author ? !!el.querySelector(sel.author) : false};
})
"""


@pytest.fixture(scope="module")
def browser():
    import playwright.sync_api as sync_api
    with sync_api.sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=[
            "--no-sandbox", "--disable-background-networking", "--disable-component-update",
            "--disable-sync", "--no-first-run"])
        yield b
        b.close()


def _probe(page, entries, keys, page_key):
    """Merge the probe over all frames: present anywhere, key attached where present."""
    merged = {e["text"]: {"present": False, "keyOk": None} for e in entries}
    page_key_shown = False
    for frame in page.frames:
        if frame.url in ("", "about:blank"):
            continue
        out = frame.evaluate(PROBE_JS, {"entries": [{"key": e["key"], "text": e["text"]} for e in entries],
                                        "keys": keys, "pageKey": page_key})
        page_key_shown = page_key_shown or bool(out["pageKeyShown"])
        for r in out["results"]:
            m = merged[r["text"]]
            if r["present"]:
                m["present"] = True
                if r["keyOk"] or m["keyOk"] is None:
                    m["keyOk"] = r["keyOk"]
    return merged, page_key_shown


def _wait_for(page, entries, keys, page_key, what, timeout):
    deadline = time.monotonic() + timeout
    while True:
        merged, shown = _probe(page, entries, keys, page_key)
        missing = [t for t, m in merged.items() if not m["present"]]
        if not missing or time.monotonic() > deadline:
            break
        page.wait_for_timeout(100)
    assert not missing, f"{what}: texts not rendered: {missing}"
    detached = [e["key"] for e in entries if e["key"] is not None and merged[e["text"]]["keyOk"] is not True]
    assert not detached, f"{what}: keys not found on the element around their text: {detached}"
    assert shown, f"{what}: page key {page_key} appears neither in a frame URL nor in an attribute"


def _frame(page, prefix):
    for _ in range(50):
        for frame in page.frames:
            if frame.url.startswith(prefix):
                return frame
        page.wait_for_timeout(100)
    raise AssertionError(f"no frame whose URL starts with {prefix}")


@requires("chromium")
@pytest.mark.parametrize("folder", FIXTURES, ids=IDS)
def test_fixture_renders_expected_comments(browser, folder):
    if check_fixture_files(folder):
        pytest.fail("fixture files are invalid, see test_fixture_files")
    check_rendered(browser, folder)


@requires("chromium")
@pytest.mark.parametrize("breakage,message", [("swap_keys", "keys not found"), ("edit_text", "texts not rendered"),
                                              ("bad_call", "lazy.call 'fixtureNoSuchFunction\\(\\)' failed")])
def test_rendered_check_catches_wrong_expectations(browser, tmp_path, breakage, message):
    """The browser checks are not vacuous: a key moved to another comment, or a text that the
    page does not render, must fail."""
    broken = tmp_path / "youtube-watch-legacy"
    shutil.copytree(SITES_DIR / "youtube-watch-legacy", broken)
    expected = json.loads((broken / "expected.json").read_text())
    first, third = expected["before"][0], expected["before"][2]
    if breakage == "swap_keys":
        first["key"], third["key"] = third["key"], first["key"]
    elif breakage == "bad_call":
        fixture = json.loads((broken / "fixture.json").read_text())
        fixture["lazy"]["call"] = "fixtureNoSuchFunction()"
        (broken / "fixture.json").write_text(json.dumps(fixture))
    else:
        third["text"] = third["text"].replace("courses", "lessons")
    (broken / "expected.json").write_text(json.dumps(expected))
    with pytest.raises(AssertionError, match=message):
        check_rendered(browser, broken, timeout=1.0)


def check_rendered(browser, folder: Path, timeout: float = 6.0) -> None:
    """Serve the fixture under its real URLs in a fresh context and assert what the module doc says."""
    fixture = json.loads((folder / "fixture.json").read_text(encoding="utf-8"))
    expected = json.loads((folder / "expected.json").read_text(encoding="utf-8"))
    before, after_lazy, after_nav = (expected.get(f, []) for f in EXPECTED_LISTS)
    routes = fixture["routes"]
    unrouted: list[str] = []

    def serve(route):
        name = route_for(routes, route.request.url)
        if name is None:
            if not route.request.url.endswith("/favicon.ico"):
                unrouted.append(route.request.url)
            route.abort()
            return
        path = folder / name
        route.fulfill(status=200, body=path.read_bytes(),
                      content_type=CONTENT_TYPES.get(path.suffix, "application/octet-stream"))

    context = browser.new_context(viewport={"width": 1280, "height": 900})
    try:
        context.route("**/*", serve)
        page = context.new_page()
        errors: list[str] = []
        page.on("pageerror", lambda exc: errors.append(str(exc)))
        page.goto(fixture["start_url"], wait_until="load")

        page_keys = [e["key"] for e in before + after_lazy if e["key"]]
        _wait_for(page, before, page_keys, fixture["page_key"], "before", timeout)
        if expected.get("absent"):
            merged, _ = _probe(page, [{"key": None, "text": t} for t in expected["absent"]], [], None)
            assert all(m["present"] for m in merged.values()), "absent texts must be on the page (to be skipped)"
        if "generic_selector" in fixture:
            _check_generic(page, fixture["generic_selector"], before)

        if fixture["lazy"]:
            lazy = fixture["lazy"]
            _run_call(_frame(page, lazy["frame"]) if lazy["frame"] else page, "lazy", lazy["call"])
            _wait_for(page, after_lazy, page_keys, fixture["page_key"], "after_lazy", timeout)
            if "generic_selector" in fixture:
                _check_generic(page, fixture["generic_selector"], before + after_lazy)

        if fixture.get("navigate"):
            old_url = page.url
            nav_frame = fixture["navigate"].get("frame")
            _run_call(_frame(page, nav_frame) if nav_frame else page, "navigate", fixture["navigate"]["call"])
            nav_keys = [e["key"] for e in after_nav if e["key"]]
            _wait_for(page, after_nav, nav_keys, fixture["navigate"]["page_key"], "after_navigate", timeout)
            assert page.url != old_url, "navigate must change the URL (pushState)"
            leftovers = {e["text"] for e in before + after_lazy} - {e["text"] for e in after_nav}
            merged, _ = _probe(page, [{"key": None, "text": t} for t in leftovers], [], None)
            assert not [t for t, m in merged.items() if m["present"]], "the old page's comments must be gone"

        assert not errors, f"page script errors: {errors}"
        assert not unrouted, f"the page requested unrouted URLs: {unrouted}"
    finally:
        context.close()


def _run_call(target, label: str, call: str) -> None:
    """Run a lazy / navigate expression where the fixture says; one the document does not define
    (or that throws) fails with the call named."""
    try:
        target.evaluate(call)
    except Exception as exc:  # Playwright's Error: the page's ReferenceError / TypeError
        raise AssertionError(f"{label}.call {call!r} failed in {getattr(target, 'url', '?')}: "
                             f"{str(exc).splitlines()[0]}") from None


def _check_generic(page, selector, entries):
    # the custom selector applies in the page and in its frames (a comment iframe)
    found = [f for frame in page.frames if frame.url not in ("", "about:blank")
             for f in frame.evaluate(GENERIC_JS, selector)]
    assert sorted(f["text"] or "" for f in found) == sorted(e["text"] for e in entries), \
        "generic_selector must select exactly the expected comments"
    authors = {f["text"]: f["author"] for f in found}
    assert {e["text"]: e["author"] for e in entries} == authors, "author presence differs from expected.json"
