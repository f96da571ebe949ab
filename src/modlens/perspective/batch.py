"""Google's batch protocol (`POST /batch`, the discovery document's `batchPath`), as
googleapiclient's `new_batch_http_request()` sends it and HELM's Perspective client uses it.

The request is `multipart/mixed`; each part is `Content-Type: application/http` with a
`Content-ID` and holds one whole HTTP request (request line, headers, blank line, body).
googleapiclient writes the lines of its parts with LF and the others with CRLF, so both are read.
The answer is `multipart/mixed` too: one `application/http` part per request, in the same order,
with `Content-ID: <response-ID>` for the request's `<ID>` and a whole HTTP response inside. The
client splits a part's status line at the first LF and its body at the first CRLF CRLF, so the
inner responses are written with CRLF. Each part is answered on its own: one part's error is that
part's answer, never the batch's.
"""
from __future__ import annotations

import json
import re
import uuid
from dataclasses import dataclass, field
from typing import Any

from modlens.perspective.errors import invalid

# Google's batch endpoint took at most 1000 calls per batch
MAX_PARTS = 1000
_BOUNDARY = re.compile(r'boundary=(?:"([^"]+)"|([^;\s]+))', re.IGNORECASE)
_REASONS = {200: "OK", 400: "Bad Request", 401: "Unauthorized", 403: "Forbidden", 404: "Not Found",
            429: "Too Many Requests", 500: "Internal Server Error", 503: "Service Unavailable",
            504: "Gateway Timeout"}


@dataclass
class Part:
    """One request of a batch: its Content-ID (without the angle brackets) and its HTTP request."""
    content_id: str | None
    method: str
    target: str                          # path and query, e.g. /v1alpha1/comments:analyze?key=K&alt=json
    headers: list[tuple[str, str]] = field(default_factory=list)
    body: bytes = b""

    def header(self, name: str) -> list[str]:
        return [v for k, v in self.headers if k.lower() == name.lower()]


def boundary(content_type: str | None) -> str:
    """The boundary of a `multipart/mixed` Content-Type, or a 400 in Google's shape."""
    if not content_type or not content_type.lower().startswith("multipart/mixed"):
        raise invalid("A batch request must be multipart/mixed (each part an application/http request).")
    found = _BOUNDARY.search(content_type)
    if found is None:
        raise invalid("The batch request's Content-Type has no boundary.")
    return found.group(1) or found.group(2)


def _head_and_body(block: bytes) -> tuple[list[str], bytes]:
    """Header lines and the rest of a block, whichever line ending it uses."""
    found = [(i, len(sep)) for sep in (b"\r\n\r\n", b"\n\n") if (i := block.find(sep)) >= 0]
    at, width = min(found) if found else (len(block), 0)
    head, rest = block[:at], block[at + width:]
    return head.decode("utf-8", "replace").replace("\r\n", "\n").split("\n"), rest


def _headers(lines: list[str]) -> list[tuple[str, str]]:
    out: list[tuple[str, str]] = []
    for line in lines:
        if not line.strip():
            continue
        if line[0] in " \t" and out:  # a folded header line continues the one before
            out[-1] = (out[-1][0], out[-1][1] + " " + line.strip())
            continue
        name, sep, value = line.partition(":")
        if not sep:
            raise invalid(f"Invalid header line in a batch part: {line[:80]!r}")
        out.append((name.strip(), value.strip()))
    return out


def _part(block: bytes) -> Part:
    lines, inner = _head_and_body(block)
    outer = _headers(lines)
    ids = [v for k, v in outer if k.lower() == "content-id"]
    content_id = ids[0].strip().removeprefix("<").removesuffix(">") if ids else None
    types = [v for k, v in outer if k.lower() == "content-type"]
    if not types or not types[0].lower().startswith("application/http"):
        raise invalid("Each part of a batch request must be Content-Type: application/http.")
    head, body = _head_and_body(inner.lstrip(b"\r\n"))
    request_line, *header_lines = head
    pieces = request_line.split(" ")
    if len(pieces) != 3 or not pieces[2].startswith("HTTP/"):
        raise invalid(f"Invalid request line in a batch part: {request_line[:80]!r}")
    headers = _headers(header_lines)
    lengths = [v for k, v in headers if k.lower() == "content-length"]
    if lengths and lengths[0].isdigit() and int(lengths[0]) <= len(body):
        body = body[:int(lengths[0])]
    else:  # no length: the body ends where the delimiter's line break begins
        body = body.removesuffix(b"\r\n").removesuffix(b"\n")
    return Part(content_id, pieces[0].upper(), pieces[1], headers, body)


def parse(content_type: str | None, raw: bytes) -> list[Part]:
    """The requests of a batch body, in order; a malformed batch is one 400 (per-part answers need
    parts to answer)."""
    delimiter = b"--" + boundary(content_type).encode("latin-1")
    chunks = raw.split(delimiter)
    if len(chunks) < 3:
        raise invalid("The batch request has no parts.")
    parts: list[Part] = []
    for chunk in chunks[1:]:  # chunks[0] is the preamble
        if chunk.startswith(b"--"):
            break  # the closing delimiter; what follows is the epilogue
        block = chunk.removeprefix(b"\r\n").removeprefix(b"\n")
        block = block.removesuffix(b"\r\n").removesuffix(b"\n")
        if len(parts) == MAX_PARTS:
            raise invalid(f"A batch request may hold at most {MAX_PARTS} calls.")
        parts.append(_part(block))
    if not parts:
        raise invalid("The batch request has no parts.")
    return parts


def render(answers: list[tuple[Part, int, dict[str, Any]]]) -> tuple[str, bytes]:
    """(Content-Type, body) of the batch answer: one application/http part per (request, status, JSON)."""
    mark = f"batch_{uuid.uuid4().hex}"
    out = bytearray()
    for part, status, payload in answers:
        data = json.dumps(payload, ensure_ascii=False).encode("utf-8")
        out += f"--{mark}\r\nContent-Type: application/http\r\n".encode()
        if part.content_id is not None:
            out += f"Content-ID: <response-{part.content_id}>\r\n".encode()
        out += (f"\r\nHTTP/1.1 {status} {_REASONS.get(status, 'Error')}\r\n"
                "Content-Type: application/json; charset=UTF-8\r\n\r\n").encode()
        out += data + b"\r\n"
    out += f"--{mark}--\r\n".encode()
    return f"multipart/mixed; boundary={mark}", bytes(out)
