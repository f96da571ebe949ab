"""The one loopback check: `modlens serve` uses it to refuse a non-loopback bind, the daemon's
handshake (`modlens.protocol.security`) to refuse a non-loopback Host header. It lives in the engine
because the daemon may import the engine, never the reverse."""
from __future__ import annotations

import ipaddress

LOOPBACK_NAMES = frozenset({"localhost"})


def is_loopback(host: str) -> bool:
    """`localhost`, any 127/8 address, `::1` (bracketed or not). Names are not resolved: only
    `localhost` itself counts, so `localhost.evil.com` does not."""
    name = host.strip().lower()
    if name.startswith("[") and name.endswith("]"):
        name = name[1:-1]
    if name in LOOPBACK_NAMES:
        return True
    try:
        return ipaddress.ip_address(name).is_loopback
    except ValueError:
        return False


def host_header_is_loopback(header: str | None) -> bool:
    """An HTTP Host header naming a loopback address: `127.0.0.1[:port]`, `localhost[:port]`,
    `[::1][:port]`. A malformed port (`:80x`) or anything after `]` other than a port is refused."""
    if not header:
        return False
    host = header.strip()
    if host.startswith("["):
        end = host.find("]")
        if end < 0:
            return False
        name, rest = host[:end + 1], host[end + 1:]
        if rest and not (rest.startswith(":") and rest[1:].isdigit()):
            return False
    else:
        name, _, port = host.partition(":")
        if port and not port.isdigit():
            return False
    return is_loopback(name)
