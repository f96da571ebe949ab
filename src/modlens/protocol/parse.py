"""Parsing of client frames: any defect becomes a `ProtocolError` with its documented code.

Nothing a client sends may raise anything else: nesting is bounded before the JSON is decoded
(the decoder recurses once per level), and text that is not valid Unicode (a lone UTF-16
surrogate written as `\\ud800`) is refused here, because it cannot be encoded again to answer,
log or store it. `frame_text` is the other way: the JSON of a frame the daemon sends."""
from __future__ import annotations

import json
import re
from itertools import accumulate
from typing import Any, cast

from pydantic import ValidationError

from modlens.protocol.errors import ErrorCode, ProtocolError
from modlens.protocol.messages import CLIENT_MESSAGES, MAX_ID_CHARS, MAX_JSON_DEPTH, ClientRequest


_ID_PREFIX = re.compile(r'"id"\s*:\s*"((?:[^"\\]|\\.){1,128})"')
# A JSON string (an unterminated one runs to the end: its closing quote is optional) or a run
# of characters that are neither brackets nor quotes. Matching left to right, each character is
# read once, so even hostile frames are scanned in linear time.
_NOT_A_BRACKET = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"?|[^\[\]{}"]+', re.DOTALL)
_STEP = {"[": 1, "{": 1, "]": -1, "}": -1}


def frame_text(message: dict[str, Any]) -> str:
    """JSON for a text frame the daemon sends. A str that cannot be encoded as UTF-8 (a lone surrogate
    that slipped into an answer) would make aiohttp raise while sending: it is escaped as `\\udXXX` instead."""
    text = json.dumps(message, ensure_ascii=False)
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        text = json.dumps(message)  # ASCII only: surrogates become JSON escapes
    return text


def is_valid_text(text: str) -> bool:
    """False for a str holding a lone surrogate (not encodable as UTF-8)."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


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
        found = json.loads(f'"{m.group(1)}"')
    except ValueError:
        return None
    return found if isinstance(found, str) and is_valid_text(found) else None


def json_depth_exceeds(raw: str, limit: int = MAX_JSON_DEPTH) -> bool:
    """True when brackets outside strings nest deeper than `limit`; found without decoding, by
    regex and a running sum (both linear in the frame's size)."""
    brackets = _NOT_A_BRACKET.sub("", raw)
    if brackets.count("[") + brackets.count("{") <= limit:
        return False  # the common case: too few brackets to nest that deep
    return max(accumulate(map(_STEP.__getitem__, brackets))) > limit


def _field_errors(err: ValidationError) -> str:
    parts = []
    for e in err.errors()[:5]:
        loc = ".".join(str(p) for p in e["loc"]) or "(message)"
        parts.append(f"{loc}: {e['msg']}")
    return "; ".join(parts)


def _decode(raw: str | bytes) -> object:
    if isinstance(raw, bytes):
        try:
            raw = raw.decode("utf-8")
        except UnicodeDecodeError as err:
            raise ProtocolError(ErrorCode.bad_json, f"not valid JSON: not UTF-8 ({err.reason})", sniff_id(raw)) from None
    if json_depth_exceeds(raw):
        raise ProtocolError(ErrorCode.bad_json, f"not valid JSON: nested deeper than {MAX_JSON_DEPTH} levels",
                            sniff_id(raw))
    try:
        return json.loads(raw)
    except (ValueError, RecursionError) as err:  # RecursionError: cannot happen past the depth check
        raise ProtocolError(ErrorCode.bad_json, f"not valid JSON: {err}", sniff_id(raw)) from None


def parse_client_message(raw: str | bytes) -> ClientRequest:
    """Parse one frame into its client message model, or raise ProtocolError."""
    data = _decode(raw)
    if not isinstance(data, dict):
        raise ProtocolError(ErrorCode.bad_json, "a message must be a JSON object with `type` and `id`")
    msg_id = data.get("id")
    if not isinstance(msg_id, str) or not 0 < len(msg_id) <= MAX_ID_CHARS:
        raise ProtocolError(ErrorCode.invalid_fields,
                            f"id: required, a string of 1-{MAX_ID_CHARS} characters")
    if not is_valid_text(msg_id):
        raise ProtocolError(ErrorCode.invalid_fields, "id: not valid Unicode (a lone surrogate such as \\ud800)")
    kind = data.get("type")
    model = CLIENT_MESSAGES.get(kind) if isinstance(kind, str) else None
    if model is None:
        shown = ascii(kind) if isinstance(kind, str) and not is_valid_text(kind) else repr(kind)
        raise ProtocolError(ErrorCode.unknown_type,
                            f"unknown message type {shown[:80]}; expected one of {', '.join(CLIENT_MESSAGES)}", msg_id)
    try:
        return cast(ClientRequest, model.model_validate(data))
    except ValidationError as err:
        raise ProtocolError(ErrorCode.invalid_fields, _field_errors(err), msg_id) from None
