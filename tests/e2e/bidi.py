"""A minimal WebDriver BiDi client (JSON over a WebSocket) for the Firefox smoke test:
Playwright cannot drive Debian's firefox-esr, raw BiDi can."""
from __future__ import annotations

import json
import queue
import re
import subprocess
import threading
import time
from pathlib import Path

from websockets.sync.client import connect

FIREFOX = "firefox-esr"
EXTENSION_ID = "modlens@modlens.invalid"  # browser_specific_settings.gecko.id


class Firefox:
    def __init__(self, profile: Path, extension_uuid: str, prefs: dict | None = None):
        profile.mkdir(parents=True, exist_ok=True)
        # fixed moz-extension://<uuid> so the test can open the options page
        prefs = {"extensions.webextensions.uuids": json.dumps({EXTENSION_ID: extension_uuid}),
                 "datareporting.policy.dataSubmissionEnabled": False, "browser.shell.checkDefaultBrowser": False,
                 **(prefs or {})}
        (profile / "user.js").write_text("".join(f"user_pref({json.dumps(k)}, {json.dumps(v)});\n" for k, v in prefs.items()))
        self.proc = subprocess.Popen([FIREFOX, "--headless", "--remote-debugging-port", "0", "--profile", str(profile)],
                                     stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        # A thread drains stderr for the browser's whole life: the startup wait stays bounded
        # even if Firefox goes silent, and a full pipe can never block Firefox later.
        lines: queue.Queue[str | None] = queue.Queue()
        threading.Thread(target=self._drain, args=(lines,), daemon=True).start()
        url = None
        deadline = time.monotonic() + 60
        while url is None and time.monotonic() < deadline:
            try:
                line = lines.get(timeout=max(0.1, deadline - time.monotonic()))
            except queue.Empty:
                break
            if line is None:
                raise RuntimeError("firefox exited before WebDriver BiDi was up")
            m = re.search(r"WebDriver BiDi listening on (ws://\S+)", line)
            url = m.group(1) if m else None
        if url is None:
            self.proc.kill()
            raise RuntimeError("firefox did not announce WebDriver BiDi within 60 s")
        # entered as a context manager (closed in close()): what websockets >= 17 expects
        self.ws = connect(url.rstrip("/") + "/session", max_size=None, open_timeout=20).__enter__()
        self.next_id = 0

    def _drain(self, lines: "queue.Queue[str | None]") -> None:
        for line in self.proc.stderr:
            lines.put(line)
        lines.put(None)

    def send(self, method: str, params: dict, timeout: float = 30) -> dict:
        self.next_id += 1
        cid = self.next_id
        self.ws.send(json.dumps({"id": cid, "method": method, "params": params}))
        deadline = time.monotonic() + timeout
        while True:
            msg = json.loads(self.ws.recv(timeout=max(0.1, deadline - time.monotonic())))
            if msg.get("id") == cid:
                if msg.get("type") == "error":
                    raise RuntimeError(f"{method}: {msg.get('error')}: {msg.get('message')}")
                return msg["result"]

    def evaluate(self, context: str, expression: str):
        res = self.send("script.evaluate", {"expression": expression, "target": {"context": context}, "awaitPromise": True})
        if res.get("type") == "exception":
            raise RuntimeError(res["exceptionDetails"]["text"])
        return res["result"].get("value")

    def click(self, context: str, selector: str) -> None:
        """A real mouse click (trusted input, so APIs that need a user gesture accept it)."""
        res = self.send("script.evaluate", {"expression": f"document.querySelector({json.dumps(selector)})",
                                             "target": {"context": context}, "awaitPromise": False})
        node = res["result"]
        if node.get("type") != "node":
            raise RuntimeError(f"no element {selector}")
        origin = {"type": "element", "element": {"sharedId": node["sharedId"]}}
        self.send("input.performActions", {"context": context, "actions": [{"type": "pointer", "id": "mouse", "actions": [
            {"type": "pointerMove", "x": 0, "y": 0, "origin": origin},
            {"type": "pointerDown", "button": 0}, {"type": "pointerUp", "button": 0}]}]})

    def close(self) -> None:
        try:
            self.send("browser.close", {}, timeout=10)
        except Exception:
            pass
        try:
            self.ws.close()
        except Exception:
            pass
        try:
            self.proc.wait(10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(10)
