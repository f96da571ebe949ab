"""The CLI around the daemon: `serve` (subprocess, real default detector), `feed`, `status`,
`pair`, and their errors."""
from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys

import pytest

from modlens.cli import main

from daemon_helpers import serve_process, write_study


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    """A real `modlens serve` with the real profanity-check detector."""
    home = tmp_path_factory.mktemp("served-home")
    study = write_study(home / "study.toml", ["profanity-check"])
    proc, info = serve_process(home, "--config", str(study), "--db", str(home / "log.sqlite"))
    yield home, proc, info
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        proc.wait(20)


@pytest.fixture
def daemon_home(served, monkeypatch):
    monkeypatch.setenv("MODLENS_HOME", str(served[0]))
    return served


def _lines(out: str) -> list[dict]:
    return [json.loads(line) for line in out.splitlines() if line.strip()]


def test_feed_csv_through_the_real_detector(daemon_home, tmp_path, capsys):
    path = tmp_path / "comments.csv"
    texts = ["you are a fucking idiot", "thanks for the lovely recipe"] * 12 + ["shut up, moron"]
    path.write_text("text\n" + "\n".join(f'"{t}"' for t in texts) + "\n")
    assert main(["feed", str(path), "--platform", "csvtest", "--url", "https://example.org/a"]) == 0
    out = _lines(capsys.readouterr().out)
    assert len(out) == 25 and len({o["key"] for o in out}) == 25
    by_key = {o["key"]: o for o in out}
    toxic, clean = by_key["row-1"]["detectors"]["profanity-check"], by_key["row-2"]["detectors"]["profanity-check"]
    assert toxic["name"] == "profanity-check" and toxic["version"] and toxic["error"] is None
    assert toxic["toxicity"] > 0.5 > clean["toxicity"]
    assert all(isinstance(o["comment_id"], int) for o in out)


def test_feed_jsonl_with_keys_concurrency_and_no_variants(daemon_home, tmp_path, capsys):
    path = tmp_path / "c.jsonl"
    path.write_text("".join(json.dumps({"id": f"j{i}", "body": f"comment number {i}"}) + "\n" for i in range(30)))
    args = ["feed", str(path), "--platform", "jsonltest", "--text-col", "body", "--key-col", "id",
            "--concurrency", "3", "--no-variants", "--page-size", "7"]
    assert main(args) == 0
    out = _lines(capsys.readouterr().out)
    assert sorted(o["key"] for o in out) == sorted(f"j{i}" for i in range(30))
    assert all("variants" not in o for o in out)
    # replaying the same file creates no new comments: the ids come back unchanged
    assert main(args) == 0
    again = {o["key"]: o["comment_id"] for o in _lines(capsys.readouterr().out)}
    assert again == {o["key"]: o["comment_id"] for o in out}


def test_status_and_pair_rotation_against_the_running_daemon(daemon_home, tmp_path, capsys):
    assert main(["status", "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["running"] and report["study_id"] == "cli-test"
    assert [d["name"] for d in report["detectors"]] == ["profanity-check"]
    assert report["detectors"][0]["status"] == "loaded" and report["counts"]["studies"] == 1

    assert main(["pair", "--json"]) == 0
    old = json.loads(capsys.readouterr().out)["token"]
    assert main(["pair", "--rotate", "--json"]) == 0
    new = json.loads(capsys.readouterr().out)["token"]
    assert new != old
    path = tmp_path / "one.csv"
    path.write_text("text\nhello\n")
    assert main(["feed", str(path), f"--token={old}"]) == 1
    assert "HTTP 401" in capsys.readouterr().err
    assert main(["feed", str(path), "--no-variants"]) == 0  # the daemon picked up the new token


def test_serve_sigterm_drains_and_removes_runtime_file(tmp_path, modlens_home):
    study = write_study(tmp_path / "study.toml", [])
    proc, info = serve_process(modlens_home, "--config", str(study), "--db", str(tmp_path / "log.sqlite"))
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(20) == 0
    log = (modlens_home / "serve.log").read_text()
    assert "study log" in log and "ws://127.0.0.1:" in log and "modlens pair" in log and "stopped" in log
    assert not (modlens_home / "daemon.json").exists()
    assert main(["status", "--json", "--db", str(tmp_path / "log.sqlite")]) == 1


def test_a_sigterm_the_moment_the_runtime_file_appears_still_drains(tmp_path, modlens_home):
    """Whoever waits for daemon.json may stop the daemon at once (CI did: the daemon died of the
    signal's default action, -15, leaving the file). Deterministic: the signal is sent from inside
    write_runtime, right after the file is written."""
    study = write_study(tmp_path / "study.toml", [])
    script = ("import os, signal, sys\n"
              "import modlens.daemon.serve as serve\n"
              "written = serve.write_runtime\n"
              "def write_then_signal(info):\n"
              "    written(info)\n"
              "    os.kill(os.getpid(), signal.SIGTERM)\n"
              "serve.write_runtime = write_then_signal\n"
              "from modlens.cli import main\n"
              "sys.exit(main(sys.argv[1:]))\n")
    proc = subprocess.run([sys.executable, "-c", script, "serve", "--port", "0", "--config", str(study),
                           "--db", str(tmp_path / "log.sqlite")], capture_output=True, text=True, timeout=120,
                          env={**os.environ, "MODLENS_HOME": str(modlens_home)})
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "modlens: stopped" in proc.stdout
    assert not (modlens_home / "daemon.json").exists()


def test_feed_errors_are_clear(tmp_path, capsys):
    free = socket.socket()
    free.bind(("127.0.0.1", 0))
    port = free.getsockname()[1]
    free.close()
    path = tmp_path / "c.csv"
    path.write_text("text\nhello\n")
    assert main(["pair"]) == 0
    capsys.readouterr()
    assert main(["feed", str(path), "--daemon", f"ws://127.0.0.1:{port}/ws"]) == 4  # unreachable
    assert "is `modlens serve` running?" in capsys.readouterr().err
    assert main(["feed", str(path), "--text-col", "comment"]) == 2  # usage
    assert "no column 'comment'" in capsys.readouterr().err
    assert main(["feed", str(tmp_path / "missing.csv")]) == 3  # not found
    assert "file not found" in capsys.readouterr().err


def test_serve_refuses_a_non_loopback_host_without_allow_remote(capsys):
    assert main(["serve", "--host", "0.0.0.0"]) == 2
    assert "--allow-remote" in capsys.readouterr().err


def test_status_without_daemon_reads_counts_read_only(tmp_path, capsys):
    from modlens.studylog.store import StudyLog

    db = tmp_path / "log.sqlite"
    with StudyLog(db) as log:
        log.ensure_study("s", "t", {})
    assert main(["status", "--json", "--db", str(db)]) == 1
    report = json.loads(capsys.readouterr().out)
    assert report["running"] is False and report["counts"]["studies"] == 1
