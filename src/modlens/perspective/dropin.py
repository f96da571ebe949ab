"""What the drop-in proxy (`modlens serve --perspective-proxy`) answers, and how it refuses the rest.

It answers `CONNECT` for `commentanalyzer.googleapis.com:443` only, and only by answering itself
(TLS terminated with the local authority's certificate, `tls`); a plain proxy request naming a URL
of that host (`absolute_form`); and TLS spoken straight to the proxy (`TLS_HELLO`). Every other
CONNECT target, and every other plain proxy request (`GET http://...`), is refused: the client's
other traffic is not ours to carry, and a proxy that forwarded it would be a door off this computer.
The socket serving is the daemon's (`modlens.daemon.perspective_proxy`).
"""
from __future__ import annotations

from modlens.perspective.tls import GOOGLE_HOST, Material, export_lines
from modlens.runtime import bracketed

HEAD_LIMIT = 8192        # a CONNECT request's head is a few hundred bytes
TARGETS = {f"{GOOGLE_HOST}:443"}
TLS_HELLO = b"\x16"  # a TLS handshake record: the client speaks TLS to the proxy itself
CONNECTED = b"HTTP/1.1 200 Connection established\r\n\r\n"
INCOMPLETE = b""  # `head`: the head has not all arrived yet


def refusal(status: int, reason: str, why: str) -> bytes:
    """A whole HTTP answer refusing the request, closing the connection."""
    text = f"modlens Perspective drop-in: {why}\n".encode()
    return (f"HTTP/1.1 {status} {reason}\r\nContent-Type: text/plain; charset=utf-8\r\n"
            f"Content-Length: {len(text)}\r\nConnection: close\r\n\r\n").encode() + text


def head(data: bytes) -> bytes | None:
    """The request head at the start of what arrived, up to its blank line (TLS_HELLO for a TLS
    handshake); INCOMPLETE while more is to come; None when it is longer than HEAD_LIMIT."""
    if data[:1] == TLS_HELLO:
        return TLS_HELLO
    end = data.find(b"\r\n\r\n")
    if end >= 0:
        return data[:end + 4]
    return None if len(data) > HEAD_LIMIT else INCOMPLETE


def absolute_form(target: str) -> bool:
    """A plain proxy request for Google's address (`POST https://commentanalyzer.googleapis.com/...`):
    how clients whose HTTP library does not tunnel (axios before 1.x, the npm client's) use a proxy
    for an https URL. Answered by modlens itself, like a CONNECT to that host."""
    low = target.lower()
    return any(low.startswith(f"{scheme}://{GOOGLE_HOST}{end}") for scheme in ("https", "http")
               for end in ("/", ":443/"))


def door(target: str, via_drop_in: bool) -> tuple[str, str | None]:
    """The request target and the one Host the daemon's door (`check_door`) checks a call with: on
    the drop-in's connections the Host must be Google's, and `POST https://commentanalyzer.googleapis.com/...`
    counts as a path (its Host is checked); on any other connection, the target as sent and no such Host."""
    if not via_drop_in:
        return target, None
    return ("/" if absolute_form(target) else target), GOOGLE_HOST


def check_connect(head: bytes) -> bytes | None:
    """None when `head` is a CONNECT to the one host answered here, or a plain request for a URL
    of that host (`absolute_form`); else the refusal to send."""
    line = head.split(b"\r\n", 1)[0].decode("latin-1")
    parts = line.split(" ")
    if len(parts) != 3 or not parts[2].startswith("HTTP/1."):
        return refusal(400, "Bad Request", "not an HTTP/1.x request")
    method, target, _ = parts
    if method != "CONNECT":
        if absolute_form(target):
            return None
        return refusal(405 if target.startswith("/") else 403, "Method Not Allowed" if target.startswith("/")
                       else "Forbidden", f"only {GOOGLE_HOST} is answered here, not {target[:100]}; "
                       "this proxy forwards nothing")
    if target.lower() not in TARGETS:
        return refusal(403, "Forbidden", f"only {GOOGLE_HOST}:443 is answered here, not {target[:100]}; "
                       "this proxy connects nowhere (set NO_PROXY for the client's other hosts)")
    return None


def serve_lines(material: Material, host: str, port: int) -> list[str]:
    """What to set in the client's shell for a drop-in on `host`:`port`."""
    return export_lines(material, f"http://{bracketed(host)}:{port}")
