"""WebSocket protocol v1 messages: every message the daemon and its clients exchange, as
pydantic models. They are the protocol's single source of truth: the daemon validates and
builds with them, `modlens feed` builds its messages with them, and docs/PROTOCOL.md is
generated from them (`modlens.protocol.doc`)."""
from __future__ import annotations

from datetime import datetime
from typing import Any, Final, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from modlens.studylog.codec import text_hash

PROTOCOL_VERSION: Final = 1  # Final: its type is Literal[1], what HelloOk.protocol declares
SUBPROTOCOL = "modlens.v1"
TOKEN_SUBPROTOCOL_PREFIX = "modlens.token."
MAX_ID_CHARS = 128
# Deepest JSON nesting a client frame may have (checked before decoding); v1 messages need 3.
MAX_JSON_DEPTH = 32
# A rating's time_spent_ms over this (a day: a panel left open) is implausible, not malformed: the
# rating is stored with its time unknown (NULL) and the reported value kept beside it.
MAX_TIME_SPENT_MS = 86_400_000

__all__ = [
    "ParentVia",
    "Message",
    "ClientMessage",
    "ClientRequest",
    "Hello",
    "consent_text_sha256",
    "Page",
    "CommentItem",
    "Comments",
    "CommentRef",
    "Anchors",
    "Rating",
    "Ping",
    "Status",
    "JoinStudy",
    "Sync",
    "MediaItem",
    "CommentMedia",
    "DetectorInfo",
    "HelloOk",
    "CommentsOk",
    "DetectorScore",
    "NormalizedOut",
    "ScoreItem",
    "Scores",
    "VariantOut",
    "Variants",
    "RatingOk",
    "Pong",
    "StatusOk",
    "JoinStudyOk",
    "SyncOk",
    "MediaOut",
    "MediaDetectorScore",
    "CommentMediaOk",
    "Error",
    "PROTOCOL_VERSION",
    "SUBPROTOCOL",
    "TOKEN_SUBPROTOCOL_PREFIX",
    "MAX_ID_CHARS",
    "MAX_JSON_DEPTH",
    "MAX_TIME_SPENT_MS",
    "CLIENT_MESSAGES",
    "SERVER_MESSAGES",
]


# --- shared pieces -----------------------------------------------------------------------

class Message(BaseModel):
    # Unknown fields from newer clients are ignored (forward compatible); known ones are checked.
    model_config = ConfigDict(extra="ignore")

    def dump(self) -> dict[str, Any]:
        return self.model_dump(mode="json")


class ClientMessage(Message):
    # Strict types: `true` is not the integer 1, "yes" is not a boolean, 7 is not a string; a
    # client that sends the wrong type gets `invalid_fields` instead of a silently coerced value.
    model_config = ConfigDict(extra="ignore", strict=True)


def _exact_int(value: Any) -> Any:
    """Literal[1] accepts `true` and `1.0` (they compare equal to 1) even in strict mode."""
    if type(value) is not int:
        raise ValueError("must be the integer 1")
    return value


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

class Hello(ClientMessage):
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
    consent_sha256: str | None = Field(
        None, pattern=r"^[0-9a-f]{64}$",
        description="with `consent_at`, required: SHA-256 (lowercase hex) of the UTF-8 consent text agreed to, "
        "hello_ok's `study.consent_text` exactly (`consent_text_sha256`); a consent to another text than the running "
        "study's current one is refused (`consent_outdated`) and not recorded")
    consent_withdrawn_at: str | None = Field(
        None, description="ISO time the rater withdrew their consent to the study `study_id` names (required with "
        "it; never with `consent_at`): recorded on the rater's consents (`consents.withdrawn_at`), whose data "
        "`modlens export --bundle` then leaves out until a new consent. The extension sends it at every hello "
        "to a daemon running that study until the participant agrees to that study again (a consent to another "
        "study takes back none), so a withdrawal made while the daemon was down arrives at the next connection; a consent already withdrawn keeps its first withdrawal time")

    _check_consent = field_validator("consent_at", "consent_withdrawn_at")(lambda cls, v: _iso_time(v))
    _check_protocol = field_validator("protocol", mode="before")(lambda cls, v: _exact_int(v))

    @model_validator(mode="after")
    def _consent_names_its_text(self) -> "Hello":
        # a consent counts for the text agreed to: a time alone would not say which
        if (self.consent_at is None) != (self.consent_sha256 is None):
            raise ValueError("consent_sha256: consent_at and consent_sha256 (the SHA-256 of the consent text agreed "
                             "to) are sent together or not at all")
        if self.consent_withdrawn_at is not None and (self.study_id is None or self.consent_at is not None):
            raise ValueError("consent_withdrawn_at: a withdrawal names the study withdrawn from (study_id) and "
                             "comes without consent_at")
        return self


def consent_text_sha256(text: str) -> str:
    """What `Hello.consent_sha256` holds for a consent to `text`: SHA-256 of its UTF-8 bytes, lowercase hex,
    the log's text hash, which keys the text in `consent_texts`."""
    return text_hash(text)


class Page(ClientMessage):
    url: str = Field(min_length=1, max_length=4096)
    platform: str = Field(min_length=1, max_length=32, pattern=r"^[a-z0-9_.-]+$",
                          description='site family, e.g. "youtube", "x", "news"')
    page_key: str = Field(min_length=1, max_length=512, description="stable id of the page on its platform")
    title: str | None = Field(None, max_length=2048)


# How the extension determined a comment's parent (CommentItem.parent_via), the one list: the
# fixture format (tests/test_fixtures_format.py) and the extension's ns.PARENT_VIA are tested against it.
ParentVia = Literal["structure", "key_prefix", "connector", "replying_to", "in_reply_to_label", "structure_mismatch",
                    "page", "none", "unknown"]


class CommentItem(ClientMessage):
    key: str = Field(min_length=1, max_length=512, description="the site's comment id, unique per platform")
    text: str = Field(min_length=1, description="comment text; longer than max_comment_chars is cut and flagged")
    author_hash: str | None = Field(None, max_length=128, description="salted hash of the author handle, never the raw handle")
    parent_key: str | None = Field(None, max_length=512)
    parent_via: ParentVia | None = Field(
        None,
        description="how the extension determined the parent: structure (DOM nesting), key_prefix (the reply's "
                    "id names its parent), connector (X line to the previous post), replying_to (X \"Replying to "
                    "@handle\"), in_reply_to_label (Coral \"In reply to NAME\"), structure_mismatch (the label "
                    "names another author than the structural parent, which is kept), page (X: a reply to the "
                    "opened post), none (top-level), unknown (a reply whose parent was not found); recorded as the "
                    "comment's label parent_via (source extension)")
    time_shown: str | None = Field(None, description="ISO time the comment was shown")

    _check_time = field_validator("time_shown")(lambda cls, v: _iso_time(v))


class Comments(ClientMessage):
    """Comments found on a page. Answered by `comments_ok` once they are committed to the study log
    (an error instead when they could not be), then `scores`, then `variants`."""

    type: Literal["comments"] = "comments"
    id: str = Id
    page: Page
    items: list[CommentItem] = Field(min_length=1, description="at most limits.max_items_per_message; repeated keys are scored once")
    variants: bool = Field(True, description="false: do not generate perturbed variants for these comments")


class CommentRef(ClientMessage):
    platform: str = Field(min_length=1, max_length=32)
    key: str = Field(min_length=1, max_length=512)


class Anchors(ClientMessage):
    vs_hard: Literal["more", "less", "same"] = Field(description='comment vs the "hard to say" anchor')
    vs_extreme: Literal["more", "less", "same"] = Field(description="comment vs the extreme anchor")


class Rating(ClientMessage):
    """A rater's judgement of one comment; acknowledged only after it is committed to disk."""

    type: Literal["rating"] = "rating"
    id: str = Field(min_length=1, max_length=MAX_ID_CHARS, description="client rating id: resending it is idempotent; another rating (comment, "
                    "values, anchors) under an id already used is refused (`invalid_fields`)")
    comment: CommentRef
    values: dict[str, str] = Field(description="attribute name -> level, from the study's attributes")
    anchors: Anchors | None = None
    study_id: str | None = Field(None, max_length=64, description=(
        "the study the rating was given in (the one whose consent and attributes the participant saw); when set "
        "and not the running study, it is refused (`study_mismatch`) and nothing is stored, unless the study log "
        "already holds this very rating (id, comment and answers) under that study, its answer lost: that resend is "
        "acknowledged (`rating_ok`, `duplicate`). Absent: the rating is recorded in the running study, whichever "
        "that is"))
    time_spent_ms: int | None = Field(
        None, ge=0, le=2 ** 53 - 1,  # past 2**53 a JSON number is no exact integer: malformed
        description=f"over {MAX_TIME_SPENT_MS} (a day) the rating is stored with its time unknown: "
                    "`rating_ok.time_spent_over_limit`")


class Ping(ClientMessage):
    type: Literal["ping"] = "ping"
    id: str = Id


class Status(ClientMessage):
    type: Literal["status"] = "status"
    id: str = Id


class JoinStudy(ClientMessage):
    """The participant opened a study pack (`study.modlens`) in the extension's options page. Only a
    signed pack is joined this way (`join_refused` otherwise), and its remote detectors stay off."""
    type: Literal["join_study"] = "join_study"
    id: str = Id
    pack: str = Field(min_length=1, description="the pack file's content (UTF-8 JSON, as `modlens study pack` wrote it)")
    file_name: str = Field("", max_length=255, description="the file's name, recorded as where the pack came from")
    replace: bool = Field(False, description="true: leave a study joined before (as `modlens join --replace`)")


class MediaItem(ClientMessage):
    mime: Literal["image/png", "image/jpeg", "image/gif", "image/webp"] = Field(
        description="the type the extension read from the bytes' magic numbers; the daemon checks it again")
    sha256: str = Field(pattern=r"^[0-9a-f]{64}$", description="SHA-256 of the bytes (hex), computed in the extension")
    data_b64: str = Field(min_length=4, description="the image bytes, base64; at most media.max_bytes once decoded")
    url: str | None = Field(None, max_length=4096, description="where the page showed the image (data: URLs are sent as null)")
    position: int = Field(0, ge=0, le=15, description="the image's place among the comment's images (0 = first)")


class CommentMedia(ClientMessage):
    """Images attached to a comment already sent in a `comments` message (`media.collect` studies only).
    Answered by `comment_media_ok` once the images are scored and logged."""

    type: Literal["comment_media"] = "comment_media"
    id: str = Id
    platform: str = Field(min_length=1, max_length=32, description="page.platform of the comments message")
    comment_key: str = Field(min_length=1, max_length=512, description="items[].key of the comment")
    items: list[MediaItem] = Field(min_length=1, max_length=16,
                                   description="at most media.max_per_comment; one frame may exceed "
                                               "limits.max_message_bytes by the base64 of one media.max_bytes image")


class Sync(ClientMessage):
    """Asks whether everything this connection was answered is in the study log. `scores` go out
    before their rows are written, and a write behind `variants` may fail without the client
    learning it: `sync_ok` is sent only once every write the daemon owes for answers it sent this
    connection before the `sync` (score rows with their normalizations and step errors, variant
    rows, deferred-variant rows) has committed; `not_stored` when one of them failed (this
    connection's answers stay unconfirmed from then on). Answers still to come (pages being
    scored, variants being made) are not covered: wait for them first. `modlens feed` sends it
    after its last page and exits 0 only on `sync_ok`."""
    type: Literal["sync"] = "sync"
    id: str = Id


# What `parse_client_message` returns: every message a client may send, each with its `type` and `id`
ClientRequest = Hello | Comments | Rating | Ping | Status | JoinStudy | CommentMedia | Sync

CLIENT_MESSAGES: dict[str, type[ClientMessage]] = {
    "hello": Hello, "comments": Comments, "rating": Rating, "ping": Ping, "status": Status, "join_study": JoinStudy,
    "comment_media": CommentMedia, "sync": Sync,
}


# --- daemon -> client --------------------------------------------------------------------

class DetectorInfo(Message):
    key: str = Field(description="the study's key for this detector (used in every `detectors` map)")
    name: str
    version: str
    toxicity_label: str
    threshold: float


class HelloOk(Message):
    type: Literal["hello_ok"] = "hello_ok"
    id: str
    session_id: str
    protocol: Literal[1] = PROTOCOL_VERSION
    server_version: str
    study: dict[str, Any] = Field(description="StudyConfig.client_settings(): consent text, attributes, anchors, sampling, ...")
    detectors: list[DetectorInfo]
    variants_enabled: bool = Field(description="true: every comments message with variants=true gets one `variants` message per "
                                   "accepted item (a blank comment's: empty, its error saying none were made)")


class CommentsOk(Message):
    type: Literal["comments_ok"] = "comments_ok"
    id: str
    accepted: int = Field(description="distinct comments accepted")
    truncated: list[str] = Field(description="keys whose text was cut to max_comment_chars (flagged, not dropped)")
    comment_ids: dict[str, int] = Field(description="key -> row id of each accepted comment in the study log: "
                                                    "committed (fsync'd) before this answer was sent")


class DetectorScore(Message):
    name: str
    version: str
    labels: dict[str, float] | None = Field(description="probability per label; null when the detector failed")
    toxicity: float | None
    latency_ms: float = Field(description="wall time of the batched model call that produced it")
    error: str | None = None


class NormalizedOut(Message):
    text: str
    edits: list[dict[str, Any]] = Field(description="per-token edits: start, end, original, normalized, step, confidence, hidden")
    normalizer: str = ""
    version: str = ""
    detectors: dict[str, DetectorScore] = Field(description="scores of the normalized text (empty when unchanged: same as the comment's)")


class ScoreItem(Message):
    key: str
    comment_id: int | None = Field(description="row id in the study log (the one `comments_ok` named)")
    truncated: bool
    detectors: dict[str, DetectorScore]
    normalized: NormalizedOut | None
    error: str | None = Field(None, description="normalizer failure; the scores are still valid")
    not_scored: str | None = Field(None, description='why `detectors` is empty: "empty" or "whitespace only" (a blank '
                                                     'comment is logged but no detector judges it; Perspective answers '
                                                     'such a request with COMMENT_EMPTY)')


class Scores(Message):
    type: Literal["scores"] = "scores"
    id: str = Field(description="the id of the comments message")
    items: list[ScoreItem]


class VariantOut(Message):
    variant_id: int | None
    text: str
    strategy: str
    params: dict[str, Any]
    seed: int
    positions: list[list[int]]
    detectors: dict[str, DetectorScore]


class Variants(Message):
    type: Literal["variants"] = "variants"
    id: str = Field(description="the id of the comments message")
    key: str = Field(description="the comment key these variants belong to")
    items: list[VariantOut]
    error: str | None = Field(None, description=(
        "set when this comment has no live variants; items is then empty. Starts with \"deferred: \" when "
        "the study's variant budget (perturbation.live_rate, live_backlog, or this connection's backlog) "
        "put it off, or its variants could not be made or recorded now (the text says why): the daemon recorded it in deferred_variants, and `modlens rescore --variants` makes "
        "and scores its variants later, into the study log (not over this socket); unless the text says the "
        "deferral was not recorded (the study log refused it): then nothing makes them. Starts with \"not made: \" "
        "when the comment is blank (its `scores` item's `not_scored`): nothing to perturb, nothing recorded. "
        "Starts with \"not sent: \" when its variants were made and are in the study log, but sending them over "
        "this socket failed (the text says why): they are not made again. "
        "Any other text: generating or scoring its variants failed (a step_errors row)"))


class RatingOk(Message):
    type: Literal["rating_ok"] = "rating_ok"
    id: str
    rating_id: int
    derived_toxicity: str | None = Field(description="toxicity derived from the anchors (the human-centred Perspective study, Table 1), null if none/inconsistent")
    inconsistent: bool
    duplicate: bool = Field(description="true: this very rating was already recorded under this id (a resend): "
                                        "nothing new was written, and the fields above describe the stored rating")
    time_spent_over_limit: bool = Field(
        False, description=f"true: this message's time_spent_ms was over {MAX_TIME_SPENT_MS}, so the log holds the rating with "
                           "time_spent_ms NULL (unknown) and the reported value in time_spent_over_limit_ms")


class Pong(Message):
    type: Literal["pong"] = "pong"
    id: str
    server_time: str


class StatusOk(Message):
    type: Literal["status_ok"] = "status_ok"
    id: str
    detectors: list[dict[str, Any]] = Field(description="per configured detector: name, status, message, fix, version")
    counts: dict[str, int] = Field(description="rows per study-log table")
    queue: dict[str, Any] = Field(description="connections, pending writes, batcher queue depths, variants (live "
                                              "variants: each comment offered counted once, as the study log holds it: "
                                              "done, queued, failed (a step_errors row), deferred: the comments (each once, "
                                              "however often deferred) this daemon recorded in deferred_variants for "
                                              "`modlens rescore --variants` (over budget, cut short by their connection "
                                              "closing or the daemon stopping, or made but their variants or step "
                                              "error refused by the study log: variants not recorded; or their round "
                                              "raised before the log held either: round failed), "
                                              "deferred_by_reason: those by the reason each one's row holds (unknown: "
                                              "a reason naming no kind), "
                                              "deferred_unrecorded: comments deferred but refused by the study log "
                                              "and not recorded since)")
    components: dict[str, str] = Field(default_factory=dict,
                                       description="normalizer / perturbation that failed to load -> error")
    study_log: dict[str, Any] = Field(default_factory=dict, description=(
        "whether the study log can be written now: writable, since (when it stopped), reason, failed_writes "
        "(calls to the log refused meanwhile: those of messages answered `unavailable`, and also the writes "
        "behind answers already sent, score and variant rows, which only `sync` reports, as `not_stored`, and "
        "the daemon's own, a session's end, recovery's scores), episodes (such conditions since the daemon started)"))


class JoinStudyOk(Message):
    type: Literal["join_study_ok"] = "join_study_ok"
    id: str
    study_id: str
    title: str
    tasks: int = Field(description="number of task pages the study lists")
    restarting: bool = Field(description="true: the daemon restarts on the joined study now; the socket closes, "
                                         "reconnect and the next `hello_ok` carries the new study. false: the "
                                         "daemon already runs this very pack (the pack of the study it serves, read "
                                         "with that study's files when it started, with the same remote "
                                         "detectors accepted, and the study's files as the join left them are "
                                         "those it read then, not edited by hand before), whatever was joined "
                                         "on disk since")
    signer: str = Field(description="fingerprint of the researcher key that signed the pack (`ed25519:...`), for "
                                    "the participant to compare with the one the researcher published; an "
                                    "unsigned pack is refused here (`modlens join FILE --allow-unsigned` joins one)")
    remote_off: list[str] = Field(default_factory=list,
                                  description="places the pack's remote detectors would send comments to: they "
                                              "stay off, as nobody was asked (`modlens join FILE --accept-remote` "
                                              "turns them on)")


class SyncOk(Message):
    type: Literal["sync_ok"] = "sync_ok"
    id: str
    writes: int = Field(description="writes owed for this connection's answers that committed so far (each page's "
                                    "scores, each round of variants, each batch of deferred variants)")


class MediaOut(Message):
    position: int
    sha256: str
    media_id: int = Field(description="row id in the study log's media table")
    kept: bool = Field(description="true: the bytes are kept in the study's media folder (media.keep_bytes)")


class MediaDetectorScore(DetectorScore):
    details: dict[str, Any] = Field(default_factory=dict,
                                    description="what the detector saw, e.g. ocr: the text read from each image and its "
                                                "confidence; ignored_media: a text-only detector scored the text alone")


class CommentMediaOk(Message):
    type: Literal["comment_media_ok"] = "comment_media_ok"
    id: str
    comment_id: int
    media: list[MediaOut]
    detectors: dict[str, MediaDetectorScore] = Field(
        description="each media detector's score of the comment's text with its images (media.detectors, else "
                    "every study detector that reads images)")


class Error(Message):
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


SERVER_MESSAGES: dict[str, type[Message]] = {
    "hello_ok": HelloOk, "comments_ok": CommentsOk, "scores": Scores, "variants": Variants,
    "rating_ok": RatingOk, "pong": Pong, "status_ok": StatusOk, "join_study_ok": JoinStudyOk,
    "comment_media_ok": CommentMediaOk, "sync_ok": SyncOk, "error": Error,
}
