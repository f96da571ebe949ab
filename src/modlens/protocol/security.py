"""Handshake checks: the daemon must not be an open door on the user's machine. The rules are the
protocol's (the client's side of the handshake is `client.py`); the daemon applies them in one
middleware before its socket and /status, and at the Perspective endpoint's door.

- Host must be loopback: a web page that rebinds its DNS name to 127.0.0.1 still sends its
  own name as Host, so this defeats DNS rebinding.
- Origin must be an extension (chrome-extension://, moz-extension://) or absent (a CLI
  client). Web pages always send their origin, and sandboxed frames send "null": refused.
- The pairing token travels as a subprotocol (browsers cannot set headers on WebSocket) or,
  for CLI clients, as `Authorization: Bearer`; compared as bytes in constant time.
- An extension that presents the right token must also be one the daemon was paired with
  (`modlens.pairing.admit_extension`: `modlens browse`, `modlens pair --extension`, or the first
  one to connect while none is paired), so another extension that learnt the token is refused.
- Host, Origin and Authorization may each appear once: with two, a check could read one while
  another component (a proxy, a later aiohttp) acts on the other. The request target must be a
  path (`/ws`), not the absolute form `http://evil.example/ws`, which names a foreign host.
Failures are answered with plain HTTP 400/401/403 before the upgrade.
- No token in the daemon's log: `SecretScrubber` rewrites the lines of aiohttp's access log and
  tracebacks (query strings, Authorization and X-Goog-Api-Key values, token subprotocols, the token
  itself and the Perspective API's key from `modlens pair --api-key`).
"""
from __future__ import annotations

import logging
import re
from dataclasses import dataclass
from typing import Callable, Mapping, Sequence

from modlens.netutil import host_header_is_loopback as host_is_loopback  # shared with `modlens serve`
from modlens.pairing import PairedExtensionsError, admit_extension, matches

from modlens.protocol import TOKEN_SUBPROTOCOL_PREFIX

EXTENSION_SCHEMES = ("chrome-extension://", "moz-extension://")
SINGLE_HEADERS = ("Host", "Origin", "Authorization")


@dataclass
class Refusal:
    status: int   # 400, 401 or 403
    reason: str


def _all(headers: Mapping[str, str], name: str) -> Sequence[str]:
    getall = getattr(headers, "getall", None)  # aiohttp's CIMultiDictProxy keeps repeated headers
    if getall is not None:
        return list(getall(name, []))
    value = headers.get(name)
    return [] if value is None else [value]


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


def check_door(headers: Mapping[str, str], target: str, *, allow_remote_host: bool = False,
               single: Sequence[str] = SINGLE_HEADERS, drop_in_host: str | None = None) -> Refusal | None:
    """The checks every route shares, before any credential: the request target is a path, each
    of `single` is given at most once, Host is loopback (on the Perspective drop-in's connections:
    `drop_in_host`, the one name it answers for), and Origin is no web page's. None: it may go on."""
    if not target.startswith("/") or target.startswith("//"):
        return Refusal(400, "the request target must be a path (/ws, /v1alpha1/comments:analyze), not an absolute-form URL")
    repeated = [name for name in single if len(_all(headers, name)) > 1]
    if repeated:
        return Refusal(403, f"header {repeated[0]} given more than once")
    if drop_in_host is not None:
        if (headers.get("Host") or "").lower().removesuffix(":443") != drop_in_host:
            return Refusal(403, f"the drop-in answers for Host {drop_in_host} only")
    elif not allow_remote_host and not host_is_loopback(headers.get("Host")):
        return Refusal(403, "Host must be a loopback address (127.0.0.1, localhost, [::1])")
    if not origin_allowed(headers.get("Origin")):
        return Refusal(403, "Origin must be a modlens browser extension; web pages may not connect")
    return None


def check_handshake(headers: Mapping[str, str], expected_token: str, *, allow_remote_host: bool = False,
                    target: str = "/") -> Refusal | None:
    """None when the handshake may proceed, else the HTTP refusal. `target` is the request
    target as sent. The door (`check_door`) comes first (403) so a web page learns nothing about
    the token."""
    refusal = check_door(headers, target, allow_remote_host=allow_remote_host)
    if refusal is not None:
        return refusal
    token = offered_token(headers)
    if token is None:
        return Refusal(401, "pairing token required: run `modlens pair` and pair the extension")
    if not matches(token, expected_token):
        return Refusal(401, "wrong pairing token: run `modlens pair` to see the current one")
    return extension_refusal(headers.get("Origin"))


def extension_refusal(origin: str | None) -> Refusal | None:
    """None when `origin` (after the token check) is a paired extension or no extension at all
    (a CLI client); the first extension to connect while none is paired becomes the paired one."""
    if origin is None:
        return None
    try:
        if admit_extension(origin):
            return None
    except PairedExtensionsError as err:
        return Refusal(403, str(err))
    shown = origin[:100]  # from the request: bounded, and only a client holding the token reads it
    return Refusal(403, f"extension {shown} is not paired with this daemon: `modlens pair --extension {shown}` "
                        "pairs it too, `modlens pair --rotate` pairs anew")


# --- no secret in any log line ----------------------------------------------------------------

# Loggers whose lines can quote a request: aiohttp's access log writes the request line (with
# any `?token=` query), and its tracebacks for malformed requests quote the raw header bytes.
SCRUBBED_LOGGERS = ("aiohttp.access", "aiohttp.server", "aiohttp.web", "aiohttp.websocket", "aiohttp.internal",
                    "asyncio", "modlens.daemon")
REDACTED = "[redacted]"
_SECRET_PATTERNS = (
    # the query string of a request target: the daemon takes no query, a client may put a token there
    (re.compile(r"(/[^\s?\"'\\]*)\?[^\s\"']*"), r"\1?" + REDACTED),
    # the value of an Authorization header, or of the Perspective API's key header, to the end of the quoted line
    (re.compile(r"(?i)((?:authorization|x-goog-api-key)\s*:\s*)[^'\"\r\n]*"), r"\1" + REDACTED),
    # a token offered as a subprotocol
    (re.compile(r"(?i)(" + re.escape(TOKEN_SUBPROTOCOL_PREFIX) + r")[^\s,'\"]*"), r"\1" + REDACTED),
)


def scrub(text: str, secrets: Sequence[str] = ()) -> str:
    """`text` with anything that may be a token replaced by [redacted]."""
    for pattern, replacement in _SECRET_PATTERNS:
        text = pattern.sub(replacement, text)
    for secret in secrets:
        if secret:
            text = text.replace(secret, REDACTED)
    return text


class SecretScrubber(logging.Filter):
    """Rewrites each record (message, traceback, stack) before any handler formats it."""

    def __init__(self) -> None:
        super().__init__("modlens-secret-scrubber")
        self.token: Callable[[], str | None] = lambda: None
        self.api_key: Callable[[], str | None] = lambda: None

    def filter(self, record: logging.LogRecord) -> bool:
        secrets = []
        for source in (self.token, self.api_key):
            try:
                secret = source()
            except Exception:  # the key file is unreadable: the patterns still apply
                secret = None
            if secret:
                secrets.append(secret)
        try:
            message = record.getMessage()
        except Exception:
            message = f"{record.msg!r} {record.args!r}"
        record.msg, record.args = scrub(message, secrets), None
        if record.exc_info:
            record.exc_text = logging.Formatter().formatException(record.exc_info)
            record.exc_info = None  # formatters use exc_text, the scrubbed copy
        if record.exc_text:
            record.exc_text = scrub(record.exc_text, secrets)
        if record.stack_info:
            record.stack_info = scrub(record.stack_info, secrets)
        return True


def install_log_scrubber(token: Callable[[], str | None],
                         api_key: Callable[[], str | None] | None = None) -> SecretScrubber:
    """Attach the one scrubber to every logger in SCRUBBED_LOGGERS (idempotent; the latest
    daemon's token and API key are the ones also removed literally)."""
    found = [f for f in logging.getLogger(SCRUBBED_LOGGERS[0]).filters if isinstance(f, SecretScrubber)]
    scrubber = found[0] if found else SecretScrubber()
    scrubber.token = token
    scrubber.api_key = api_key or (lambda: None)
    for name in SCRUBBED_LOGGERS:
        logger = logging.getLogger(name)
        if scrubber not in logger.filters:
            logger.addFilter(scrubber)
    return scrubber
