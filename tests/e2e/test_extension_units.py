"""Runs the extension's JS unit tests (node --test) and checks that the JS mirror of Table 1
agrees with modlens.ratings on every answer pair. Fast; no browser."""
from __future__ import annotations

import itertools
import json
import shutil
import subprocess


from modlens.ratings import derive_toxicity

from .harness import REPO
from realtools import need, requires


def _node():
    need("node")
    return shutil.which("node")


@requires("node")
def test_js_unit_tests_pass():
    res = subprocess.run([_node(), "--test", str(REPO / "extension" / "test")], capture_output=True, text=True, timeout=120)
    assert res.returncode == 0, res.stdout + res.stderr


@requires("node")
def test_js_table1_matches_python():
    script = """
const ns = require(process.argv[1]);
const out = {};
for (const ext of ["toxic", "not toxic"]) for (const a of ["more","less","same"]) for (const b of ["more","less","same"])
  out[`${ext}|${a}|${b}`] = ns.deriveToxicity(a, b, ext);
console.log(JSON.stringify(out));
"""
    res = subprocess.run([_node(), "-e", script, str(REPO / "extension" / "lib" / "table1.js")], capture_output=True, text=True, timeout=60)
    assert res.returncode == 0, res.stderr
    js = json.loads(res.stdout)
    for ext, a, b in itertools.product(["toxic", "not toxic"], ["more", "less", "same"], ["more", "less", "same"]):
        py = derive_toxicity(a, b, ext)
        got = js[f"{ext}|{a}|{b}"]
        assert (got["rating"], tuple(got["candidates"]), got["inconsistent"]) == (py.rating, py.candidates, py.inconsistent), (ext, a, b)


def test_browse_prepares_a_paired_copy(tmp_path, modlens_home):
    from modlens.cli import main

    rc = main(["browse", "--profile", str(tmp_path / "prof"), "--daemon", "ws://127.0.0.1:9999/ws",
               "--browser", "/bin/true", "--print-command", "https://www.youtube.com/watch?v=abc"])
    assert rc == 0
    ext = tmp_path / "prof" / "extension"
    seed = json.loads((ext / "seed.json").read_text())
    token = (modlens_home / "pairing-token").read_text().strip()
    assert seed == {"daemonUrl": "ws://127.0.0.1:9999/ws", "token": token}
    assert (ext / "manifest.json").is_file() and not (ext / "test").exists()
    assert (ext / "seed.json").stat().st_mode & 0o077 == 0


def test_browse_without_browser_is_a_clear_error(tmp_path, capsys):
    from modlens.cli import main

    rc = main(["browse", "--profile", str(tmp_path / "p"), "--browser", str(tmp_path / "nope")])
    assert rc == 3 and "no Chromium found" in capsys.readouterr().err  # not found
