"""WebSocket protocol v1: the single source of truth for every message the daemon and its
clients exchange. `docs/PROTOCOL.md` is generated from these models (`protocol_doc.py`).

Client messages are parsed by `parse_client_message`, which turns any defect into a
`ProtocolError` carrying the documented error code; server messages are built from the
models below so their shape cannot drift from the doc.
"""
from __future__ import annotations

import json
import re
from datetime import datetime
from enum import Enum
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

PROTOCOL_VERSION = 1
SUBPROTOCOL = "modlens.v1"
TOKEN_SUBPROTOCOL_PREFIX = "modlens.token."
MAX_ID_CHARS = 128


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
    internal = "internal"


ERROR_MEANINGS: dict[ErrorCode, str] = {
    ErrorCode.bad_json: "the frame is not valid UTF-8 JSON, or not a JSON object",
    ErrorCode.unknown_type: "`type` names no client message of this protocol version",
    ErrorCode.invalid_fields: "a field is missing, has the wrong type or an out-of-range value; the message names the field",
    ErrorCode.too_large: "the frame is larger than `limits.max_message_bytes` (the socket stays open)",
    ErrorCode.rate_limited: "the connection sent faster than `limits.messages_per_second` (burst `limits.burst`) "
    "or has too much work queued; retry after `retry_after_ms`",
    ErrorCode.hello_required: "a message other than `hello` arrived before a successful `hello`",
    ErrorCode.bad_token: "the `token` in `hello` is not the current pairing token",
    ErrorCode.unknown_comment: "a rating names a comment (platform + key) the study log does not hold",
    ErrorCode.unavailable: "the daemon cannot do this now (shutting down, study log not writable)",
    ErrorCode.internal: "a bug in the daemon; the message says what failed, the socket stays open",
}


class ProtocolError(Exception):
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


# --- shared pieces -----------------------------------------------------------------------

class _Message(BaseModel):
    # Unknown fields from newer clients are ignored (forward compatible); known ones are checked.
    model_config = ConfigDict(extra="ignore")

    def dump(self) -> dict[str, Any]:
        return self.model_dump(mode="json")


Id = Field(min_length=1, max_length=MAX_ID_CHARS, description="client-chosen id, echoed in the answer")


def _iso_time(value: str | None) -> str | None:
    if value is None:
        return None
    try:
        datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        raise ValueError("must be an ISO 8601 time, e.g. 2025-01-31T12:00:00Z") from None
    return value


# --- client -> daemon --------------------------------------------------------------------

class Hello(_Message):
    """Opens the session. Must be the first message; nothing else is accepted before it."""

    type: Literal["hello"] = "hello"
    id: str = Id
    protocol: Literal[1] = Field(description="protocol version the client speaks (1)")
    client: str = Field(min_length=1, max_length=64, description='client name, e.g. "modlens-extension", "modlens-feed"')
    client_version: str | None = Field(None, max_length=64)
    token: str = Field(min_length=1, max_length=256, description="the pairing token (`modlens pair`)")
    rater_id: str = Field(min_length=1, max_length=128, description="pseudonymous rater id chosen by the client")
    study_id: str | None = Field(None, max_length=64, description="when set, must equal the running study's id")
    consent_at: str | None = Field(None, description="ISO time the rater consented; recorded on the rater")

    _check_consent = field_validator("consent_at")(lambda cls, v: _iso_time(v))


class Page(_Message):
    url: str = Field(min_length=1, max_length=4096)
    platform: str = Field(min_length=1, max_length=32, pattern=r"^[a-z0-9_.-]+$",
                          description='site family, e.g. "youtube", "x", "news"')
    page_key: str = Field(min_length=1, max_length=512, description="stable id of the page on its platform")
    title: str | None = Field(None, max_length=2048)


class CommentItem(_Message):
    key: str = Field(min_length=1, max_length=512, description="the site's comment id, unique per platform")
    text: str = Field(min_length=1, description="comment text; longer than max_comment_chars is cut and flagged")
    author_hash: str | None = Field(None, max_length=128, description="salted hash of the author handle, never the raw handle")
    parent_key: str | None = Field(None, max_length=512)
    time_shown: str | None = Field(None, description="ISO time the comment was shown")

    _check_time = field_validator("time_shown")(lambda cls, v: _iso_time(v))


class Comments(_Message):
    """Comments found on a page. Answered at once by `comments_ok`, then `scores`, then `variants`."""

    type: Literal["comments"] = "comments"
    id: str = Id
    page: Page
    items: list[CommentItem] = Field(min_length=1, description="at most limits.max_items_per_message; repeated keys are scored once")
    variants: bool = Field(True, description="false: do not generate perturbed variants for these comments")


class CommentRef(_Message):
    platform: str = Field(min_length=1, max_length=32)
    key: str = Field(min_length=1, max_length=512)


class Anchors(_Message):
    vs_hard: Literal["more", "less", "same"] = Field(description='comment vs the "hard to say" anchor')
    vs_extreme: Literal["more", "less", "same"] = Field(description="comment vs the extreme anchor")


class Rating(_Message):
    """A rater's judgement of one comment; acknowledged only after it is committed to disk."""

    type: Literal["rating"] = "rating"
    id: str = Field(min_length=1, max_length=MAX_ID_CHARS, description="client rating id: resending it is idempotent")
    comment: CommentRef
    values: dict[str, str] = Field(description="attribute name -> level, from the study's attributes")
    anchors: Anchors | None = None
    time_spent_ms: int | None = Field(None, ge=0, le=86_400_000)


class Ping(_Message):
    type: Literal["ping"] = "ping"
    id: str = Id


class Status(_Message):
    type: Literal["status"] = "status"
    id: str = Id


CLIENT_MESSAGES: dict[str, type[_Message]] = {
    "hello": Hello, "comments": Comments, "rating": Rating, "ping": Ping, "status": Status,
}


# --- daemon -> client --------------------------------------------------------------------

class DetectorInfo(_Message):
    key: str = Field(description="the study's key for this detector (used in every `detectors` map)")
    name: str
    version: str
    toxicity_label: str
    threshold: float


class HelloOk(_Message):
    type: Literal["hello_ok"] = "hello_ok"
    id: str
    session_id: str
    protocol: Literal[1] = PROTOCOL_VERSION
    server_version: str
    study: dict[str, Any] = Field(description="StudyConfig.client_settings(): consent text, attributes, anchors, sampling, ...")
    detectors: list[DetectorInfo]
    variants_enabled: bool = Field(description="true: every comments message with variants=true gets one `variants` message per item")


class CommentsOk(_Message):
    type: Literal["comments_ok"] = "comments_ok"
    id: str
    accepted: int = Field(description="distinct comments accepted")
    truncated: list[str] = Field(description="keys whose text was cut to max_comment_chars (flagged, not dropped)")


class DetectorScore(_Message):
    name: str
    version: str
    labels: dict[str, float] | None = Field(description="probability per label; null when the detector failed")
    toxicity: float | None
    latency_ms: float = Field(description="wall time of the batched model call that produced it")
    error: str | None = None


class NormalizedOut(_Message):
    text: str
    edits: list[dict[str, Any]] = Field(description="per-token edits: start, end, original, normalized, step, confidence, hidden")
    normalizer: str = ""
    version: str = ""
    detectors: dict[str, DetectorScore] = Field(description="scores of the normalized text (empty when unchanged: same as the comment's)")


class ScoreItem(_Message):
    key: str
    comment_id: int | None = Field(description="row id in the study log (null if the log write failed)")
    truncated: bool
    detectors: dict[str, DetectorScore]
    normalized: NormalizedOut | None
    error: str | None = Field(None, description="normalizer or log failure; the scores are still valid")


class Scores(_Message):
    type: Literal["scores"] = "scores"
    id: str = Field(description="the id of the comments message")
    items: list[ScoreItem]


class VariantOut(_Message):
    variant_id: int | None
    text: str
    strategy: str
    params: dict[str, Any]
    seed: int
    positions: list[list[int]]
    detectors: dict[str, DetectorScore]


class Variants(_Message):
    type: Literal["variants"] = "variants"
    id: str = Field(description="the id of the comments message")
    key: str = Field(description="the comment key these variants belong to")
    items: list[VariantOut]
    error: str | None = Field(None, description="set when generation failed; items is then empty")


class RatingOk(_Message):
    type: Literal["rating_ok"] = "rating_ok"
    id: str
    rating_id: int
    derived_toxicity: str | None = Field(description="toxicity derived from the anchors (seed 003, Table 1), null if none/inconsistent")
    inconsistent: bool
    duplicate: bool = Field(description="true: this id was already recorded; nothing new was written")


class Pong(_Message):
    type: Literal["pong"] = "pong"
    id: str
    server_time: str


class StatusOk(_Message):
    type: Literal["status_ok"] = "status_ok"
    id: str
    detectors: list[dict[str, Any]] = Field(description="per configured detector: name, status, message, fix, version")
    counts: dict[str, int] = Field(description="rows per study-log table")
    queue: dict[str, Any] = Field(description="connections, pending writes, batcher queue depths")
    components: dict[str, str] = Field(default_factory=dict,
                                       description="normalizer / perturbation that failed to load -> error")


class Error(_Message):
    type: Literal["error"] = "error"
    id: str | None = Field(description="id of the refused message; null when it could not be read")
    code: str = Field(description="one of the error codes below")
    message: str = Field(description="human-readable; names the offending field where there is one")
    retry_after_ms: int | None = Field(None, description="only with rate_limited")

    def dump(self) -> dict[str, Any]:
        d = super().dump()
        if d["retry_after_ms"] is None:
            del d["retry_after_ms"]
        return d


SERVER_MESSAGES: dict[str, type[_Message]] = {
    "hello_ok": HelloOk, "comments_ok": CommentsOk, "scores": Scores, "variants": Variants,
    "rating_ok": RatingOk, "pong": Pong, "status_ok": StatusOk, "error": Error,
}


# --- parsing -----------------------------------------------------------------------------

_ID_PREFIX = re.compile(r'"id"\s*:\s*"((?:[^"\\]|\\.){1,128})"')


def sniff_id(raw: str | bytes) -> str | None:
    """Best-effort id of a frame we will not parse (too large, bad JSON), so the error can
    still be matched to its request. Looks only at the first 4 KiB."""
    head = raw[:4096]
    if isinstance(head, bytes):
        head = head.decode("utf-8", "replace")
    m = _ID_PREFIX.search(head)
    if not m:
        return None
    try:
        return json.loads(f'"{m.group(1)}"')
    except ValueError:
        return None


def _field_errors(err: ValidationError) -> str:
    parts = []
    for e in err.errors()[:5]:
        loc = ".".join(str(p) for p in e["loc"]) or "(message)"
        parts.append(f"{loc}: {e['msg']}")
    return "; ".join(parts)


def parse_client_message(raw: str | bytes) -> _Message:
    """Parse one frame into its client message model, or raise ProtocolError."""
    try:
        data = json.loads(raw)
    except (ValueError, UnicodeDecodeError) as err:
        raise ProtocolError(ErrorCode.bad_json, f"not valid JSON: {err}", sniff_id(raw)) from None
    if not isinstance(data, dict):
        raise ProtocolError(ErrorCode.bad_json, "a message must be a JSON object with `type` and `id`")
    msg_id = data.get("id")
    if not isinstance(msg_id, str) or not 0 < len(msg_id) <= MAX_ID_CHARS:
        raise ProtocolError(ErrorCode.invalid_fields,
                            f"id: required, a string of 1-{MAX_ID_CHARS} characters")
    kind = data.get("type")
    model = CLIENT_MESSAGES.get(kind) if isinstance(kind, str) else None
    if model is None:
        raise ProtocolError(ErrorCode.unknown_type,
                            f"unknown message type {kind!r}; expected one of {', '.join(CLIENT_MESSAGES)}", msg_id)
    try:
        return model.model_validate(data)
    except ValidationError as err:
        raise ProtocolError(ErrorCode.invalid_fields, _field_errors(err), msg_id) from None
