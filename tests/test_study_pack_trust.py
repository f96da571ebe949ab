"""What a study pack may do on a participant's computer, with real files, the real
CLI, a real `modlens serve` and a real HTTP endpoint standing in for a collector:

- a pack's `${VAR}` in detector options is refused unless the study declares that secret;
- remote detectors, where they send comments and the secrets they read are shown at join and in
  the consent text, and stay off until the participant says yes (`--accept-remote` or the prompt);
- packs are signed (Ed25519): join shows the fingerprint and refuses a pack that does not verify,
  and an unsigned pack only with --allow-unsigned.
"""
from __future__ import annotations

import asyncio
import io
import json
import os
import signal
import stat
import tomllib

import pytest
from aiohttp import web

from daemon_helpers import Client, comments_msg, connect, serve_process
from modlens import pairing, paths
from modlens.cli import main as cli_main
from modlens.protocol import consent_text_sha256
from modlens.study import folder, join, pack
from threaded_server import ThreadedServer

SECRET = "s3cr3t-VALUE-0f-the-participant"


class Collector:
    """An HTTP endpoint that scores every text 0.5 and remembers each request it got."""

    def __init__(self) -> None:
        self.requests: list[dict] = []
        app = web.Application()
        app.router.add_post("/collect", self.collect)
        self.server = ThreadedServer(app)

    async def collect(self, request: web.Request) -> web.Response:
        self.requests.append({"query": dict(request.query), "headers": dict(request.headers),
                              "body": await request.json()})
        return web.json_response({"score": 0.5})


@pytest.fixture
def collector():
    c = Collector()
    yield c
    c.server.stop()


def make_folder(tmp_path, detector: str, secrets: str = "", name: str = "pilot"):
    root = tmp_path / name
    folder.init_folder(root)
    study = root / "study.toml"
    text = study.read_text().replace('[[detectors]]\nname = "minilm-toxicity"\n', detector, 1)
    text = text.replace('mode = "deciles"', 'mode = "all"')
    study.write_text(text + "\n[normalizer]\nenabled = false\n[perturbation]\nenabled = false\n" + secrets)
    return root


def http_detector(base: str, header: str = "${SECRET}") -> str:
    return ('[[detectors]]\nname = "http"\nid = "collector"\n'
            f'options = {{ url = "{base}/collect?home=${{HOME}}&k=${{SECRET}}", score_path = "score", '
            f'headers = {{ X-Leak = "{header}" }} }}\n')


def forge_pack(good: pack.Pack | dict, study_data: dict) -> dict:
    """A pack with `study_data` and a checksum recomputed, as anyone holding a pack can make."""
    raw = dict(good)
    raw.pop("sha256")
    raw.pop("signature", None)
    raw["study"] = study_data
    return raw | {"sha256": __import__("hashlib").sha256(pack.canonical(raw)).hexdigest()}


# --- environment variables ---------------------------------------------------------------------

def test_a_pack_that_reads_undeclared_environment_variables_is_refused_at_check_pack_and_join(
        tmp_path, modlens_home, capsys, collector):
    root = make_folder(tmp_path, http_detector(collector.server.base))
    assert cli_main(["study", "check", str(root)]) == 2
    err = capsys.readouterr().err
    assert "detectors[collector].options.url: reads the environment variable ${HOME}" in err
    assert "options.headers.X-Leak: reads the environment variable ${SECRET}" in err and "Traceback" not in err

    out = tmp_path / "leak.modlens"
    assert cli_main(["study", "pack", str(root), "--out", str(out)]) == 2
    assert "${HOME}" in capsys.readouterr().err and not out.exists()

    # a pack made by hand (checksum recomputed) is refused at join, and nothing is joined
    clean = make_folder(tmp_path, "", name="clean")
    good = tmp_path / "clean.modlens"
    pack.write(folder.load_folder(clean), good)
    leaking = tomllib.loads(http_detector(collector.server.base))["detectors"]
    data = folder.load_folder(clean).data | {"detectors": leaking}
    forged = tmp_path / "forged.modlens"
    forged.write_text(json.dumps(forge_pack(json.loads(good.read_text()), data)))
    assert cli_main(["join", str(forged), "--allow-unsigned", "--accept-remote"]) == 2
    assert "reads the environment variable ${HOME}" in capsys.readouterr().err
    assert join.joined() is None and join.joined_study_file() is None


def test_declared_secrets_are_shown_and_remote_detectors_stay_off_until_accepted(
        tmp_path, modlens_home, capsys, collector):
    root = make_folder(tmp_path, http_detector(collector.server.base, "Bearer ${SECRET}").replace("home=${HOME}&", ""),
                       secrets='[secrets]\nnames = ["SECRET"]\n')
    assert cli_main(["study", "check", str(root)]) == 0
    assert "collector sends comments to http://127.0.0.1" in capsys.readouterr().out
    key = tmp_path / "keys" / "researcher.key"
    assert cli_main(["study", "keygen", "--out", str(key)]) == 0
    fingerprint = capsys.readouterr().out.split("fingerprint ")[1].split()[0]
    out = tmp_path / "pilot.modlens"
    assert cli_main(["study", "pack", str(root), "--out", str(out), "--sign-key", str(key)]) == 0
    assert fingerprint in capsys.readouterr().out

    # non-interactive, no --accept-remote: joined, but the remote detector stays off
    assert cli_main(["join", str(out)]) == 0
    said = capsys.readouterr().out
    assert f"signed by {fingerprint}" in said
    assert "collector (http): sends each comment to http://127.0.0.1" in said and "reads your SECRET" in said
    assert "remote detectors stay off" in said and "--accept-remote" in said
    served = run_serve_and_feed(tmp_path / "off.sqlite", modlens_home)
    assert collector.requests == []
    assert "detector collector: off" in served["log"] and "not accepted at join" in served["log"]
    consent = served["hello"]["study"]["consent_text"]
    assert "no comment is sent anywhere else" in consent and "collector is off" in consent

    # accepted: the comment goes there, with the participant's own secret, which is never logged
    assert cli_main(["join", str(out), "--accept-remote"]) == 0
    assert "remote detectors on: comments go to http://127.0.0.1" in capsys.readouterr().out
    db = tmp_path / "on.sqlite"
    served = run_serve_and_feed(db, modlens_home, env={"SECRET": SECRET})
    assert [r["body"] for r in collector.requests] == [{"text": "you are a wonderful person"}]
    assert collector.requests[0]["headers"]["X-Leak"] == f"Bearer {SECRET}"
    consent = served["hello"]["study"]["consent_text"]
    assert f"sent, to be scored, to: {collector.server.base} (detector collector)" in consent
    assert "your own SECRET (collector)" in consent and f"signed by {fingerprint}" in consent
    bundle = tmp_path / "me.bundle"
    assert cli_main(["export", "--bundle", str(bundle), "--db", str(db)]) == 0
    for path in [db, bundle, *tmp_path.glob("on.sqlite*")]:
        assert SECRET.encode() not in path.read_bytes(), path


def run_serve_and_feed(db, home, env: dict[str, str] | None = None) -> dict:
    """The real `modlens serve` on the joined study: hello with consent, one comment, its scores."""
    saved = {k: os.environ.get(k) for k in (env or {})}
    os.environ.update(env or {})
    try:
        proc, info = serve_process(home, "--db", str(db))
    finally:
        for k, v in saved.items():
            os.environ.pop(k) if v is None else os.environ.__setitem__(k, v)
    token = pairing.ensure()

    async def talk() -> dict:
        said = {"type": "hello", "id": "h1", "protocol": 1, "client": "test", "client_version": "0", "token": token,
                "rater_id": "rater-1"}
        async with connect(info["url"], token=token) as ws:  # the consent text the participant reads
            shown = (await Client(ws).request(said, "hello_ok", timeout=30))["study"]["consent_text"]
        async with connect(info["url"], token=token) as ws:
            client = Client(ws)
            hello = await client.request({**said, "consent_at": "2026-01-01T00:00:00+00:00",
                                          "consent_sha256": consent_text_sha256(shown)}, "hello_ok", timeout=30)
            await client.send(comments_msg("c1", [("k1", "you are a wonderful person")]))
            await client.until(lambda m: m.get("type") == "scores", timeout=30)
            return hello

    try:
        hello = asyncio.run(talk())
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(30)
    return {"hello": hello, "log": (home / "serve.log").read_text()}


def test_join_asks_when_interactive(tmp_path, modlens_home, capsys, monkeypatch, collector):
    root = make_folder(tmp_path, http_detector(collector.server.base, "x").replace("home=${HOME}&k=${SECRET}", "a=1"))
    out = tmp_path / "pilot.modlens"
    assert cli_main(["study", "pack", str(root), "--out", str(out)]) == 0

    class Typed(io.StringIO):
        def isatty(self) -> bool:
            return True

    monkeypatch.setattr("sys.stdin", Typed("y\nn\n"))  # yes to the unsigned pack, no to the remote detector
    assert cli_main(["join", str(out)]) == 0
    said = capsys.readouterr().out
    assert "UNSIGNED" in said and "Send comments to these places? [y/N]" in said and "remote detectors stay off" in said
    assert join.joined()["accepted_remote"] == []
    monkeypatch.setattr("sys.stdin", Typed("y\ny\n"))
    assert cli_main(["join", str(out)]) == 0
    assert join.joined()["accepted_remote"] == [collector.server.base]


# --- signatures --------------------------------------------------------------------------------

def test_researcher_key_signs_packs_and_join_refuses_what_does_not_verify(tmp_path, modlens_home, capsys):
    root = make_folder(tmp_path, "")
    assert cli_main(["study", "keygen", "--out", str(root / "researcher.key")]) == 2
    assert "inside the study folder" in capsys.readouterr().err and not (root / "researcher.key").exists()
    key = tmp_path / "researcher.key"
    assert cli_main(["study", "keygen", "--out", str(key)]) == 0
    assert stat.S_IMODE(key.stat().st_mode) == 0o600
    assert cli_main(["study", "keygen", "--out", str(key)]) == 2  # never overwrites
    capsys.readouterr()
    signed = tmp_path / "signed.modlens"
    assert cli_main(["study", "pack", str(root), "--out", str(signed), "--sign-key", str(key)]) == 0
    raw = json.loads(signed.read_text())
    assert raw["signer"]["algorithm"] == "ed25519" and raw["signature"]
    read = pack.read(signed)
    assert read.signer is not None and read.signer.startswith("ed25519:")

    # content changed and the checksum recomputed: the signature no longer verifies
    changed = forge_pack(raw, raw["study"] | {"display": "scores"}) | {"signature": raw["signature"]}
    (tmp_path / "changed.modlens").write_text(json.dumps(changed))
    assert cli_main(["join", str(tmp_path / "changed.modlens")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 2 and "signature does not verify" in err and "\n  fix: ask the researcher" in err
    # the signature stripped: unsigned, refused without --allow-unsigned
    stripped = forge_pack(raw, raw["study"] | {"display": "scores"})
    stripped.pop("signer")
    stripped = forge_pack(stripped, stripped["study"])
    (tmp_path / "stripped.modlens").write_text(json.dumps(stripped))
    assert cli_main(["join", str(tmp_path / "stripped.modlens")]) == 2
    assert "unsigned" in capsys.readouterr().err
    assert join.joined() is None
    assert cli_main(["join", str(tmp_path / "stripped.modlens"), "--allow-unsigned"]) == 0
    assert "UNSIGNED" in capsys.readouterr().out
    assert cli_main(["join", str(signed), "--replace"]) == 0
    assert f"signed by {read.signer}" in capsys.readouterr().out
    assert join.joined()["signer"] == read.signer

    # the participant's bundle key is made at join, next to the pairing token, owner-only
    bundle_key = paths.token_file().parent / "bundle-signing.key"
    assert bundle_key.is_file() and stat.S_IMODE(bundle_key.stat().st_mode) == 0o600


def test_every_plugin_that_sends_comments_away_is_known_as_remote():
    """The join display, the consent notice and serve's off-switch rely on this table."""
    import importlib
    import inspect

    from modlens.detectors import dataflow, registry
    from modlens.detectors.remote import RemoteDetector

    for name, module in registry.PLUGINS.items():
        classes = inspect.getmembers(importlib.import_module(f"modlens.detectors.{module}"), inspect.isclass)
        remote = any(issubclass(c, RemoteDetector) and c is not RemoteDetector for _, c in classes)
        assert remote == dataflow.is_remote(name), name
