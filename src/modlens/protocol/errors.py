"""Protocol error codes and the exception that carries one. A refused message is answered
with an `error` message, never by closing the socket."""
from __future__ import annotations

from enum import Enum
from typing import Any

from modlens.errors import ModlensError
from modlens.protocol.messages import Error


class ErrorCode(str, Enum):
    bad_json = "bad_json"
    unknown_type = "unknown_type"
    invalid_fields = "invalid_fields"
    too_large = "too_large"
    rate_limited = "rate_limited"
    hello_required = "hello_required"
    bad_token = "bad_token"
    unknown_comment = "unknown_comment"
    unavailable = "unavailable"
    join_refused = "join_refused"
    study_mismatch = "study_mismatch"
    consent_outdated = "consent_outdated"
    media_not_collected = "media_not_collected"
    other_assignment = "other_assignment"
    not_stored = "not_stored"
    internal = "internal"


ERROR_MEANINGS: dict[ErrorCode, str] = {
    ErrorCode.bad_json: "the frame is not valid UTF-8 JSON, not a JSON object, nested deeper than "
    "`MAX_JSON_DEPTH` levels, or a binary frame (messages are text frames)",
    ErrorCode.unknown_type: "`type` names no client message of this protocol version",
    ErrorCode.invalid_fields: "a field is missing, has the wrong type (types are strict: `true` is not 1, "
    "`\"yes\"` is not a boolean) or an out-of-range value, or text holds a lone surrogate, or a `rating` `id` "
    "already names another rating of this rater; the message names the field",
    ErrorCode.too_large: "the frame is larger than `limits.max_message_bytes` (the socket stays open)",
    ErrorCode.rate_limited: "the connection sent faster than `limits.messages_per_second` (burst `limits.burst`) "
    "or has too much work queued; retry after `retry_after_ms`",
    ErrorCode.hello_required: "a message other than `hello` arrived before a successful `hello`",
    ErrorCode.bad_token: "the `token` in `hello` is not the current pairing token",
    ErrorCode.unknown_comment: "a rating names a comment (platform + key) the study log does not hold",
    ErrorCode.unavailable: "the daemon cannot do this now: it is shutting down, or the study log cannot be written "
    "(disk full, read-only, I/O error), or the media folder of a study that keeps image files refuses this user (the "
    "message names its owner and mode); nothing of the message was stored. Send it again later with the same id",
    ErrorCode.study_mismatch: "`hello` or a `rating` names a study (the one the participant agreed to, or rated in) that "
    "is not the daemon's running study, e.g. after joining another one; nothing is stored. Say hello without "
    "`study_id` to learn the running study and its consent text; a rating of another study is kept for that study",
    ErrorCode.consent_outdated: "`hello`'s `consent_sha256` is not the SHA-256 of the running study's current consent "
    "text: the participant agreed to another text (the study's text changed: a detector that now sends comments "
    "elsewhere, images collected, another signer). The consent is not recorded and the session does not open; ask "
    "the participant again (a hello without consent gets the current text) and send the new consent",
    ErrorCode.join_refused: "`join_study` did not join: the pack is not a valid study pack, another study is joined "
    "(send `replace: true` to leave it), the daemon serves a study given with `--config`, or the joined study could "
    "not be written (a full disk). Nothing was changed, except where a rename failed after the first one: the "
    "message says so, and the next join or start of the daemon completes that join from its journal",
    ErrorCode.media_not_collected: "`comment_media` sent to a study that does not collect media (`media.collect` is "
    "off, the default); the consent the participant gave does not cover images",
    ErrorCode.other_assignment: "a `rating` whose id names an item-set assignment or task (`<assignment>:r-<uuid>`, "
    "the item-set page's form) other than the assignment `hello_ok` gave this rater (`study.itemset.assignment`) "
    "and that assignment's task (`study.itemset.task`): it would tie the rating to a slot or task this rater was not "
    "given (the review judges a rater on the task a rating names). Nothing of it is stored; the rater's own ratings are untouched. Send it again under the "
    "rater's own assignment, or without the prefix",
    ErrorCode.not_stored: "answers `sync`: a write the daemon owed for an answer it had sent this connection failed "
    "(the rows behind a `scores` or `variants` message, or a deferred-variant record, are not in the study log); the "
    "message says which and why. It stays: every later `sync` on this connection gets it too. Send the comments again "
    "on a new connection once the study log can be written (`status`), or run `modlens rescore` on the log",
    ErrorCode.internal: "a bug in the daemon; the message says what failed, the socket stays open",
}


REFUSED_FOR_GOOD: frozenset[ErrorCode] = frozenset({
    ErrorCode.bad_json, ErrorCode.unknown_type, ErrorCode.invalid_fields, ErrorCode.too_large,
    ErrorCode.media_not_collected, ErrorCode.other_assignment, ErrorCode.study_mismatch})
"""The codes that refuse a data message (`comments`, `rating`, `comment_media`, ...) for good: the same
message sent again gets the same answer, so a client sets it aside instead of retrying it. The others
answer the moment (the log cannot be written, the rate, the session) or wait for another message
(`unknown_comment`: the comment may still arrive). `study_mismatch` is answered for as long as the daemon
runs another study than the one the message names: the client keeps it aside for its own study. The extension's outbox keeps its own copy of this
set (`lib/outbox.js`), checked against this one by tests/test_extension_protocol.py."""


class ProtocolError(ModlensError):
    """A message the daemon refuses; answered as an `error` message, never by closing."""

    def __init__(self, code: ErrorCode, message: str, id: str | None = None, retry_after_ms: int | None = None):
        super().__init__(message)
        self.code = code
        self.message = message
        self.id = id
        self.retry_after_ms = retry_after_ms

    def to_message(self) -> dict[str, Any]:
        return Error(id=self.id, code=self.code.value, message=self.message,
                     retry_after_ms=self.retry_after_ms).dump()
