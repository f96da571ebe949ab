"""Opening a study log and holding its write lock: connection settings, waiting for other
writers, transactions. The row functions (`studylog/records/`) write through a `LogConnection`.

Several processes may write one log at once (two audits, an audit beside the daemon). Every
write transaction starts with `BEGIN IMMEDIATE` (`begin_immediate`), which takes the write lock up
front; a deferred transaction that read first could not wait (SQLite refuses its upgrade to a
writer at once). Every wait for the lock ends at one monotonic deadline, `BUSY_TIMEOUT_MS` after
it began, and the error then reports the seconds really waited.

The wait is ours, not SQLite's busy handler: that handler sleeps in growing steps (up to 100 ms
each) and so kept missing the few milliseconds between an audit's COMMIT and its next BEGIN
IMMEDIATE; a page of the daemon waited up to a second behind a fast audit whose transactions each
held the lock 40 ms (docs/PERFORMANCE.md). Each try fails at once when the lock is taken
(`busy_timeout` 0 while it runs; some statements fail at once anyway, such as switching a fresh
file to WAL while another process does the same), and is repeated every `LOCK_POLL_S`. A
short poll alone still loses to a writer that begins again within microseconds of its COMMIT, so
the writers also take turns (`Turnstile`): one that had to wait holds an advisory lock on the file
`<log>-writers` until it has the write lock, and every writer passes that lock before BEGIN
IMMEDIATE, so the writer that just committed waits for the one that was waiting. A waiting writer
thus gets the lock after at most the transaction in progress.

The log and its -wal, -shm and -writers files are private to their owner (0600, like the pairing
token): the file is created before SQLite opens it, SQLite gives the -wal and -shm files the
database file's permissions, and the -writers file is created 0600.
"""
from __future__ import annotations

import contextlib
import errno
import fcntl
import json
import os
import pwd
import sqlite3
import stat
import time
import weakref
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator, Sequence, TypeVar

from modlens.errors import ErrorKind, ModlensError
from modlens.studylog.schema import SCHEMA_VERSION

Params = tuple[Any, ...] | list[Any]

T = TypeVar("T")

# FULL: the WAL is fsynced at every COMMIT, so an acknowledged rating survives power loss,
# not only a killed process (docs/DATA.md, "Durability"). Batching amortizes the fsync.
SYNCHRONOUS = "FULL"
# Writer connection tuning (docs/PERFORMANCE.md, "Study-log ingest"): a 64 MiB page cache keeps the
# hot parts of the texts' hash index in memory at corpus scale (sha256 keys land at random pages),
# temporary b-trees stay in memory, and the WAL is checkpointed every ~16 MiB instead of every
# ~4 MiB (fewer, larger checkpoints, each an fsync of the database under FULL) and truncated back
# to 64 MiB after each, so it does not stay as large as the largest transaction.
CACHE_SIZE_KIB = 64 * 1024
WAL_AUTOCHECKPOINT_PAGES = 4096
JOURNAL_SIZE_LIMIT = 64 * 1024 * 1024
# How long a writer waits for the write lock, in all (another writer's commits are short, so a
# longer wait means something holds the lock: a stuck process, a DB browser with a write open).
BUSY_TIMEOUT_MS = 10_000
# How often a waiting writer tries the lock again: short, so that it is taken within a few ms of
# being free; each failed try costs a few µs (a 2 ms poll is well under 1% of a core).
LOCK_POLL_S = 0.002
# The writers' turnstile beside the log (`Turnstile`), and the most a writer waits in it: a writer
# holds it only while waiting for the transaction in progress, so a longer wait means its holder
# is stopped (Ctrl-Z) or waits behind a foreign writer; the writers behind it then wait for the
# write lock directly instead, as if there were no turnstile.
TURNSTILE_SUFFIX = "-writers"
TURNSTILE_WAIT_MAX_S = 1.0
# rows per statement when a batch reads ids back by key (`IN (SELECT value FROM json_each(?))`)
LOOKUP_CHUNK = 5000
# the most texts `LogConnection.text_memo` keeps (a whole-folder import is one transaction)
TEXT_MEMO_MAX = 100_000
FILE_MODE = 0o600
JSON_KEYS = "IN (SELECT value FROM json_each(?))"
_ONE_KEY_SQL: dict[str, str] = {}  # a lookup of many keys -> the same lookup of one key
MAX_ROWID = 2 ** 63 - 1


class StudyLogError(ModlensError, RuntimeError):
    """A study log that cannot be opened or used as asked (message says why, `fix` what to do)."""

    kind = ErrorKind.FAILED


class LogUnwritable(StudyLogError):
    """The study log cannot be written now: its disk is full, the file or its folder became
    read-only, an I/O error, or another writer held the lock past BUSY_TIMEOUT_MS. One condition,
    whatever the cause: nothing of the write was stored, and the same write may succeed later
    (the daemon answers `unavailable` and acknowledges nothing meanwhile). `reason`: the cause in
    a few words, as SQLite or the OS said it."""

    def __init__(self, message: str, fix: str | None = None, *, reason: str | None = None) -> None:
        super().__init__(message, fix)
        self.reason = reason or message

    def stopped(self, held: str, then: str = "") -> LogUnwritable:
        """This condition as a command it stopped says it (an audit, a rescore, an import): what the
        log holds (`held`), and what to do before running it again, `then` what the rerun does (this
        error's own fix is the daemon's)."""
        if "locked by another writer" in self.message:
            before = "let the other writer finish or stop it"
        elif "not writable by this user" in self.message:
            before = "give this user write access to it (`chmod u+w`, `chown`) or run it as the log's owner"
        else:
            before = "free space on the study log's disk (or make it writable again)"
        return LogUnwritable(f"{self.message}; {held}", fix=f"{before}, then run the same command again{then}",
                             reason=self.reason)


# SQLite's primary result codes that mean "cannot be written now", not "this write is wrong":
# SQLITE_READONLY, SQLITE_IOERR, SQLITE_FULL, SQLITE_CANTOPEN (extended codes keep them in the low byte)
UNWRITABLE_CODES = {8: "read-only", 10: "I/O error", 13: "database or disk is full", 14: "cannot open the file"}
SQLITE_READONLY = 8
# the same conditions met outside SQLite (the media folder beside the log)
UNWRITABLE_ERRNOS = {errno.ENOSPC, errno.EDQUOT, errno.EROFS, errno.EIO}


def unwritable(err: BaseException, path: Path | str = "") -> LogUnwritable | None:
    """`err` as a LogUnwritable when it (or what caused it: SQLite's own error behind a failed
    ROLLBACK TO) says the log cannot be written now; None for any other error."""
    seen: set[int] = set()
    cur: BaseException | None = err
    while cur is not None and id(cur) not in seen:
        seen.add(id(cur))
        if isinstance(cur, LogUnwritable):
            return cur
        code = getattr(cur, "sqlite_errorcode", None)
        if isinstance(cur, sqlite3.Error) and isinstance(code, int) and code & 0xFF in UNWRITABLE_CODES:
            if code & 0xFF == SQLITE_READONLY and path and (refused := not_writable(Path(path))) is not None:
                return refused
            return LogUnwritable(f"the study log {path} cannot be written: {cur}",
                                 fix="free space on its disk (or make it writable again); the daemon resumes "
                                     "by itself, nothing needs restarting", reason=str(cur))
        if isinstance(cur, OSError) and cur.errno in UNWRITABLE_ERRNOS:
            return LogUnwritable(f"cannot write beside the study log {path}: {cur.strerror or cur}",
                                 fix="free space on its disk (or make it writable again)", reason=str(cur))
        cur = cur.__cause__ or cur.__context__
    return None


# The database header SQLite writes at the start of the file (its first 100 bytes): the magic string,
# the write and read format versions (bytes 18 and 19: 2 in WAL mode, 1 with a rollback journal), and
# `PRAGMA user_version` (big-endian, offset 60).
SQLITE_MAGIC = b"SQLite format 3\x00"
HEADER_BYTES = 100
WAL_FORMAT, ROLLBACK_FORMAT = b"\x02\x02", b"\x01\x01"


def is_log_header(header: bytes, size: int) -> bool:
    """Whether a file of `size` bytes starting with `header` is a modlens log, as far as its header
    tells: a SQLite database whose user_version is a schema version modlens wrote, or a log being
    begun (the empty file `create_private` makes; the first page alone, switched to WAL, before the
    schema's first commit set its version). Its journal mode does not decide: modlens keeps its logs in
    WAL mode, but one set to a rollback journal (`sqlite3 FILE 'PRAGMA journal_mode=DELETE'`, a copying
    tool) is the same log, and a writer's open switches it back."""
    if size == 0:
        return True
    if len(header) < HEADER_BYTES or not header.startswith(SQLITE_MAGIC) \
            or header[18:20] not in (WAL_FORMAT, ROLLBACK_FORMAT):
        return False
    version = int.from_bytes(header[60:64], "big")
    page_size = int.from_bytes(header[16:18], "big")
    return 1 <= version <= SCHEMA_VERSION or (version == 0 and size <= (65536 if page_size == 1 else page_size))


def another_programs_database(conn: sqlite3.Connection, path: Path) -> StudyLogError | None:
    """The error for a SQLite database that is no study log, asked through `conn`, else None. At
    user_version 0 a log is new and empty; one holding tables is another program's database, and
    creating the schema there would add modlens's tables (and switch its journal to WAL) in someone
    else's data. Asked through SQLite, never by opening the file from Python: closing such a
    descriptor would drop the locks this process's connections hold on it (see not_writable)."""
    if int(conn.execute("PRAGMA user_version").fetchone()[0]) != 0:
        return None
    tables = [r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE "
                                         "'sqlite_%' ORDER BY name LIMIT 3")]
    if not tables:
        return None
    return StudyLogError(f"{path}: not a modlens study log (a SQLite database modlens did not write: its "
                         f"user_version is 0 and it holds tables such as {', '.join(tables)}); nothing was "
                         "written to it",
                         fix="give the path of a study log, or of a new file (modlens creates it); modlens adds "
                             "nothing to another program's database")


def _probe_before_writing(path: Path) -> StudyLogError | None:
    """another_programs_database, asked before a writer connects, on a read-only connection of its
    own: a writer's connection that read the file, closed after the refusal, would checkpoint the
    database's -wal into it (or roll back its hot journal), writing to it after all. A file SQLite
    cannot read this way (empty, new) is left to the writer's open."""
    if path.stat().st_size == 0:
        return None
    try:
        probe = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True, isolation_level=None)
    except sqlite3.Error:
        return None
    try:
        probe.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
        return another_programs_database(probe, path)
    except sqlite3.Error:
        return None
    finally:
        probe.close()


def file_permissions(path: Path) -> tuple[str, str]:
    """(`path`'s owner and mode, the user this process runs as), in words for an error."""
    try:
        st = path.stat()
        try:
            owner = pwd.getpwuid(st.st_uid).pw_name
        except KeyError:
            owner = f"uid {st.st_uid}"
        permissions = f"owner {owner}, mode {stat.S_IMODE(st.st_mode):04o}"
    except OSError:
        permissions = "a folder above it cannot be entered"
    try:
        user = pwd.getpwuid(os.geteuid()).pw_name
    except KeyError:
        user = f"uid {os.geteuid()}"
    return permissions, user


def not_writable(path: Path) -> LogUnwritable | None:
    """A LogUnwritable naming the permissions when this process may read the log at `path` but not write
    it (mode 0444, another user's 0644 file); None when it may write it, or the file system itself is
    read-only (then no permission would help: the open's own error says so). SQLite opens such a file
    read-only without a word and refuses only the first write ("attempt to write a readonly database"),
    which no free space or writable folder would change. `os.access`, not a trial open: closing a
    descriptor of the file would drop the locks SQLite holds on it in this process."""
    try:
        if not path.is_file() or not os.access(path, os.R_OK) or os.access(path, os.W_OK) \
                or os.statvfs(path).f_flag & os.ST_RDONLY:
            return None  # one it may not read either is `unreadable`, SQLite's open refusing it
    except OSError:
        return None
    permissions, user = file_permissions(path)
    return LogUnwritable(
        f"the study log {path} is not writable by this user (permissions: {permissions}; this command runs as "
        f"{user}): a writer cannot store anything in it",
        fix="run the command as the log's owner, or give this user write access to it (`chmod u+w`, `chown`); "
            "a command that only reads it (report, export, status) needs no write access",
        reason="permission denied: the file is not writable by this user")


def side_file_refused(path: Path) -> StudyLogError | None:
    """A StudyLogError naming the -wal or -shm beside the log at `path` that this user may not read or
    write, None when it may use both (or they are absent). They exist while a writer has the log open
    (or after one stopped without closing it) and have that writer's owner and mode; SQLite shares
    the log's locks through the -shm, so it refuses the log with only "unable to open database file"."""
    for suffix in ("-shm", "-wal"):
        side = path.with_name(path.name + suffix)
        if not side.exists():
            continue
        may_not = [word for word, mode in (("read", os.R_OK), ("write", os.W_OK)) if not os.access(side, mode)]
        if not may_not:
            continue
        permissions, user = file_permissions(side)
        return StudyLogError(
            f"the study log {path} cannot be opened by this user: its {side.name} (permissions: {permissions}; "
            f"this command runs as {user}) is there, which this user may not {' or '.join(may_not)}; SQLite "
            "shares the log's locks through its -shm and reads commits from its -wal (both exist while a writer "
            "has the log open, or after one stopped without closing it)",
            fix=f"run the command as the owner of {side.name}, or give this user access to it (`chmod`, `chown`); "
                "the last writer to close the log removes both")
    return None


def unreadable(path: Path, why: str) -> StudyLogError:
    """The log at `path` cannot be read by this process (`why`: the OS's words), with its owner and mode."""
    permissions, user = file_permissions(path)
    return StudyLogError(
        f"the study log {path} cannot be read (permissions: {permissions}; this command runs as {user}): {why}",
        fix="run the command as the log's owner, or give this user access to it (`chmod`, `chown`; a writer "
            "needs to write it and its folder too)")


def cannot_open(err: BaseException, path: Path) -> StudyLogError | None:
    """`err`, met while opening the log, as the error it means. A file this process may not read:
    `unreadable` (SQLite says only that it cannot open it). A modlens log (`is_log_header`) and an
    error saying SQLite cannot write now (`unwritable`): a LogUnwritable, since opening a log in WAL
    mode, even to read it, creates or writes its -wal and -shm files beside it, so a full disk, a
    file-size limit or a read-only folder stops a valid log from opening. None for any other error
    or file (not a SQLite database, or another program's): "not a modlens study log". A log whose
    -wal or -shm this user may not use: `side_file_refused`, not a disk or folder to blame."""
    try:
        st = path.stat()
    except OSError as stat_err:  # gone, or a folder above it this process may not enter
        return unreadable(path, stat_err.strerror or str(stat_err)) if stat_err.errno == errno.EACCES else None
    if not stat.S_ISREG(st.st_mode):  # a folder given as the log is not one
        return None
    if not os.access(path, os.R_OK):
        return unreadable(path, "permission denied")
    try:
        with path.open("rb") as f:
            header = f.read(HEADER_BYTES)
            size = os.fstat(f.fileno()).st_size
    except OSError as read_err:
        return unreadable(path, read_err.strerror or str(read_err))
    if unwritable(err, path) is None:
        return None
    if is_log_header(header, size) and (refused := side_file_refused(path)) is not None:
        return refused
    if not is_log_header(header, size):
        version = int.from_bytes(header[60:64], "big") if header.startswith(SQLITE_MAGIC) else 0
        if len(header) < HEADER_BYTES or header[18:20] not in (WAL_FORMAT, ROLLBACK_FORMAT) \
                or version <= SCHEMA_VERSION:
            return None
        # a database of a schema version above ours: a newer modlens's log, or another program's
        return LogUnwritable(
            f"{path} cannot be opened now: {err} (opening it creates {path.name}-wal and {path.name}-shm beside "
            f"it); its schema version {version} is newer than this modlens reads ({SCHEMA_VERSION}): if it is a "
            "study log, a newer modlens wrote it",
            fix="upgrade modlens (`pip install -U modlens`), and open it where its folder is writable",
            reason=str(err))
    if header[18:20] == ROLLBACK_FORMAT:  # not in WAL mode: a reader needs no side file, a writer does
        side = (f"it is in rollback-journal mode, not WAL: a writer's open switches it back to WAL, which "
                f"writes its header and creates {path.name}-wal and {path.name}-shm beside it")
    else:
        side = f"opening it, even to read it, creates or writes {path.name}-wal and {path.name}-shm beside it"
    return LogUnwritable(
        f"the study log {path} cannot be opened now: {err} ({side})",
        fix="free space on its disk, lift the file-size limit (`ulimit -f`) or open it where its folder is "
            "writable (copy the log, with its -wal if there is one, out of a read-only folder), then run the "
            "same command again",
        reason=str(err))


def is_busy(err: sqlite3.OperationalError) -> bool:
    """SQLITE_BUSY / SQLITE_LOCKED: another connection holds the lock."""
    return "locked" in str(err) or "busy" in str(err)


def busy_error(path: Path, waited_s: float) -> LogUnwritable:
    return LogUnwritable(
        f"the study log {path} stayed locked by another writer for {waited_s:.1f} s (another `modlens audit`, "
        "`modlens serve` or a program with a write transaction open on it)",
        fix="let the other writer finish or stop it, then run this again (an audit resumes where it stopped)")


class Turnstile:
    """Turns at the write lock among the log's writers, across processes: an exclusive `flock` on
    the file `<log>-writers` (0600, made by the first writer that had to wait, never removed: removing
    a lock file races with the writers opening it). A writer takes it before BEGIN IMMEDIATE and drops
    it as soon as it has the write lock; it keeps it only while it waits for the lock. So a writer that
    commits and begins again at once (an audit's chunks, the daemon's batches) finds it held whenever
    another writer is waiting, and waits in turn: the waiting one gets the lock after the transaction
    in progress, not after whatever the timing of the two happened to allow (with three or more
    writers, each waiting one gets in after a few transactions, in no fixed order). Uncontended, it
    costs one or two system calls per transaction (about 1 µs). The kernel drops the lock of a process that dies, so a crashed
    waiter blocks nobody; a stopped one (Ctrl-Z) holds up the others `TURNSTILE_WAIT_MAX_S` once. A
    folder where the file cannot be made, or a file system without `flock`, leaves the polling wait
    alone. Foreign writers (a database browser) do not take it; they are waited for as before."""

    FREE, HELD, TAKEN = "free", "held", "taken"  # no turnstile to pass / this writer holds it / another does

    def __init__(self, db: Path) -> None:
        self.path = db.with_name(db.name + TURNSTILE_SUFFIX)
        self._fd: int | None = None
        self._close: weakref.finalize[[int], Turnstile] | None = None
        self.skipping = False  # its holder kept it past TURNSTILE_WAIT_MAX_S: passed by until it is free again

    def enter(self, *, create: bool) -> str:
        """Try to take the turnstile without waiting. `create`: make the file if no writer has yet
        (this one is waiting); without it, a missing file means nobody waits: FREE."""
        if self._fd is None:
            try:
                self._fd = os.open(self.path, os.O_RDWR | os.O_CLOEXEC | (os.O_CREAT if create else 0), FILE_MODE)
            except OSError:  # not made yet (no writer has waited), or the folder refuses it
                return self.FREE
            self._close = weakref.finalize(self, os.close, self._fd)
        try:
            fcntl.flock(self._fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return self.FREE if self.skipping else self.TAKEN
        except OSError:  # no flock here (ENOLCK): wait without turns
            return self.FREE
        self.skipping = False
        return self.HELD

    def leave(self) -> None:
        if self._fd is not None:
            fcntl.flock(self._fd, fcntl.LOCK_UN)

    def close(self) -> None:
        if self._close is not None:
            self._close()  # closing the file also drops a lock still held
        self._fd = self._close = None


def wait_for_lock(conn: sqlite3.Connection, path: Path, attempt: Callable[[], T],
                  turnstile: Turnstile | None = None) -> T:
    """`attempt()`, tried every LOCK_POLL_S while SQLite answers busy, until BUSY_TIMEOUT_MS have
    passed since the first try (a StudyLogError giving the real seconds then). Each try fails at
    once (`busy_timeout` 0 meanwhile): SQLite's own wait sleeps up to 100 ms between its looks and
    misses a lock that is free for a few ms. With a `turnstile`, a try waits for the writer ahead
    in it first, and this writer holds it from its first failed try until it has the lock."""
    t0 = time.monotonic()
    deadline = t0 + BUSY_TIMEOUT_MS / 1000
    turn, waited, queued_at = Turnstile.FREE, False, 0.0
    conn.execute("PRAGMA busy_timeout = 0")
    try:
        while True:
            if turnstile is not None and turn != Turnstile.HELD:
                turn = turnstile.enter(create=waited)
                if turn == Turnstile.TAKEN:
                    queued_at = queued_at or time.monotonic()
                    if time.monotonic() - queued_at >= TURNSTILE_WAIT_MAX_S:
                        turnstile.skipping, turn = True, Turnstile.FREE
            if turn != Turnstile.TAKEN:
                try:
                    return attempt()
                except sqlite3.OperationalError as err:
                    if not is_busy(err):
                        raise
                waited = True
            left = deadline - time.monotonic()
            if left <= 0:
                raise busy_error(path, time.monotonic() - t0) from None
            time.sleep(min(LOCK_POLL_S, left))
    finally:
        if turnstile is not None and turn == Turnstile.HELD:
            turnstile.leave()
        conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")


def begin_immediate(conn: sqlite3.Connection, path: Path) -> None:
    """BEGIN IMMEDIATE: the write lock now, waiting for other writers (in turn with the writers of
    this log that opened it with `open_connection`) up to BUSY_TIMEOUT_MS (StudyLogError when it
    never comes)."""
    wait_for_lock(conn, path, lambda: conn.execute("BEGIN IMMEDIATE"), getattr(conn, "turnstile", None))


# What shows that a file was written: where it is, its size, and when its contents and its inode last changed.
FileState = tuple[int, int, int, int, int]
SIDE_FILES = ("-wal", "-shm", "-journal")


def file_state(path: Path) -> FileState:
    st = path.stat()
    return st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns


def unlocked_read(path: Path) -> FileState | None:
    """The state of the log at `path` when a reader must read it without SQLite's locks, else None.

    A reader (`mode=ro`) of a WAL log shares its locks through the -shm file beside it, so SQLite
    opens it only where the -wal or -shm exists or can be made. In a folder this user may not write
    (a read-only mount, another user's folder) with neither beside the log, it cannot: no WAL
    connection has the log open now (SQLite keeps both files while one does, and removes them at the
    last close), and all its commits are in the file. Such a log is read as it is
    (`immutable=1`, no locks, no side file). The folder being read-only for this reader does not stop
    a writer that reaches the file another way (its owner, another mount) from opening it meanwhile;
    its commits go to its own -wal, unseen, until a checkpoint rewrites pages of the file: the file's
    state is kept here and `LogConnection.check_unchanged` refuses a read during which it changed
    (its size, its mtime or ctime). Those show no more than the file system's timestamp tick: a write
    that keeps the size (a checkpoint rewriting pages in place) within the tick of the file's last
    change before the open goes unseen, after reads began too; 2 s on FAT (docs/DATA.md). None
    (`mode=ro` as usual) where the folder is writable, a side file exists (a -wal may hold commits not
    yet in the file), or the header is not a WAL log's (a rollback-mode log needs no side file to be
    read; anything else gets the open's own error)."""
    folder = path.parent
    try:
        if os.access(folder, os.W_OK | os.X_OK) and not os.statvfs(folder).f_flag & os.ST_RDONLY:
            return None
        if any(os.path.lexists(f"{path}{suffix}") for suffix in SIDE_FILES):
            return None
        state = file_state(path)
        # read before SQLite opens it (no connection of this process holds a lock on it to lose)
        with path.open("rb") as f:
            header = f.read(HEADER_BYTES)
    except OSError:
        return None
    if not is_log_header(header, state[2]) or header[18:20] != WAL_FORMAT:
        return None
    return state


class ReaderConnection(sqlite3.Connection):
    """A reader's connection; `unlocked`: the log's state when it was opened without locks (`unlocked_read`)."""

    unlocked: FileState | None = None


class WriterConnection(sqlite3.Connection):
    """A writer's connection, with the turnstile it waits in (opened once, closed with it)."""

    turnstile: Turnstile

    def close(self) -> None:
        self.turnstile.close()
        super().close()


def create_private(path: Path) -> None:
    """Create the (empty) database file with FILE_MODE unless it exists; SQLite then makes the
    -wal and -shm files with the same permissions."""
    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_EXCL, FILE_MODE)
    except FileExistsError:
        return
    os.close(fd)


def open_connection(path: Path, *, readonly: bool, synchronous: str | None = None,
                    cache_kib: int = CACHE_SIZE_KIB) -> sqlite3.Connection:
    """A connection in autocommit mode (transactions are ours): read-only (`mode=ro`, it can never
    take the write lock, so it never blocks the writer; in a read-only folder without the log's side
    files, `immutable=1`: `unlocked_read`) or a writer in WAL mode with the settings above
    (`cache_kib`: its page cache, `CACHE_SIZE_KIB` unless the caller writes little at a time)."""
    if synchronous is not None and synchronous.upper() not in ("FULL", "NORMAL"):
        raise ValueError(f"synchronous must be FULL or NORMAL, not {synchronous!r}")
    if readonly:
        if not path.exists():
            raise StudyLogError(f"no study log at {path} (file not found); "
                                "run `modlens serve` or `modlens audit` first, or pass --db")
        if path.is_dir():
            raise StudyLogError(f"{path}: not a modlens study log (a folder)", fix="pass the log file's path")
    conn: sqlite3.Connection
    try:  # a file this process may not read fails here already (SQLITE_CANTOPEN)
        if readonly:
            unlocked = unlocked_read(path)
            reader = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro{'&immutable=1' if unlocked else ''}",
                                     uri=True, isolation_level=None, check_same_thread=False,
                                     factory=ReaderConnection)
            reader.unlocked = unlocked
            conn = reader
        else:
            create_private(path)
            denied = not_writable(path)
            if denied is not None:  # SQLite would open it read-only and refuse only the first write
                raise denied
            foreign = _probe_before_writing(path)  # before anything is written to it, its journal mode included
            if foreign is not None:
                raise foreign
            writer = sqlite3.connect(str(path), isolation_level=None, timeout=BUSY_TIMEOUT_MS / 1000,
                                     factory=WriterConnection)
            writer.turnstile = Turnstile(path)
            conn = writer
    except sqlite3.Error as err:
        refused = cannot_open(err, path)
        if refused is None:
            raise
        raise refused from err
    try:
        conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
        conn.execute("PRAGMA foreign_keys = ON")
        if not readonly:
            mode = wait_for_lock(conn, path, lambda: conn.execute("PRAGMA journal_mode = WAL").fetchone()[0])
            if mode.lower() != "wal":
                raise StudyLogError(f"could not switch {path} to WAL mode (got {mode!r})")
            conn.execute(f"PRAGMA synchronous = {synchronous or SYNCHRONOUS}")
            conn.execute(f"PRAGMA cache_size = -{max(1, int(cache_kib))}")
            conn.execute("PRAGMA temp_store = MEMORY")
            conn.execute(f"PRAGMA wal_autocheckpoint = {WAL_AUTOCHECKPOINT_PAGES}")
            conn.execute(f"PRAGMA journal_size_limit = {JOURNAL_SIZE_LIMIT}")
    except sqlite3.Error as err:
        conn.close()
        refused = cannot_open(err, path)
        if refused is None:
            raise
        raise refused from err
    except BaseException:
        conn.close()
        raise
    return conn


class LogConnection:
    """One open study log: its connection, transactions and the few primitives the row functions
    (`studylog/records/`) write with. Everything else goes through those functions."""

    def __init__(self, path: str | Path, *, readonly: bool = False, synchronous: str | None = None,
                 cache_kib: int = CACHE_SIZE_KIB) -> None:
        self.path = Path(path)
        self.readonly = readonly
        self.conn = open_connection(self.path, readonly=readonly, synchronous=synchronous, cache_kib=cache_kib)
        self._closed = False
        # {text: text_id} of the texts looked up or added in the outermost `transaction()` open now, so
        # the writers of one audit chunk (its comments, scores, normalizations) look each text up once
        # (`records.texts.text_ids`). None outside such a transaction; emptied when a savepoint in it rolls
        # back, dropped when it ends however it ends: it never names a row the log does not hold.
        self.text_memo: dict[str, int] | None = None
        # {text: text_hash} of texts known to be missing from the log in that same transaction (a lookup
        # made before it, taken by `records.texts.known`): inserted without asking again, each leaving it
        # once inserted. None unless taken; dropped with the memo.
        self.text_absent: dict[str, str] | None = None
        self._whole = False  # inside a `transaction(whole=True)` block

    def close(self, *, check: bool = True) -> None:
        """Closes the connection; a log read without locks is checked then to be unchanged
        (`check_unchanged`). `check=False` only for a caller that knows its read failed (a `with`
        block left by its own error, which the refusal would replace); an exception that is merely
        being handled somewhere up the stack (`sys.exc_info()`) says nothing about this read."""
        if not self._closed:
            self._closed = True
            try:
                if check:
                    self.check_unchanged()
            finally:
                self.conn.close()

    def check_unchanged(self) -> None:
        """For a log read without SQLite's locks (`unlocked_read`): a StudyLogError when its file changed
        since it was opened, since what was read then may mix its states; nothing for any other."""
        before = getattr(self.conn, "unlocked", None)
        if before is None:
            return
        try:
            changed = file_state(self.path) != before
        except OSError:
            changed = True
        if changed:
            raise StudyLogError(
                f"the study log {self.path} changed while it was read: its folder is read-only for this user, "
                f"so it was read without SQLite's locks (they need {self.path.name}-shm beside it), and a "
                "writer that reaches it another way (its owner, another mount of the folder) wrote it "
                "meanwhile; what was read may mix its old and new contents",
                fix="run the command again once that writer has stopped, or copy the log to a folder this user "
                    "may write and read the copy")

    @contextlib.contextmanager
    def transaction(self, *, whole: bool = False) -> Iterator[Any]:
        """Atomic block. Outside a transaction: BEGIN IMMEDIATE … COMMIT, waiting for other
        writers (a deferred start would fail at once when another process wrote in between);
        inside one (a writer batch, an enclosing block): a SAVEPOINT, so it nests.
        `whole`: the block is undone whole if anything in it raises, and none of its code goes on
        after a nested block raised, so the blocks nested in it take no SAVEPOINT of their own (a
        SAVEPOINT copies each page before its first change: with four per chunk, a twelfth of an
        audit's CPU with a free detector, bench/bench_audit_floor.py)."""
        conn = self.conn
        if self._whole and conn.in_transaction:  # the enclosing whole block's rollback undoes this one
            yield self
            return
        if not conn.in_transaction:
            begin_immediate(conn, self.path)
            self.text_memo, self.text_absent, self._whole = {}, None, whole
            try:
                try:
                    yield self
                except BaseException:
                    if conn.in_transaction:  # SQLite may have rolled back already (disk full, I/O error)
                        conn.execute("ROLLBACK")
                    raise
                conn.execute("COMMIT")
            finally:
                self.text_memo, self.text_absent, self._whole = None, None, False
            return
        conn.execute("SAVEPOINT modlens_tx")
        self._whole = whole
        try:
            yield self
        except BaseException:
            self._whole = False
            if self.text_memo is not None:
                self.text_memo.clear()
            conn.execute("ROLLBACK TO modlens_tx")
            conn.execute("RELEASE modlens_tx")
            raise
        self._whole = False
        conn.execute("RELEASE modlens_tx")

    @contextlib.contextmanager
    def locked(self) -> Iterator[Any]:
        """The write lock for a few statements whose partial effect would be harmless (texts
        added for scores that then failed): the enclosing transaction's, or a transaction of
        their own; unlike `transaction()`, no SAVEPOINT inside an enclosing one (one-row calls
        in a loop are its main cost)."""
        if self.conn.in_transaction:
            yield self
            return
        with self.transaction():
            yield self

    @contextlib.contextmanager
    def snapshot(self) -> Iterator[Any]:
        """Consistent reads across several queries (one read transaction; for a log read without locks,
        checked at its end to be unchanged: `check_unchanged`)."""
        self.conn.execute("BEGIN")
        try:
            yield self
        finally:
            self.conn.execute("COMMIT")
        self.check_unchanged()

    # --- primitives for the row functions -------------------------------------------------
    def scalar(self, sql: str, params: Params = ()) -> Any:
        """The first column of the first row, None when there is none."""
        row = self.conn.execute(sql, params).fetchone()
        return None if row is None else row[0]

    def _writable(self) -> None:
        if self.readonly:
            raise StudyLogError("this study log was opened read-only")

    def write(self, sql: str, params: Params = ()) -> sqlite3.Cursor:
        """One write statement; outside a transaction it gets one of its own (so it waits for the
        write lock like every other writer)."""
        self._writable()
        if self.conn.in_transaction:
            return self.conn.execute(sql, params)
        with self.transaction():
            return self.conn.execute(sql, params)

    def write_many(self, sql: str, rows: Iterable[Params]) -> sqlite3.Cursor:
        self._writable()
        if self.conn.in_transaction:
            return self.conn.executemany(sql, rows)
        with self.transaction():
            return self.conn.executemany(sql, rows)

    def ids_by_key(self, sql: str, keys: Sequence[Any], params: tuple[Any, ...] = ()) -> dict[Any, int]:
        """{key: id} from `sql`, a SELECT of (key, id) whose last parameter is a JSON array of keys
        (`… IN (SELECT value FROM json_each(?))`). One key is looked up with `= ?` instead: the
        same rows, a third of the cost for row-at-a-time callers."""
        if len(keys) == 1 and JSON_KEYS in sql:
            one = _ONE_KEY_SQL.get(sql)
            if one is None:
                one = _ONE_KEY_SQL[sql] = sql.replace(JSON_KEYS, "= ?")
            return dict(self.conn.execute(one, (*params, keys[0])).fetchall())
        out: dict[Any, int] = {}
        for start in range(0, len(keys), LOOKUP_CHUNK):
            out.update(self.conn.execute(sql, (*params, json.dumps(keys[start:start + LOOKUP_CHUNK]))).fetchall())
        return out
