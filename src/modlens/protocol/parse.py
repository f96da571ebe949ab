"""Parsing of client frames: any defect becomes a `ProtocolError` with its documented code."""
from __future__ import annotations

import json
import re

from pydantic import ValidationError

from modlens.protocol.errors import ErrorCode, ProtocolError
from modlens.protocol.messages import CLIENT_MESSAGES, MAX_ID_CHARS, Message


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


def parse_client_message(raw: str | bytes) -> Message:
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
