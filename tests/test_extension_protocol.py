"""The one place where the extension's account of the protocol (extension/lib/protocol.js and
constants.js, the worker's handlers) is checked against the pydantic models (modlens.protocol).
Every daemon-bound message the extension builds, run under node and parsed by the daemon's own
parser and models: accepted, and no field the extension writes is one the models would silently
ignore (a renamed field on either side). Its version, subprotocols and chunk size, the error codes
it names and the daemon messages it handles: the protocol's. Fast; needs node, no browser."""
from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest
from pydantic import BaseModel

from modlens.protocol.messages import CLIENT_MESSAGES
from modlens.protocol.parse import parse_client_message
from realtools import need, requires

EXT = Path(__file__).resolve().parents[1] / "extension"

# The builders fed as the extension feeds them: a content-script record (observer.js) goes through
# ns.contentComment (content → worker) and ns.protocol.commentItem (worker → daemon).
SCRIPT = """
const ns = require(process.argv[1] + "/lib/ns.js");
require(process.argv[1] + "/lib/constants.js");
require(process.argv[1] + "/lib/protocol.js");
const P = ns.protocol;
const records = [
  {key: "c1", text: "top comment", author: "Ada", parent_via: "none", time_shown: "2026-03-02T12:00:00.000Z", missing: [], media: []},
  {key: 42, text: "a reply", author: null, parent_key: "c1", parent_via: "structure", missing: ["author"],
   media: ["https://pbs.twimg.com/media/x.jpg"]},
];
const sent = records.map(ns.contentComment);
const items = sent.map((c, i) => P.commentItem(c, i ? null : "ab".repeat(32)));
const page = P.page({url: "https://x.com/a/status/1", platform: "x", page_key: "1"});
const many = Array.from({length: ns.CHUNK_ITEMS + 1}, (_, i) => P.commentItem({key: "k" + i, text: "t" + i}, null));
const out = {
  sent,
  messages: [
    P.hello({token: "T0K", raterId: "rater-1", consent: null}),
    P.hello({token: "T0K", raterId: "rater-1", consent: {study_id: "s1", at: "2026-03-02T12:00:00.000Z", sha256: "ab".repeat(32)}}),
    P.hello({token: "T0K", raterId: "rater-1", consent: null, withdrawal: {study_id: "s1", at: "2026-03-03T12:00:00.000Z"}}),
    P.ping(),
    P.status(),
    P.sync(),
    ...P.comments(page, items),
    P.rating({platform: "x", key: 42}, {values: {toxicity: "toxic"}, anchors: {vs_hard: "more", vs_extreme: "less"}, time_spent_ms: 1234.6}),
    P.rating({platform: "x", key: "c1"}, {values: {toxicity: "not toxic"}}),
    P.rating({platform: "x", key: "c1"}, {values: {toxicity: "toxic"}}, "asg-1", "s1"),
    P.commentMedia("x", "42", [{mime: "image/png", sha256: "0".repeat(64), data_b64: "iVBORw0KGgo=", url: null, position: 0, n_bytes: 8}]),
    P.joinStudy('{"pack": 1}', "study.modlens", true),
  ],
  chunks: P.comments(page, many).map((m) => m.items.length),
};
console.log(JSON.stringify(out));
"""


@pytest.fixture(scope="module")
def built() -> dict:
    need("node")
    res = subprocess.run([shutil.which("node"), "-e", SCRIPT, str(EXT)], capture_output=True, text=True, timeout=60)
    assert res.returncode == 0, res.stderr
    return json.loads(res.stdout)


def _models_in(annotation: object) -> list[type[BaseModel]]:
    """The pydantic models an annotation names (`Page`, `list[CommentItem]`, `Anchors | None`)."""
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return [annotation]
    return [m for arg in getattr(annotation, "__args__", ()) for m in _models_in(arg)]


def _ignored_fields(data: dict, model: type[BaseModel], where: str = "") -> list[str]:
    """Fields of `data` the model has no place for (it would drop them without a word)."""
    out = []
    for name, value in data.items():
        field = model.model_fields.get(name)
        if field is None:
            out.append(f"{where}{name}")
            continue
        for sub in _models_in(field.annotation):
            if isinstance(value, dict):
                out += _ignored_fields(value, sub, f"{where}{name}.")
            elif isinstance(value, list):
                out += [f for i, v in enumerate(value) if isinstance(v, dict) for f in _ignored_fields(v, sub, f"{where}{name}[{i}].")]
    return out


@requires("node")
def test_every_builder_output_is_accepted_by_the_daemon(built):
    types = set()
    for msg in built["messages"]:
        parsed = parse_client_message(json.dumps(msg))  # raises ProtocolError with the field errors
        assert type(parsed) is CLIENT_MESSAGES[msg["type"]]
        assert _ignored_fields(msg, CLIENT_MESSAGES[msg["type"]]) == [], msg
        types.add(msg["type"])
    # every client message the extension sends has its builder here
    assert types == set(CLIENT_MESSAGES)


@requires("node")
def test_a_withdrawal_goes_with_hello_naming_its_study(built):
    """The participant withdrew: the hello says so (the daemon records it, bundles leave the rater out)."""
    parsed = parse_client_message(json.dumps(built["messages"][2]))
    assert (parsed.study_id, parsed.consent_withdrawn_at, parsed.consent_at) == ("s1", "2026-03-03T12:00:00.000Z", None)


@requires("node")
def test_a_rating_names_the_study_it_was_given_in(built):
    """Named, the daemon refuses it while it runs another study (study_mismatch) rather than store it there."""
    rated = [parse_client_message(json.dumps(m)) for m in built["messages"] if m["type"] == "rating"]
    assert [(r.study_id, r.id.startswith("asg-1:")) for r in rated] == [(None, False), (None, False), ("s1", True)]


@requires("node")
def test_a_comment_keeps_its_fields_from_the_page_to_the_daemon(built):
    reply = built["sent"][1]
    assert reply == {"key": 42, "text": "a reply", "parent_key": "c1", "parent_via": "structure",
                     "media": ["https://pbs.twimg.com/media/x.jpg"]}  # no DOM, no internal `missing`
    comments = [m for m in built["messages"] if m["type"] == "comments"]
    items = comments[0]["items"]
    assert items[0] == {"key": "c1", "text": "top comment", "parent_via": "none", "time_shown": "2026-03-02T12:00:00.000Z",
                        "author_hash": "ab" * 32}
    assert items[1] == {"key": "42", "text": "a reply", "parent_key": "c1", "parent_via": "structure"}
    assert built["chunks"] == [50, 1]


def test_a_field_the_models_do_not_know_is_reported():
    from modlens.protocol.messages import Comments
    assert _ignored_fields({"type": "comments", "id": "c", "page": {"url": "u", "platfrom": "x"},
                            "items": [{"key": "k", "txt": "t"}]}, Comments) == ["page.platfrom", "items[0].txt"]


# --- the extension's protocol constants, checked against modlens.protocol in this one place ------

CONSTANTS_SCRIPT = """
const ns = require(process.argv[1] + "/lib/constants.js");
require(process.argv[1] + "/lib/outbox.js");
console.log(JSON.stringify({protocol: ns.PROTOCOL, subprotocol: ns.SUBPROTOCOL, prefix: ns.TOKEN_SUBPROTOCOL_PREFIX,
                            offered: ns.wsSubprotocols("T0K"), chunk_items: ns.CHUNK_ITEMS, max_pack: ns.MAX_PACK_BYTES,
                            permanent: [...ns.PERMANENT_ERRORS]}));
"""


@pytest.fixture(scope="module")
def constants() -> dict:
    need("node")
    res = subprocess.run([shutil.which("node"), "-e", CONSTANTS_SCRIPT, str(EXT)], capture_output=True, text=True,
                         timeout=60)
    assert res.returncode == 0, res.stderr
    return json.loads(res.stdout)


@requires("node")
def test_version_and_subprotocols_are_the_protocols(constants):
    from modlens.protocol import PROTOCOL_VERSION, SUBPROTOCOL, TOKEN_SUBPROTOCOL_PREFIX
    from modlens.protocol.client import subprotocols

    assert constants["protocol"] == PROTOCOL_VERSION
    assert constants["subprotocol"] == SUBPROTOCOL and constants["prefix"] == TOKEN_SUBPROTOCOL_PREFIX
    assert constants["offered"] == subprotocols("T0K")  # what `modlens feed` and the tests offer


@requires("node")
def test_the_daemon_reads_the_token_the_extension_offers(constants):
    from modlens.protocol.security import offered_token

    assert offered_token({"Sec-WebSocket-Protocol": ", ".join(constants["offered"])}) == "T0K"


@requires("node")
def test_a_page_chunk_fits_the_default_message_limit(constants):
    from modlens.config import LimitsConfig

    assert 0 < constants["chunk_items"] <= LimitsConfig().max_items_per_message


@requires("node")
def test_the_options_page_sends_every_pack_modlens_join_reads(constants):
    # it refused a pack over 1 MiB as "too large to be a study pack"; the daemon takes a join_study
    # of any pack `modlens join` reads (tests/test_join_from_extension.py)
    from modlens.study.pack import PACK_MAX_BYTES

    assert constants["max_pack"] == PACK_MAX_BYTES


def _worker_sources() -> str:
    return "\n".join(p.read_text(encoding="utf-8") for d in ("worker", "lib") for p in sorted((EXT / d).glob("*.js")))


@requires("node")
def test_every_error_code_the_extension_names_is_one_the_daemon_sends(constants):
    from modlens.protocol import ErrorCode

    compared = set(re.findall(r'code === "(\w+)"', _worker_sources()))
    named = compared | set(constants["permanent"])
    assert {"unavailable", "rate_limited", "unknown_comment", "study_mismatch"} <= compared  # the scan finds them
    assert named - {c.value for c in ErrorCode} == set()
    # what the outbox drops at once can never succeed later; what the daemon recovers from is retried
    assert not {"unavailable", "rate_limited", "internal"} & set(constants["permanent"])


@requires("node")
def test_the_outbox_sets_aside_what_the_daemon_refuses_for_good(constants):
    from modlens.protocol import REFUSED_FOR_GOOD

    # a code the daemon refuses for good that the outbox retried would resend the message forever, and the
    # participant would never see it refused; unknown_comment is the outbox's own choice (given up after tries)
    assert set(constants["permanent"]) == {c.value for c in REFUSED_FOR_GOOD} | {"unknown_comment"}


def test_every_daemon_message_the_worker_handles_is_one_the_daemon_sends():
    from modlens.protocol.messages import SERVER_MESSAGES

    source = (EXT / "worker" / "daemon_messages.js").read_text(encoding="utf-8")
    router = source[source.index("ns.makeRouter({"):]
    handled = set(re.findall(r"^    (?:async )?(\w+)(?:\(msg\) \{|: )", router, re.M))
    assert {"hello_ok", "comments_ok", "scores", "error"} <= handled  # the scan finds them
    assert handled - set(SERVER_MESSAGES) == set()
