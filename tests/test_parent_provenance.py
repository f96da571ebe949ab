"""How a comment's parent was determined (`CommentItem.parent_via`, sent by the extension's
adapters) reaches the study log as the comment's label `parent_via` (source `extension`), keeps
the first sighting's account like `parent_key` itself, is refused when malformed, and leaves the
log through the ordinary export."""
from __future__ import annotations

import csv
import json

import pytest

from modlens import protocol as p
from modlens.protocol import ErrorCode, ProtocolError
from modlens.studylog.export import export

from daemon_helpers import Client, comments_msg, connect, running_daemon
from log_helpers import rows


def with_parents(mid: str, items: list[tuple[str, str, str | None, str | None]]) -> dict:
    msg = comments_msg(mid, [(k, t) for k, t, _, _ in items], platform="x", page_key="1890012345678901234")
    for item, (_, _, parent, via) in zip(msg["items"], items):
        if parent:
            item["parent_key"] = parent
        if via:
            item["parent_via"] = via
    return msg


async def test_parent_via_is_recorded_as_a_label_and_the_first_account_stays(tmp_path):
    first = [("100", "the opened post", None, "none"),
             ("101", "a reply to the post", "100", "page"),
             ("102", "a reply down the chain", "101", "connector"),
             ("103", "replying to someone named", "101", "replying_to"),
             ("104", "an old extension sends no provenance", "100", None)]
    async with running_daemon(tmp_path) as (url, _):
        async with connect(url) as ws:
            c = Client(ws)
            await c.hello()
            ok = await c.request(with_parents("page-1", first), "comments_ok")
            assert ok["type"] == "comments_ok" and ok["accepted"] == 5
            # another participant's browser saw 102 as a plain reply to the post: the first account stays
            again = await c.request(with_parents("page-2", [("102", "a reply down the chain", "100", "page")]), "comments_ok")
            assert again["type"] == "comments_ok"
            bad = await c.request(with_parents("page-3", [("105", "malformed", "100", "Connector Line!")]), "comments_ok")
            assert bad["type"] == "error" and bad["code"] == "invalid_fields" and "parent_via" in bad["message"]
            await c.until(lambda m: m["type"] == "scores" and m["id"] == "page-2")

    db = tmp_path / "study.sqlite"
    got = dict(rows(db, "SELECT c.comment_key, l.value FROM labels l JOIN comments c USING (comment_id) "
                        "WHERE l.name = 'parent_via' AND l.source = 'extension'"))
    assert got == {"100": "none", "101": "page", "102": "connector", "103": "replying_to"}
    assert rows(db, "SELECT parent_key FROM comments WHERE comment_key = '102'") == [("101",)]
    assert rows(db, "SELECT count(*) FROM comments WHERE comment_key = '105'") == [(0,)]

    out = tmp_path / "export"
    manifest = export(db, out, "csv")
    with open(out / manifest["tables"]["labels"]["file"], newline="") as fh:
        exported = [r for r in csv.DictReader(fh) if r["name"] == "parent_via"]
    assert sorted(r["value"] for r in exported) == ["connector", "none", "page", "replying_to"]
    assert {r["source"] for r in exported} == {"extension"}


@pytest.mark.parametrize("value, ok", [
    ("structure", True), ("in_reply_to_label", True), ("structure_mismatch", True), (None, True),
    ("", False), ("Structure", False), ("x" * 33, False), ("reply to", False),
    ("sideways", False), ("key_prefixes", False),   # snake case, but not in the vocabulary
])
def test_comment_item_accepts_only_the_vocabulary(value, ok):
    raw = {"type": "comments", "id": "c", "page": {"url": "u", "platform": "coral", "page_key": "v"},
           "items": [{"key": "k", "text": "t", "parent_key": "p", "parent_via": value}]}
    if ok:
        assert p.Comments.model_validate(raw).items[0].parent_via == value
    else:
        with pytest.raises(ProtocolError) as info:
            p.parse_client_message(json.dumps(raw))
        assert info.value.code is ErrorCode.invalid_fields


def test_the_extension_fixtures_and_protocol_share_one_vocabulary():
    """ns.PARENT_VIA (content/registry.js: what content scripts send) and the fixture format's list
    are the protocol's `ParentVia`, so no adapter can send a value the daemon refuses."""
    import re
    from pathlib import Path
    from typing import get_args

    from test_fixtures_format import PARENT_VIA

    src = (Path(__file__).resolve().parents[1] / "extension" / "content" / "registry.js").read_text(encoding="utf-8")
    js = set(re.findall(r'"([a-z_]+)"', re.search(r"ns\.PARENT_VIA = \[([^\]]*)\]", src).group(1)))
    assert js == PARENT_VIA == set(get_args(p.ParentVia))
