"""The pairing token: a random secret the extension (or `modlens feed`) must present to the
daemon. Stored in `paths.token_file()` readable by the owner only (0600), created on first
use, replaced by `rotate()`. A running daemon re-reads it, so rotation takes effect at once.
Processes that find no token at once (no file, or an empty one) create it in turn, under a flock on
`.pairing-token.lock` beside it (0600, kept), so each hands out the token stored (`ensure`).

The paired extensions: the token alone would let any extension that learnt it connect, so the
daemon also accepts only the extension origins (`chrome-extension://<id>`, `moz-extension://<uuid>`)
it was paired with, kept in `extensions_file()` (0600) beside the token. `modlens browse` pairs the
copy it loads (Chromium derives an unpacked extension's id from its folder); an extension loaded
by hand is paired by its first handshake while none is (trust on first use), or by
`modlens pair --extension ORIGIN`; `rotate()` forgets them all."""
from __future__ import annotations

import contextlib
import errno
import hashlib
import hmac
import json
import os
import re
import secrets
import sys
from pathlib import Path
from typing import Iterator

from modlens import paths
from modlens.errors import ModlensError

TOKEN_BYTES = 32  # 43 url-safe characters: letters, digits, '-' and '_' are valid in a subprotocol


def _new_secret(nbytes: int) -> str:
    """A url-safe secret that never starts with '-', so it can follow a CLI flag unquoted."""
    while (token := secrets.token_urlsafe(nbytes)).startswith("-"):
        pass
    return token


def write_atomically(path: Path, data: bytes, mode: int = 0o600, *, durable: bool = False) -> None:
    """Write to a temp file of this process, then rename, so a reader never sees a half-written
    file; `mode` is set on the temp file itself, whatever a stale one left there had. `durable`: the
    rename is synced too (`sync_dir`), so it outlives a power loss (a join's journal). A rename that
    fails leaves no temp file."""
    tmp = write_temp(path, data, mode)
    try:
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    if durable:
        sync_dir(path.parent)


def sync_dir(folder: Path) -> None:
    """Make the renames and removals in `folder` durable (a no-op where folders cannot be opened)."""
    try:
        fd = os.open(folder, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    except OSError:
        return
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def write_temp(path: Path, data: bytes, mode: int = 0o600) -> Path:
    """`data` written whole, and synced, to a temp file of this process beside `path`, for the
    caller to rename onto it (several files renamed only once all are written: `modlens join`).
    A write that fails (a full disk, a file-size limit) raises and leaves no temp file; a short
    write is continued, never taken for the whole."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, mode)
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view):]
            os.fsync(fd)
        finally:
            os.close(fd)
        os.chmod(tmp, mode)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    return tmp


def _write_private(path: Path, token: str) -> None:
    write_atomically(path, (token + "\n").encode())


def read(path: Path | None = None) -> str | None:
    """The current token, or None if none was created yet."""
    path = path or paths.token_file()
    try:
        token = path.read_text(encoding="utf-8").strip()
    except FileNotFoundError:
        return None
    return token or None


@contextlib.contextmanager
def _creating(path: Path) -> Iterator[None]:
    """Held by whoever creates or replaces the token at `path`: an exclusive flock on a sibling lock
    file (`.pairing-token.lock`, 0600, kept: removing it would let a waiter lock a file no longer
    there). Callers that all found no token take turns, so the second reads the first one's. Where
    there is no flock (Windows, or a file system that refuses it) nothing is held: the hard link in
    `ensure` still keeps a token another process stored, but two callers that both read an empty
    file may both replace it, one handing out a token the file no longer holds."""
    if sys.platform == "win32":
        yield
        return
    import fcntl

    fd = os.open(path.with_name(f".{path.name}.lock"), os.O_RDWR | os.O_CREAT, 0o600)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
        except OSError as err:
            if err.errno not in (errno.ENOLCK, errno.EOPNOTSUPP, errno.ENOSYS):
                raise
        yield
    finally:
        os.close(fd)  # releases the lock


def ensure(path: Path | None = None) -> str:
    """The current token, creating it on first use. Created without replacing: where another process
    (`modlens serve` starting while `modlens pair` runs) created it first, its token is the one returned,
    so what a caller prints or hands the extension is always the token stored. Callers that found no
    token (no file, or an empty one) create it one at a time (`_creating`), each reading it again first."""
    return _ensure_secret(path or paths.token_file(), TOKEN_BYTES)


def _ensure_secret(path: Path, nbytes: int) -> str:
    """The secret stored at `path`, or a new one of `nbytes` created there without replacing one
    another process stored first (the pairing token, a study's author salt)."""
    secret = read(path)
    if secret is None:
        with _creating(path):
            return _create(path, nbytes)
    return secret


def _create(path: Path, nbytes: int) -> str:
    """The secret at `path` read again under the lock, or a new one stored there."""
    token = read(path)
    if token is None:
        token = _new_secret(nbytes)
        tmp = write_temp(path, (token + "\n").encode())
        try:
            os.link(tmp, path)  # atomic, and fails where the file exists (os.replace would overwrite it)
        except FileExistsError:
            stored = read(path)
            if stored is None:  # an empty file left there: ours replaces it
                os.replace(tmp, path)
            else:
                token = stored
        except OSError:  # a file system without hard links: replace, as before
            os.replace(tmp, path)
        finally:
            tmp.unlink(missing_ok=True)
    return token


def rotate(path: Path | None = None) -> str:
    """Replace the token and forget the paired extensions; clients paired with the old token
    must pair again."""
    path = path or paths.token_file()
    token = _new_secret(TOKEN_BYTES)
    with _creating(path):  # not between a first use's read of an empty file and its replace
        _write_private(path, token)
    forget_extensions(extensions_file(path.parent))
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


# --- the paired extensions -----------------------------------------------------------------

CHROMIUM_ID = re.compile(r"[a-p]{32}")  # 128 bits of SHA-256, each hex digit written as a letter a-p
FIREFOX_UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")
EXTENSION_ORIGIN = re.compile(rf"(chrome-extension://{CHROMIUM_ID.pattern}|moz-extension://{FIREFOX_UUID.pattern})")


def extensions_file(home: Path | None = None) -> Path:
    """Where the paired extension origins are kept (beside the pairing token)."""
    return (home or paths.home()) / "paired-extensions.json"


def extension_origin(text: str) -> str:
    """`chrome-extension://<id>` or `moz-extension://<uuid>` from such an origin (a trailing
    path is dropped) or a bare Chromium id or Firefox UUID; ValueError for anything else."""
    value = text.strip()
    if CHROMIUM_ID.fullmatch(value):
        value = f"chrome-extension://{value}"
    elif FIREFOX_UUID.fullmatch(value.lower()):
        value = f"moz-extension://{value.lower()}"
    scheme, sep, rest = value.partition("://")
    origin = f"{scheme.lower()}{sep}{rest.split('/', 1)[0].lower()}"
    if not EXTENSION_ORIGIN.fullmatch(origin):
        raise ValueError(f"{text!r} is not an extension id: expected chrome-extension://<32 letters a-p> "
                         "or moz-extension://<uuid> (the options page shows it)")
    return origin


def chromium_unpacked_origin(folder: Path) -> str:
    """The origin Chromium gives an unpacked extension without a manifest `key`: its id is the
    SHA-256 of the folder's resolved path (first 16 bytes, hex digits written as a-p)."""
    digest = hashlib.sha256(os.fsencode(os.path.realpath(folder))).hexdigest()[:32]
    return "chrome-extension://" + "".join(chr(ord("a") + int(c, 16)) for c in digest)


class PairedExtensionsError(ModlensError, ValueError):
    """The paired-extensions file cannot be read: nothing is admitted until it is replaced."""


def paired_extensions(path: Path | None = None) -> list[str]:
    """The paired extension origins; empty while none is (the next handshake pairs its own).
    A file that cannot be read raises PairedExtensionsError: it pairs nothing and opens nothing."""
    path = path or extensions_file()
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return []
    except (OSError, ValueError) as err:
        raise PairedExtensionsError(f"{path} cannot be read ({err}): `modlens pair --rotate` pairs anew") from None
    origins = data.get("extensions") if isinstance(data, dict) else None
    if not isinstance(origins, list) or not origins or not all(isinstance(o, str) for o in origins):
        raise PairedExtensionsError(f"{path} does not hold a list of extension origins: `modlens pair --rotate` pairs anew")
    return origins


def _write_extensions(path: Path, origins: list[str], *, only_if_absent: bool = False) -> bool:
    text = json.dumps({"extensions": origins})
    if not only_if_absent:
        _write_private(path, text)
        return True
    # trust on first use: of two first handshakes at once, only one may pair (link fails on an existing file)
    tmp = write_temp(path, (text + "\n").encode())
    try:
        os.link(tmp, path)
        return True
    except FileExistsError:
        return False
    finally:
        tmp.unlink(missing_ok=True)


def pair_extension(origin: str, path: Path | None = None) -> list[str]:
    """Add an extension origin (or bare id) to the paired ones; returns them all."""
    path = path or extensions_file()
    origin = extension_origin(origin)
    origins = paired_extensions(path)
    if origin not in origins:
        origins.append(origin)
        _write_extensions(path, origins)
    return origins


def admit_extension(origin: str, path: Path | None = None) -> bool:
    """Whether the extension at `origin` (which presented the right token) may connect: it is
    paired, or none is and it becomes the paired one (trust on first use)."""
    path = path or extensions_file()
    origin = origin.strip().lower()
    if not EXTENSION_ORIGIN.fullmatch(origin):
        return False
    if not paired_extensions(path) and _write_extensions(path, [origin], only_if_absent=True):
        return True
    return origin in paired_extensions(path)


def forget_extensions(path: Path | None = None) -> None:
    """Unpair every extension: the next one to present the token is paired (`modlens pair --rotate`)."""
    (path or extensions_file()).unlink(missing_ok=True)


def study_salt(study_id: str) -> str:
    """The per-study salt the extension hashes author names with, created on first use, so
    every rater of a study produces the same hash for the same author. Created as the token is
    (`ensure`): two processes' first use at once (`serve` and `browse`) get the one stored."""
    return _ensure_secret(paths.home() / f"author-salt-{study_id}", 24)
