"""The pairing token: a random secret the extension (or `modlens feed`) must present to the
daemon. Stored in `paths.token_file()` readable by the owner only (0600), created on first
use, replaced by `rotate()`. A running daemon re-reads it, so rotation takes effect at once."""
from __future__ import annotations

import hmac
import os
import secrets
from pathlib import Path

from modlens import paths

TOKEN_BYTES = 32  # 43 url-safe characters: letters, digits, '-' and '_' are valid in a subprotocol


def _new_secret(nbytes: int) -> str:
    """A url-safe secret that never starts with '-', so it can follow a CLI flag unquoted."""
    while (token := secrets.token_urlsafe(nbytes)).startswith("-"):
        pass
    return token


def _write_private(path: Path, token: str) -> None:
    # Write to a private temp file then rename, so a reader never sees a half-written token.
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        os.write(fd, (token + "\n").encode())
        os.fsync(fd)
    finally:
        os.close(fd)
    os.chmod(tmp, 0o600)
    os.replace(tmp, path)


def read(path: Path | None = None) -> str | None:
    """The current token, or None if none was created yet."""
    path = path or paths.token_file()
    try:
        token = path.read_text(encoding="utf-8").strip()
    except FileNotFoundError:
        return None
    return token or None


def ensure(path: Path | None = None) -> str:
    """The current token, creating it on first use."""
    path = path or paths.token_file()
    token = read(path)
    if token is None:
        token = _new_secret(TOKEN_BYTES)
        _write_private(path, token)
    return token


def rotate(path: Path | None = None) -> str:
    """Replace the token; clients paired with the old one must pair again."""
    path = path or paths.token_file()
    token = _new_secret(TOKEN_BYTES)
    _write_private(path, token)
    return token


def _token_bytes(token: str) -> bytes:
    # surrogatepass: a header aiohttp decoded with surrogateescape (non-UTF-8 bytes) or a JSON
    # `\ud800` is still a str to compare, never an exception (it simply does not match)
    return token.encode("utf-8", "surrogatepass")


def matches(presented: str | None, expected: str) -> bool:
    """Constant-time comparison of the bytes, so timing reveals nothing about the token and no
    presented text, whatever its characters, can raise."""
    if not presented or not expected:
        return False
    return hmac.compare_digest(_token_bytes(presented), _token_bytes(expected))


class TokenSource:
    """The token a running daemon checks against: re-read when the file changes (rotation)."""

    def __init__(self, path: Path | None = None, fixed: str | None = None):
        self.path = path or paths.token_file()
        self._fixed = fixed
        self._mtime: float | None = None
        self._token: str | None = None

    def __call__(self) -> str:
        if self._fixed is not None:
            return self._fixed
        try:
            mtime = self.path.stat().st_mtime_ns
        except FileNotFoundError:
            mtime = None
        if self._token is None or mtime != self._mtime:
            self._token = ensure(self.path)
            self._mtime = self.path.stat().st_mtime_ns
        return self._token


def study_salt(study_id: str) -> str:
    """The per-study salt the extension hashes author names with, created on first use, so
    every rater of a study produces the same hash for the same author."""
    path = paths.home() / f"author-salt-{study_id}"
    salt = read(path)
    if salt is None:
        salt = _new_secret(24)
        _write_private(path, salt)
    return salt
