"""The turns at a modlens home's join files, and the completion of a join a crash interrupted: what
every reader of a joined study (`study.join`, `study.folder.load_folder` for a home given as a study
folder, `live.run.served_study`) goes through, apart from `study.join`, which writes a join and needs
the pack reader (`study.pack`), itself built on `study.folder`: kept here, the folder reader reaches
the recovery without importing the join.

`settled()` holds the home's files as one study for as long as its block runs: a join under way in
another process is waited for, one a dead process left behind (its journal, its staged temps,
`study.join_journal`) is completed first."""
from __future__ import annotations

import logging
import threading
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager, suppress
from pathlib import Path

from modlens import paths
from modlens.errors import ErrorKind, ModlensError
from modlens.study import join_journal

STUDY_FILE = "study.toml"
JOINED_FILE = "joined-study.json"
log = logging.getLogger("modlens.study")


class JoinError(ModlensError, ValueError):
    """Joining would replace another study; the message says how to switch on purpose."""


# how long a reader (or a join) waits for a join under way in another process before it gives up
JOIN_WAIT_S = 30.0
_turns = threading.local()  # how deep this thread is in its turn at the home's join files (`turn`)


def finish_interrupted_join(home: Path | None = None) -> None:
    """Complete a join a crash interrupted (`settled`; the line saying so is logged, a warning)."""
    with settled(home):
        pass


def is_joined_home(folder: Path) -> bool:
    """Whether `folder` is a modlens home a join wrote to (this one, or another given as a study folder)."""
    return (folder / JOINED_FILE).exists() or (folder / join_journal.JOURNAL_FILE).exists()


@contextmanager
def settled(home: Path | None = None) -> Iterator[str | None]:
    """The join files of `home` (this modlens home by default) as one study for as long as the block
    runs: a join under way in another process is waited for (up to JOIN_WAIT_S, then JoinError), one a
    dead process left behind (its journal, its staged temps) is completed and cleaned first, and no
    join starts before the block ends. Yields the line saying a join had been interrupted and is now
    completed, or None."""
    if getattr(_turns, "depth", 0):  # this thread holds its turn already (a join, or a reader's block)
        yield None
        return
    home, note, cleaned = home or paths.home(), None, False
    while True:
        with turn(home, exclusive=False):
            # temps left after one cleaning (not this user's to remove) are harmless: never a reason to go round again
            if not (home / join_journal.JOURNAL_FILE).exists() and \
                    (cleaned or not join_journal.stray_temps(home, _join_file_names(), None)):
                yield note
                return
        # what is left is a dead process's: a join under way would hold the lock. Turns change hands
        # here, so it is read again under the exclusive one (another reader may have completed it)
        with turn(home, exclusive=True):
            note, cleaned = complete_left_behind(home) or note, True


@contextmanager
def turn(home: Path, *, exclusive: bool) -> Iterator[None]:
    """This thread's turn at the home's join files (join_journal.locked), said as a JoinError when
    another process's join holds them for longer than JOIN_WAIT_S."""
    with ExitStack() as held:
        try:
            held.enter_context(join_journal.locked(home, exclusive=exclusive, wait_s=JOIN_WAIT_S, waiting=(
                f"{home}: another modlens process is joining a study here; waiting for it to finish "
                f"(up to {JOIN_WAIT_S:g} s)")))
        except join_journal.Busy as err:
            raise JoinError(f"{err}: a join is under way in another process and has not finished; nothing here "
                            f"reads or changes the study files until it has",
                            fix="wait for that `modlens join` (or the daemon joining from the extension) to finish, "
                                "or stop it, then run this again (a join stopped part way is completed then)",
                            kind=ErrorKind.FAILED) from None
        _turns.depth = 1
        try:
            yield
        finally:
            _turns.depth = 0


def _join_file_names() -> list[str]:
    from modlens.study import assignment, itemset

    return [STUDY_FILE, JOINED_FILE, itemset.FILE, assignment.FILE]


def complete_left_behind(home: Path) -> str | None:
    """Under the exclusive turn (no join under way): remove the staged temps of a dead process that no
    journal names, and complete the join a journal records (see `settled`); the line saying so."""
    try:
        pending = join_journal.read(home)
    except (OSError, join_journal.JournalUnreadable) as err:
        said = str(err) if isinstance(err, join_journal.JournalUnreadable) else \
            f"{home / join_journal.JOURNAL_FILE}: cannot be read ({err.strerror or err})"
        raise JoinError(f"{said}; a join was interrupted part way and the study files may mix two studies",
                        fix=f"delete {home / join_journal.JOURNAL_FILE}, then join the study's pack again "
                            "(`modlens join PACK --replace`): it writes every file anew",
                        kind=ErrorKind.FAILED) from None
    for temp in join_journal.stray_temps(home, _join_file_names(), pending):
        with suppress(OSError):  # one this user may not remove stays, harmless: no join names it
            temp.unlink()
    if pending is None:
        return None
    try:
        changed = join_journal.complete(home, pending)
    except OSError as err:
        raise JoinError(f"{home}: a join of study {pending.study_id!r} was interrupted part way, and completing it "
                        f"failed ({err.filename}: {err.strerror or err}); the study files "
                        f"mix two studies until it is completed",
                        fix="remove the cause (a folder or a read-only file in the way), then run the command "
                            "again: it completes the join first", kind=ErrorKind.FAILED) from None
    except join_journal.JournalUnreadable as err:
        raise JoinError(f"{err}; the join it records cannot be completed, and the study files may mix two studies",
                        fix=f"delete {home / join_journal.JOURNAL_FILE}, then join the study's pack again "
                            "(`modlens join PACK --replace`): it writes every file anew",
                        kind=ErrorKind.FAILED) from None
    before = f" (replacing study {pending.replacing!r})" if pending.replacing else ""
    if not changed:  # every file was the new study's already: only dropping the journal had failed
        note = (f"{home}: a join of study {pending.study_id!r}{before} had completed, but its "
                f"{join_journal.JOURNAL_FILE} was left behind; it is removed now, and study {pending.study_id!r} "
                "is joined")
        log.warning("%s", note)
        return note
    note = (f"{home}: a join of study {pending.study_id!r}{before} had been interrupted part way; it is now "
            f"completed ({', '.join(changed)} changed), and study {pending.study_id!r} is joined")
    log.warning("%s", note)
    return note
