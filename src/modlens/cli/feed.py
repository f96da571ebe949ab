"""replay comments from a CSV/JSONL file through the running daemon

Speaks protocol v1 exactly as the extension does (pages of 20 comments, hello with the
pairing token, scores then variants), with the `websockets` library as client. Prints one
JSON line per comment with its scores (and variants unless --no-variants). Also the client
of the daemon benchmark (`bench/bench_daemon.py`).

One file may hold comments of several platforms and pages: the `platform`, `url` and `author`
columns (or the ones named by --platform-col/--url-col/--author-col) are used when present,
rows are grouped into pages by (platform, url), and --platform/--url fill in where a row has
none. Authors are hashed as the extension hashes them (SHA-256 of "<study salt>\n<author>", the
salt from the daemon's hello_ok): the raw name never leaves this process.
"""
from __future__ import annotations

import argparse
import asyncio
import csv
import hashlib
import json
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from pydantic import ValidationError

from modlens.cli.common import CliError, ErrorKind, add_daemon_option
from modlens.protocol import (PROTOCOL_VERSION, SERVER_MESSAGES, SUBPROTOCOL, TOKEN_SUBPROTOCOL_PREFIX, Comments,
                              CommentsOk, Error, ErrorCode, Hello, HelloOk, Message, Page, ScoreItem, Scores, Variants)

if TYPE_CHECKING:
    from websockets.asyncio.client import ClientConnection

PAGE_SIZE = 20
# row fields taken from a column of this name when the file has one (flags name others)
DEFAULT_COLS = {"platform": "platform", "url": "url", "author": "author"}
# tests/test_cli_feed.py asserts exit status 1 for a missing file, a missing column and an
# unreachable daemon, as before the shared exit codes; kept until flags and codes are unified.
KEPT_EXIT = 1


class FeedError(CliError):
    """A problem the user can fix (file, column, daemon down, token); printed without traceback.
    Also raised to `bench/bench_daemon.py`, which uses this client."""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("file", help="CSV (with a header) or JSONL (one object per line)")
    parser.add_argument("--platform", default="feed",
                        help="platform of rows without a platform column value (default: feed)")
    parser.add_argument("--url", help="page URL of rows without a url column value (default: the file's URI)")
    parser.add_argument("--page-key", help="page id on the platform of rows without a url column value "
                                           "(default: the file name; rows with a url: the url)")
    parser.add_argument("--text-col", default="text", help="column/field holding the comment text (default: text)")
    parser.add_argument("--key-col", help="column/field holding a unique comment key (default: the row number)")
    parser.add_argument("--platform-col", help=f"column/field holding each row's platform "
                                               f"(default: {DEFAULT_COLS['platform']}, when present)")
    parser.add_argument("--url-col", help=f"column/field holding each row's page URL (default: {DEFAULT_COLS['url']}, "
                                          "when present)")
    parser.add_argument("--author-col", help=f"column/field holding each row's author, sent hashed (default: "
                                             f"{DEFAULT_COLS['author']}, when present)")
    parser.add_argument("--concurrency", type=int, default=1, help="parallel connections, each sending pages in turn")
    parser.add_argument("--no-variants", action="store_true", help="do not ask for perturbed variants")
    parser.add_argument("--page-size", type=int, default=PAGE_SIZE, help="comments per message (default: 20)")
    parser.add_argument("--limit", type=int, help="only the first N comments")
    parser.add_argument("--rater", default="modlens-feed", help="rater id sent in hello (default: modlens-feed)")
    add_daemon_option(parser)
    parser.add_argument("--token", help="pairing token (default: the one in `modlens pair`)")


# --- reading ------------------------------------------------------------------------------

@dataclass(frozen=True)
class FeedRow:
    key: str
    text: str
    platform: str | None = None   # None: --platform
    url: str | None = None        # None: --url
    author: str | None = None     # the raw name; hashed before sending


def _value(row: dict[str, Any], col: str | None) -> str | None:
    value = row.get(col) if col else None
    return None if value is None or str(value).strip() == "" else str(value).strip()


def read_rows(path: Path, text_col: str, key_col: str | None, limit: int | None = None, *,
              columns: dict[str, str | None] | None = None) -> Iterator[FeedRow]:
    """One FeedRow per row; empty texts are skipped with a note on stderr. `columns` names the
    platform/url/author columns given by flags (they must exist); unnamed ones are read from
    DEFAULT_COLS when the file has them."""
    if not path.is_file():
        raise FeedError(f"{path}: no such file", kind=ErrorKind.NOT_FOUND, exit_code=KEPT_EXIT)
    suffix = path.suffix.lower()
    if suffix in (".jsonl", ".ndjson", ".json"):
        rows = _jsonl(path)
    elif suffix in (".csv", ".tsv"):
        rows = _csv(path, "\t" if suffix == ".tsv" else ",")
    else:
        raise FeedError(f"{path}: unknown format {suffix!r}", fix="give a .csv, .tsv or .jsonl file")
    named = {k: v for k, v in (columns or {}).items() if v}
    n = 0
    for i, row in rows:
        required = [(text_col, "--text-col"), *([(key_col, "--key-col")] if key_col else []),
                    *((col, f"--{what}-col") for what, col in named.items())]
        for col, flag in required:
            if col not in row:
                raise FeedError(f"{path}, row {i}: no column {col!r} (has {', '.join(map(str, row))})",
                                fix=f"name the column with {flag}", exit_code=KEPT_EXIT)
        text = row[text_col]
        if not isinstance(text, str) or not text.strip():
            print(f"modlens feed: {path}, row {i}: empty text, skipped", file=sys.stderr)
            continue
        cols = {what: named.get(what, default) for what, default in DEFAULT_COLS.items()}
        platform = _value(row, cols["platform"])
        yield FeedRow(str(row[key_col]) if key_col else f"row-{i}", text,
                      platform.lower() if platform else None, _value(row, cols["url"]), _value(row, cols["author"]))
        n += 1
        if limit is not None and n >= limit:
            return


def _jsonl(path: Path) -> Iterator[tuple[int, dict[str, Any]]]:
    with path.open(encoding="utf-8") as fh:
        for i, line in enumerate(fh, 1):
            if not line.strip():
                continue
            try:
                obj = json.loads(line)
            except ValueError as err:
                raise FeedError(f"{path}, line {i}: not JSON ({err})") from None
            if not isinstance(obj, dict):
                raise FeedError(f"{path}, line {i}: expected a JSON object")
            yield i, obj


def _csv(path: Path, delimiter: str) -> Iterator[tuple[int, dict[str, Any]]]:
    with path.open(encoding="utf-8", newline="") as fh:
        yield from enumerate(csv.DictReader(fh, delimiter=delimiter), 1)


# --- the client -----------------------------------------------------------------------------

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

    @property
    def comments(self) -> int:
        return sum(len(p.items) for p in self.pages)


M = TypeVar("M", bound=Message)


def build(model: type[M], what: str, data: dict[str, Any]) -> M:
    """A message the protocol accepts, or a FeedError naming each refused field."""
    try:
        return model.model_validate(data)
    except ValidationError as err:
        fields = "; ".join(f"{'.'.join(map(str, e['loc'])) or '(message)'}: {e['msg']}" for e in err.errors()[:5])
        raise FeedError(f"{what}: the protocol refuses {fields}") from None


def make_pages(rows: list[tuple[str, str]], size: int, platform: str, url: str, page_key: str) -> list[Comments]:
    """Comments messages of `size` items each, with ids page1, page2, …"""
    page = build(Page, "--platform/--url/--page-key",
                 {"url": url, "platform": platform, "page_key": page_key, "title": page_key})
    return [build(Comments, f"comments {start + 1}-{start + size}",
                  {"id": f"page{n}", "page": page, "items": [{"key": k, "text": t} for k, t in rows[start:start + size]]})
            for n, start in enumerate(range(0, len(rows), size), 1)]


def page_key_of(url: str) -> str:
    """A page's id on its platform when the url names it: the url itself, hashed when too long."""
    return url if len(url) <= 512 else "sha256:" + hashlib.sha256(url.encode()).hexdigest()


def group_pages(rows: list[FeedRow], size: int, platform: str, url: str, page_key: str
                ) -> tuple[list[Comments], list[dict[str, str]]]:
    """Rows grouped into pages by (platform, url), in order of first appearance, each page cut
    into messages of `size`; `platform`, `url` and `page_key` fill in where a row has none.
    Also the raw author of each message's comments (key -> author), hashed once the daemon's
    salt is known (`with_authors`)."""
    groups: dict[tuple[str, str], list[FeedRow]] = {}
    for r in rows:
        groups.setdefault((r.platform or platform, r.url or url), []).append(r)
    pages: list[Comments] = []
    authors: list[dict[str, str]] = []
    for (plat, u), members in groups.items():
        key = page_key if u == url else page_key_of(u)
        page = build(Page, f"page {plat} {u} (--platform/--url or their columns)",
                     {"url": u, "platform": plat, "page_key": key, "title": key})
        for start in range(0, len(members), size):
            chunk = members[start:start + size]
            pages.append(build(Comments, f"comments of {plat} {u}",
                               {"id": f"page{len(pages) + 1}", "page": page,
                                "items": [{"key": r.key, "text": r.text} for r in chunk]}))
            authors.append({r.key: r.author for r in chunk if r.author})
    return pages, authors


def hash_author(author: str, salt: str) -> str:
    """As the extension does (extension/lib/hash.js): SHA-256 of "<salt>\n<author>", hex."""
    return hashlib.sha256(f"{salt}\n{author}".encode()).hexdigest()


def with_authors(page: Comments, authors: dict[str, str], salt: str) -> Comments:
    """The page with each comment's author hash filled in."""
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
        raise FeedError(f"the daemon sent a frame that is not JSON ({err})", kind=ErrorKind.FAILED) from None
    kind = data.get("type") if isinstance(data, dict) else None
    model = SERVER_MESSAGES.get(kind) if isinstance(kind, str) else None
    if model is None:
        return None
    try:
        return model.model_validate(data)
    except ValidationError as err:
        raise FeedError(f"the daemon sent an invalid {kind} message: {err}", kind=ErrorKind.FAILED) from None


async def connect(url: str, token: str) -> ClientConnection:
    """Open the socket; raises FeedError with the fix when the daemon is down or refuses."""
    import websockets
    from websockets.typing import Subprotocol

    try:
        ws = await websockets.connect(url, subprotocols=[Subprotocol(SUBPROTOCOL),
                                                         Subprotocol(f"{TOKEN_SUBPROTOCOL_PREFIX}{token}")],
                                      max_size=None, open_timeout=10)
    except (TimeoutError, OSError) as err:
        raise FeedError(f"cannot reach the daemon at {url} ({err})", kind=ErrorKind.UNREACHABLE, exit_code=KEPT_EXIT,
                        fix="is `modlens serve` running? start it, or pass --daemon WS_URL") from None
    except websockets.exceptions.InvalidStatus as err:
        status = err.response.status_code
        reason = err.response.body.decode(errors="replace") if err.response.body else ""
        hint = "run `modlens pair` for the current token" if status == 401 else "check the address (--daemon)"
        raise FeedError(f"the daemon refused the connection (HTTP {status} {reason.strip()})",
                        kind=ErrorKind.FAILED, fix=hint) from None
    return ws


class FeedClient:
    """One connection: hello, then pages one after another."""

    def __init__(self, ws: ClientConnection, name: str):
        self.ws, self.name, self.n = ws, name, 0
        self.hello: HelloOk | None = None

    def next_id(self, prefix: str) -> str:
        self.n += 1
        return f"{self.name}-{prefix}{self.n}"

    async def send(self, message: Message) -> None:
        await self.ws.send(message.model_dump_json(exclude_none=True))

    async def recv(self, timeout: float = 300.0) -> Message | None:
        return parse_reply(await asyncio.wait_for(self.ws.recv(), timeout))

    async def say_hello(self, token: str, rater: str) -> HelloOk:
        from modlens import __version__

        hello = build(Hello, "hello (--rater/--token)",
                      {"id": self.next_id("hello"), "protocol": PROTOCOL_VERSION, "client": "modlens-feed",
                       "client_version": __version__, "token": token, "rater_id": rater})
        await self.send(hello)
        reply = await self.recv(30)
        if isinstance(reply, Error):
            fix = "run `modlens pair` for the current token" if reply.code == ErrorCode.bad_token else None
            raise FeedError(f"hello refused: {reply.code}: {reply.message}", kind=ErrorKind.FAILED, fix=fix)
        if not isinstance(reply, HelloOk):
            raise FeedError(f"expected hello_ok, the daemon answered {reply!r}", kind=ErrorKind.FAILED)
        self.hello = reply
        return reply

    async def send_page(self, page: Comments, variants: bool) -> PageResult:
        """Send one comments message; wait for all its scores (and variants). Honors
        `rate_limited` by waiting `retry_after_ms` and resending the same id."""
        want_variants = variants and self.hello is not None and self.hello.variants_enabled
        msg = page.model_copy(update={"variants": variants})
        keys = list(dict.fromkeys(item.key for item in msg.items))
        retries = 0
        t0 = time.perf_counter()
        await self.send(msg)
        scores: dict[str, ScoreItem] = {}
        variant_sets: dict[str, Variants] = {}
        pending_variants: set[str] = set()
        scored_at = None
        while True:
            reply = await self.recv()
            if getattr(reply, "id", None) != msg.id:
                continue  # a message for another request, or of a type this client does not know
            if isinstance(reply, Error):
                if reply.code == ErrorCode.rate_limited:
                    retries += 1
                    await asyncio.sleep((reply.retry_after_ms or 100) / 1000)
                    await self.send(msg)
                    continue
                raise FeedError(f"daemon refused {msg.id}: {reply.code}: {reply.message}", kind=ErrorKind.FAILED)
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
            if scored_at is not None and not pending_variants:
                break
        done = time.perf_counter()
        return PageResult(items=[FedComment(scores[k], variant_sets.get(k)) for k in keys],
                          latency_ms=(scored_at - t0) * 1000,
                          variants_ms=(done - t0) * 1000 if want_variants else None, retries=retries)


async def feed(url: str, token: str, pages: list[Comments], *, concurrency: int = 1, variants: bool = True,
               rater: str = "modlens-feed", on_page: Callable[[PageResult], None] | None = None,
               authors: list[dict[str, str]] | None = None) -> FeedStats:
    """Send every page over `concurrency` connections; results in page order. `authors`: per
    page, key -> raw author, sent hashed with the study's salt from hello_ok."""
    stats = FeedStats()
    results: list[PageResult | None] = [None] * len(pages)
    todo: asyncio.Queue[int] = asyncio.Queue()
    for i in range(len(pages)):
        todo.put_nowait(i)

    async def worker(w: int) -> None:
        ws = await connect(url, token)
        try:
            client = FeedClient(ws, f"feed{w}")
            hello = await client.say_hello(token, rater)
            salt = hello.study.get("author_salt")
            if authors and any(authors) and not salt:
                raise FeedError("the daemon gave no author salt, so authors cannot be hashed",
                                kind=ErrorKind.FAILED, fix="upgrade the daemon, or drop the author column")
            while not todo.empty():
                i = todo.get_nowait()
                page = with_authors(pages[i], authors[i], str(salt)) if authors else pages[i]
                result = results[i] = await client.send_page(page, variants)
                if on_page:
                    on_page(result)
        finally:
            await ws.close()

    t0 = time.perf_counter()
    await asyncio.gather(*(worker(w) for w in range(max(1, min(concurrency, len(pages))))))
    stats.wall_s = time.perf_counter() - t0
    stats.pages = [r for r in results if r is not None]
    return stats


def output_line(comment: FedComment) -> str:
    """One JSON line: the comment's scores as the daemon sent them (`error` only when set), then its
    variants and, when generating them failed, `variants_error`."""
    out = comment.scores.model_dump(mode="json", exclude={"error"} if comment.scores.error is None else None)
    if comment.variants is not None:
        out["variants"] = [v.model_dump(mode="json") for v in comment.variants.items]
        if comment.variants.error:
            out["variants_error"] = comment.variants.error
    return json.dumps(out, ensure_ascii=False)


def run(args: argparse.Namespace) -> int:
    from modlens import pairing
    from modlens.runtime import daemon_url

    path = Path(args.file)
    columns = {"platform": args.platform_col, "url": args.url_col, "author": args.author_col}
    rows = list(read_rows(path, args.text_col, args.key_col, args.limit, columns=columns))
    if not rows:
        raise FeedError(f"{path}: no comments to send")
    keys = [(r.platform or args.platform, r.key) for r in rows]  # a comment key is unique per platform
    if len(set(keys)) != len(keys):
        raise FeedError(f"{path}: --key-col {args.key_col!r} has repeated values on one platform; keys must be unique")
    token = args.token or pairing.read()
    if not token:
        raise FeedError("no pairing token yet", kind=ErrorKind.NOT_FOUND,
                        fix="start the daemon once (`modlens serve`) or run `modlens pair`")
    url = args.daemon or daemon_url()
    pages, authors = group_pages(rows, max(1, args.page_size), args.platform, args.url or path.resolve().as_uri(),
                                 args.page_key or path.name)

    def emit(result: PageResult) -> None:
        for item in result.items:
            print(output_line(item), flush=True)

    stats = asyncio.run(feed(url, token, pages, concurrency=args.concurrency, variants=not args.no_variants,
                             rater=args.rater, on_page=emit, authors=authors))
    rate = stats.comments / stats.wall_s if stats.wall_s else 0.0
    print(f"modlens feed: {stats.comments} comments in {len(stats.pages)} pages, {stats.wall_s:.2f} s ({rate:.1f}/s)",
          file=sys.stderr)
    return 0
