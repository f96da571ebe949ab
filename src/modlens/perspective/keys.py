"""The API key Perspective clients present (`?key=` or `X-Goog-Api-Key`): the pairing token, or a
separate key from `modlens pair --api-key` (kept in its own 0600 file, so a bot's configuration
never holds the token that pairs the browser extension). Compared in constant time, never logged."""
from __future__ import annotations

from pathlib import Path

from modlens import pairing, paths


def key_file() -> Path:
    return paths.home() / "perspective-api-key"


def ensure() -> str:
    return pairing.ensure(key_file())


def rotate() -> str:
    return pairing.rotate(key_file())


class KeySource:
    """The current API key, re-read when its file changes; None while none was created."""

    def __init__(self, path: Path | None = None) -> None:
        self.path = path or key_file()
        self._stamp: int | None = None
        self._key: str | None = None

    def __call__(self) -> str | None:
        try:
            stamp: int | None = self.path.stat().st_mtime_ns
        except FileNotFoundError:
            stamp = None
        if stamp != self._stamp:
            self._key, self._stamp = (pairing.read(self.path) if stamp is not None else None), stamp
        return self._key


def accepted(presented: str | None, *keys: str | None) -> bool:
    """Does `presented` match one of `keys`? Every key is compared (constant time each), so the
    time taken says nothing about which one matched or how much of it."""
    ok = False
    for key in keys:
        if key:
            ok = pairing.matches(presented, key) | ok
    return ok
