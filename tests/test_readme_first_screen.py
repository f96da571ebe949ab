"""What the README's first screen (its top, "The two commands" and "Five minutes with modlens")
tells a new user, checked against what happens: every command it shows exists and takes the
arguments shown, `make run` leaves `modlens` usable as the README says (activate `.venv`, or call
`.venv/bin/modlens`), `modlens serve` prints what the README says it prints, and the export and
report commands write what their comments promise."""
from __future__ import annotations

import os
import re
import shlex
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from modlens.cli import build_parser, main

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text(encoding="utf-8")
FIRST_SCREEN = README.split("\n## Commands", 1)[0]


def _blocks(text: str) -> list[str]:
    return re.findall(r"```sh\n(.*?)```", text, re.S)


def _commands(text: str) -> list[list[str]]:
    """Each shell line of the code blocks, comments dropped, continuations joined, as words."""
    out = []
    for block in _blocks(text):
        for line in block.replace("\\\n", " ").splitlines():
            words = shlex.split(line, comments=True)
            if words:
                out.append(words)
    return out


def test_the_first_screen_shows_the_commands_this_test_checks():
    firsts = [w[0] for w in _commands(FIRST_SCREEN)]
    assert {"make", ".", "modlens"} == set(firsts), "a new kind of command on the first screen needs its check here"
    assert "make run" in FIRST_SCREEN and ". .venv/bin/activate" in FIRST_SCREEN


def test_every_modlens_command_shown_exists_and_takes_those_arguments():
    shown = [w[1:] for w in _commands(FIRST_SCREEN) if w[0] == "modlens"]
    assert len(shown) >= 6
    for argv in shown:
        parser = build_parser(load=argv[0])
        try:
            args, extras = parser.parse_known_args(argv)
        except SystemExit as err:  # argparse refused them
            raise AssertionError(f"README: modlens {' '.join(argv)} does not parse") from err
        assert not extras and args.command == argv[0], argv


def test_every_make_target_shown_exists():
    makefile = (ROOT / "Makefile").read_text()
    targets = {w[1] for w in _commands(FIRST_SCREEN) if w[0] == "make"}
    targets |= set(re.findall(r"`(?:sudo )?make ([a-z-]+)`", FIRST_SCREEN))
    assert {"run", "test", "test-fast", "system-deps"} <= targets
    for t in targets:
        assert re.search(rf"^{re.escape(t)}:", makefile, re.M), f"README names make {t}, the Makefile has no such target"


def _make_dry_run(target: str) -> str:
    # as a person types it: not as a sub-make of `make test` (whose MAKEFLAGS and MAKELEVEL would add
    # "make[1]: Entering directory" lines)
    env = {k: v for k, v in os.environ.items() if k not in ("MAKEFLAGS", "MFLAGS", "MAKELEVEL")}
    return subprocess.run(["make", "--no-print-directory", "-n", target], cwd=ROOT, capture_output=True, text=True,
                          check=True, env=env).stdout


def test_make_run_installs_into_the_venv_and_starts_serve():
    """"creates .venv, installs modlens (torch pinned to the CPU wheel), starts `modlens serve`"."""
    makefile = (ROOT / "Makefile").read_text()
    assert "python3 -m venv $(VENV)" in makefile and "VENV ?= .venv" in makefile
    assert re.search(r"pip install .*torch==2\.13\.0", makefile)
    assert "-e '.[" in makefile  # modlens itself, editable, so .venv/bin/modlens is its console script
    run = _make_dry_run("run").strip().splitlines()
    assert run[-1].startswith(".venv/bin/modlens serve")
    assert any(". .venv/bin/activate" in line for line in run[:-1])  # and says how to reach it from another terminal


def test_make_test_and_test_fast_run_what_the_readme_says():
    """`make test`: ruff + mypy, then every test (what .ci/run runs); `make test-fast`: no browser or
    slow tests; every test under a 5-minute limit."""
    makefile = (ROOT / "Makefile").read_text()
    test_rule = re.search(r"^test:(.*)\n((?:\t.*\n)+)", makefile, re.M)
    assert test_rule and "lint" in test_rule.group(1) and "pytest" in test_rule.group(2)
    # Label Studio and Potato installed for their real runs, web-ext's npm tools, the installs side by side
    assert {"labelstudio", "potato", "node_modules/.package-lock.json"} <= set(test_rule.group(1).split())
    assert re.search(r"^MAKEFLAGS \+= --jobs=\d", makefile, re.M)
    lint_rule = re.search(r"^lint:.*\n((?:\t.*\n)+)", makefile, re.M)
    assert lint_rule and "ruff check" in lint_rule.group(1) and "mypy" in lint_rule.group(1)
    assert re.search(r"^make test\b", (ROOT / ".ci" / "run").read_text(), re.M)
    fast = re.search(r"^test-fast:.*\n((?:\t.*\n)+)", makefile, re.M)
    assert fast and '-m "not browser and not slow' in fast.group(1)
    assert re.search(r"^timeout = 300$", (ROOT / "pyproject.toml").read_text(), re.M)


def test_activating_the_venv_puts_modlens_on_path():
    """After `make run` (which made .venv), `. .venv/bin/activate` in a fresh shell gives `modlens`."""
    venv = ROOT / ".venv"
    if not (venv / "bin" / "activate").is_file():
        pytest.skip("no .venv here: `make run` (or `make setup`) makes it")
    env = {k: v for k, v in os.environ.items() if k not in ("VIRTUAL_ENV",)}
    env["PATH"] = "/usr/bin:/bin"  # a new terminal's PATH, without the venv
    without = subprocess.run(["bash", "-c", "command -v modlens"], cwd=ROOT, env=env, capture_output=True, text=True)
    assert without.returncode != 0  # the README's point: not on PATH until activated
    done = subprocess.run(["bash", "-c", ". .venv/bin/activate && modlens --version"], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0 and done.stdout.startswith("modlens "), done.stderr
    direct = subprocess.run([str(venv / "bin" / "modlens"), "--version"], env=env, capture_output=True, text=True,
                            timeout=120)
    assert direct.returncode == 0 and direct.stdout == done.stdout


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_serve_prints_the_log_path_the_address_and_how_to_pair(tmp_path):
    """"make run … prints the study log's path, ws://127.0.0.1:8765/ws and how to pair"; `modlens pair`
    prints the token. (A free port here: 8765, the default, may be taken on a shared machine.)"""
    from modlens.runtime import DEFAULT_HOST, DEFAULT_PORT

    assert (DEFAULT_HOST, DEFAULT_PORT) == ("127.0.0.1", 8765)
    study = tmp_path / "study.toml"
    study.write_text('study_id = "readme"\n[[detectors]]\nname = "profanity-check"\n'
                     "[normalizer]\nenabled = false\n[perturbation]\nenabled = false\n")
    home, db, log = tmp_path / "home", tmp_path / "study.sqlite", tmp_path / "serve.log"
    home.mkdir()
    env = {**os.environ, "MODLENS_HOME": str(home), "PYTHONUNBUFFERED": "1"}
    port = _free_port()
    with log.open("ab") as out:
        proc = subprocess.Popen([sys.executable, "-m", "modlens", "serve", "--config", str(study), "--port", str(port),
                                 "--db", str(db)], env=env, stdout=out, stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + 120
        while "modlens: pair" not in log.read_text(errors="replace"):
            assert proc.poll() is None and time.monotonic() < deadline, log.read_text(errors="replace")
            time.sleep(0.2)
        printed = log.read_text(errors="replace")
    finally:
        proc.terminate()
        proc.wait(timeout=60)
    assert f"modlens: study log   {db}" in printed
    assert f"modlens: listening   ws://127.0.0.1:{port}/ws" in printed
    assert "run `modlens pair` and paste the token into the extension's options" in printed
    assert "`modlens browse` to start Chromium with the extension already paired" in printed
    import json

    def pair(*flags: str) -> str:
        return subprocess.run([sys.executable, "-m", "modlens", "pair", *flags], env=env, capture_output=True,
                              text=True, timeout=120, check=True).stdout
    stored = json.loads(pair("--json"))
    assert pair().splitlines()[0] == stored["token"] == Path(stored["path"]).read_text().strip()
    assert len(stored["token"]) >= 20


def test_export_and_report_write_what_the_readme_says(tmp_path, capsys):
    """`export --format parquet`: tidy tables + the data dictionary; `report`: the research questions
    with 95% intervals; `report --format latex`: the same tables with references."""
    from modlens.audit import run_audit
    from modlens.detectors.base import Detector

    class Length(Detector):
        name, version, labels, toxicity_label = "length", "1", ("toxicity",), "toxicity"

        def score(self, texts):
            return [{"toxicity": min(1.0, len(t) / 60)} for t in texts]

    f = tmp_path / "c.csv"
    f.write_text("text,toxic\n" + "".join(f"comment {i}{' rude' * (i % 5)},{int(i % 5 > 2)}\n" for i in range(40)))
    db = tmp_path / "log.sqlite"
    run_audit(str(f), db=db, detector_objects={"length": Length()}, progress=False, reader_options={"label": "toxic"})
    assert main(["export", "--db", str(db), "--out", str(tmp_path / "export"), "--format", "parquet"]) == 0
    written = {p.name for p in (tmp_path / "export").iterdir()}
    assert {"DATA.md", "comments.parquet", "scores.parquet", "comment_scores_wide.parquet"} <= written
    assert main(["report", "--db", str(db), "--out", str(tmp_path / "report.html")]) == 0
    page = (tmp_path / "report.html").read_text()
    assert "95% intervals" in page and re.search(r"\d\.\d{3} \[\d\.\d{3},\u00a0\d\.\d{3}\]", page)
    assert main(["report", "--db", str(db), "--format", "latex", "--out", str(tmp_path / "tables.tex")]) == 0
    tex = (tmp_path / "tables.tex").read_text()
    assert r"\toprule" in tex and r"\bibitem{efron}" in tex


def test_the_detectors_and_the_perspective_api_the_readme_names_exist():
    """"local detectors (an embedded offline MiniLM model, a lexical baseline, any Hugging Face
    classifier …) … answers Perspective's own API"."""
    from modlens.detectors import registry

    assert {"minilm-toxicity", "profanity-check", "hf-classifier", "perspective"} <= set(registry.DETECTORS.names())
    serve = build_parser(load="serve").parse_args(["serve", "--perspective-only"])
    assert serve.perspective_only
