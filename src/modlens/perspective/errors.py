"""Perspective's error shape: Google's JSON error (`error.code`, `message`, `status`, `details`).

Clients in the wild match on `message` and on the `errorType` inside `details`
(`COMMENT_EMPTY`, `LANGUAGE_NOT_SUPPORTED_BY_ATTRIBUTE`, ...), so those are kept as Perspective
wrote them; the `@type` names the same message type Perspective's details carried.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

ERROR_TYPE = "type.googleapis.com/google.commentanalyzer.v1alpha1.Error"
ERROR_INFO = "type.googleapis.com/google.rpc.ErrorInfo"

STATUS_CODES = {"INVALID_ARGUMENT": 400, "FAILED_PRECONDITION": 400, "UNAUTHENTICATED": 401,
                "PERMISSION_DENIED": 403, "NOT_FOUND": 404, "RESOURCE_EXHAUSTED": 429, "INTERNAL": 500,
                "UNAVAILABLE": 503}


@dataclass
class PerspectiveError(Exception):
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


def key_refused(message: str, reason: str) -> PerspectiveError:
    """A missing or wrong key: 403 PERMISSION_DENIED, the status the project's record of Perspective's
    API lists as seen for a bad key (an audit recalls Google's front end answering a wrong key with 400
    INVALID_ARGUMENT; the recorded status decides, docs/PERSPECTIVE.md). `reason` is the
    google.api.ErrorReason value: API_KEY_INVALID for a wrong key, CREDENTIALS_MISSING for none."""
    return PerspectiveError("PERMISSION_DENIED", message,
                            [{"@type": ERROR_INFO, "reason": reason, "domain": "googleapis.com",
                              "metadata": {"service": "commentanalyzer.googleapis.com"}}])
