"""`modlens status` against a daemon that runs and answers, but refuses this MODLENS_HOME's pairing
token (it checks the token of the home it was started with): not "not running", but the daemon at
its address, that it refused this home's token, and where the token it takes is to be found."""
from __future__ import annotations

import json
import os

from daemon_helpers import TOKEN, daemon_thread, study
from modlens import paths, runtime
from modlens.cli import main


def test_status_of_a_daemon_that_refuses_this_homes_token_says_it_runs(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("MODLENS_HOME", str(tmp_path / "other-home"))
    with daemon_thread(tmp_path, study()) as url:  # the real daemon, checking TOKEN, not this home's
        paths.token_file().write_text("this-home-token-" + "9" * 16)
        assert TOKEN not in paths.token_file().read_text()
        port = int(url.rsplit(":", 1)[1].removesuffix("/ws"))
        runtime.write_runtime({"host": "127.0.0.1", "port": port, "url": url, "pid": os.getpid(),
                               "db": str(tmp_path / "study.sqlite")})
        code = main(["status"])
        out = capsys.readouterr().out
        json_code = main(["status", "--json"])
        report = json.loads(capsys.readouterr().out)
    assert "not running" not in out, out
    assert f"daemon: running (pid {os.getpid()}) at {url}" in out and "refused this home's pairing token" in out, out
    assert str(paths.token_file()) in out and f"MODLENS_HOME it was started with (its study log: {tmp_path / 'study.sqlite'})" in out, out
    assert code == json_code == 1  # the table's "failed: the daemon refused"
    assert report["running"] is True and report["refused"]["status"] == 401 and report["url"] == url
    assert report["refused"]["token_file"] == str(paths.token_file())
