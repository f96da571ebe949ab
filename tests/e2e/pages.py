"""Small YouTube-like pages generated per test run (fresh comment keys every time), for the
outbox and consent tests that need comments the study log has never seen."""
from __future__ import annotations

import html
import uuid

from .harness import wait_for


def youtube_page(video_id: str, texts: list[str]) -> tuple[str, list[dict]]:
    run = uuid.uuid4().hex[:10]
    items, blocks = [], []
    for i, text in enumerate(texts):
        key = f"Ugz{run}{i:03d}AaABAg"
        items.append({"key": key, "text": text})
        blocks.append(f"""
<ytd-comment-thread-renderer><div id="comment-container"><ytd-comment-view-model id="comment">
  <div id="header-author"><h3><a id="author-text" href="/@user{i}"><span>@user{i}</span></a></h3>
  <span id="published-time-text"><a href="/watch?v={video_id}&amp;lc={key}">{i + 1} hours ago</a></span></div>
  <div id="expander"><yt-attributed-string id="content-text"><span>{html.escape(text)}</span></yt-attributed-string></div>
</ytd-comment-view-model></div></ytd-comment-thread-renderer>""")
    page = f"""<!doctype html><html><head><meta charset="utf-8"><title>Test video {video_id} - YouTube</title></head>
<body><ytd-app><ytd-comments id="comments"><div id="contents">{''.join(blocks)}</div></ytd-comments></ytd-app></body></html>"""
    return page, items


def viafoura_page(container_id: str, texts: list[str]) -> str:
    """A news article with a Viafoura-like comment list (light DOM, no ids): served on
    127.0.0.1, where the adapter is chosen by the markup, not the host."""
    run = uuid.uuid4().hex[:8]
    comments = "".join(
        f'<article class="vf3-comment"><div class="vf3-comment-header__author">reader{i}</div>'
        f'<time datetime="2026-03-0{i % 9 + 1}T10:00:00Z">1h</time>'
        f'<div class="vf3-comment-content"><p>{html.escape(t)} ({run})</p></div></article>'
        for i, t in enumerate(texts))
    return (f'<!doctype html><html><head><meta charset="utf-8"><title>Article {container_id}</title>'
            f'<meta name="vf:container_id" content="{container_id}"></head><body><h1>Article</h1>'
            f'<vf-conversations><div class="vf3-conversations-list">{comments}</div></vf-conversations></body></html>'), run


def serve_youtube_page(browser, tmp_path, video_id: str, texts: list[str]) -> tuple[str, list[dict]]:
    """A fresh YouTube page served to `browser` at its watch URL: (url, items as youtube_page gives them)."""
    page_html, items = youtube_page(video_id, texts)
    path = tmp_path / f"{video_id}.html"
    path.write_text(page_html, encoding="utf-8")
    url = f"https://www.youtube.com/watch?v={video_id}"
    browser.routes[url] = path
    return url, items


def logged_keys(daemon, items: list[dict]) -> list[str]:
    """The keys of `items` that the daemon's study log holds as YouTube comments."""
    got = daemon.comments("youtube")
    return [it["key"] for it in items if it["key"] in got]


def open_page_with_markers(browser, tmp_path, video_id: str, texts: list[str]) -> tuple[object, list[dict]]:
    """A YouTube page with `texts` as its comments, opened in `browser` once each has its marker."""
    url, items = serve_youtube_page(browser, tmp_path, video_id, texts)
    page = browser.context.new_page()
    page.goto(url)
    wait_for(lambda: page.locator("modlens-marker").count() >= len(texts), 30, "a marker on each comment")
    return page, items


def ratings_of(daemon, key: str) -> list[dict]:
    """The study log's ratings of the comment `key`."""
    return [r for r in daemon.ratings() if r["comment_key"] == key]
