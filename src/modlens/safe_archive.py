"""Reading files other people send (bundles, study packs) without trusting them.

A hostile or damaged file must cost little and say what is wrong in one line naming it:
- only regular files are opened (`/dev/zero`, a FIFO, a folder are refused from `stat`, before any read);
- zip members are inflated in streamed chunks against a ceiling per member and one for the whole
  archive, counted from the bytes actually produced (a member's declared size is only a first check);
- JSON is bounded in size and nesting depth before it is decoded (deep nesting would exhaust the
  stack of the decoder and of every walker after it), and must be UTF-8.
Every failure is an `ArchiveError` (a ValueError) whose message starts with the file's name; a
missing file stays a FileNotFoundError so callers can say "not found".
"""
from __future__ import annotations

import itertools
import json
import os
import re
import stat
import zipfile
import zlib
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from modlens.errors import ModlensError

MiB = 1 << 20
CHUNK = 1 * MiB
MAX_JSON_DEPTH = 64


class ArchiveError(ModlensError, ValueError):
    """A file that cannot be read safely; the message names it and says why."""


class NotAnArchive(ArchiveError):
    """A regular file that is no zip archive (or a truncated one); `reason` is what the zip reader said."""

    def __init__(self, name: str, reason: str):
        super().__init__(f"{name}: not a zip archive, or truncated ({reason})")
        self.reason = reason


@dataclass(frozen=True)
class Limits:
    """Ceilings for one archive: inflated bytes per member and in total, and the number of members."""
    member_bytes: int = 256 * MiB
    total_bytes: int = 1024 * MiB
    members: int = 4096


def _size(n: int) -> str:
    return f"{n / MiB:.0f} MiB" if n >= MiB else f"{n} bytes"


def check_regular_file(path: str | Path, name: str | None = None) -> int:
    """The file's size, if it is a regular file; devices, FIFOs, sockets and folders are refused
    from their metadata alone (opening a FIFO would wait for a writer, /dev/zero never ends)."""
    name = name or str(path)
    st = os.stat(path)  # FileNotFoundError passes through
    if not stat.S_ISREG(st.st_mode):
        kind = ("a folder" if stat.S_ISDIR(st.st_mode) else "a FIFO" if stat.S_ISFIFO(st.st_mode)
                else "a device" if stat.S_ISCHR(st.st_mode) or stat.S_ISBLK(st.st_mode)
                else "a socket" if stat.S_ISSOCK(st.st_mode) else "a special file")
        raise ArchiveError(f"{name}: not a regular file ({kind})")
    return st.st_size


def read_file(path: str | Path, max_bytes: int, name: str | None = None) -> bytes:
    """A regular file's bytes, refused when it holds more than `max_bytes`."""
    name = name or str(path)
    check_regular_file(path, name)
    try:
        with open(path, "rb") as fh:
            data = fh.read(max_bytes + 1)  # never more than the ceiling, whatever stat said
    except IsADirectoryError:
        raise ArchiveError(f"{name}: not a regular file (a folder)") from None
    except OSError as err:
        raise ArchiveError(f"{name}: cannot be read ({err.strerror or err})") from None
    if len(data) > max_bytes:
        raise ArchiveError(f"{name}: larger than {_size(max_bytes)}, more than this kind of file ever holds")
    return data


# strings (with their escapes) first, so brackets inside them do not count
_JSON_STRING = re.compile(rb'"(?:[^"\\]|\\.)*"', re.S)
_BRACKETS = re.compile(rb"[\[\]{}]")
_STEP = {ord("["): 1, ord("{"): 1, ord("]"): -1, ord("}"): -1}


def json_depth(data: bytes) -> int:
    """How deeply `data` nests arrays and objects (without decoding it; linear, no recursion)."""
    bare = _JSON_STRING.sub(b"", data)
    steps = (_STEP[m[0]] for m in _BRACKETS.findall(bare))
    return max(itertools.accumulate(steps, initial=0))


def loads_json(data: bytes | str, name: str, *, max_bytes: int, max_depth: int = MAX_JSON_DEPTH) -> Any:
    """Decode JSON sent by someone else: size, UTF-8 and depth checked before decoding."""
    raw = data.encode("utf-8") if isinstance(data, str) else data
    if len(raw) > max_bytes:
        raise ArchiveError(f"{name}: larger than {_size(max_bytes)}, more than this kind of file ever holds")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as err:
        raise ArchiveError(f"{name}: not UTF-8 text ({err.reason} at byte {err.start})") from None
    depth = json_depth(raw)
    if depth > max_depth:
        raise ArchiveError(f"{name}: JSON nested deeper than {max_depth} levels ({depth}); not a file modlens wrote")
    try:
        return json.loads(text)
    except json.JSONDecodeError as err:
        raise ArchiveError(f"{name}: not JSON: {err.msg} at line {err.lineno} column {err.colno}; "
                           "it may be truncated") from None
    except (RecursionError, ValueError) as err:  # depth was checked; a decoder limit is still one line
        raise ArchiveError(f"{name}: not JSON: {type(err).__name__}") from None


def read_parquet(source: bytes | str | Path, name: str, *, metadata_only: bool = False) -> Any:
    """Parquet someone else wrote (bytes, or a regular file's path): its table, or its metadata
    only; one line naming it when it is not a readable table, never pyarrow's traceback."""
    import io

    import pyarrow as pa
    import pyarrow.parquet as pq

    if not isinstance(source, bytes):
        check_regular_file(source, name)
    where = io.BytesIO(source) if isinstance(source, bytes) else source
    try:
        if metadata_only:
            return pq.read_metadata(where)
        # use_threads=False: pyarrow 26's reader threads can abort the process at exit
        # ("terminate called without an active exception")
        return pq.read_table(where, use_threads=False)
    except (pa.ArrowException, OSError, ValueError, MemoryError) as err:
        first = (str(err).splitlines() or [""])[0][:200]
        raise ArchiveError(f"{name} is not a readable Parquet table ({type(err).__name__}: {first})") from None


# what a damaged member raises while it is inflated: zlib.error, lzma/bz2 errors (OSError,
# ValueError), BadZipFile for a CRC mismatch, EOFError when the data stops early
_DAMAGED = (zipfile.BadZipFile, EOFError, OSError, ValueError, RuntimeError, NotImplementedError, zlib.error)


class SafeZip:
    """A zip archive read member by member under `Limits`. Use as a context manager or close()."""

    def __init__(self, source: str | Path | IO[bytes], name: str | None = None, limits: Limits = Limits()):
        self.name = name or (str(source) if isinstance(source, (str, Path)) else "archive")
        self.limits = limits
        self._inflated: dict[str, int] = {}  # member -> bytes it inflated to (a re-read costs nothing new)
        self._file: IO[bytes] | None = None
        if isinstance(source, (str, Path)):
            check_regular_file(source, self.name)
            try:
                self._file = open(source, "rb")
            except OSError as err:
                raise ArchiveError(f"{self.name}: cannot be read ({err.strerror or err})") from None
        try:
            self._zip = zipfile.ZipFile(self._file if self._file is not None else source)
        except (zipfile.BadZipFile, EOFError, OSError, ValueError, NotImplementedError) as err:
            self.close()
            raise NotAnArchive(self.name, str(err)) from None
        count = len(self._zip.infolist())
        if count > limits.members:
            self.close()
            raise ArchiveError(f"{self.name}: {count} members, more than the {limits.members} this kind of file holds")

    def __enter__(self) -> SafeZip:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        if getattr(self, "_zip", None) is not None:
            self._zip.close()
        if self._file is not None:
            self._file.close()
            self._file = None

    def names(self) -> list[str]:
        return self._zip.namelist()

    def read(self, member: str, max_bytes: int | None = None) -> bytes:
        """The member's inflated bytes; KeyError when it is absent, ArchiveError when it is damaged or
        inflates past its ceiling (`max_bytes`, at most the per-member one) or the archive's total."""
        info = self._zip.getinfo(member)  # KeyError for an absent member
        ceiling = min(max_bytes or self.limits.member_bytes, self.limits.member_bytes)
        budget = self.limits.total_bytes - sum(n for m, n in self._inflated.items() if m != member)
        limit = min(ceiling, budget)
        what = f"{self.name}: {member}"
        if info.file_size > limit:  # declared sizes may lie low, never trusted high: refuse at once
            raise ArchiveError(self._too_big(what, ceiling, budget, info.file_size, declared=True))
        parts: list[bytes] = []
        total = 0
        try:
            with self._zip.open(info) as fh:
                while chunk := fh.read(CHUNK):  # inflated in bounded steps, never all at once
                    total += len(chunk)
                    if total > limit:
                        raise ArchiveError(self._too_big(what, ceiling, budget, total, declared=False))
                    parts.append(chunk)
        except ArchiveError:
            raise
        except _DAMAGED as err:
            raise ArchiveError(f"{what} is damaged ({type(err).__name__}: {err})") from None
        self._inflated[member] = total
        return b"".join(parts)

    def read_json(self, member: str, max_bytes: int, max_depth: int = MAX_JSON_DEPTH) -> Any:
        return loads_json(self.read(member, max_bytes), f"{self.name}: {member}", max_bytes=max_bytes,
                          max_depth=max_depth)

    def _too_big(self, what: str, ceiling: int, budget: int, size: int, *, declared: bool) -> str:
        """Which ceiling `member` passed: its own, or what is left of the archive's total."""
        head = f"{what} declares {_size(size)}" if declared else f"{what} inflates to more than {_size(min(ceiling, budget))}"
        if ceiling <= budget or (declared and size > ceiling):
            return f"{head}, past its {_size(ceiling)} ceiling; not a file modlens wrote"
        return (f"{head}, past the {_size(budget)} left of the archive's {_size(self.limits.total_bytes)} "
                "ceiling; not a file modlens wrote")
