"""Download a catalog dataset into a data folder: resumable, checksummed, moved into place atomically.

Each file goes to `NAME/PATH.part` first. A second run continues a `.part` with an HTTP Range
request (and starts over when the server ignores Range). The finished file is hashed; it is renamed
into place only when it matches the expected SHA-256, which is, first match wins: `--sha256`, the
catalog's pin, or the hash an earlier fetch recorded in `NAME/SHA256SUMS`. A file with none of these
is trusted on first use: its hash is recorded there and printed so it can be pinned.
"""
from __future__ import annotations

import hashlib
import os
import shutil
import sys
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Callable
from urllib.parse import urlsplit

from modlens import __version__, paths
from modlens.datasets.catalog import CATALOG, MIRROR_ENV, DatasetEntry, RemoteFile
from modlens.errors import ErrorKind, ModlensError

LOCK_FILE = "SHA256SUMS"   # `sha256sum -c SHA256SUMS` checks a fetched folder by hand
CHUNK = 1 << 16
TIMEOUT_S = 60
UNPINNED = "recorded now (not pinned)"


class FetchError(ModlensError):
    kind = ErrorKind.FAILED  # a download or checksum that failed (exit 1, as its traceback did)

    def __init__(self, message: str, status: int | None = None):
        super().__init__(message)
        self.status = status


@dataclass
class FetchedFile:
    path: Path
    sha256: str
    action: str        # "downloaded", "up to date"
    checked_by: str    # where the expected hash came from, or UNPINNED


# --- checksums ---------------------------------------------------------------------------------
def sha256_of(path: Path) -> str:
    return paths.hash_file(hashlib.sha256(), path).hexdigest()


def git_blob_of(path: Path) -> str:
    """The file's git blob id: SHA-1 of "blob SIZE\0" and its bytes, what `git ls-tree` and
    `git hash-object` print (`RemoteFile.git_blob`)."""
    return paths.hash_file(hashlib.sha1(f"blob {path.stat().st_size}\0".encode()), path).hexdigest()


def read_lock(folder: Path) -> dict[str, str]:
    lock = folder / LOCK_FILE
    if not lock.is_file():
        return {}
    entries = (line.split(maxsplit=1) for line in lock.read_text(encoding="utf-8").splitlines() if line.strip())
    return {name.strip().lstrip("*"): digest for digest, name in entries}


def write_lock(folder: Path, hashes: dict[str, str]) -> None:
    tmp = folder / f"{LOCK_FILE}.tmp"
    tmp.write_text("".join(f"{h}  {name}\n" for name, h in sorted(hashes.items())), encoding="utf-8")
    os.replace(tmp, folder / LOCK_FILE)


def expected_hash(entry: DatasetEntry, file: RemoteFile, given: dict[str, str],
                  recorded: dict[str, str]) -> tuple[str | None, str]:
    """(expected SHA-256 or None, where it comes from)."""
    for key in (f"{entry.name}/{file.path}", file.path):
        if key in given:
            return given[key].lower(), "given with --sha256"
    if file.sha256:
        return file.sha256, "pinned in the catalog"
    if file.path in recorded:
        return recorded[file.path], f"recorded in {LOCK_FILE} by an earlier fetch"
    return None, UNPINNED


# --- one HTTP download, resumable --------------------------------------------------------------
def shipped_hint() -> str:
    names = ", ".join(e.name for e in CATALOG.values() if e.shipped)
    return f"the shipped copies still work: {names} in {paths.shipped_data()} (see `modlens data list`)"


def _open(url: str, offset: int) -> Any:  # urllib's response (typeshed: Any)
    headers = {"User-Agent": f"modlens/{__version__}"}
    if offset:
        headers["Range"] = f"bytes={offset}-"
    host = urlsplit(url).netloc or url
    try:
        return urllib.request.urlopen(urllib.request.Request(url, headers=headers), timeout=TIMEOUT_S)
    except urllib.error.HTTPError as err:
        err.close()
        raise FetchError(f"{host} answered {err.code} {err.reason} for {url}", status=err.code) from None
    except urllib.error.URLError as err:
        raise FetchError(f"cannot reach {host}: {err.reason}; {shipped_hint()}") from None
    except OSError as err:  # timeouts and resets before any header arrived
        raise FetchError(f"cannot reach {host}: {err}; {shipped_hint()}") from None


def _resumes_at(response: Any, offset: int) -> bool:
    """True when the server answered the Range request with the bytes from `offset` on."""
    if not offset or (response.status or 200) != 206:
        return False
    content_range = response.headers.get("Content-Range", "")   # "bytes START-END/TOTAL"
    return bool(content_range.startswith(f"bytes {offset}-"))


def download(url: str, part: Path, *, label: str = "", quiet: bool = False) -> None:
    """Fetch `url` into `part`, continuing what is already there when the server allows it."""
    from tqdm import tqdm

    offset = part.stat().st_size if part.exists() else 0
    try:
        response = _open(url, offset)
    except FetchError as err:
        if err.status != 416 or not offset:
            raise
        part.unlink()   # "range not satisfiable": the .part is stale (file changed upstream); start over
        offset, response = 0, _open(url, 0)
    with response:
        if not _resumes_at(response, offset):
            offset = 0  # no Range support (200) or an unexpected range: start from the first byte
        length = response.headers.get("Content-Length")
        total = offset + int(length) if length and length.isdigit() else None
        written = offset
        with open(part, "ab" if offset else "wb") as out, \
                tqdm(total=total, initial=offset, unit="B", unit_scale=True, unit_divisor=1024,
                     desc=label or part.name, disable=quiet, leave=False, file=sys.stderr) as bar:
            try:
                while chunk := response.read(CHUNK):
                    out.write(chunk)
                    written += len(chunk)
                    bar.update(len(chunk))
            except OSError as err:  # reset, timeout, http.client.IncompleteRead on chunked bodies
                raise FetchError(f"download of {url} interrupted after {written:,} bytes ({err}); "
                                 f"run the same command again to resume") from None
    # http.client returns b"" rather than raising when a connection closes before Content-Length
    if total is not None and written < total:
        raise FetchError(f"download of {url} interrupted after {written:,} of {total:,} bytes "
                         f"(connection closed); run the same command again to resume")


# --- a whole dataset ---------------------------------------------------------------------------
def fetch(entry: DatasetEntry, dest: Path | None = None, *, mirror: str | None = None,
          given: dict[str, str] | None = None, require_sha256: bool = False, force: bool = False,
          quiet: bool = False, say: Callable[[str], None] = print) -> list[FetchedFile]:
    """Fetch every file of `entry` into `dest/NAME` (default: `paths.fetched_data()/NAME`)."""
    folder = (Path(dest).expanduser() if dest else paths.fetched_data()) / entry.name
    created = not folder.exists()
    folder.mkdir(parents=True, exist_ok=True)
    try:
        return _fetch_into(entry, folder, given or {}, mirror=mirror, require_sha256=require_sha256,
                           force=force, quiet=quiet, say=say)
    except BaseException:
        if created and not any(folder.iterdir()):
            folder.rmdir()  # an empty folder would read as a partial fetch in `modlens data list`
        raise


def _fetch_into(entry: DatasetEntry, folder: Path, given: dict[str, str], *, mirror: str | None,
                require_sha256: bool, force: bool, quiet: bool, say: Callable[[str], None]) -> list[FetchedFile]:
    recorded = read_lock(folder)
    results = []
    for file in entry.files:
        expected, source = expected_hash(entry, file, given, recorded)
        if expected is None and require_sha256:
            raise FetchError(f"{entry.name}/{file.path} has no pinned checksum and --require-sha256 was given; "
                             f"pass --sha256 {entry.name}/{file.path}=HEX (from the publisher) or fetch once "
                             f"without --require-sha256 to record it")
        result = _fetch_file(entry, file, folder, expected, source, mirror=mirror, force=force, quiet=quiet)
        recorded[file.path] = result.sha256
        write_lock(folder, recorded)
        if result.checked_by == UNPINNED and file.git_blob:
            say(f"{entry.name}/{file.path}: {result.action}, its git blob id matches the upstream repository's "
                f"({file.git_blob[:12]}…, pinned in the catalog); recorded sha256 {result.sha256} in {folder / LOCK_FILE}")
        elif result.checked_by == UNPINNED:
            say(f"{entry.name}/{file.path}: no pinned checksum; recorded sha256 {result.sha256} in "
                f"{folder / LOCK_FILE}. Later fetches must match it; to pin it, check it against the "
                f"publisher's and pass --sha256 {entry.name}/{file.path}={result.sha256} or add it to the catalog")
        elif not quiet:
            say(f"{entry.name}/{file.path}: {result.action}, sha256 {result.sha256[:16]}… matches ({result.checked_by})")
        results.append(result)
    write_note(entry, folder, recorded, mirror)
    return results


def matches(file: RemoteFile, path: Path, expected: str | None) -> bool:
    """Whether the bytes at `path` are `file` as checked: SHA-256 `expected`, else (none expected)
    the catalog's upstream git blob id, else anything (nothing pins it). Raises OSError for a file
    that cannot be read. What a fetch keeps as up to date and `data list` takes for the dataset."""
    if expected is not None:
        return sha256_of(path) == expected
    return not file.git_blob or git_blob_of(path) == file.git_blob


def _fetch_file(entry: DatasetEntry, file: RemoteFile, folder: Path, expected: str | None, source: str,
                *, mirror: str | None, force: bool, quiet: bool) -> FetchedFile:
    target = folder / file.path
    target.parent.mkdir(parents=True, exist_ok=True)
    if target.is_file() and not force and matches(file, target, expected):
        return FetchedFile(target, expected or sha256_of(target), "up to date", source)
    url = entry.url(file, mirror)
    part = target.with_name(target.name + ".part")
    try:
        download(url, part, label=f"{entry.name}/{file.path}", quiet=quiet)
    except FetchError as err:
        if err.status == 404 and not file.verified and not (mirror or os.environ.get(MIRROR_ENV)):
            raise FetchError(f"{err}; this address was not verified when modlens was written and the file may "
                             f"have moved: see {entry.homepage}, then fix it in modlens/datasets/catalog.py "
                             f"or serve the file from a --mirror", err.status) from None
        raise
    actual = sha256_of(part)
    mismatch = None  # what the download was pinned by, and what it is
    if expected is not None and actual != expected:
        mismatch = (f"checksum mismatch for {entry.name}/{file.path} from {url}: expected sha256 {expected} "
                    f"({source}), got {actual}", " (--sha256)")
    elif expected is None and file.git_blob and (blob := git_blob_of(part)) != file.git_blob:
        mismatch = (f"git blob mismatch for {entry.name}/{file.path} from {url}: expected {file.git_blob} (the "
                    f"upstream repository's, pinned in the catalog), got {blob}", "")
    if mismatch is not None:
        part.unlink()   # a corrupt .part must not be resumed either
        kept = f"{target} was left as it was" if target.exists() else f"nothing was written to {target}"
        what, how = mismatch
        raise FetchError(f"{what}; the download was discarded and {kept}. A changed upstream file needs a new "
                         f"pin{how}; otherwise the download was corrupted or tampered with")
    os.replace(part, target)
    return FetchedFile(target, actual, "downloaded", source)


def write_note(entry: DatasetEntry, folder: Path, hashes: dict[str, str], mirror: str | None) -> None:
    """README.md (source, licence, citation, checksums) beside the data, plus the shipped LICENSE text."""
    when = datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    lines = [f"# {entry.title}", "", entry.description + ".", "",
             f"Fetched by `modlens data fetch {entry.name}` (modlens {__version__}) on {when}.", "",
             f"- home: {entry.homepage}", f"- licence: {entry.licence} ({entry.licence_url})",
             f"- cite: {entry.citation}", "", "| file | from | sha256 |", "|---|---|---|"]
    lines += [f"| `{f.path}` | {entry.url(f, mirror)} | `{hashes.get(f.path, '')}` |" for f in entry.files]
    if entry.note:
        lines += ["", f"Note: {entry.note}."]
    (folder / "README.md").write_text("\n".join(lines) + "\n", encoding="utf-8")
    shipped_licence = paths.shipped_data() / entry.name / "LICENSE"
    if shipped_licence.is_file() and not (folder / "LICENSE").exists():
        shutil.copyfile(shipped_licence, folder / "LICENSE")


# --- where a dataset is on this machine --------------------------------------------------------
@dataclass
class Location:
    kind: str            # "$MODLENS_DATA", "fetched", "changed", "partial", "shipped", "not present"
    path: Path | None
    size: int            # bytes of the dataset's files found there
    # "changed": its files whose bytes fail their checksum, each with why (MISMATCH, or "unreadable: …")
    changed: dict[str, str] = field(default_factory=dict)


MISMATCH = "does not match its checksum"


def changed_files(entry: DatasetEntry, folder: Path) -> dict[str, str]:
    """The dataset's files in `folder` whose bytes are not those they were checked as, each with
    why: the SHA-256 its fetch recorded there (SHA256SUMS, which a --sha256 override wrote too),
    else the catalog's pin (sha256, or the upstream git blob id), does not match (MISMATCH), or the
    file cannot be read ("unreadable: …"). Read from the bytes, so a file edited, truncated, or left
    in place by a re-fetch whose download failed its checksum is not taken for the dataset."""
    recorded = read_lock(folder)
    changed = {}
    for file in entry.files:
        try:
            if not matches(file, folder / file.path, recorded.get(file.path) or file.sha256):
                changed[file.path] = MISMATCH
        except OSError as err:  # not readable as the bytes it was checked as; the listing goes on
            changed[file.path] = f"unreadable: {err.strerror or err}"
    return changed


def locate(entry: DatasetEntry) -> Location:
    """The first data folder holding the dataset, in `paths.data_dirs()` order."""
    partial = None
    for root in paths.data_dirs():
        folder = root / entry.name
        if not folder.is_dir():
            continue
        if root == paths.shipped_data():
            size = sum(f.stat().st_size for f in folder.iterdir() if f.is_file())
            return partial or Location("shipped", folder, size)
        present = [folder / f.path for f in entry.files if (folder / f.path).is_file()]
        size = sum(p.stat().st_size for p in present)
        if len(present) == len(entry.files):
            if changed := changed_files(entry, folder):
                return Location("changed", folder, size, changed)
            kind = "fetched" if root == paths.fetched_data() else f"${paths.DATA_ENV}"
            return Location(kind, folder, size)
        if present or any(folder.glob("*.part")):
            partial = partial or Location("partial", folder, size)
    return partial or Location("not present", None, 0)
