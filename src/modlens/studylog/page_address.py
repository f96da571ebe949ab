"""How the log keeps a page of X or YouTube, whoever sent it: the site knowledge, in one place.

The consent text promises that authors' handles and names are not in the log outside the author
hash, but a page's address can carry them: an X post's address names its author
(`https://x.com/<handle>/status/<id>`), its tab title quotes the author's display name
(`<name> on X: "<text>" / X`), and a YouTube link may name the channel (`&ab_channel=<name>`).
The extension's adapters (extension/content/adapters/x.js, youtube.js) send the handle-free forms;
every page row passes `canonical_page` too (`records.comments.ensure_pages`, the one write path for
pages), so `modlens feed`, an older extension build or any other client lands on the same row, and
schema 7 rewrote the pages of older logs with the same rules (`register` gives them to SQL).
tests/fixtures/page_addresses.json holds the cases both sides are tested on
(tests/test_page_address.py, extension/test/sites.test.mjs).

- X: a status address is `https://x.com/i/status/<id>` and its page key the status id; a title in
  X's tab form keeps the post's text only. (The extension also calls a tab title of any other
  form "Post on X"; here a title in another form is kept: it was not read from X's tab.)
- YouTube: a video's address alone, `https://www.youtube.com/watch?v=<id>` or `/shorts/<id>`,
  `/live/<id>` (no channel, playlist or time), its page key the video id; the title without
  " - YouTube".
A page key that is such an address (what `modlens feed` sends) becomes the id on its own platform,
else the canonical address; any other key, address or title is kept as sent.
"""
from __future__ import annotations

import re
import sqlite3
from typing import NamedTuple
from urllib.parse import parse_qs, quote, urlsplit

_X_HOST = re.compile(r"(^|\.)(x|twitter)\.com$")
_X_STATUS = re.compile(r"^/([^/]+)/status/(\d+)")
_X_TITLE = re.compile(r'.* on (?:X|Twitter): "([\s\S]*)" / (?:X|Twitter)')  # fullmatch
_YT_HOST = re.compile(r"(^|\.)youtube\.com$")
_YT_PATH = re.compile(r"^/(shorts|live)/([\w-]{6,})")
_YT_TITLE = re.compile(r" - YouTube$")


class SitePage(NamedTuple):
    platform: str  # x | youtube
    key: str  # the status id, the video id
    url: str  # the address without its author


def site_page(address: str | None) -> SitePage | None:
    """The X post or YouTube video an http(s) address names, or None."""
    if not address or not address.startswith(("http://", "https://")):
        return None
    try:
        parts = urlsplit(address)
        host = (parts.hostname or "").lower()
    except ValueError:
        return None
    if _X_HOST.search(host):
        m = _X_STATUS.match(parts.path)
        return SitePage("x", m[2], f"https://x.com/i/status/{m[2]}") if m else None
    if _YT_HOST.search(host):
        if parts.path == "/watch":
            v = parse_qs(parts.query).get("v", [""])[0]
            return SitePage("youtube", v, f"https://www.youtube.com/watch?v={quote(v, safe=SAFE)}") if v else None
        m = _YT_PATH.match(parts.path)
        return SitePage("youtube", m[2], f"https://www.youtube.com/{m[1]}/{m[2]}") if m else None
    return None


SAFE = "-_.!~*'()"  # what JavaScript's encodeURIComponent leaves as it is (the extension's youtube.js)


def page_key(platform: str, key: str) -> str:
    """A page key that is an X or YouTube address: the id on its own platform, else the address without its author."""
    site = site_page(key)
    if site is None:
        return key
    return site.key if site.platform == platform else site.url


def page_url(url: str | None) -> str | None:
    site = site_page(url)
    return url if site is None else site.url


def page_title(platform: str, url: str | None, title: str | None) -> str | None:
    if not title:
        return title
    named = site_page(title)  # `modlens feed` titles a page by its key: an address
    if named is not None:
        return named.url
    site = site_page(url)
    on = site.platform if site is not None else platform
    if on == "x":
        m = _X_TITLE.fullmatch(title)
        return m[1] if m and m[1].strip() else title
    if on == "youtube":
        return _YT_TITLE.sub("", title)
    return title


def canonical_page(platform: str, key: str, url: str | None, title: str | None) -> tuple[str, str, str | None, str | None]:
    """(platform, page_key, url, title) as the log keeps them."""
    return platform, page_key(platform, key), page_url(url), page_title(platform, url, title)


def register(conn: sqlite3.Connection) -> None:
    """The rules as SQL functions, for schema 7's step that rewrites the pages of older logs."""
    conn.create_function("modlens_page_key", 2, page_key, deterministic=True)
    conn.create_function("modlens_page_url", 1, page_url, deterministic=True)
    conn.create_function("modlens_page_title", 3, page_title, deterministic=True)
