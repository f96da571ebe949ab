"""What remote (HTTP API) detectors share: a rate limiter, a JSON client with retries and
exponential back-off on 429/5xx/timeouts, and a base class whose blocking `score()` runs
`ascore()` on a private event loop (for the CLI), while the daemon awaits `ascore()` directly.

Error messages never contain request URLs: API keys travel in query strings and would
otherwise end up in the study log's `scores.error` column.

Each event loop that calls a client gets its own session, and a task that closes it when the loop
shuts down: `asyncio.run()` (the CLI's `modlens score`, the audits) and aiohttp's `run_app` cancel
every task left once their main coroutine ends, while the loop still runs, so a session made there is
closed before the loop is; `aclose()` / `close()` close it earlier.

Redirects are never followed: a participant accepted one address (the consent text names it), and
a `3xx` pointing elsewhere would carry the comment to an address nobody agreed to. A redirect is a
failure that names where it pointed (host and port only) and is not retried.
"""
from __future__ import annotations

import asyncio
import json
import os
import random
import re
import threading
import time
from typing import Any, Callable, Sequence
from urllib.parse import urlsplit

import aiohttp

from modlens.detectors.base import Detector, DetectorUnavailable, LabelScores
from modlens.errors import ErrorKind, ModlensError


class RemoteError(ModlensError, RuntimeError):
    """An API call that failed for good (after retries when the failure was transient)."""

    kind = ErrorKind.FAILED  # the command ran and the service failed it (exit 1, as its traceback did)

    def __init__(self, message: str, *, status: int | None = None, retryable: bool = False, body: Any = None):
        super().__init__(message)
        self.status = status
        self.retryable = retryable
        self.body = body


class RateLimiter:
    """Spaces calls at least 1/qps apart. Slots are reserved under a thread lock, so one
    limiter holds across event loops and threads (the daemon loop and the CLI's private one)."""

    def __init__(self, qps: float):
        if qps <= 0:
            raise ValueError(f"qps must be > 0, got {qps}")
        self.interval = 1.0 / qps
        self._next = 0.0
        self._lock = threading.Lock()

    async def acquire(self) -> None:
        with self._lock:
            now = time.monotonic()
            slot = max(now, self._next)
            self._next = slot + self.interval
        if slot > now:
            await asyncio.sleep(slot - now)


def _error_message(status: int, body: Any, text: str) -> str:
    """Google-style `{"error": {"code", "message", "status"}}` or the start of the body."""
    if isinstance(body, dict) and isinstance(body.get("error"), dict):
        err = body["error"]
        return f"HTTP {status} {err.get('status', '')}: {err.get('message', '')}".strip()
    return f"HTTP {status}: {text[:200]}"


def _redirect_error(status: int, location: str | None) -> RemoteError:
    try:
        parts = urlsplit(location or "")
        where = f"{parts.hostname}:{parts.port}" if parts.port else (parts.hostname or "")
    except ValueError:  # a Location that is not a URL (a bad port)
        where = ""
    return RemoteError(f"HTTP {status}: the endpoint redirects{f' to {where}' if where else ''}; redirects are not "
                       "followed, so comments go only to the address the participant accepted (set the detector's "
                       "address to the final one if you trust it)", status=status)


class RemoteClient:
    def __init__(self, *, qps: float = 1.0, timeout_s: float = 10.0, retries: int = 4,
                 backoff_s: float = 1.0, max_backoff_s: float = 30.0):
        self.limiter = RateLimiter(qps)
        self.timeout_s = timeout_s
        self.retries = retries
        self.backoff_s = backoff_s
        self.max_backoff_s = max_backoff_s
        self.requests = 0   # HTTP attempts made (for tests and status)
        self.retried = 0
        # per event loop: its session and the task that closes it when the loop shuts down
        self._sessions: dict[asyncio.AbstractEventLoop, tuple[aiohttp.ClientSession, asyncio.Task[None]]] = {}

    def _session(self) -> aiohttp.ClientSession:
        loop = asyncio.get_running_loop()
        entry = self._sessions.get(loop)
        if entry is not None and not entry[0].closed:
            return entry[0]
        if entry is not None:
            entry[1].cancel()
        session = aiohttp.ClientSession()
        self._sessions[loop] = (session, loop.create_task(self._guard(session), name="modlens-remote-session"))
        return session

    @staticmethod
    async def _guard(session: aiohttp.ClientSession) -> None:
        """Waits until cancelled (by `aclose`/`close`, or by the loop's shutdown), then closes `session`."""
        try:
            await asyncio.Event().wait()
        finally:
            await session.close()

    @staticmethod
    async def _close(session: aiohttp.ClientSession, guard: asyncio.Task[None]) -> None:
        guard.cancel()
        await asyncio.wait([guard])  # its `finally` closes the session
        await session.close()  # a no-op unless the guard had already ended

    def _delay(self, attempt: int, retry_after: str | None) -> float:
        delay = min(self.max_backoff_s, self.backoff_s * 2.0 ** attempt) * random.uniform(0.8, 1.0)
        if retry_after and retry_after.strip().isdigit():
            delay = max(delay, min(float(retry_after), self.max_backoff_s))
        return delay

    async def request_json(self, method: str, url: str, *, params: dict[str, str] | None = None,
                           headers: dict[str, str] | None = None, body: Any = None,
                           form: Callable[[], aiohttp.FormData] | None = None) -> Any:
        """A JSON reply to a JSON `body`, or to a multipart `form` (a factory: aiohttp consumes
        a FormData once, and a retry needs a fresh one)."""
        timeout = aiohttp.ClientTimeout(total=self.timeout_s)
        for attempt in range(self.retries + 1):
            await self.limiter.acquire()
            self.requests += 1
            retry_after = None
            try:
                payload = {"data": form()} if form is not None else {"json": body}
                async with self._session().request(method, url, params=params, headers=headers, **payload,
                                                   timeout=timeout, allow_redirects=False) as resp:
                    if 300 <= resp.status < 400:
                        raise _redirect_error(resp.status, resp.headers.get("Location"))
                    text = await resp.text()
                    try:
                        parsed = json.loads(text) if text else None
                    except json.JSONDecodeError:
                        parsed = None
                    if 200 <= resp.status < 300:
                        if parsed is None:
                            raise RemoteError(f"HTTP {resp.status} but the body is not JSON: {text[:120]!r}",
                                              status=resp.status)
                        return parsed
                    error = RemoteError(_error_message(resp.status, parsed, text), status=resp.status,
                                        retryable=resp.status == 429 or resp.status >= 500, body=parsed)
                    retry_after = resp.headers.get("Retry-After")
            except asyncio.TimeoutError:
                error = RemoteError(f"timed out after {self.timeout_s:g} s", retryable=True)
            except aiohttp.ClientError as err:  # connection refused/reset: messages name host:port, not the query
                error = RemoteError(f"{type(err).__name__}: {err}", retryable=True)
            if not error.retryable or attempt == self.retries:
                if error.retryable:
                    error.message = f"{error.message} (gave up after {attempt + 1} attempts)"
                    error.args = (error.message,)
                raise error
            self.retried += 1
            await asyncio.sleep(self._delay(attempt, retry_after))
        raise AssertionError("unreachable")

    async def aclose(self) -> None:
        entry = self._sessions.pop(asyncio.get_running_loop(), None)
        if entry is not None:
            await self._close(*entry)

    def close(self) -> None:
        """Close sessions from synchronous code, whichever loop they belong to. A closed loop's
        session was closed by its guard when that loop shut down (asyncio.run)."""
        for loop, (session, guard) in list(self._sessions.items()):
            self._sessions.pop(loop, None)
            if loop.is_closed() or guard.done():
                continue
            try:
                running = asyncio.get_running_loop()
            except RuntimeError:
                running = None
            if running is loop:
                guard.cancel()  # the guard closes the session on this loop's next turn
            elif loop.is_running():
                asyncio.run_coroutine_threadsafe(self._close(session, guard), loop).result(timeout=5)
            else:
                loop.run_until_complete(self._close(session, guard))


_ENV_REF = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")


def env_refs(value: str) -> list[str]:
    return _ENV_REF.findall(value)


def expand_env(value: str, what: str) -> str:
    """Replace `${VAR}` with the environment's value; a missing variable is a clear status."""
    def sub(m: re.Match[str]) -> str:
        if m.group(1) not in os.environ:
            raise DetectorUnavailable("error", f"{what} refers to ${{{m.group(1)}}}, which is not set",
                                      f"export {m.group(1)}=...")
        return os.environ[m.group(1)]
    return _ENV_REF.sub(sub, value)


class RemoteDetector(Detector):
    """Base for HTTP detectors: subclasses implement `ascore`; `score` blocks on a private loop."""

    remote = True
    releases_gil = True  # `score` (a wrapper's text detector calls it so) waits on its private loop's requests
    client: RemoteClient
    _transport: dict[str, float]

    def __init__(self) -> None:
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._loop_lock = threading.Lock()

    def _connect(self, *, qps: float, timeout_s: float, retries: int, backoff_s: float, max_backoff_s: float) -> None:
        """The client the requests go through, and its settings as `config()` records them (they
        change no score, so versions leave them out)."""
        self.client = RemoteClient(qps=qps, timeout_s=timeout_s, retries=retries, backoff_s=backoff_s,
                                   max_backoff_s=max_backoff_s)
        self._transport = {"qps": qps, "timeout_s": timeout_s, "retries": retries, "backoff_s": backoff_s,
                           "max_backoff_s": max_backoff_s}

    def _private_loop(self) -> asyncio.AbstractEventLoop:
        with self._loop_lock:
            if self._loop is None:
                self._loop = asyncio.new_event_loop()
                self._thread = threading.Thread(target=self._loop.run_forever, name=f"{self.name}-loop", daemon=True)
                self._thread.start()
            return self._loop

    def score(self, texts: Sequence[str]) -> list[LabelScores | None]:
        return asyncio.run_coroutine_threadsafe(self.ascore(list(texts)), self._private_loop()).result()

    def close(self) -> None:
        self.client.close()
        if self._loop is not None:
            self._loop.call_soon_threadsafe(self._loop.stop)
            if self._thread is not None:
                self._thread.join(timeout=5)
            self._loop.close()
            self._loop = None
