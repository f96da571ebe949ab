"""The Python client of protocol v1: what `modlens feed`, the daemon benchmarks and the tests use
to talk to a running daemon exactly as the extension does (hello with the pairing token, pages of
comments, scores then variants, ratings), with the `websockets` library, and `sync` to learn that
the rows behind those answers are in the study log.

    import asyncio
    from modlens import pairing
    from modlens.protocol.client import make_pages, session
    from modlens.runtime import daemon_url

    async def main() -> None:
        token = pairing.read() or ""
        async with session(daemon_url(), token, rater="me") as client:
            page = make_pages([("c1", "you are a stupid idiot")], 20, "news",
                              "https://example.org/a", "a")[0]
            result = await client.send_page(page, variants=False)
            print(result.items[0].scores.detectors)
            await client.sync()  # the page's score rows are in the study log now
            ack = await client.rate({"id": "r1", "comment": {"platform": "news", "key": "c1"},
                                     "values": {"toxicity": "toxic"}})
            print(ack.rating_id, ack.duplicate)

    asyncio.run(main())

Every message is built from the pydantic models (`build`), so the client cannot send what the
daemon would refuse; a problem (daemon down, token refused, a message refused) is a `ClientError`
with the fix to print. Authors are hashed as the extension hashes them (`hash_author`).
"""
from __future__ import annotations

import asyncio
import hashlib
import json
import time
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal, TypeVar

from pydantic import ValidationError

from modlens.errors import ErrorKind, ModlensError
from modlens.protocol.errors import ErrorCode
from modlens.protocol.messages import (PROTOCOL_VERSION, SERVER_MESSAGES, SUBPROTOCOL, TOKEN_SUBPROTOCOL_PREFIX,
                                       Comments, CommentsOk, Error, Hello, HelloOk, Message, Page, Rating,
                                       RatingOk, ScoreItem, Scores, Sync, SyncOk, Variants)

if TYPE_CHECKING:
    from websockets.asyncio.client import ClientConnection

PAGE_SIZE = 20   # comments per message, as the extension sends them
# `unavailable` (the daemon cannot write its study log now, and recovers by itself): the same
# message is sent again after a back-off that doubles from BACKOFF_MIN_S to BACKOFF_MAX_S, as the
# extension's worker does (extension/lib/constants.js, BACKOFF_MIN_MS and BACKOFF_MAX_MS)
BACKOFF_MIN_S = 0.5
BACKOFF_MAX_S = 30.0
TOKEN_FIX = "run `modlens pair` for the current token"
NOT_STORED_FIX = ("send the comments again once the study log can be written (`modlens status` says whether it "
                  "can), or run `modlens rescore` on the log for the missing scores")


# a client error's reason -> the kind of problem it is (the CLI's exit code)
REASON_KINDS = {"invalid": ErrorKind.USAGE, "unreachable": ErrorKind.UNREACHABLE, "failed": ErrorKind.FAILED}


class ClientError(ModlensError):
    """A problem the user can act on, with its fix. `reason`: `invalid` (a message the protocol
    refuses, built from the caller's values), `unreachable` (no daemon at the address) or `failed`
    (the daemon refused or answered something unexpected)."""

    def __init__(self, message: str, *, reason: Literal["invalid", "unreachable", "failed"] = "failed",
                 fix: str | None = None) -> None:
        super().__init__(message, fix, kind=REASON_KINDS[reason])
        self.reason = reason


@dataclass
class FedComment:
    """The daemon's answer for one comment: its scores, and its variants when they were asked for."""
    scores: ScoreItem
    variants: Variants | None = None


@dataclass
class PageResult:
    items: list[FedComment]                 # one per distinct comment key, in page order
    latency_ms: float                       # comments sent -> last scores received
    variants_ms: float | None = None        # comments sent -> last variants received
    retries: int = 0


@dataclass
class FeedStats:
    pages: list[PageResult] = field(default_factory=list)
    wall_s: float = 0.0
    writes: int = 0  # the daemon's writes behind its answers, confirmed committed (`sync_ok.writes`, all connections)

    @property
    def comments(self) -> int:
        return sum(len(p.items) for p in self.pages)


M = TypeVar("M", bound=Message)


def build(model: type[M], what: str, data: dict[str, Any]) -> M:
    """A message the protocol accepts, or a ClientError naming each refused field."""
    try:
        return model.model_validate(data)
    except ValidationError as err:
        fields = "; ".join(f"{'.'.join(map(str, e['loc'])) or '(message)'}: {e['msg']}" for e in err.errors()[:5])
        raise ClientError(f"{what}: the protocol refuses {fields}", reason="invalid") from None


def wire(message: Message) -> dict[str, Any]:
    """A message as it travels (JSON values, unset optional fields left out), for a caller that
    works with the frames themselves (the daemon tests)."""
    data: dict[str, Any] = json.loads(message.model_dump_json(exclude_none=True))
    return data


def subprotocols(token: str | None) -> list[str]:
    """What the socket offers, as the extension does: the protocol, then the pairing token."""
    return [SUBPROTOCOL, *([f"{TOKEN_SUBPROTOCOL_PREFIX}{token}"] if token else [])]


def hello_message(msg_id: str, token: str, rater: str, *, client: str = "modlens-feed",
                  client_version: str | None = None, **fields: Any) -> Hello:
    """`hello`; `fields` adds its optional fields (study_id, consent_at with consent_sha256)."""
    from modlens import __version__

    return build(Hello, "hello (--rater/--token)",
                 {"id": msg_id, "protocol": PROTOCOL_VERSION, "client": client,
                  "client_version": __version__ if client_version is None else client_version,
                  "token": token, "rater_id": rater, **fields})


def comments_message(msg_id: str, page: Page | dict[str, Any], items: list[dict[str, Any]], **fields: Any) -> Comments:
    """One `comments` message: `page` and `items` as the models take them; `fields`: `variants`."""
    return build(Comments, f"comments {msg_id}", {"id": msg_id, "page": page, "items": items, **fields})


def rating_message(fields: dict[str, Any]) -> Rating:
    """One `rating` from its fields (id, comment, values, anchors, time_spent_ms)."""
    return build(Rating, "rating", {"type": "rating", **fields})


def make_pages(rows: list[tuple[str, str]], size: int, platform: str, url: str, page_key: str) -> list[Comments]:
    """(key, text) rows as comments messages of `size` items each, with ids page1, page2, …"""
    page = build(Page, "--platform/--url/--page-key",
                 {"url": url, "platform": platform, "page_key": page_key, "title": page_key})
    return [comments_message(f"page{n}", page, [{"key": k, "text": t} for k, t in rows[start:start + size]])
            for n, start in enumerate(range(0, len(rows), size), 1)]


def hash_author(author: str, salt: str) -> str:
    """As the extension does (extension/lib/hash.js): SHA-256 of "<salt>\\n<author>", hex."""
    return hashlib.sha256(f"{salt}\n{author}".encode()).hexdigest()


def with_authors(page: Comments, authors: dict[str, str], salt: str) -> Comments:
    """The page with each comment's author hash filled in (`authors`: key -> raw author)."""
    if not authors:
        return page
    items = [item.model_copy(update={"author_hash": hash_author(authors[item.key], salt)})
             if item.key in authors else item for item in page.items]
    return page.model_copy(update={"items": items})


def parse_reply(raw: str | bytes) -> Message | None:
    """A daemon message as its model; None for a type this client does not know (a newer daemon)."""
    try:
        data = json.loads(raw)
    except ValueError as err:
        raise ClientError(f"the daemon sent a frame that is not JSON ({err})") from None
    kind = data.get("type") if isinstance(data, dict) else None
    model = SERVER_MESSAGES.get(kind) if isinstance(kind, str) else None
    if model is None:
        return None
    try:
        return model.model_validate(data)
    except ValidationError as err:
        raise ClientError(f"the daemon sent an invalid {kind} message: {err}") from None


async def connect(url: str, token: str) -> ClientConnection:
    """Open the socket; raises ClientError with the fix when the daemon is down or refuses."""
    import websockets
    from websockets.typing import Subprotocol

    try:
        ws = await websockets.connect(url, subprotocols=[Subprotocol(s) for s in subprotocols(token)],
                                      max_size=None, open_timeout=10)
    except (TimeoutError, OSError) as err:
        raise ClientError(f"cannot reach the daemon at {url} ({err})", reason="unreachable",
                          fix="is `modlens serve` running? start it, or pass --daemon WS_URL") from None
    except websockets.exceptions.InvalidStatus as err:
        status = err.response.status_code
        reason = err.response.body.decode(errors="replace") if err.response.body else ""
        hint = TOKEN_FIX if status == 401 else "check the address (--daemon)"
        raise ClientError(f"the daemon refused the connection (HTTP {status} {reason.strip()})", fix=hint) from None
    return ws


class Client:
    """One connection: hello, then pages and ratings one after another. Every request waits for
    its own answers (matched by id), honors `rate_limited` by waiting `retry_after_ms` and
    resending the same message, and retries `unavailable` with back-off (BACKOFF_MIN_S)."""

    def __init__(self, ws: ClientConnection, name: str) -> None:
        self.ws, self.name, self.n = ws, name, 0
        self.hello: HelloOk | None = None
        self.retries = 0   # rate_limited and unavailable answers waited out (reset per page)

    def next_id(self, prefix: str) -> str:
        self.n += 1
        return f"{self.name}-{prefix}{self.n}"

    async def send(self, message: Message) -> None:
        await self.ws.send(message.model_dump_json(exclude_none=True))

    async def recv(self, timeout: float = 300.0) -> Message | None:
        return parse_reply(await asyncio.wait_for(self.ws.recv(), timeout))

    async def say_hello(self, token: str, rater: str, *, client: str = "modlens-feed", **fields: Any) -> HelloOk:
        """Open the session; `fields` adds Hello's optional fields (study_id, consent_at with consent_sha256)."""
        hello = hello_message(self.next_id("hello"), token, rater, client=client, **fields)
        await self.send(hello)
        reply = await self._answer_of(hello, "hello", 30)
        if not isinstance(reply, HelloOk):
            raise ClientError(f"expected hello_ok, the daemon answered {reply!r}")
        self.hello = reply
        return reply

    async def _answer_of(self, msg: Message, what: str, timeout: float) -> Message | None:
        """The next reply to `msg` (by id) that is not a passing refusal, after which `msg` is sent
        again: `rate_limited` once its retry_after_ms passed, `unavailable` after a back-off
        doubling up to BACKOFF_MAX_S, for as long as it lasts up to `timeout` seconds in all."""
        backoff, waited = BACKOFF_MIN_S, 0.0
        while True:
            reply = await self.recv(timeout)
            if getattr(reply, "id", None) != getattr(msg, "id", None):
                continue  # a message for another request, or of a type this client does not know
            if isinstance(reply, Error) and reply.code == ErrorCode.rate_limited:
                self.retries += 1
                await asyncio.sleep((reply.retry_after_ms or 100) / 1000)
                await self.send(msg)
                continue
            if isinstance(reply, Error) and reply.code == ErrorCode.unavailable and waited + backoff <= timeout:
                self.retries += 1
                await asyncio.sleep(backoff)
                waited, backoff = waited + backoff, min(backoff * 2, BACKOFF_MAX_S)
                await self.send(msg)
                continue
            if isinstance(reply, Error) and reply.code == ErrorCode.not_stored:
                raise ClientError(f"not everything the daemon answered is in the study log: {reply.message}", fix=NOT_STORED_FIX)
            if isinstance(reply, Error):
                fix = TOKEN_FIX if reply.code == ErrorCode.bad_token else None
                raise ClientError(f"daemon refused {what} {getattr(msg, 'id', '')}: {reply.code}: {reply.message}",
                                  fix=fix)
            return reply

    async def send_page(self, page: Comments, variants: bool = True, timeout: float = 300.0) -> PageResult:
        """Send one comments message; wait for all its scores (and its variants when asked for and
        the study makes them)."""
        want_variants = variants and self.hello is not None and self.hello.variants_enabled
        msg = page.model_copy(update={"variants": variants})
        keys = list(dict.fromkeys(item.key for item in msg.items))
        self.retries = 0
        t0 = time.perf_counter()
        await self.send(msg)
        scores: dict[str, ScoreItem] = {}
        variant_sets: dict[str, Variants] = {}
        pending_variants: set[str] = set()
        scored_at = None
        while scored_at is None or pending_variants:
            reply = await self._answer_of(msg, "page", timeout)
            if isinstance(reply, CommentsOk):
                if want_variants:
                    pending_variants = set(keys)
            elif isinstance(reply, Scores):
                scores.update((item.key, item) for item in reply.items)
                if len(scores) >= len(keys):
                    scored_at = time.perf_counter()
            elif isinstance(reply, Variants):
                variant_sets[reply.key] = reply
                pending_variants.discard(reply.key)
        done = time.perf_counter()
        return PageResult(items=[FedComment(scores[k], variant_sets.get(k)) for k in keys],
                          latency_ms=(scored_at - t0) * 1000,
                          variants_ms=(done - t0) * 1000 if want_variants else None, retries=self.retries)

    async def sync(self, timeout: float = 300.0) -> SyncOk:
        """Wait until every write behind the answers this connection received so far is committed:
        `scores` go out before their rows are written, and a failed write behind `variants` is not
        told there. Returns `sync_ok` (its `writes`: how many were confirmed); a write that failed
        raises ClientError naming what the study log lacks."""
        msg = build(Sync, "sync", {"id": self.next_id("sync")})
        await self.send(msg)
        while True:
            reply = await self._answer_of(msg, "sync", timeout)
            if isinstance(reply, SyncOk):
                return reply

    async def rate(self, rating: Rating | dict[str, Any], timeout: float = 30.0) -> RatingOk:
        """Send one rating (a `Rating`, or its fields as a dict) and wait for its `rating_ok`, which
        the daemon sends once the rating is committed to disk. Resending the same rating id is
        idempotent: the ack then says `duplicate` and nothing new is written. A refused rating
        (unknown comment or attribute, a level outside the study's, an id already used for another
        rating) raises ClientError."""
        msg = rating if isinstance(rating, Rating) else rating_message(rating)
        await self.send(msg)
        while True:
            reply = await self._answer_of(msg, "rating", timeout)
            if isinstance(reply, RatingOk):
                return reply


@asynccontextmanager
async def session(url: str, token: str, *, rater: str, name: str | None = None,
                  client: str = "modlens-feed", **hello: Any) -> AsyncIterator[Client]:
    """A connected `Client` whose hello was answered; the socket is closed on leaving. `hello`
    adds Hello's optional fields (study_id, consent_at, consent_sha256)."""
    ws = await connect(url, token)
    try:
        conn = Client(ws, name or rater)
        await conn.say_hello(token, rater, client=client, **hello)
        yield conn
    finally:
        await ws.close()


async def send_pages(url: str, token: str, pages: list[Comments], *, concurrency: int = 1, variants: bool = True,
                     rater: str = "modlens-feed", on_page: Callable[[PageResult], None] | None = None,
                     authors: list[dict[str, str]] | None = None) -> FeedStats:
    """Send every page over `concurrency` connections; results in page order. `authors`: per
    page, key -> raw author, sent hashed with the study's salt from hello_ok. Returns once every
    connection's `sync` was answered `sync_ok`: every row behind every answer is in the study log
    (a write that failed raises ClientError)."""
    stats = FeedStats()
    results: list[PageResult | None] = [None] * len(pages)
    todo: asyncio.Queue[int] = asyncio.Queue()
    for i in range(len(pages)):
        todo.put_nowait(i)

    async def worker(w: int) -> int:
        """Sends pages until none is left; returns the writes its `sync_ok` confirmed."""
        async with session(url, token, rater=rater, name=f"feed{w}") as client:
            assert client.hello is not None
            salt = client.hello.study.get("author_salt")
            if authors and any(authors) and not salt:
                raise ClientError("the daemon gave no author salt, so authors cannot be hashed",
                                  fix="upgrade the daemon, or drop the author column")
            while not todo.empty():
                i = todo.get_nowait()
                page = with_authors(pages[i], authors[i], str(salt)) if authors else pages[i]
                result = results[i] = await client.send_page(page, variants)
                if on_page:
                    on_page(result)
            # done means stored: the last scores went out before their rows were written
            return (await client.sync()).writes

    t0 = time.perf_counter()
    stats.writes = sum(await asyncio.gather(*(worker(w) for w in range(max(1, min(concurrency, len(pages)))))))
    stats.wall_s = time.perf_counter() - t0
    stats.pages = [r for r in results if r is not None]
    return stats
