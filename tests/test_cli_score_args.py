"""`modlens score`'s texts and detectors as a user writes them: `--detectors` takes every word after
it, so a text written after it arrives as a detector name; the command says that (and reads no
stdin first: in a terminal that would wait for input), and the two ways to write it that work do."""
from __future__ import annotations

import io
import json

import pytest

from modlens.cli import main


class NoStdin(io.StringIO):
    """stdin that fails the test if read: the error must come before waiting for input."""

    def __iter__(self):  # type: ignore[override]
        raise AssertionError("stdin was read")

    def read(self, *args):  # type: ignore[override]
        raise AssertionError("stdin was read")


def test_a_text_after_detectors_is_named_as_taken_for_a_detector(monkeypatch, capsys):
    monkeypatch.setattr("sys.stdin", NoStdin())
    assert main(["score", "--detectors", "profanity-check", "you are a stupid idiot"]) == 2
    err = capsys.readouterr().err
    assert "no texts given" not in err
    assert "'you are a stupid idiot'" in err and "--detectors" in err
    assert "before --detectors" in err and "--" in err


def test_a_misspelt_detector_still_gets_its_close_match(monkeypatch, capsys):
    monkeypatch.setattr("sys.stdin", NoStdin())
    assert main(["score", "--detectors", "profanity-chek"]) == 2
    err = capsys.readouterr().err
    assert "unknown detector 'profanity-chek'" in err and "did you mean profanity-check" in err


@pytest.mark.parametrize("argv", [
    ["score", "you are a stupid idiot", "--detectors", "profanity-check"],
    ["score", "--detectors", "profanity-check", "--", "you are a stupid idiot"],
])
def test_the_forms_the_fix_names_score_the_text(argv, capsys):
    assert main(argv) == 0
    rows = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert [r["text"] for r in rows] == ["you are a stupid idiot"]
    assert list(rows[0]["scores"]) == ["profanity-check"]


def _closed_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_a_detector_that_gave_no_score_fails_the_command_after_every_line(capsys):
    """Exit 0 is "done": a detector that answered some texts with an error (here a remote one whose
    server is gone) makes the command fail (exit 1) and say so on stderr, after every line was printed
    with the other detectors' scores and the error."""
    url = f"http://127.0.0.1:{_closed_port()}/score"
    code = main(["score", "--detector", "http", "-o", f"http.url={url}", "-o", "http.score_path=score",
                 "-o", "http.retries=0", "--detector", "profanity-check", "you idiot", "hello there"])
    out, err = capsys.readouterr()
    rows = [json.loads(line) for line in out.splitlines()]
    assert [r["text"] for r in rows] == ["you idiot", "hello there"]
    assert all("error" in r["scores"]["http"] and r["scores"]["profanity-check"]["toxicity"] is not None for r in rows)
    assert code == 1
    assert "detector http gave no score for 2 of 2 texts" in err and "Cannot connect" in err


@pytest.mark.parametrize("env", [{"LC_ALL": "C.UTF-8"}, {"LC_ALL": "C", "PYTHONUTF8": "0"}])
def test_a_stdin_line_that_is_not_utf8_is_named_not_scored_as_other_characters(tmp_path, env):
    """Texts on stdin are UTF-8: a line that is not (a cp1252 'café') stops the command with its
    number, before anything is scored, as `modlens normalize --file -` does. Before, Python's stdin
    turned its bytes into other characters (C locale) and that text was scored and printed, or the
    command ended in a traceback (UTF-8 locale)."""
    import os
    import subprocess
    import sys

    proc = subprocess.run([sys.executable, "-m", "modlens", "score", "--detectors", "profanity-check"],
                          input=b"you idiot\n" + "un caf\u00e9 idiot\n".encode("cp1252"),
                          capture_output=True, env={**os.environ, **env, "MODLENS_HOME": str(tmp_path)}, timeout=120)
    err = proc.stderr.decode()
    assert proc.returncode == 2, err
    assert proc.stdout == b""
    assert "stdin: line 2 is not UTF-8 text (byte 0xe9" in err and "Traceback" not in err
