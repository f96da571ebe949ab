"""Crash safety for real: a writer process is killed with SIGKILL at random moments, many
times, on the same file; afterwards the log passes `PRAGMA integrity_check` and holds every
rating the process acknowledged (printed only after `submit` resolved, i.e. after COMMIT)."""
from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import time

import pytest

from modlens.studylog.store import StudyLog

# The child streams pages of comments plus ratings, as the daemon would, and prints the
# client rating id of each rating once its commit returned.
CHILD = r"""
import asyncio, sys
from modlens.studylog.store import LogWriter

db, run = sys.argv[1], sys.argv[2]

def page(log, n):
    log.ensure_study("crash", "crash test", {})
    log.ensure_rater("crash", "r1", None)
    pid = log.ensure_page("youtube", f"{run}-page-{n}", None, None)
    return [log.add_comment("youtube", f"{run}-{n}-{i}", pid, f"comment {run} {n} {i} " + "x" * (i * 37)) for i in range(20)]

async def rate(writer, cid, key):
    await writer.submit(lambda log: log.add_rating("crash", "r1", key, None, cid, {"toxicity": "toxic"},
                                                  {"vs_hard": "more"}, "toxic", False, 100))
    print(key, flush=True)

async def main():
    writer = LogWriter(db, max_delay_ms=2)
    await writer.start()
    print("ready", flush=True)
    n = 0
    while True:
        ids = await writer.submit(lambda log, n=n: page(log, n))
        await asyncio.gather(*(rate(writer, cid, f"{run}-{n}-{i}") for i, cid in enumerate(ids)))
        n += 1

asyncio.run(main())
"""


@pytest.mark.slow
def test_acknowledged_ratings_survive_sigkill(tmp_path):
    db = tmp_path / "crash.sqlite"
    script = tmp_path / "child.py"
    script.write_text(CHILD)
    rng = random.Random(1234)
    acknowledged: set[str] = set()
    kills = 0
    for run in range(20):
        child = subprocess.Popen([sys.executable, str(script), str(db), f"run{run}"],
                                 stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        assert child.stdout.readline().strip() == "ready", child.stderr.read()
        time.sleep(rng.uniform(0.01, 0.4))  # kill mid-stream, at a random point of a batch
        os.kill(child.pid, signal.SIGKILL)
        out, err = child.communicate(timeout=10)
        assert child.returncode == -signal.SIGKILL, err
        kills += 1
        acknowledged.update(line for line in out.split() if line.startswith("run"))

    assert kills == 20
    assert len(acknowledged) > 200  # the test must have had real writes in flight to mean anything
    with StudyLog(db) as log:  # opening for writing also recovers the WAL
        assert log.integrity_check() == "ok"
        assert log.conn.execute("PRAGMA foreign_key_check").fetchall() == []
        stored = {r["client_rating_id"] for r in log.query("SELECT client_rating_id FROM ratings")}
        missing = acknowledged - stored
        assert not missing, f"{len(missing)} acknowledged ratings lost, e.g. {sorted(missing)[:5]}"
        # every rating row is complete (its values were committed in the same transaction)
        assert log.query("SELECT count(*) AS n FROM ratings r WHERE NOT EXISTS "
                         "(SELECT 1 FROM rating_values v WHERE v.rating_id = r.rating_id)")[0]["n"] == 0
