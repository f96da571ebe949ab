"""An attack whose result is unknown (the target had no score for its candidates: their calls failed)
while every score the audit logged is good (the final text, here the seed, was scored): the summary
counted it as `failed` and the command exited 0, as if the target had been asked and said no. The
candidates' scores go through the engine for the attack and are never logged, so `score_errors` cannot
tell. The summary now counts such records apart (`unknown`, of the attacks run), stderr says so, and
`modlens audit` / `modlens attack DATASET` exit 1 after the summary; the same command attacks them again."""
from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Iterator

import pytest

from modlens.cli import main

SEED = "you are such an idiot honestly"


class _AnswersOnlyTheSeed(BaseHTTPRequestHandler):
    """A scoring server that fails (500) on every text but the seed, as one whose model crashes on
    the attack's edited words."""
    def do_POST(self) -> None:  # noqa: N802 (http.server's name)
        text = json.loads(self.rfile.read(int(self.headers["Content-Length"])))["text"]
        ok = text == SEED
        body = json.dumps({"score": 0.9}).encode() if ok else b"model crashed"
        self.send_response(200 if ok else 500)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def study(tmp_path: Path) -> Iterator[Path]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _AnswersOnlyTheSeed)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    path = tmp_path / "study.toml"
    path.write_text(f'study_id = "unknown"\n[[detectors]]\nname = "http"\n[detectors.options]\n'
                    f'url = "http://127.0.0.1:{server.server_address[1]}/score"\nscore_path = "score"\nretries = 0\n',
                    encoding="utf-8")
    try:
        yield path
    finally:
        server.shutdown()
        server.server_close()


@pytest.mark.parametrize("command", [
    ["audit", "--attack", "tae", "--targets", "http", "--no-ensemble", "--recipe", "deepwordbug", "--quiet"],
    ["attack", "--target", "http", "--no-ensemble", "--recipe", "deepwordbug", "--quiet"],
])
def test_an_attack_whose_result_is_unknown_fails_the_command(tmp_path, study, capsys, command):
    seeds, db = tmp_path / "seeds.csv", tmp_path / "log.sqlite"
    seeds.write_text(f"text,toxic\n{SEED},1\n", encoding="utf-8")
    name, *flags = command
    code = main([name, str(seeds), "--db", str(db), "--config", str(study), *flags])
    out = capsys.readouterr()
    summary = json.loads(out.out)
    assert summary["score_errors"] == {}  # every score logged is good: the seed's
    assert summary["attacks"]["http"]["failed"] == 1 and summary["attacks"]["http"]["unknown"] == 1, summary["attacks"]
    assert code == 1, out.err
    assert "attacks on http: 1 of the 1 attacks run has an unknown result" in out.err, out.err
    assert "1 attack on target http has an unknown result" in out.err.splitlines()[-2], out.err
