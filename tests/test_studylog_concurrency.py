"""Waiting for the write lock (studylog/connection.py): every wait ends at one monotonic deadline,
never before it, and the error gives the seconds really waited. Writers opening a fresh log at
the same moment all get through (SQLite refuses one side of a simultaneous switch to WAL at once,
without calling its busy handler: that refusal is waited out, not reported as a lock held 10 s)."""
from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from modlens.studylog import connection
from modlens.studylog.store import StudyLog
from modlens.studylog.connection import StudyLogError

PAIRS = 12
LOGS_PER_PAIR = 3


def hold_write_lock(db: Path, seconds: float, release: threading.Event | None = None
                    ) -> tuple[threading.Thread, threading.Event]:
    """A foreign writer (plain sqlite3, as a DB browser would be) holding BEGIN IMMEDIATE on `db` for `seconds`,
    or, given `release`, until the test sets it (at most `seconds`)."""
    holding = threading.Event()

    def hold() -> None:
        other = sqlite3.connect(db, isolation_level=None)
        other.execute("BEGIN IMMEDIATE")
        holding.set()
        if release is None:
            time.sleep(seconds)
        else:
            release.wait(seconds)
        other.execute("ROLLBACK")
        other.close()

    thread = threading.Thread(target=hold)
    thread.start()
    assert holding.wait(10)
    return thread, holding


def test_opening_a_fresh_log_another_writer_holds_waits_for_it(tmp_path):
    # a fresh file that another connection is writing: switching it to WAL is refused at once by
    # SQLite (no busy handler); it used to fail in no time saying "stayed locked ... for 10 s"
    db = tmp_path / "log.sqlite"
    thread, _ = hold_write_lock(db, 0.5)
    t0 = time.monotonic()
    try:
        with StudyLog(db) as log, log.transaction():
            log.ensure_study("s", "t", {})
    finally:
        thread.join()
    assert time.monotonic() - t0 >= 0.3  # it waited for the holder
    with StudyLog(db, readonly=True) as log:
        assert [r["study_id"] for r in log.query("SELECT study_id FROM studies")] == ["s"]


def test_a_lock_never_released_fails_after_the_deadline_with_the_real_wait(tmp_path, monkeypatch):
    monkeypatch.setattr(connection, "BUSY_TIMEOUT_MS", 400)
    fresh, existing = tmp_path / "fresh.sqlite", tmp_path / "existing.sqlite"
    StudyLog(existing).close()
    for db in (fresh, existing):
        release = threading.Event()  # the lock is held until the writer has given up, however slow the machine
        thread, _ = hold_write_lock(db, 60, release)
        t0 = time.monotonic()
        try:
            with pytest.raises(StudyLogError) as err:
                with StudyLog(db) as log, log.transaction():
                    log.ensure_study("s", "t", {})
            waited = time.monotonic() - t0
        finally:
            release.set()
            thread.join()
        assert waited >= 0.4, db.name  # never before the deadline
        said = float(str(err.value).split(" for ")[1].split(" s ")[0])
        assert 0.4 <= said <= waited + 0.05, (db.name, str(err.value))  # the seconds really waited
        assert err.value.fix and "let the other writer finish" in err.value.fix


WRITER = r"""
import sys, time
from pathlib import Path
from modlens.studylog.store import StudyLog
folder, start, who = Path(sys.argv[1]), float(sys.argv[2]), sys.argv[3]
for k in range(int(sys.argv[4])):
    time.sleep(max(0.0, start + 0.3 * k - time.time()))  # both writers of a pair open log k together
    with StudyLog(folder / f"log{k}.sqlite") as log, log.transaction():
        log.ensure_study(f"study-{who}", "written in a transaction", {"k": k})
        log.add_comment("pairs", f"c-{who}", None, f"comment of writer {who}")
"""


def test_twelve_pairs_of_writers_on_fresh_logs_all_finish(tmp_path):
    start = time.time() + 3.0  # every child imported and waiting by then
    procs = []
    for pair in range(PAIRS):
        folder = tmp_path / f"pair{pair}"
        folder.mkdir()
        for who in ("a", "b"):
            procs.append(subprocess.Popen(
                [sys.executable, "-c", WRITER, str(folder), str(start), who, str(LOGS_PER_PAIR)],
                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True))
    failures = []
    for proc in procs:
        _, err = proc.communicate(timeout=120)
        if proc.returncode != 0:
            failures.append(err.strip().splitlines()[-1] if err.strip() else f"exit {proc.returncode}")
    assert not failures, failures
    for pair in range(PAIRS):
        for k in range(LOGS_PER_PAIR):
            with StudyLog(tmp_path / f"pair{pair}" / f"log{k}.sqlite", readonly=True) as log:
                assert [r["study_id"] for r in log.query("SELECT study_id FROM studies ORDER BY 1")] == \
                    ["study-a", "study-b"]
                assert log.query("SELECT count(*) AS n FROM comments")[0]["n"] == 2


def test_the_log_and_its_wal_and_shm_files_are_private(tmp_path):
    db = tmp_path / "log.sqlite"
    old_umask = os.umask(0o022)  # the usual umask, which left the files world-readable
    try:
        with StudyLog(db) as log, log.transaction():
            log.ensure_study("s", "t", {})
            files = [db, Path(f"{db}-wal"), Path(f"{db}-shm")]
            modes = {p.name: oct(p.stat().st_mode & 0o777) for p in files}
    finally:
        os.umask(old_umask)
    assert modes == {p.name: "0o600" for p in files}
