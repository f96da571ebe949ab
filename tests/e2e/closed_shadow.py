"""Reaching into a marker's *closed* shadow root from a test. Page scripts cannot (that is the
point: content/ui.js), and Playwright's locators do not pierce closed roots, so tests use the
DevTools Protocol, which does: `DOM.getDocument(pierce)` finds the elements, and every click goes
through the browser's input pipeline at the element's position (`page.mouse`), a trusted event
as a participant's click is, never `element.click()`. A small subset of Playwright's Locator API,
so the tests read as before: `marker(page, key).locator("button.rate").click()`.

Markers inside an iframe are not supported (coordinates are the top frame's)."""
from __future__ import annotations

import time
from typing import Any
from weakref import WeakKeyDictionary

_SESSIONS: WeakKeyDictionary = WeakKeyDictionary()

# Scroll the element into view and return its centre if a click there lands on it (or on its label).
_AIM = """function () {
  this.scrollIntoView({ block: "center", inline: "center" });
  const r = this.getBoundingClientRect();
  if (!r.width || !r.height) return null;
  const x = r.left + r.width / 2, y = r.top + r.height / 2;
  const hit = this.getRootNode().elementFromPoint(x, y);
  return hit && (hit === this || this.contains(hit) || hit.control === this) ? [x, y] : null;
}"""


def _cdp(page):
    session = _SESSIONS.get(page)
    if session is None:
        session = _SESSIONS[page] = page.context.new_cdp_session(page)
    return session


def _walk(node: dict):
    yield node
    for key in ("children", "shadowRoots"):
        for child in node.get(key, ()):
            yield from _walk(child)
    if "contentDocument" in node:
        yield from _walk(node["contentDocument"])


# a rating of a comment as not toxic: formal, respectful, no stereotype, less toxic than both anchors
NOT_TOXIC_PICKS = (("formality", "formal"), ("respectfulness", "respectful"), ("stereotypes", "not present"),
                   ("vs_hard", "less"), ("vs_extreme", "less"))


class Marker:
    """The `nth` marker (in document order) for comment `key` (any comment when None)."""

    def __init__(self, page, key: str | None = None, nth: int = 0):
        self.page, self.key, self.nth = page, key, nth

    def root_node_id(self) -> int | None:
        doc = _cdp(self.page).send("DOM.getDocument", {"depth": -1, "pierce": True})["root"]
        hosts = [n for n in _walk(doc) if n.get("localName") == "modlens-marker" and (
            self.key is None or _attr(n, "data-modlens-key") == self.key)]
        if len(hosts) <= self.nth or not hosts[self.nth].get("shadowRoots"):
            return None
        return hosts[self.nth]["shadowRoots"][0]["nodeId"]

    def html(self) -> str | None:
        """The shadow root's innerHTML (what a page script must never be able to read)."""
        root = self.root_node_id()
        if root is None:
            return None
        return _call(self.page, _resolve(self.page, root), "function () { return this.innerHTML; }")

    def locator(self, selector: str) -> ShadowLocator:
        return ShadowLocator(self, selector)

    def rate(self, picks=None) -> "Marker":
        """Opens its rating panel, checks `picks` ((field, value) pairs; default `NOT_TOXIC_PICKS`) and
        submits, with trusted input as a participant does."""
        self.locator("button.rate").click()
        for name, value in picks or NOT_TOXIC_PICKS:
            self.locator(f'input[name="{name}"][value="{value}"]').check()
        self.locator('button[type="submit"]').click()
        return self


def markers(page) -> list[Marker]:
    doc = _cdp(page).send("DOM.getDocument", {"depth": -1, "pierce": True})["root"]
    count = sum(1 for n in _walk(doc) if n.get("localName") == "modlens-marker")
    return [Marker(page, None, i) for i in range(count)]


def _attr(node: dict, name: str) -> str | None:
    attrs = node.get("attributes", [])
    for i in range(0, len(attrs), 2):
        if attrs[i] == name:
            return attrs[i + 1]
    return None


def _resolve(page, node_id: int) -> str:
    return _cdp(page).send("DOM.resolveNode", {"nodeId": node_id})["object"]["objectId"]


def _call(page, object_id: str, function: str, *args: Any) -> Any:
    res = _cdp(page).send("Runtime.callFunctionOn", {
        "objectId": object_id, "functionDeclaration": function, "arguments": [{"value": a} for a in args],
        "returnByValue": True, "awaitPromise": True})
    if "exceptionDetails" in res:
        raise AssertionError(f"in the marker's shadow root: {res['exceptionDetails'].get('exception', {}).get('description')}")
    return res["result"].get("value")


class ShadowLocator:
    def __init__(self, marker: Marker, selector: str):
        self.marker, self.selector = marker, selector
        self.page = marker.page

    def _objects(self) -> list[str]:
        root = self.marker.root_node_id()
        if root is None:
            return []
        ids = _cdp(self.page).send("DOM.querySelectorAll", {"nodeId": root, "selector": self.selector})["nodeIds"]
        return [_resolve(self.page, i) for i in ids]

    def _first(self, timeout: float) -> str:
        deadline = time.monotonic() + timeout
        while True:
            objs = self._objects()
            if objs:
                return objs[0]
            if time.monotonic() > deadline:
                raise AssertionError(f"no {self.selector!r} in marker {self.marker.key or self.marker.nth} after {timeout:.0f}s")
            self.page.wait_for_timeout(100)

    def count(self) -> int:
        return len(self._objects())

    def wait_for(self, timeout: float = 10000) -> None:
        self._first(timeout / 1000)

    def evaluate(self, function: str, arg: Any = None, timeout: float = 10000) -> Any:
        """`function` (JS, `(el, arg) => ...`) on the first match, run from the test's side: events it
        dispatches are untrusted, as a page script's would be."""
        return _call(self.page, self._first(timeout / 1000), f"function (arg) {{ return ({function})(this, arg); }}", arg)

    def click(self, timeout: float = 10000) -> None:
        deadline = time.monotonic() + timeout / 1000
        while True:
            at = _call(self.page, self._first(timeout / 1000), _AIM)
            if at:
                self.page.mouse.click(at[0], at[1])
                return
            if time.monotonic() > deadline:
                raise AssertionError(f"{self.selector!r} in marker {self.marker.key} never became clickable")
            self.page.wait_for_timeout(100)

    def check(self, timeout: float = 10000) -> None:
        if not self.is_checked(timeout):
            self.click(timeout)
        if not self.is_checked(timeout):
            raise AssertionError(f"{self.selector!r} did not become checked")

    def focus(self, timeout: float = 10000) -> None:
        self.evaluate("el => el.focus()", timeout=timeout)

    def is_checked(self, timeout: float = 10000) -> bool:
        return bool(self.evaluate("el => el.checked", timeout=timeout))

    def inner_text(self, timeout: float = 10000) -> str:
        return self.evaluate("el => el.innerText", timeout=timeout)

    def get_attribute(self, name: str, timeout: float = 10000) -> str | None:
        return self.evaluate("(el, name) => el.getAttribute(name)", name, timeout=timeout)


def said(ask):
    """`ask()` of a marker, or None while the marker is being rendered again (its nodes replaced
    between finding and reading them)."""
    try:
        return ask()
    except Exception:  # noqa: BLE001 - a node replaced under the DevTools lookup
        return None
