"""Several writers on one study log: two `modlens audit` processes at once, an audit beside a
running `modlens serve` that is receiving comments. Each waits for the other's write lock
(BEGIN IMMEDIATE, busy timeout, retries) and nothing is lost; a lock held too long is a clear
error, not a traceback."""
from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from modlens.cli import main
from modlens.detectors import registry
from modlens.studylog import connection
from modlens.studylog.store import StudyLog
from modlens.studylog.connection import StudyLogError

from daemon_helpers import serve_process, write_study

# Items per audit: enough small transactions (chunks of 8) that a run outlasts the start-up of the process
# it must overlap with (a second audit, a feed: about 2 s here), with seconds to spare. Whether they did is
# asserted, not assumed. 600 once took a few seconds; since the audit's own cost fell, 0.4 s, and two
# audits started together no longer overlapped (one started 0.3 s after the other had finished).
N_ITEMS = 3000  # two audits started together: about 2 s each here
N_BESIDE_FEED = 8000  # an audit a feed starts beside once it writes: about 5 s here
# every text the audits score: comments and the variants the datasets record (HateCheck's spell_* pairs)
TEXTS = "SELECT count(*) FROM (SELECT text_id FROM comments UNION SELECT text_id FROM variants)"


@pytest.fixture(scope="module")
def profanity():
    assert registry.status("profanity-check").status == "loaded"  # installed with modlens


def audit_process(db: Path, dataset: str, home: Path, *extra: str, n: int = N_ITEMS) -> subprocess.Popen:
    env = {**os.environ, "MODLENS_HOME": str(home)}
    return subprocess.Popen([sys.executable, "-m", "modlens", "audit", dataset, "--db", str(db), "--detectors",
                             "profanity-check", "--limit", str(n), "--chunk", "8", "--quiet", *extra],
                            env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def finish(proc: subprocess.Popen, timeout: float = 240) -> str:
    out, err = proc.communicate(timeout=timeout)
    assert proc.returncode == 0, err
    assert "Traceback" not in err and "database is locked" not in err
    return out


def rows(db: Path, sql: str, params: tuple = ()) -> list[tuple]:
    conn = sqlite3.connect(db)
    try:
        return conn.execute(sql, params).fetchall()
    finally:
        conn.close()


def overlap(a: tuple[str, str], b: tuple[str, str]) -> bool:
    """Two [start, end] ISO-time intervals (same UTC format) share a moment."""
    return a[0] < b[1] and b[0] < a[1]


def test_two_audit_processes_on_one_log_both_finish_without_loss(profanity, tmp_path, modlens_home):
    db = tmp_path / "shared.sqlite"
    first, second = audit_process(db, "hatecheck", modlens_home), audit_process(db, "davidson", modlens_home)
    finish(first), finish(second)

    runs = {r[0]: r[1:] for r in rows(db, "SELECT dataset, status, n_items, n_done, started_at, finished_at FROM audit_runs")}
    assert set(runs) == {"hatecheck", "davidson"}
    for status, n_items, n_done, *_ in runs.values():
        assert (status, n_items, n_done) == ("finished", N_ITEMS, N_ITEMS)
    # they really ran at the same time, their chunks interleaved in the log
    assert overlap(runs["hatecheck"][3:], runs["davidson"][3:])
    spans = dict(rows(db, "SELECT platform, min(first_seen) || '|' || max(first_seen) FROM comments GROUP BY platform"))
    assert overlap(tuple(spans["dataset:hatecheck"].split("|")), tuple(spans["dataset:davidson"].split("|")))
    # every row of both
    counts = dict(rows(db, "SELECT platform, count(*) FROM comments GROUP BY platform"))
    assert counts == {"dataset:hatecheck": N_ITEMS, "dataset:davidson": N_ITEMS}
    assert rows(db, "SELECT count(*) FROM run_items")[0][0] == 2 * N_ITEMS
    texts = rows(db, TEXTS)[0][0]
    assert rows(db, "SELECT count(*), count(toxicity) FROM scores")[0] == (texts, texts)
    labelled = dict(rows(db, "SELECT c.platform, count(DISTINCT g.comment_id) FROM gold_labels g "
                             "JOIN comments c USING (comment_id) GROUP BY c.platform"))
    assert labelled == {"dataset:hatecheck": N_ITEMS, "dataset:davidson": N_ITEMS}


def test_an_audit_beside_a_running_daemon_receiving_comments(profanity, tmp_path, modlens_home):
    db = tmp_path / "shared.sqlite"
    study = write_study(tmp_path / "study.toml", ["profanity-check"])
    daemon, info = serve_process(modlens_home, "--config", str(study), "--db", str(db))
    try:
        audit = audit_process(db, "davidson", modlens_home, n=N_BESIDE_FEED)
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:  # feed once the audit is writing
            if db.exists() and rows(db, "SELECT count(*) FROM run_items")[0][0] > 0:
                break
            assert audit.poll() is None, audit.communicate()[1]
            time.sleep(0.05)
        comments = tmp_path / "comments.csv"
        n_fed = 150
        comments.write_text("text,platform,url\n" + "".join(
            f"comment {i} you idiot,youtube,https://www.youtube.com/watch?v=v{i % 3}\n" for i in range(n_fed)))
        feed = subprocess.run([sys.executable, "-m", "modlens", "feed", str(comments), "--no-variants",
                               "--page-size", "5", "--daemon", info["url"]],
                              env={**os.environ, "MODLENS_HOME": str(modlens_home)}, capture_output=True, text=True,
                              timeout=240)
        assert feed.returncode == 0, feed.stderr
        assert len(feed.stdout.splitlines()) == n_fed
        finish(audit)
        assert daemon.poll() is None  # the daemon's writer never gave up
    finally:
        daemon.send_signal(signal.SIGTERM)
        assert daemon.wait(30) == 0

    counts = dict(rows(db, "SELECT platform, count(*) FROM comments GROUP BY platform"))
    assert counts == {"dataset:davidson": N_BESIDE_FEED, "youtube": n_fed}
    assert rows(db, "SELECT count(*) FROM pages WHERE platform = 'youtube'")[0][0] == 3
    run = rows(db, "SELECT status, n_done, started_at, finished_at FROM audit_runs")[0]
    assert run[:2] == ("finished", N_BESIDE_FEED)
    fed = rows(db, "SELECT min(first_seen), max(first_seen) FROM comments WHERE platform = 'youtube'")[0]
    assert overlap(run[2:], fed)  # the daemon wrote while the audit was writing
    texts = rows(db, TEXTS)[0][0]
    assert rows(db, "SELECT count(*), count(toxicity) FROM scores")[0] == (texts, texts)


def test_a_transaction_waits_for_another_writer_instead_of_failing(tmp_path):
    db = tmp_path / "log.sqlite"
    waiter = StudyLog(db)
    holding = threading.Event()

    def hold_the_lock() -> None:
        with StudyLog(db) as holder, holder.transaction():
            holder.ensure_study("a", "held", {})
            holding.set()
            time.sleep(0.5)

    thread = threading.Thread(target=hold_the_lock)
    thread.start()
    holding.wait(5)
    t0 = time.monotonic()
    with waiter.transaction():  # reads, then writes: must not fail on the other writer's commit
        before = waiter.query("SELECT count(*) AS n FROM studies")[0]["n"]
        waiter.ensure_study("b", "waited", {})
    waited = time.monotonic() - t0
    thread.join()
    assert waited >= 0.3 and before == 1
    assert [r["study_id"] for r in waiter.query("SELECT study_id FROM studies ORDER BY study_id")] == ["a", "b"]
    waiter.close()


def test_a_lock_held_too_long_is_a_clear_error(tmp_path, monkeypatch, capsys, data_dir):
    monkeypatch.setattr(connection, "BUSY_TIMEOUT_MS", 200)
    db = tmp_path / "log.sqlite"
    StudyLog(db).close()
    other = sqlite3.connect(db, isolation_level=None)
    other.execute("BEGIN IMMEDIATE")  # a foreign writer that never commits
    try:
        with StudyLog(db) as log, pytest.raises(StudyLogError, match="stayed locked by another writer"):
            with log.transaction():
                log.ensure_study("s", "t", {})
        lexical = tmp_path / "c.csv"
        lexical.write_text("text,toxic\nyou idiot,1\nhello,0\n")
        # a detector that needs no optional package: the file's own column as recorded scores
        assert main(["audit", str(lexical), "--db", str(db), "--detectors", f"cached:{lexical}:text=toxic",
                     "--quiet"]) == 1
        err = capsys.readouterr().err
        assert "stayed locked by another writer" in err and "fix:" in err and "Traceback" not in err
    finally:
        other.execute("ROLLBACK")
        other.close()


# A writer that commits short transactions back to back, as an audit's chunks do: its next BEGIN
# IMMEDIATE comes microseconds after each COMMIT.
BACK_TO_BACK = r"""
import sys, time
from modlens.studylog.store import StudyLog
db, n, hold = sys.argv[1], int(sys.argv[2]), float(sys.argv[3])
with StudyLog(db) as log:
    for k in range(n):
        with log.transaction():
            log.add_comment("busy", f"b{k}", None, f"back to back {k}")
            time.sleep(hold)  # the lock held, as by a chunk's writes
"""
N_BUSY, HOLD_S, N_WAITER, WAITER_PAUSE_S = 150, 0.01, 5, 0.03


def test_a_writer_gets_in_between_another_writers_back_to_back_transactions(tmp_path):
    # SQLite's own wait sleeps up to 100 ms between looks and missed the microseconds between the
    # other's COMMIT and its next BEGIN IMMEDIATE: the waiter got in only once the other writer was
    # done (a page of the daemon waited up to a second beside a fast audit). Trying every few ms
    # alone is not enough either: the other writer is asleep in its own wait only when it lost a
    # race. Now the waiter gets the lock after the transaction in progress. Counted in commit order
    # (rowids), not timed.
    db = tmp_path / "log.sqlite"
    StudyLog(db).close()
    busy = subprocess.Popen([sys.executable, "-c", BACK_TO_BACK, str(db), str(N_BUSY), str(HOLD_S)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    busy_rows = "SELECT count(*) FROM comments WHERE platform = 'busy'"
    try:
        deadline = time.monotonic() + 60
        while rows(db, busy_rows)[0][0] < 3:  # the other writer is under way
            assert busy.poll() is None and time.monotonic() < deadline, busy.communicate()[1]
            time.sleep(0.005)
        passed = []  # the other's commits while this writer waited, one count per transaction
        with StudyLog(db) as log:
            for i in range(N_WAITER):
                before = log.scalar(busy_rows)
                with log.transaction():
                    passed.append(log.scalar(busy_rows) - before)
                    log.add_comment("waiter", f"w{i}", None, f"waiter {i}")
                # the other writer back to back again before the next wait (a page comes now and then):
                # a writer that just committed must not keep the lock by being the one awake then
                time.sleep(WAITER_PAUSE_S)
        _, err = busy.communicate(timeout=120)
        assert busy.returncode == 0, err
    finally:
        if busy.poll() is None:
            busy.kill()
            busy.wait()
    order = [p for (p,) in rows(db, "SELECT platform FROM comments ORDER BY comment_id")]
    assert order.count("busy") == N_BUSY and order.count("waiter") == N_WAITER
    last_busy = max(i for i, p in enumerate(order) if p == "busy")
    got_in = sum(1 for i, p in enumerate(order) if p == "waiter" and i < last_busy)
    seen = "".join("W" if p == "waiter" else "." for p in order)  # commit order, W: the waiter's
    assert got_in == N_WAITER, f"{got_in} of {N_WAITER} got in while the other wrote: {seen}"
    # about one of the other's transactions per wait: the one in progress (two when the waiter asked
    # just as one began). The median, because a waiter this loaded machine deschedules between its
    # read and its BEGIN lets more of the other's commits by, which is not a wait for the lock.
    assert sorted(passed)[N_WAITER // 2] <= 2, passed


def test_a_writer_stopped_in_the_turnstile_delays_the_others_once(tmp_path):
    # a writer waiting for the lock holds the turnstile; if it stops there (Ctrl-Z) the others pass
    # it by after TURNSTILE_WAIT_MAX_S, once, instead of failing at the deadline
    import fcntl

    db = tmp_path / "log.sqlite"
    turnstile = tmp_path / f"log.sqlite{connection.TURNSTILE_SUFFIX}"
    stopped = subprocess.Popen([sys.executable, "-c", (
        "import fcntl, os, sys, time\n"
        f"fd = os.open({str(turnstile)!r}, os.O_RDWR | os.O_CREAT, 0o600)\n"
        "fcntl.flock(fd, fcntl.LOCK_EX)\nprint('held', flush=True)\ntime.sleep(120)\n")],
        stdout=subprocess.PIPE, text=True)
    try:
        assert stopped.stdout is not None and stopped.stdout.readline() == "held\n"
        t0 = time.monotonic()
        with StudyLog(db) as log:  # opening a fresh log writes its schema: the first transaction
            first = time.monotonic() - t0
            t0 = time.monotonic()
            for k in range(3):
                with log.transaction():
                    log.ensure_study(f"s{k}", "after", {})
            later = time.monotonic() - t0
        assert first >= connection.TURNSTILE_WAIT_MAX_S  # it waited its turn first
        assert later < 3 * connection.TURNSTILE_WAIT_MAX_S  # then no more: 3 transactions, not 3 waits
    finally:
        stopped.kill()
        stopped.wait()
    # the holder gone (killed: the kernel drops its lock), the turnstile is free again
    fd = os.open(turnstile, os.O_RDWR)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    finally:
        os.close(fd)


def test_the_turnstile_file_is_private_and_made_only_when_a_writer_waited(tmp_path):
    db = tmp_path / "log.sqlite"
    turnstile = Path(f"{db}{connection.TURNSTILE_SUFFIX}")
    with StudyLog(db) as log, log.transaction():  # alone: nothing to take turns with
        log.ensure_study("s", "t", {})
    assert not turnstile.exists()
    old_umask = os.umask(0o022)
    try:
        other = sqlite3.connect(db, isolation_level=None, check_same_thread=False)
        other.execute("BEGIN IMMEDIATE")  # a foreign writer: this one has to wait
        thread = threading.Thread(target=lambda: (time.sleep(0.2), other.execute("ROLLBACK")))
        thread.start()
        with StudyLog(db) as log, log.transaction():
            log.ensure_study("t", "waited", {})
        thread.join()
        other.close()
    finally:
        os.umask(old_umask)
    assert oct(turnstile.stat().st_mode & 0o777) == "0o600"
