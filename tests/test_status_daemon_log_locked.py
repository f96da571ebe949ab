"""`modlens status` against a running daemon whose study log cannot be read just now (another
process holds its write lock): the daemon answers with counts None, and status says the counts could
not be read, never "(no study log yet)" about a log that is there and in use."""
from __future__ import annotations

import json
import os
import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager

from daemon_helpers import TOKEN, daemon_thread, study
from modlens import paths, runtime
from modlens.cli import main
from modlens.studylog import connection


@contextmanager
def status_daemon(tmp_path) -> Iterator[None]:
    """A daemon on tmp_path/study.sqlite, paired and named in the runtime file `modlens status` reads."""
    with daemon_thread(tmp_path, study()) as url:
        paths.token_file().write_text(TOKEN)
        port = int(url.rsplit(":", 1)[1].removesuffix("/ws"))
        runtime.write_runtime({"host": "127.0.0.1", "port": port, "url": url, "pid": os.getpid(),
                               "db": str(tmp_path / "study.sqlite")})
        yield


@contextmanager
def log_locked(db) -> Iterator[None]:
    """Another writer holds the study log's write lock (a DB browser with a write open)."""
    holder = sqlite3.connect(db, isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")
    try:
        yield
    finally:
        holder.execute("ROLLBACK")
        holder.close()


def test_status_of_a_daemon_whose_log_is_locked_does_not_call_it_missing(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(connection, "BUSY_TIMEOUT_MS", 300)  # the daemon's wait for the lock, shortened
    monkeypatch.setenv("MODLENS_HOME", str(tmp_path / "home"))
    with status_daemon(tmp_path):
        assert main(["status", "--json"]) == 0
        assert json.loads(capsys.readouterr().out)["counts"]["studies"] == 1  # readable: counted

        with log_locked(tmp_path / "study.sqlite"):
            code = main(["status"])
            out = capsys.readouterr().out
    assert code == 0 and "daemon: running" in out
    assert "no study log yet" not in out
    assert "counts cannot be read now" in out


def test_status_waits_as_long_as_the_daemon_waits_for_its_log(tmp_path, monkeypatch, capsys):
    """The daemon answers `GET /status` once it has counted the log, which waits for the lock up to
    BUSY_TIMEOUT_MS: a daemon that waits that long is running, not "not running" (5.5 s: longer
    than the 5 s status used to give it)."""
    monkeypatch.setattr(connection, "BUSY_TIMEOUT_MS", 5_500)
    monkeypatch.setenv("MODLENS_HOME", str(tmp_path / "home"))
    with status_daemon(tmp_path):
        assert main(["status", "--json"]) == 0
        capsys.readouterr()
        with log_locked(tmp_path / "study.sqlite"):
            code = main(["status", "--json"])
            report = json.loads(capsys.readouterr().out)
    assert code == 0 and report["running"] is True and report["counts"] is None
    assert report["study_log"]["writable"] is False and "locked" in report["study_log"]["reason"]
