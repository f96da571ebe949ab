"""Handshake checks: the daemon must not be an open door on the user's machine.

- Host must be loopback: a web page that rebinds its DNS name to 127.0.0.1 still sends its
  own name as Host, so this defeats DNS rebinding.
- Origin must be an extension (chrome-extension://, moz-extension://) or absent (a CLI
  client). Web pages always send their origin, and sandboxed frames send "null": refused.
- The pairing token travels as a subprotocol (browsers cannot set headers on WebSocket) or,
  for CLI clients, as `Authorization: Bearer`.
Failures are answered with plain HTTP 401/403 before the upgrade.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping

from modlens.netutil import host_header_is_loopback as host_is_loopback  # shared with `modlens serve`
from modlens.pairing import matches

from modlens.protocol import TOKEN_SUBPROTOCOL_PREFIX

EXTENSION_SCHEMES = ("chrome-extension://", "moz-extension://")


@dataclass
class Refusal:
    status: int   # 401 or 403
    reason: str


def origin_allowed(origin: str | None) -> bool:
    if origin is None:
        return True  # not a browser: a CLI client, which must still present the token
    return origin.startswith(EXTENSION_SCHEMES) and len(origin) > max(map(len, EXTENSION_SCHEMES))


def offered_token(headers: Mapping[str, str]) -> str | None:
    """The token from `Sec-WebSocket-Protocol: modlens.v1, modlens.token.<t>` or a Bearer header."""
    for proto in headers.get("Sec-WebSocket-Protocol", "").split(","):
        proto = proto.strip()
        if proto.startswith(TOKEN_SUBPROTOCOL_PREFIX):
            return proto[len(TOKEN_SUBPROTOCOL_PREFIX):]
    auth = headers.get("Authorization", "")
    scheme, _, value = auth.partition(" ")
    if scheme.lower() == "bearer" and value.strip():
        return value.strip()
    return None


def check_handshake(headers: Mapping[str, str], expected_token: str, *, allow_remote_host: bool = False) -> Refusal | None:
    """None when the handshake may proceed, else the HTTP refusal. Host and Origin are
    checked first (403) so a web page learns nothing about the token."""
    if not allow_remote_host and not host_is_loopback(headers.get("Host")):
        return Refusal(403, "Host must be a loopback address (127.0.0.1, localhost, [::1])")
    if not origin_allowed(headers.get("Origin")):
        return Refusal(403, "Origin must be a modlens browser extension; web pages may not connect")
    token = offered_token(headers)
    if token is None:
        return Refusal(401, "pairing token required: run `modlens pair` and pair the extension")
    if not matches(token, expected_token):
        return Refusal(401, "wrong pairing token: run `modlens pair` to see the current one")
    return None
