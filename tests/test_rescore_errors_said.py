"""`modlens rescore` with a detector that answers with errors (a remote one whose server is gone):
the log keeps error rows, and the command says so on stderr, as `modlens audit` does, instead of
a summary alone whose `scored` counts those texts too; and it exits 1 (failed), after the summary, as
`modlens audit` and `modlens score` do when a text got no score."""
from __future__ import annotations

import json
import socket

from modlens.cli import main


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_rescore_says_which_detector_answered_with_errors(tmp_path, capsys):
    comments = tmp_path / "c.csv"
    comments.write_text("text\nyou idiot\nhave a nice day\nshut up moron\n")
    db = tmp_path / "log.sqlite"
    assert main(["audit", str(comments), "--detectors", "profanity-check", "--db", str(db), "--quiet"]) == 0
    study = tmp_path / "study.toml"
    study.write_text('study_id = "x"\n[[detectors]]\nname = "http"\n'
                     f'options = {{ url = "http://127.0.0.1:{_closed_port()}/score", score_path = "score", '
                     'retries = 0 }\n')
    capsys.readouterr()
    assert main(["rescore", str(db), "--config", str(study), "--quiet"]) == 1  # no text got a score
    out, err = capsys.readouterr()
    tally = json.loads(out)["detectors"]["http"]
    assert tally["scored"] == 3 and tally["errors"] == 3
    assert "detector http: 3 of the 3 texts it scored have an error as their score" in err
    assert "Cannot connect" in err and "modlens rescore" in err
    assert "modlens rescore: detector http gave no score for 3 of the 3 texts it scored" in err
