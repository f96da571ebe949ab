"""`modlens serve` reads the study once, at start, and serves it until it stops: a hand edit of
study.toml (or of a file beside it that makes the study) after the start changes nothing it does.
`modlens status` says so, against a real daemon and a real edit, instead of naming the study as if
the files on disk were what runs."""
from __future__ import annotations

import json
import signal

from modlens.cli import main

from daemon_helpers import serve_process, write_study


def test_status_says_when_the_study_files_changed_since_serve_started(tmp_path, modlens_home, capsys, monkeypatch):
    study = write_study(tmp_path / "study.toml", [])
    monkeypatch.chdir(tmp_path)  # serve is given the study relative to its directory; status runs elsewhere
    proc, _ = serve_process(modlens_home, "--config", "study.toml", "--db", str(tmp_path / "log.sqlite"))
    monkeypatch.chdir(modlens_home)
    try:
        assert main(["status"]) == 0
        assert "changed since" not in capsys.readouterr().out  # the files are the ones it read
        study.write_text(study.read_text().replace('study_id = "cli-test"', 'study_id = "edited"'))
        (tmp_path / "consent.md").write_text("a new consent text\n")  # a side file that appeared
        assert main(["status"]) == 0
        out = capsys.readouterr().out
        assert "study 'cli-test'" in out  # what the daemon serves, still
        assert f"study files changed since `modlens serve` started: {study}, {tmp_path / 'consent.md'}" in out
        assert "restart `modlens serve` to apply" in out
        assert main(["status", "--json"]) == 0
        report = json.loads(capsys.readouterr().out)
        assert report["study_files_changed"] == [str(study), str(tmp_path / "consent.md")]
        study.write_text(study.read_text().replace('study_id = "edited"', 'study_id = "cli-test"'))
        (tmp_path / "consent.md").unlink()  # back to the bytes it read: nothing to say
        assert main(["status", "--json"]) == 0
        assert json.loads(capsys.readouterr().out)["study_files_changed"] == []
    finally:
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(20) == 0
