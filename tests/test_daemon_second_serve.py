"""A second `modlens serve` on a study log another daemon is serving (a second terminal: the same
port) stops with "cannot listen", but it opened the log first: it closed every session the running
daemon had open as one a crashed daemon left ('recovery', ended at its last activity), and a second
daemon on another port ended them as 'shutdown' when it stopped. The running daemon went on rating
into sessions the log said had ended. Now a daemon closes open sessions at its start only when no
other daemon serves the log (`live.recovery.Serving`), and ends only its own when it stops; a dead
daemon's are still closed by the next start (tests/test_daemon_recovery.py)."""
from __future__ import annotations

import asyncio
import json
import os
import sqlite3
import subprocess
import sys

from modlens import pairing

from daemon_helpers import serve_process, write_study


async def _open_session(url: str, token: str, rater: str, hold: asyncio.Event, opened: asyncio.Event) -> None:
    import websockets

    async with websockets.connect(url, subprotocols=["modlens.v1", f"modlens.token.{token}"]) as ws:
        await ws.send(json.dumps({"type": "hello", "id": "h", "protocol": 1, "client": "test", "token": token,
                                  "rater_id": rater}))
        assert json.loads(await ws.recv())["type"] == "hello_ok"
        opened.set()
        await hold.wait()


def _sessions(db) -> dict[str, tuple]:
    with sqlite3.connect(db) as conn:
        return {r[0]: r[1:] for r in conn.execute("SELECT rater_id, ended_at, ended_by FROM sessions")}


def test_a_second_serve_on_the_same_log_leaves_the_running_daemons_sessions_open(modlens_home, tmp_path):
    def then_one_on_another_port(study, db) -> None:
        # a second daemon that does serve (another port) and stops cleanly ends none of them either
        other, _ = serve_process(modlens_home, "--config", str(study), "--db", str(db))
        other.terminate()
        assert other.wait(60) == 0
        assert _sessions(db) == {"live-rater": (None, None)}

    _second_serve_on_a_taken_port(modlens_home, tmp_path, tmp_path / "log.sqlite", lambda db: db,
                                  then=then_one_on_another_port)


def _second_serve_on_a_taken_port(modlens_home, tmp_path, db, name_it, then=None) -> None:
    """The daemon serves `db`; a second `modlens serve` given `name_it(db)` (another name of the same
    log, made once the daemon made the log) on its port stops with 'cannot listen': the running
    daemon's session stays open. `then(study, db)`: run after that, the session still open."""
    study = write_study(tmp_path / "study.toml", [])
    token = pairing.ensure()
    proc, info = serve_process(modlens_home, "--config", str(study), "--db", str(db))
    try:
        async def run() -> None:
            hold, opened = asyncio.Event(), asyncio.Event()
            task = asyncio.create_task(_open_session(info["url"], token, "live-rater", hold, opened))
            await asyncio.wait_for(opened.wait(), 30)
            assert _sessions(db) == {"live-rater": (None, None)}
            served_as = name_it(db)
            second = await asyncio.to_thread(
                subprocess.run, [sys.executable, "-m", "modlens", "serve", "--config", str(study), "--db",
                                 str(served_as), "--port", str(info["port"])],
                env={**os.environ, "MODLENS_HOME": str(modlens_home)}, capture_output=True, text=True, timeout=120)
            assert second.returncode != 0 and "cannot listen" in second.stderr + second.stdout
            assert _sessions(db) == {"live-rater": (None, None)}  # still open: the running daemon's
            if then is not None:
                await asyncio.to_thread(then, study, db)
            hold.set()
            await asyncio.wait_for(task, 30)

        asyncio.run(run())
    finally:
        proc.terminate()
        proc.wait(30)
    assert _sessions(db)["live-rater"][1] == "client"


def test_a_second_serve_through_a_symlink_to_the_log_leaves_the_running_daemons_sessions_open(modlens_home, tmp_path):
    def symlink(db):
        (tmp_path / "elsewhere").mkdir()
        link = tmp_path / "elsewhere" / "link.sqlite"
        link.symlink_to(db)
        return link

    _second_serve_on_a_taken_port(modlens_home, tmp_path, tmp_path / "log.sqlite", symlink)


def test_a_daemon_that_cannot_make_the_serving_lock_does_not_take_itself_for_alone(modlens_home, tmp_path):
    db = tmp_path / "log.sqlite"
    (tmp_path / "log.sqlite-serving").mkdir()  # the lock file cannot be opened: neither daemon knows
    _second_serve_on_a_taken_port(modlens_home, tmp_path, db, lambda db: db)
