"""One study loader (`modlens.study.load`): a study folder reads the same whether a command
is given the folder or the study.toml inside it, and a missing or malformed file is one line with
the README's exit code. `modlens serve` is run for real on a `modlens study init` folder and asked,
as the extension asks, what study it serves."""
from __future__ import annotations

import asyncio
import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from modlens import pairing
from modlens.cli import main
from modlens.cli.common import EXIT_CODES
from modlens.errors import ErrorKind
from modlens.config import StudyConfigError
from modlens.study import load

NOT_FOUND, USAGE = EXIT_CODES[ErrorKind.NOT_FOUND], EXIT_CODES[ErrorKind.USAGE]


def pilot(tmp_path: Path) -> Path:
    """A folder as `modlens study init` writes it, with the MiniLM detector left out (quick to serve)."""
    root = tmp_path / "pilot"
    assert main(["study", "init", str(root), "--study-id", "pilot"]) == 0
    study = root / "study.toml"
    text = study.read_text().replace('[[detectors]]\nname = "minilm-toxicity"\n\n', "")
    study.write_text(text + "\n[perturbation]\nenabled = false\n")
    return root


@pytest.mark.parametrize("given", ["study.toml", "folder"])
def test_serve_loads_the_folders_gold_tasks_and_consent_however_it_is_named(given, tmp_path, modlens_home):
    root = pilot(tmp_path)
    config = root / "study.toml" if given == "study.toml" else root
    db = tmp_path / "log.sqlite"
    proc = subprocess.Popen([sys.executable, "-m", "modlens", "serve", "--config", str(config), "--port", "0",
                             "--db", str(db)], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            env={**os.environ, "MODLENS_HOME": str(modlens_home), "PYTHONUNBUFFERED": "1"})
    seen: list[str] = []
    try:
        assert proc.stdout is not None
        for line in proc.stdout:  # bounded by the test timeout; serve prints "listening" once ready
            seen.append(line)
            if "listening" in line or proc.poll() is not None:
                break
        out = "".join(seen)
        assert "modlens: listening" in out, out
        url = out.split("modlens: listening", 1)[1].split()[0]
        settings = asyncio.run(_hello(url, pairing.read() or ""))
    finally:
        proc.terminate()
        proc.wait(30)
    # what the extension is told: calibration.toml's gold, tasks.toml's pages, consent.md's text
    assert [g["key"] for g in settings["gold"]] == ["gold-insult", "gold-thanks", "gold-formal"]
    assert len(settings["tasks"]) == 3 and settings["free_browsing"] is False
    assert settings["consent_text"].startswith("You are invited to take part in")
    # and the gold comments reached the log as gold (platform `study`, role label), which the report leaves out of alpha
    with sqlite3.connect(db) as con:
        roles = con.execute("SELECT c.comment_key, l.value FROM comments c JOIN labels l ON l.comment_id = c.comment_id "
                            "WHERE c.platform = 'study' AND l.name = 'role' ORDER BY c.comment_key").fetchall()
    assert ("gold-insult", "gold") in roles and ("gold-thanks", "gold") in roles and ("gold-formal", "gold") in roles


async def _hello(url: str, token: str) -> dict:
    from modlens.protocol.client import session

    async with session(url, token, rater="loader-test", client="loader-test") as client:
        assert client.hello is not None
        return dict(client.hello.study)


def test_the_file_and_its_folder_are_one_study(tmp_path):
    root = pilot(tmp_path)
    assert load(root) == load(root / "study.toml")
    assert len(load(root).gold) == 3 and load(None).gold == []


def test_a_lone_study_toml_may_read_any_variable_a_folder_may_not(tmp_path):
    lone = tmp_path / "lone" / "study.toml"
    lone.parent.mkdir()
    http = '[[detectors]]\nname = "http"\noptions = { url = "https://api.example/${MY_KEY}" }\n'
    lone.write_text(http)
    assert load(lone).detectors[0].name == "http"  # docs/STUDY.md: a study.toml you run yourself
    root = pilot(tmp_path)
    (root / "study.toml").write_text((root / "study.toml").read_text() + http)
    with pytest.raises(StudyConfigError, match=r"\$\{MY_KEY\}"):
        load(root / "study.toml")  # a folder is made to be packed, named by its file or not


@pytest.mark.parametrize("case, code, message", [
    ("missing file", NOT_FOUND, "nothing.toml: study file not found"),
    ("missing folder", NOT_FOUND, "absent: study file not found"),
    ("folder without study.toml", NOT_FOUND, "study.toml: study file not found"),
    ("broken side file", USAGE, "calibration.toml: not valid TOML"),
    ("broken study.toml", USAGE, "study.toml: not valid TOML"),
])
@pytest.mark.parametrize("command", ["serve", "audit", "perturb", "attack", "fuse", "perspective", "study", "rate"])
def test_a_missing_or_malformed_study_is_one_line_with_its_exit_code(command, case, code, message, tmp_path, capsys):
    root = pilot(tmp_path)
    capsys.readouterr()
    config = {"missing file": tmp_path / "nothing.toml", "missing folder": tmp_path / "absent",
              "folder without study.toml": tmp_path, "broken side file": root, "broken study.toml": root / "study.toml"}[case]
    if case == "broken side file":
        (root / "calibration.toml").write_text("[[gold]\n")
    if case == "broken study.toml":
        (root / "study.toml").write_text("study_id = \n")
    data = tmp_path / "d.csv"
    data.write_text("text\nhello\n")
    argv = {"serve": ["serve", "--config", str(config), "--db", str(tmp_path / "s.sqlite"), "--port", "0"],
            "audit": ["audit", str(data), "--config", str(config), "--db", str(tmp_path / "a.sqlite")],
            "perturb": ["perturb", "you idiot", "--config", str(config)],
            "attack": ["attack", "--text", "you idiot", "--recipe", "deepwordbug", "--target", "profanity-check",
                       "--config", str(config)],
            "fuse": ["fuse", "--study", str(config), "--db", str(tmp_path / "f.sqlite")],
            "perspective": ["perspective", "calibrate", "--config", str(config)],
            "study": ["study", "check", str(config)],
            "rate": ["rate", "--study", str(config), "--db", str(tmp_path / "r.sqlite")]}[command]
    if command == "rate":
        sqlite3.connect(tmp_path / "r.sqlite").close()  # the log exists: the study is what is missing
    assert main(argv) == code
    err = capsys.readouterr().err
    assert err.startswith(f"modlens {command}: ") and message in err, err
    assert "Traceback" not in err and "IsADirectoryError" not in err
    assert len(err.strip().splitlines()) == 2 and "\n  fix: " in err, err  # one line, then its fix
