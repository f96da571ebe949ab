"""The journal of a join under way (`join-journal.json` in the modlens home). A join renames its
files into place one by one, and a crash between two renames (power loss, kill -9) would leave
a study.toml of one study beside the record of another. So before the first rename the journal
is written (whole, synced): each file's staged temp and the sha256 of its bytes, and the files the
new study has none of. It is removed once every rename and removal went through. Whoever opens
the joined study next (`study.join.joined()`, `joined_study_file()`) finds a journal left behind
and completes the join it records (`complete`): every staged file is written whole before the
journal is, so going forward is always possible, and each file's bytes are checked against the
journal before the join is called complete."""
from __future__ import annotations

import hashlib
import json
import os
from dataclasses import dataclass
from pathlib import Path

from modlens.errors import ErrorKind, ModlensError
from modlens.pairing import write_temp

JOURNAL_FILE = "join-journal.json"


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


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


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


def begin(home: Path, journal: Journal) -> None:
    """Write the journal whole and durably, before the join's first rename."""
    os.replace(write_temp(home / JOURNAL_FILE, journal.to_json(), 0o644), home / JOURNAL_FILE)
    sync_dir(home)


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
            held = sha256((home / name).read_bytes())
        except FileNotFoundError:
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
