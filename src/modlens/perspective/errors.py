"""Perspective's error shape: Google's JSON error (`error.code`, `message`, `status`, `details`).

Clients in the wild match on `message` and on the `errorType` inside `details`
(`COMMENT_EMPTY`, `LANGUAGE_NOT_SUPPORTED_BY_ATTRIBUTE`, ...), so those are kept as Perspective
wrote them; the `@type` names the same message type Perspective's details carried.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from modlens.errors import ModlensError

ERROR_TYPE = "type.googleapis.com/google.commentanalyzer.v1alpha1.Error"
ERROR_INFO = "type.googleapis.com/google.rpc.ErrorInfo"
BAD_REQUEST = "type.googleapis.com/google.rpc.BadRequest"
LOCALIZED_MESSAGE = "type.googleapis.com/google.rpc.LocalizedMessage"

STATUS_CODES = {"INVALID_ARGUMENT": 400, "FAILED_PRECONDITION": 400, "UNAUTHENTICATED": 401,
                "PERMISSION_DENIED": 403, "NOT_FOUND": 404, "RESOURCE_EXHAUSTED": 429, "INTERNAL": 500,
                "UNAVAILABLE": 503, "DEADLINE_EXCEEDED": 504}


@dataclass
class PerspectiveError(ModlensError):
    status: str     # google.rpc status name, e.g. INVALID_ARGUMENT
    message: str
    details: list[dict[str, Any]] = field(default_factory=list)

    def __post_init__(self) -> None:
        super().__init__(self.message)

    @property
    def code(self) -> int:
        return STATUS_CODES[self.status]

    def body(self) -> dict[str, Any]:
        return {"error": {"code": self.code, "message": self.message, "status": self.status, "details": self.details}}


def invalid(message: str, error_type: str | None = None, **extra: Any) -> PerspectiveError:
    """A 400 INVALID_ARGUMENT; `error_type` adds Perspective's `details[].errorType`."""
    details = [{"@type": ERROR_TYPE, "errorType": error_type, **extra}] if error_type else []
    return PerspectiveError("INVALID_ARGUMENT", message, details)


def explanation(text: str) -> dict[str, Any]:
    """modlens's own explanation of a refusal, as a detail after Perspective's: clients read
    `details[0]` and parse `message`, so both stay as Google wrote them."""
    return {"@type": LOCALIZED_MESSAGE, "locale": "en-US", "message": text}


def field_violations(found: list[tuple[str, str]]) -> PerspectiveError:
    """Google's parser refusing fields: one line per (field, line), where field '' is the body itself
    (named by no violation), and a `google.rpc.BadRequest` detail listing each violation."""
    violations = [{**({"field": field} if field else {}), "description": line} for field, line in found]
    return PerspectiveError("INVALID_ARGUMENT", "\n".join(line for _, line in found),
                            [{"@type": BAD_REQUEST, "fieldViolations": violations}])


def unknown_names(found: list[tuple[str, str]]) -> PerspectiveError:
    """Google's parser refusing fields its message type lacks: one per (where, name), where '' is
    the body itself."""
    return field_violations([(where, f"Invalid JSON payload received. Unknown name \"{name}\""
                              + (f" at '{where}'" if where else "") + ": Cannot find field.") for where, name in found])


def method_not_found() -> PerspectiveError:
    """A method other than POST on an API method's path: Google's front end finds no method there."""
    return PerspectiveError("NOT_FOUND", "Method not found.")


def _key_info(reason: str) -> list[dict[str, Any]]:
    return [{"@type": ERROR_INFO, "reason": reason, "domain": "googleapis.com",
             "metadata": {"service": "commentanalyzer.googleapis.com"}}]


def key_invalid() -> PerspectiveError:
    """A wrong key (or two keys), as Google's APIs answer it: 400 INVALID_ARGUMENT with this exact
    message (clients match on it) and reason API_KEY_INVALID (google.api.ErrorReason)."""
    return PerspectiveError("INVALID_ARGUMENT", "API key not valid. Please pass a valid API key.",
                            _key_info("API_KEY_INVALID"))


def key_missing() -> PerspectiveError:
    """No key at all: 403 PERMISSION_DENIED, reason CREDENTIALS_MISSING."""
    return PerspectiveError("PERMISSION_DENIED", "The request is missing a valid API key.",
                            _key_info("CREDENTIALS_MISSING"))


def door_refusal(status: int, reason: str) -> PerspectiveError:
    """The daemon's door refusing a call (its request target, a repeated header, Host, Origin),
    in Google's shape: a malformed request (HTTP 400) is INVALID_ARGUMENT, the rest PERMISSION_DENIED."""
    return invalid(reason) if status == 400 else PerspectiveError("PERMISSION_DENIED", reason)


def body_too_long() -> PerspectiveError:
    """A body larger than the server accepts: Perspective's own error for a long comment."""
    return invalid("Comment text too long: the request body is larger than this server accepts.", "COMMENT_TOO_LONG")


def batch_too_long(limit: int) -> PerspectiveError:
    """A batch body larger than the server accepts: its comments may each be within the limit,
    so this is not COMMENT_TOO_LONG, and the caller learns what fits."""
    return invalid(f"The batch request is larger than this server accepts ({limit} bytes, the study's "
                   "limits.max_message_bytes): send fewer calls per batch.")


def body_late(seconds: float) -> PerspectiveError:
    """A body that did not arrive in time: 504, and the connection is closed with the answer."""
    return PerspectiveError("DEADLINE_EXCEEDED", f"The request body did not arrive within {seconds:g} s.")


def body_cut() -> PerspectiveError:
    """The client left before its Content-Length was sent."""
    return invalid("The request body ended before its declared length.")
