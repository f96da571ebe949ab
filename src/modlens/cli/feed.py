"""replay comments from a CSV/JSONL file through the running daemon

Speaks protocol v1 exactly as the extension does (pages of 20 comments, hello with the
pairing token, scores then variants), with the `websockets` library as client. Prints one
JSON line per comment with its scores (and variants unless --no-variants). Also the client
of the daemon benchmark (`bench/bench_daemon.py`).
"""
from __future__ import annotations

import argparse
import asyncio
import csv
import json
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterator

PAGE_SIZE = 20


class FeedError(RuntimeError):
    """A problem the user can fix (file, column, daemon down, token); printed without traceback."""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("file", help="CSV (with a header) or JSONL (one object per line)")
    parser.add_argument("--platform", default="feed", help="platform recorded for these comments (default: feed)")
    parser.add_argument("--url", help="page URL recorded for these comments (default: the file's URI)")
    parser.add_argument("--page-key", help="page id on the platform (default: the file name)")
    parser.add_argument("--text-col", default="text", help="column/field holding the comment text (default: text)")
    parser.add_argument("--key-col", help="column/field holding a unique comment key (default: the row number)")
    parser.add_argument("--concurrency", type=int, default=1, help="parallel connections, each sending pages in turn")
    parser.add_argument("--no-variants", action="store_true", help="do not ask for perturbed variants")
    parser.add_argument("--page-size", type=int, default=PAGE_SIZE, help="comments per message (default: 20)")
    parser.add_argument("--limit", type=int, help="only the first N comments")
    parser.add_argument("--rater", default="modlens-feed", help="rater id sent in hello (default: modlens-feed)")
    parser.add_argument("--daemon", metavar="WS_URL", help="daemon address (default: from the running `modlens serve`)")
    parser.add_argument("--token", help="pairing token (default: the one in `modlens pair`)")


# --- reading ------------------------------------------------------------------------------

def read_rows(path: Path, text_col: str, key_col: str | None, limit: int | None = None) -> Iterator[tuple[str, str]]:
    """(key, text) per row; empty texts are skipped with a note on stderr."""
    if not path.is_file():
        raise FeedError(f"{path}: no such file")
    suffix = path.suffix.lower()
    if suffix in (".jsonl", ".ndjson", ".json"):
        rows = _jsonl(path)
    elif suffix in (".csv", ".tsv"):
        rows = _csv(path, "\t" if suffix == ".tsv" else ",")
    else:
        raise FeedError(f"{path}: unknown format {suffix!r}; use .csv, .tsv or .jsonl")
    n = 0
    for i, row in rows:
        if text_col not in row:
            raise FeedError(f"{path}, row {i}: no column {text_col!r} (has {', '.join(map(str, row))}); pass --text-col")
        if key_col is not None and key_col not in row:
            raise FeedError(f"{path}, row {i}: no column {key_col!r}; pass --key-col")
        text = row[text_col]
        if not isinstance(text, str) or not text.strip():
            print(f"feed: {path}, row {i}: empty text, skipped", file=sys.stderr)
            continue
        yield (str(row[key_col]) if key_col else f"row-{i}"), text
        n += 1
        if limit is not None and n >= limit:
            return


def _jsonl(path: Path) -> Iterator[tuple[int, dict]]:
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


def _csv(path: Path, delimiter: str) -> Iterator[tuple[int, dict]]:
    with path.open(encoding="utf-8", newline="") as fh:
        for i, row in enumerate(csv.DictReader(fh, delimiter=delimiter), 1):
            yield i, row


# --- the client -----------------------------------------------------------------------------

@dataclass
class PageResult:
    items: list[dict[str, Any]]             # one per comment: scores (+ variants)
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


def make_pages(rows: list[tuple[str, str]], size: int, platform: str, url: str, page_key: str) -> list[dict]:
    """Comments messages (without id) of `size` items each."""
    return [{"type": "comments",
             "page": {"url": url, "platform": platform, "page_key": page_key, "title": page_key},
             "items": [{"key": k, "text": t} for k, t in rows[i:i + size]]}
            for i in range(0, len(rows), size)]


async def connect(url: str, token: str):
    """Open and greet; raises FeedError with the fix when the daemon is down or refuses."""
    import websockets

    try:
        ws = await websockets.connect(url, subprotocols=["modlens.v1", f"modlens.token.{token}"],
                                      max_size=None, open_timeout=10)
    except (OSError, asyncio.TimeoutError) as err:
        raise FeedError(f"cannot reach the daemon at {url} ({err}); is `modlens serve` running?") from None
    except websockets.exceptions.InvalidStatus as err:
        status = err.response.status_code
        reason = err.response.body.decode(errors="replace") if err.response.body else ""
        hint = "run `modlens pair` for the current token" if status == 401 else "check the address"
        raise FeedError(f"the daemon refused the connection (HTTP {status} {reason.strip()}); {hint}") from None
    return ws


class FeedClient:
    """One connection: hello, then pages one after another."""

    def __init__(self, ws, name: str):
        self.ws, self.name, self.n = ws, name, 0
        self.hello: dict[str, Any] = {}

    def next_id(self, prefix: str) -> str:
        self.n += 1
        return f"{self.name}-{prefix}{self.n}"

    async def recv(self, timeout: float = 300.0) -> dict:
        return json.loads(await asyncio.wait_for(self.ws.recv(), timeout))

    async def say_hello(self, token: str, rater: str) -> dict:
        from modlens import __version__

        mid = self.next_id("hello")
        await self.ws.send(json.dumps({"type": "hello", "id": mid, "protocol": 1, "client": "modlens-feed",
                                       "client_version": __version__, "token": token, "rater_id": rater}))
        msg = await self.recv(30)
        if msg.get("type") != "hello_ok":
            raise FeedError(f"hello refused: {msg.get('code')}: {msg.get('message')}")
        self.hello = msg
        return msg

    async def send_page(self, page: dict, variants: bool) -> PageResult:
        """Send one comments message; wait for all its scores (and variants). Honors
        `rate_limited` by waiting `retry_after_ms` and resending the same id."""
        want_variants = variants and self.hello.get("variants_enabled", False)
        msg = {**page, "id": self.next_id("page"), "variants": variants}
        retries = 0
        t0 = time.perf_counter()
        await self.ws.send(json.dumps(msg))
        results: dict[str, dict] = {}
        pending_variants: set[str] = set()
        scored_at = None
        while True:
            reply = await self.recv()
            if reply.get("id") != msg["id"]:
                continue
            kind = reply["type"]
            if kind == "error":
                if reply.get("code") == "rate_limited":
                    retries += 1
                    await asyncio.sleep(reply.get("retry_after_ms", 100) / 1000)
                    await self.ws.send(json.dumps(msg))
                    continue
                raise FeedError(f"daemon refused page {msg['id']}: {reply.get('code')}: {reply.get('message')}")
            if kind == "comments_ok":
                if want_variants:
                    pending_variants = {it["key"] for it in page["items"]}
            elif kind == "scores":
                for it in reply["items"]:
                    results[it["key"]] = it
                if len(results) >= len({it["key"] for it in page["items"]}):
                    scored_at = time.perf_counter()
            elif kind == "variants":
                results.setdefault(reply["key"], {})["variants"] = reply["items"]
                if reply.get("error"):
                    results[reply["key"]]["variants_error"] = reply["error"]
                pending_variants.discard(reply["key"])
            if scored_at is not None and not pending_variants:
                break
        done = time.perf_counter()
        return PageResult(items=[results[k] for k in dict.fromkeys(it["key"] for it in page["items"])],
                          latency_ms=(scored_at - t0) * 1000,
                          variants_ms=(done - t0) * 1000 if want_variants else None, retries=retries)


async def feed(url: str, token: str, pages: list[dict], *, concurrency: int = 1, variants: bool = True,
               rater: str = "modlens-feed", on_page: Callable[[PageResult], None] | None = None) -> FeedStats:
    """Send every page over `concurrency` connections; results in page order."""
    stats = FeedStats()
    results: list[PageResult | None] = [None] * len(pages)
    todo: asyncio.Queue[int] = asyncio.Queue()
    for i in range(len(pages)):
        todo.put_nowait(i)

    async def worker(w: int) -> None:
        ws = await connect(url, token)
        try:
            client = FeedClient(ws, f"feed{w}")
            await client.say_hello(token, rater)
            while not todo.empty():
                i = todo.get_nowait()
                results[i] = await client.send_page(pages[i], variants)
                if on_page:
                    on_page(results[i])
        finally:
            await ws.close()

    t0 = time.perf_counter()
    await asyncio.gather(*(worker(w) for w in range(max(1, min(concurrency, len(pages))))))
    stats.wall_s = time.perf_counter() - t0
    stats.pages = [r for r in results if r is not None]
    return stats


def output_line(item: dict[str, Any]) -> str:
    out = {"key": item.get("key"), "comment_id": item.get("comment_id"), "truncated": item.get("truncated"),
           "detectors": item.get("detectors"), "normalized": item.get("normalized")}
    if item.get("error"):
        out["error"] = item["error"]
    if "variants" in item:
        out["variants"] = item["variants"]
    return json.dumps(out, ensure_ascii=False)


def run(args: argparse.Namespace) -> int:
    from modlens import pairing
    from modlens.cli.serve import daemon_url

    path = Path(args.file)
    try:
        rows = list(read_rows(path, args.text_col, args.key_col, args.limit))
        if not rows:
            raise FeedError(f"{path}: no comments to send")
        keys = [k for k, _ in rows]
        if len(set(keys)) != len(keys):
            raise FeedError(f"{path}: --key-col {args.key_col!r} has repeated values; keys must be unique")
        token = args.token or pairing.read()
        if not token:
            raise FeedError("no pairing token yet; start the daemon once (`modlens serve`) or run `modlens pair`")
        url = args.daemon or daemon_url()
        pages = make_pages(rows, max(1, args.page_size), args.platform, args.url or path.resolve().as_uri(),
                           args.page_key or path.name)

        def emit(result: PageResult) -> None:
            for item in result.items:
                print(output_line(item), flush=True)

        stats = asyncio.run(feed(url, token, pages, concurrency=args.concurrency, variants=not args.no_variants,
                                 rater=args.rater, on_page=emit))
    except FeedError as err:
        print(f"modlens feed: {err}", file=sys.stderr)
        return 1
    rate = stats.comments / stats.wall_s if stats.wall_s else 0.0
    print(f"feed: {stats.comments} comments in {len(stats.pages)} pages, {stats.wall_s:.2f} s ({rate:.1f}/s)",
          file=sys.stderr)
    return 0
