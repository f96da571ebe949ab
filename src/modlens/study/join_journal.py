"""The journal of a join under way (`join-journal.json` in the modlens home). A join renames its
files into place one by one, and a crash between two renames (power loss, kill -9) would leave
a study.toml of one study beside the record of another. So before the first rename the journal
is written (whole, synced): each file's staged temp and the sha256 of its bytes, and the files the
new study has none of. It is removed once every rename and removal went through. Whoever opens
the joined study next (`study.join.joined()`, `joined_study_file()`) finds a journal left behind
and completes the join it records (`complete`): every staged file is written whole before the
journal is, so going forward is always possible, and each file's bytes are checked against the
journal before the join is called complete.

A journal is one of a dead join only when no process holds the join's lock (`locked`): a join
holds it, exclusively, from before it stages its first file until its journal is gone, and the
kernel drops it when the process dies; a reader holds it shared while it reads the files, so no join
lands between its reads. Staged temps a join killed before its journal left behind are the process's
own (`.NAME.PID.tmp`): `stray_temps` finds those of a process that is gone."""
from __future__ import annotations

import errno
import hashlib
import json
import logging
import os
import re
import sys
import time
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from modlens.errors import ErrorKind, ModlensError
from modlens.pairing import sync_dir, write_atomically
from modlens.paths import hash_file

log = logging.getLogger("modlens.study")

JOURNAL_FILE = "join-journal.json"
LOCK_FILE = "join.lock"


@dataclass(frozen=True)
class Journal:
    study_id: str
    replacing: str | None                 # the study joined before, if any
    files: list[tuple[str, str, str]]     # (file name, its staged temp's name, sha256 of its bytes)
    remove: list[str]                     # files the new study has none of

    def to_json(self) -> bytes:
        return (json.dumps({"study_id": self.study_id, "replacing": self.replacing,
                            "files": [{"name": n, "temp": t, "sha256": s} for n, t, s in self.files],
                            "remove": self.remove}, indent=1) + "\n").encode("utf-8")


class JournalUnreadable(ModlensError, ValueError):
    """A journal that is not one a join wrote (edited, cut by a disk error), or whose join cannot
    be completed (a file neither staged nor in place): `study.join` says it as a JoinError."""

    kind = ErrorKind.FAILED


class Busy(ModlensError, TimeoutError):
    """Another process held the join's lock for longer than a caller waits (`locked`)."""

    kind = ErrorKind.FAILED


@contextmanager
def locked(home: Path, *, exclusive: bool, wait_s: float, waiting: str) -> Iterator[None]:
    """The join's lock in `home` (`join.lock`, kept: removing it would let a waiter lock a file no
    longer there) for as long as the block runs: exclusive for a join, shared for a reader. Held
    elsewhere, it is waited for, saying `waiting` once (a warning), up to `wait_s`, then Busy. Where
    there is no flock (Windows, a file system that refuses it, a home this user cannot write and no
    lock file in it) nothing is held."""
    if sys.platform == "win32":
        yield
        return
    import fcntl

    try:
        fd = os.open(home / LOCK_FILE, os.O_RDWR | os.O_CREAT, 0o644)
    except OSError:
        try:
            fd = os.open(home / LOCK_FILE, os.O_RDONLY)
        except OSError:
            yield
            return
    try:
        deadline, said = time.monotonic() + wait_s, False
        while True:
            try:
                fcntl.flock(fd, (fcntl.LOCK_EX if exclusive else fcntl.LOCK_SH) | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() >= deadline:
                    raise Busy(f"{home / LOCK_FILE}: held by another process for {wait_s:g} s") from None
                if not said:
                    log.warning("%s", waiting)
                    said = True
                time.sleep(0.05)
            except OSError as err:
                if err.errno not in (errno.ENOLCK, errno.EOPNOTSUPP, errno.ENOSYS):
                    raise
                break
        yield
    finally:
        os.close(fd)  # releases the lock


_TEMP = re.compile(r"\.(?P<name>.+)\.(?P<pid>[0-9]+)\.tmp")


def stray_temps(home: Path, names: Iterable[str], journal: Journal | None) -> list[Path]:
    """The staged temps (`pairing.write_temp`'s `.NAME.PID.tmp`) of `names` and of the journal in
    `home` that no join can use: of a process that is gone, and not named by `journal`. A process
    alive keeps its own (its PID may be another's now: that temp is left, harmless, for a later look)."""
    names = {*names, JOURNAL_FILE}
    kept = {temp for _, temp, _ in journal.files} if journal is not None else set()
    out = []
    for path in home.iterdir():
        found = _TEMP.fullmatch(path.name)
        if found and found["name"] in names and path.name not in kept and not _alive(int(found["pid"])):
            out.append(path)
    return sorted(out)


def _alive(pid: int) -> bool:
    if sys.platform == "win32" or pid == os.getpid():  # os.kill(pid, 0) ends the process on Windows
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (OSError, OverflowError):  # EPERM: alive, another user's; a number no process can have: keep it
        return True
    return True


def begin(home: Path, journal: Journal) -> None:
    """Write the journal whole and durably, before the join's first rename."""
    write_atomically(home / JOURNAL_FILE, journal.to_json(), 0o644, durable=True)


def end(home: Path) -> None:
    """Every rename and removal went through: make them durable, then drop the journal."""
    sync_dir(home)
    (home / JOURNAL_FILE).unlink(missing_ok=True)
    sync_dir(home)


def read(home: Path) -> Journal | None:
    """The journal left in `home`, or None."""
    try:
        raw = json.loads((home / JOURNAL_FILE).read_text(encoding="utf-8"))
        journal = Journal(raw["study_id"], raw["replacing"],
                          [(f["name"], f["temp"], f["sha256"]) for f in raw["files"]], list(raw["remove"]))
    except FileNotFoundError:
        return None
    except (ValueError, KeyError, TypeError) as err:
        raise JournalUnreadable(f"{home / JOURNAL_FILE}: not a journal `modlens join` wrote ({err})") from None
    names = [n for f in journal.files for n in f[:2]] + journal.remove
    if not all(isinstance(n, str) and n == Path(n).name and n not in ("", ".", "..") for n in names):
        raise JournalUnreadable(f"{home / JOURNAL_FILE}: names a file outside {home}")
    return journal


def complete(home: Path, journal: Journal) -> list[str]:
    """Finish the join `journal` records: rename each staged temp still there into place, check
    every file holds the bytes the journal names, remove what the new study has none of, drop the
    journal. Returns the names it renamed or removed. Raises OSError (a rename that fails again:
    the journal stays, for the next try) or JournalUnreadable (a file neither staged nor in place
    with the journal's bytes: the join cannot be completed from here)."""
    changed: list[str] = []
    for name, temp, digest in journal.files:
        try:
            os.replace(home / temp, home / name)
            changed.append(name)
        except FileNotFoundError:  # renamed before the crash (or by another process finishing it now)
            pass
        except OSError as err:  # named by its target: the temp's name says nothing to a participant
            raise OSError(err.errno, err.strerror, str(home / name)) from err
        try:
            held = hash_file(hashlib.sha256(), home / name).hexdigest()
        except FileNotFoundError:  # any other error (a file this user may not read) is said as it is
            held = None
        if held != digest:
            raise JournalUnreadable(f"{home / name}: neither staged nor in place with the bytes "
                                    f"{JOURNAL_FILE} names (sha256 {digest[:16]}…)")
    for name in journal.remove:
        if (home / name).exists():
            (home / name).unlink()
            changed.append(name)
    end(home)
    return changed
