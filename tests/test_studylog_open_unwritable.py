"""A valid study log that SQLite cannot open now, because opening a WAL log (even to read it) creates
or writes its -wal and -shm files beside it (a file-size limit, a full disk, a read-only folder), is
said to be a log that cannot be opened now, with the cause and what to do, never "not a modlens
study log"; a file that is not a log still is one, and so is a SQLite file that is not a modlens log (its
header says so) even where it cannot be opened now; a log this user may not read is said to be one it
cannot read. Real processes, a real limit, real permissions, a real log."""
from __future__ import annotations

import ctypes
import json
import os
import resource
import shutil
import signal
import subprocess
import sqlite3
import sys
from pathlib import Path

import pytest

from modlens.studylog.store import StudyLog

ENV = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1"}


def _valid_log(folder: Path) -> Path:
    folder.mkdir(exist_ok=True)
    path = folder / "log.sqlite"
    StudyLog(path).close()
    assert sorted(p.name for p in folder.iterdir()) == ["log.sqlite"]  # its -wal and -shm go with the last close
    return path


def _no_file_writes() -> None:
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # a write past the limit then fails with EFBIG
    resource.setrlimit(resource.RLIMIT_FSIZE, (0, 0))


def _says_cannot_open_now(done: subprocess.CompletedProcess[str], path: Path) -> None:
    assert done.returncode == 1, done.stdout + done.stderr
    assert "Traceback" not in done.stderr and "not a modlens study log" not in done.stderr, done.stderr
    assert f"the study log {path} cannot be opened now" in done.stderr, done.stderr


@pytest.mark.parametrize("command", ["report", "rescore"])
def test_a_valid_log_under_a_file_size_limit_cannot_be_opened_now(tmp_path, command):
    """report opens the log read-only, rescore for writing: both need the side files."""
    path = _valid_log(tmp_path / "logs")
    before = path.read_bytes()
    done = subprocess.run([sys.executable, "-m", "modlens", command, "--db", str(path)], capture_output=True,
                          text=True, preexec_fn=_no_file_writes, timeout=120, env=ENV)
    _says_cannot_open_now(done, path)
    assert "file-size limit" in done.stderr
    assert path.read_bytes() == before


def _read_only(folder: Path, argv: list[str]) -> subprocess.CompletedProcess[str]:
    """`argv` run with `folder` read-only: by its mode, or for root (whom modes do not stop) a
    read-only bind mount of it in a mount namespace of its own."""
    if os.geteuid() != 0:
        folder.chmod(0o555)
        try:
            return subprocess.run(argv, capture_output=True, text=True, timeout=120, env=ENV)
        finally:
            folder.chmod(0o755)
    unshare = shutil.which("unshare")
    if unshare is None:
        pytest.skip("running as root without unshare: no way to make a folder read-only here")
    script = 'mount --bind "$1" "$1" && mount -o remount,ro,bind "$1" && shift && exec "$@"'
    done = subprocess.run([unshare, "-m", "sh", "-c", script, "sh", str(folder), *argv],
                          capture_output=True, text=True, timeout=120, env=ENV)
    if "mount:" in done.stderr or "unshare:" in done.stderr:
        pytest.skip(f"cannot make a read-only folder here: {done.stderr.strip()}")
    return done


def _log_with_comments(folder: Path) -> Path:
    path = _valid_log(folder)
    with StudyLog(path) as log:
        detector = log.ensure_detector("toy", "1", "toxic", 0.5, {})
        for i, text in enumerate(["you are kind", "you are awful", "what a day"]):
            log.add_comment("youtube", f"c{i}", None, text)
            log.add_score(text, detector, {"toxic": 0.4 * i}, 0.4 * i, 1.0, None)
    return path


def _report(done: subprocess.CompletedProcess[str]) -> dict[str, object]:
    assert done.returncode == 0 and "Traceback" not in done.stderr, done.stderr
    report = json.loads(done.stdout)
    del report["generated_at"], report["db"]
    return dict(report)


def test_a_valid_log_in_a_read_only_folder_is_read(tmp_path):
    """No -wal or -shm beside it and none can be made (SQLite's `mode=ro` needs one or the other): the
    log is read without SQLite's locks (`immutable=1`), and the report is the one its copy in a
    writable folder gives; nothing is written in the folder."""
    path = _log_with_comments(tmp_path / "logs")
    copy = tmp_path / "copy" / "log.sqlite"
    copy.parent.mkdir()
    shutil.copyfile(path, copy)
    argv = [sys.executable, "-m", "modlens", "report", "--format", "json", "--db"]
    expected = _report(subprocess.run([*argv, str(copy)], capture_output=True, text=True, timeout=120, env=ENV))
    assert expected["counts"]["comments"] == 3  # type: ignore[index]
    assert _report(_read_only(path.parent, [*argv, str(path)])) == expected
    assert sorted(p.name for p in path.parent.iterdir()) == ["log.sqlite"]


CHANGED_WHILE_READ = """
import sys
from pathlib import Path
from modlens.studylog.connection import StudyLogError
from modlens.studylog.store import StudyLog

writable, read_only = Path(sys.argv[1]), Path(sys.argv[2])
reader = StudyLog(read_only, readonly=True)
try:
    with reader.snapshot():
        n = reader.counts()["comments"]
        with StudyLog(writable) as writer:  # its owner's writer, through a path where the folder is writable
            writer.add_comment("youtube", "late", None, "written while the report read")
    print("read", n)
except StudyLogError as err:
    print("refused:", err)
"""


def _beside_a_writer(tmp_path: Path, code: str) -> tuple[Path, Path, subprocess.CompletedProcess[str]]:
    """(the log, its path in a read-only view of its folder, `code` run with both paths as its
    arguments): the folder is read-only only through the view, as for a reader whose owner, or another
    mount of the folder, may write the log."""
    path = _log_with_comments(tmp_path / "logs")
    view = tmp_path / "view"
    view.mkdir()
    script = ('mount --bind "$1" "$2" && mount -o remount,ro,bind "$2" && shift 2 && exec "$@"')
    unshare = shutil.which("unshare")
    if unshare is None:
        pytest.skip("no unshare here: no way to give one folder a read-only view")
    prefix = [unshare, "-m"] if os.geteuid() == 0 else [unshare, "-r", "-m"]
    done = subprocess.run([*prefix, "sh", "-c", script, "sh", str(path.parent), str(view), sys.executable, "-c",
                           code, str(path), str(view / path.name)],
                          capture_output=True, text=True, timeout=120, env=ENV)
    if "mount:" in done.stderr or "unshare:" in done.stderr:  # as `_read_only` does
        pytest.skip(f"cannot make a read-only view of a folder here: {done.stderr.strip()}")
    return path, view / path.name, done


def test_a_log_read_without_locks_that_a_writer_changes_meanwhile_is_not_said_to_be_read(tmp_path):
    """The folder is read-only only for this reader: its owner, or another mount of it, may write the log
    while it is read without locks. The writer's checkpoint rewrites pages of the file under the
    reader; the read is refused as one of a log that changed, not passed off as the log."""
    path, seen, done = _beside_a_writer(tmp_path, CHANGED_WHILE_READ)
    assert done.returncode == 0 and "Traceback" not in done.stderr, done.stderr
    assert done.stdout.startswith(f"refused: the study log {seen} changed while it was read"), done.stdout
    with StudyLog(path, readonly=True) as log:
        assert log.counts()["comments"] == 4


CHANGED_THEN_CLOSED_IN_A_HANDLER = """
import sys
from pathlib import Path
from modlens.studylog.connection import StudyLogError
from modlens.studylog.store import StudyLog

writable, read_only = Path(sys.argv[1]), Path(sys.argv[2])
reader = StudyLog(read_only, readonly=True)
n = reader.counts()["comments"]  # no snapshot: the close is what checks the read
with StudyLog(writable) as writer:
    writer.add_comment("youtube", "late", None, "written while the report read")
try:
    raise LookupError("the caller's own, handled")
except LookupError:
    try:
        reader.close()  # inside the caller's handler: sys.exc_info() is the handled error
        print("read", n)
    except StudyLogError as err:
        print("refused:", err)
with StudyLog(read_only, readonly=True) as again:  # the with block's own error is the one that leaves it
    again.counts()
    with StudyLog(writable) as writer:
        writer.add_comment("youtube", "later", None, "written while the block failed")
    try:
        with again:
            raise KeyError("the block's own")
    except KeyError as err:
        print("kept:", err)
"""


def test_a_log_read_without_locks_is_checked_when_closed_inside_a_callers_except_block(tmp_path):
    """A reader without a snapshot (the fusion report's) relies on its close to refuse a read of a log that
    changed. A close inside some unrelated handler of its caller sees an exception in `sys.exc_info()`;
    the check is still made: the read is refused, not passed on. A `with` block that fails keeps its own
    error (the check is skipped for it only)."""
    _, seen, done = _beside_a_writer(tmp_path, CHANGED_THEN_CLOSED_IN_A_HANDLER)
    assert done.returncode == 0 and "Traceback" not in done.stderr, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0].startswith(f"refused: the study log {seen} changed while it was read"), done.stdout
    assert lines[1:] == ["kept: \"the block's own\""], done.stdout


EXPORT_WHILE_WRITTEN = """
import sys
from pathlib import Path
from modlens.studylog.connection import StudyLogError
from modlens.studylog.export import export
from modlens.studylog.store import StudyLog
from modlens.studylog.tables import ExportTable, derived

writable, read_only, out = Path(sys.argv[1]), Path(sys.argv[2]), Path(sys.argv[3])
export(read_only, out)  # the log as it was: the export to keep
before = {p.name: p.read_bytes() for p in out.iterdir()}

def write_meanwhile(log):  # a writer reaching the log another way, while the export reads it
    with StudyLog(writable) as writer:
        writer.add_comment("youtube", f"late{len(writer.query('SELECT 1 FROM comments'))}", None, "written meanwhile")
    return ExportTable("late", "what was read after the writer", "", (derived("n", "int", "a number"),)), [(1,)], {}

try:
    export(read_only, out, derived=[write_meanwhile])
    print("exported")
except StudyLogError as err:
    print("refused:", err)
after = {p.name: p.read_bytes() for p in out.iterdir()}
print("kept" if after == before else f"changed: {sorted(after)} (before: {sorted(before)})")
fresh = out.with_name("fresh")
try:
    export(read_only, fresh, derived=[write_meanwhile])
except StudyLogError:
    print("fresh:", sorted(p.name for p in fresh.iterdir()) if fresh.exists() else "not made")
"""


def test_an_export_refused_as_changed_while_read_leaves_the_folder_as_it_was(tmp_path):
    """The export's read is checked once all its tables are read; a refused read writes none of its
    tables into the folder (they would sit beside an earlier export's manifest, or none): the earlier
    export there is left whole, and a folder the export made is not left behind."""
    out = tmp_path / "out"
    _, seen, done = _beside_a_writer(tmp_path, EXPORT_WHILE_WRITTEN.replace("sys.argv[3]", repr(str(out))))
    assert done.returncode == 0 and "Traceback" not in done.stderr, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0].startswith(f"refused: the study log {seen} changed while it was read"), done.stdout
    assert lines[1:] == ["kept", "fresh: not made"], done.stdout


def test_a_file_that_is_not_a_log_is_still_not_a_modlens_study_log(tmp_path):
    path = tmp_path / "notes.sqlite"
    path.write_text("these are my notes, not a database\n" * 200, encoding="utf-8")
    for command in ("report", "rescore"):
        done = subprocess.run([sys.executable, "-m", "modlens", command, "--db", str(path)], capture_output=True,
                              text=True, timeout=120, env=ENV)
        assert done.returncode != 0 and "Traceback" not in done.stderr, done.stderr
        assert f"{path}: not a modlens study log (file is not a database)" in done.stderr, done.stderr
    folder = tmp_path / "logs"
    folder.mkdir()
    done = subprocess.run([sys.executable, "-m", "modlens", "report", "--db", str(folder)], capture_output=True,
                          text=True, timeout=120, env=ENV)
    assert done.returncode == 1 and "Traceback" not in done.stderr, done.stderr
    assert f"{folder}: not a modlens study log (a folder)" in done.stderr, done.stderr


def _wal_database(path: Path, *statements: str) -> Path:
    """A SQLite database in WAL mode at `path` (its folder made), closed after `statements`."""
    path.parent.mkdir()
    con = sqlite3.connect(path, isolation_level=None)
    assert con.execute("PRAGMA journal_mode = WAL").fetchone()[0] == "wal"
    for statement in statements:
        con.execute(statement)
    con.close()
    return path


def test_a_wal_sqlite_file_that_is_not_a_log_in_a_read_only_folder_is_not_a_modlens_study_log(tmp_path):
    """Opening it fails as a log's open does (its -wal and -shm cannot be made), but its header says
    it is no modlens log: telling the user to copy it out of the folder would only lead to the same
    answer later."""
    path = _wal_database(tmp_path / "logs" / "other.sqlite", "CREATE TABLE notes (body TEXT)",
                         "INSERT INTO notes VALUES ('not a study')")
    folder = path.parent
    assert sorted(p.name for p in folder.iterdir()) == ["other.sqlite"]
    done = _read_only(folder, [sys.executable, "-m", "modlens", "report", "--db", str(path)])
    assert done.returncode == 1 and "Traceback" not in done.stderr, done.stderr
    assert f"{path}: not a modlens study log" in done.stderr, done.stderr
    assert "cannot be opened now" not in done.stderr, done.stderr


def test_a_log_of_a_newer_schema_in_a_read_only_folder_says_both(tmp_path):
    """A WAL database whose schema version is above this modlens's: its header cannot tell a newer
    modlens's log from another program's, so the error says what is known of it (cannot be opened
    here now; newer than this modlens reads), not "not a modlens study log"."""
    from modlens.studylog.schema import SCHEMA_VERSION

    path = _wal_database(tmp_path / "logs" / "newer.sqlite", "CREATE TABLE studies (study_id TEXT)",
                         f"PRAGMA user_version = {SCHEMA_VERSION + 1}")
    folder = path.parent
    done = _read_only(folder, [sys.executable, "-m", "modlens", "report", "--db", str(path)])
    assert done.returncode != 0 and "Traceback" not in done.stderr, done.stderr
    assert "not a modlens study log" not in done.stderr, done.stderr
    assert "cannot be opened now" in done.stderr and f"schema version {SCHEMA_VERSION + 1} is newer" in done.stderr
    assert "upgrade modlens" in done.stderr, done.stderr


def _no_file_reading_override() -> None:
    """For root: drop CAP_DAC_OVERRIDE and CAP_DAC_READ_SEARCH (capability numbers 1 and 2) from the
    bounding set with prctl(PR_CAPBSET_DROP), so the command it runs meets file modes as any user does."""
    libc = ctypes.CDLL(None, use_errno=True)
    for capability in (1, 2):
        if libc.prctl(24, capability, 0, 0, 0) != 0:
            raise OSError(ctypes.get_errno(), "prctl(PR_CAPBSET_DROP)")


@pytest.mark.parametrize("command", ["report", "rescore"])
def test_a_log_this_user_may_not_read_is_said_to_be_unreadable(tmp_path, command):
    """SQLite says only "unable to open database file" (SQLITE_CANTOPEN): no free space or read-only
    folder would help, so the answer names the permissions instead."""
    path = _valid_log(tmp_path / "logs")
    path.chmod(0o000)
    try:
        done = subprocess.run([sys.executable, "-m", "modlens", command, "--db", str(path)], capture_output=True,
                              text=True, timeout=120, env=ENV,
                              preexec_fn=_no_file_reading_override if os.geteuid() == 0 else None)
    finally:
        path.chmod(0o600)
    assert done.returncode == 1 and "Traceback" not in done.stderr, done.stderr
    assert f"the study log {path} cannot be read (permissions: owner " in done.stderr, done.stderr
    assert "mode 0000" in done.stderr and "cannot be opened now" not in done.stderr, done.stderr
    assert "not a modlens study log" not in done.stderr, done.stderr


def test_a_fresh_empty_log_under_a_file_size_limit_cannot_be_opened_now(tmp_path):
    """The empty file a writer creates before SQLite writes its first page is a log being begun."""
    path = tmp_path / "new.sqlite"
    path.touch(mode=0o600)
    done = subprocess.run([sys.executable, "-m", "modlens", "rescore", "--db", str(path)], capture_output=True,
                          text=True, preexec_fn=_no_file_writes, timeout=120, env=ENV)
    _says_cannot_open_now(done, path)
    assert path.read_bytes() == b""


def _rollback_mode(path: Path) -> Path:
    """`path`, a valid log, set to a rollback journal (what `sqlite3 log.sqlite 'PRAGMA journal_mode=DELETE'`
    or a copying tool that resets it leaves): header bytes 18 and 19 become 1, legacy format."""
    con = sqlite3.connect(path, isolation_level=None)
    assert con.execute("PRAGMA journal_mode = DELETE").fetchone()[0] == "delete"
    con.close()
    assert path.read_bytes()[18:20] == b"\x01\x01"
    return path


def test_a_log_in_rollback_mode_is_still_a_log_and_a_writer_makes_it_wal_again(tmp_path):
    path = _rollback_mode(_valid_log(tmp_path / "logs"))
    with StudyLog(path, readonly=True) as log:  # a reader reads it as it is
        assert "studies" in log.table_names()
    StudyLog(path).close()
    assert path.read_bytes()[18:20] == b"\x02\x02"


@pytest.mark.parametrize("where", ["file-size limit", "read-only folder"])
def test_a_log_in_rollback_mode_that_a_writer_cannot_switch_to_wal_says_why(tmp_path, where):
    """A writer switches a rollback-mode log back to WAL, which writes its header and creates its -wal
    and -shm: where that cannot be done the log is one that cannot be opened now, never "not a modlens
    study log", and the error says the log is in rollback mode and what the writer had to create."""
    path = _rollback_mode(_valid_log(tmp_path / "logs"))
    before = path.read_bytes()
    argv = [sys.executable, "-m", "modlens", "rescore", "--db", str(path)]
    if where == "file-size limit":
        done = subprocess.run(argv, capture_output=True, text=True, preexec_fn=_no_file_writes, timeout=120, env=ENV)
    else:
        done = _read_only(path.parent, argv)
    _says_cannot_open_now(done, path)
    assert "rollback-journal mode" in done.stderr and f"{path.name}-wal" in done.stderr, done.stderr
    assert path.read_bytes() == before


def test_a_log_this_user_may_read_but_not_write_is_said_to_be_not_writable_by_this_user(tmp_path):
    """A writer's open of a log it may only read (mode 0444, or another user's 0644 file): SQLite opens it
    read-only without a word and refuses the first write with "attempt to write a readonly database".
    Neither free space nor a writable folder would help: the error says the file is not writable by
    this user, with its owner and mode, and nothing is written. As root the command runs without
    CAP_DAC_OVERRIDE, so it meets the file's mode as any user does."""
    path = _valid_log(tmp_path / "logs")
    before = path.read_bytes()
    path.chmod(0o444)
    try:
        done = subprocess.run([sys.executable, "-m", "modlens", "rescore", "--db", str(path)], capture_output=True,
                              text=True, timeout=120, env=ENV,
                              preexec_fn=_no_file_reading_override if os.geteuid() == 0 else None)
    finally:
        path.chmod(0o600)
    assert done.returncode == 1 and "Traceback" not in done.stderr, done.stderr
    assert f"the study log {path} is not writable by this user (permissions: owner " in done.stderr, done.stderr
    assert "mode 0444" in done.stderr and "chmod" in done.stderr, done.stderr
    assert "free space" not in done.stderr and "folder" not in done.stderr, done.stderr
    assert path.read_bytes() == before


@pytest.mark.parametrize("command", ["report", "rescore"])
def test_a_log_whose_shm_this_user_may_not_use_says_so(tmp_path, command):
    """A writer has the log open (its -wal and -shm exist) and its -shm is not this user's to use (another
    user's daemon made it 0600; here mode 0000, and as root the command runs without CAP_DAC_OVERRIDE):
    SQLite says only "unable to open database file". The folder is writable and the disk has room, so
    the error names the -shm and the permissions, not free space, a file-size limit or the folder."""
    path = _log_with_comments(tmp_path / "logs")
    shm = path.with_name(path.name + "-shm")
    with StudyLog(path) as writer:
        writer.add_comment("youtube", "open", None, "written while the writer holds the log")
        assert shm.exists()
        shm.chmod(0o000)
        try:
            done = subprocess.run([sys.executable, "-m", "modlens", command, "--db", str(path)],
                                  capture_output=True, text=True, timeout=120, env=ENV,
                                  preexec_fn=_no_file_reading_override if os.geteuid() == 0 else None)
        finally:
            shm.chmod(0o600)
    assert done.returncode == 1 and "Traceback" not in done.stderr, done.stderr
    assert f"the study log {path} cannot be opened by this user: its {shm.name} (permissions: owner " in done.stderr
    assert "mode 0000" in done.stderr, done.stderr
    assert "free space" not in done.stderr and "not a modlens study log" not in done.stderr, done.stderr
