"""replay comments from a CSV/JSONL file through the running daemon

Speaks protocol v1 exactly as the extension does (pages of 20 comments, hello with the
pairing token, scores then variants) through `modlens.protocol.client`. Prints one JSON line
per comment with its scores (and variants unless --no-variants). The file is read as `modlens
audit` reads it (encoding, delimiter, quotes; --encoding), with the same errors and exit codes.

One file may hold comments of several platforms and pages: the `platform`, `url` and `author`
columns (or the ones named by --platform-col/--url-col/--author-col) are used when present,
rows are grouped into pages by (platform, url), and --platform/--url fill in where a row has
none. Authors are hashed as the extension hashes them (SHA-256 of `"<salt>\\n<author>"`, with the
study's salt from the daemon's hello_ok): the raw name never leaves this process.

Exit 0 means stored: the daemon sends a page's scores before it writes them, so after its last
page feed asks the daemon (`sync`, on each connection) to confirm that every row behind its
answers (scores, normalizations, variants, deferred-variant records) is committed to the study
log, and waits. `modlens feed FILE && modlens report` thus reads every page's scores. A write
the daemon could not make is an error (exit 1) naming what the log lacks, after the lines
already printed.
"""
from __future__ import annotations

import argparse
import asyncio
import hashlib
import json
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from modlens.cli.common import CliError, add_daemon_option, add_encoding_option
from modlens.errors import ErrorKind
from modlens.datasets.base import DatasetError, DatasetNotFound, check_rows, iter_rows
from modlens.protocol import Comments, Page
from modlens.protocol.client import PAGE_SIZE, ClientError, FedComment, PageResult, build, send_pages

# row fields taken from a column of this name when the file has one (flags name others)
DEFAULT_COLS = {"platform": "platform", "url": "url", "author": "author"}


class FeedError(CliError):
    """A problem the user can fix (file, column, daemon down, token); printed without traceback."""


def feed_error(err: ClientError) -> FeedError:
    """The protocol client's error as this command reports it (its kind's exit code)."""
    return FeedError(err.message, kind=err.kind, fix=err.fix)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("file", help="CSV/TSV (with a header), JSONL (one object per line) or Parquet, read as "
                                     "`modlens audit` reads it (encoding, delimiter detected)")
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
    add_encoding_option(parser)
    parser.add_argument("--concurrency", type=int, default=1, help="parallel connections, each sending pages in turn")
    parser.add_argument("--no-variants", action="store_true",
                        help="do not ask for perturbed variants (faster: each page then waits for its scores only)")
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


def _file_error(err: DatasetError) -> FeedError:
    """A reader's error as audit reports it: its fix on its own line, not found for a missing file."""
    return FeedError(err.message, kind=ErrorKind.NOT_FOUND if isinstance(err, DatasetNotFound) else ErrorKind.USAGE,
                     fix=err.fix)


def read_rows(path: Path, text_col: str, key_col: str | None, limit: int | None = None, *,
              columns: dict[str, str | None] | None = None, encoding: str | None = None) -> Iterator[FeedRow]:
    """One FeedRow per row, the file read by the dataset readers (`modlens.datasets.base`: byte-order
    mark, UTF-8 else `encoding`, delimiter sniffing, strict quotes, binary and empty files refused),
    so its errors are audit's. Empty texts are skipped with a note on stderr. `columns` names the
    platform/url/author columns given by flags (they must exist); unnamed ones are read from
    DEFAULT_COLS when the file has them."""
    named = {k: v for k, v in (columns or {}).items() if v}
    try:
        check_rows(path, encoding)  # empty and header-only files: one error, before anything is read
        rows = iter_rows(path, encoding=encoding)
        n = 0
        for i, row in enumerate(rows, 1):
            required = [(text_col, "--text-col"), *([(key_col, "--key-col")] if key_col else []),
                        *((col, f"--{what}-col") for what, col in named.items())]
            for col, flag in required:
                if col not in row:
                    raise FeedError(f"{path}, row {i}: no column {col!r} (has {', '.join(map(str, row))})",
                                    fix=f"name the column with {flag}")
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
                rows.close()
                return
    except DatasetError as err:
        raise _file_error(err) from None


# --- pages ------------------------------------------------------------------------------

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


def output_line(comment: FedComment) -> str:
    """One JSON line: the comment's scores as the daemon sent them (`error` only when set), then its
    variants and, when generating them failed, `variants_error`."""
    out = comment.scores.model_dump(mode="json", exclude={"error"} if comment.scores.error is None else None)
    if comment.variants is not None:
        out["variants"] = [v.model_dump(mode="json") for v in comment.variants.items]
        if comment.variants.error:
            out["variants_error"] = comment.variants.error
    return json.dumps(out, ensure_ascii=False)


def variants_note(result: PageResult) -> str:
    """Said once, on the first page whose variants were waited for: why feed is slower than scoring
    alone, measured on that page, and the flag that turns variants off."""
    assert result.variants_ms is not None
    return (f"modlens feed: variants are on: each page waits for its perturbed variants too (first page: scores "
            f"after {result.latency_ms:.0f} ms, variants after {result.variants_ms:.0f} ms); "
            "--no-variants sends scores only")


def run(args: argparse.Namespace) -> int:
    from modlens import pairing
    from modlens.runtime import daemon_url

    path = Path(args.file)
    columns = {"platform": args.platform_col, "url": args.url_col, "author": args.author_col}
    rows = list(read_rows(path, args.text_col, args.key_col, args.limit, columns=columns, encoding=args.encoding))
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

    noted = False

    def emit(result: PageResult) -> None:
        nonlocal noted
        for item in result.items:
            print(output_line(item), flush=True)
        if not noted and result.variants_ms is not None:  # the daemon makes variants and each page waits for them
            noted = True
            print(variants_note(result), file=sys.stderr, flush=True)

    try:
        pages, authors = group_pages(rows, max(1, args.page_size), args.platform,
                                     args.url or path.resolve().as_uri(), args.page_key or path.name)
        stats = asyncio.run(send_pages(url, token, pages, concurrency=args.concurrency,
                                       variants=not args.no_variants, rater=args.rater, on_page=emit, authors=authors))
    except ClientError as err:
        raise feed_error(err) from None
    rate = stats.comments / stats.wall_s if stats.wall_s else 0.0
    print(f"modlens feed: {stats.comments} comments in {len(stats.pages)} pages, {stats.wall_s:.2f} s ({rate:.1f}/s), "
          "all in the study log", file=sys.stderr)
    return 0
