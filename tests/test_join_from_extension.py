"""Joining a study from the extension's options page: the pack travels over the protocol
(`join_study`), the real `modlens serve` joins it and starts again on it, on the same port. Only a
signed pack (its signer's fingerprint comes back in the answer); an unsigned one is refused with the
terminal command that joins it on purpose, and remote detectors stay off (nobody was asked)."""
from __future__ import annotations

import asyncio
import json
import subprocess
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager

import pytest

from daemon_helpers import Client, connect, running_daemon, serve_process
from modlens import pairing, signing
from modlens.study import folder, join, pack

REMOTE = '\n[[detectors]]\nname = "http"\nid = "collector"\noptions = { url = "http://127.0.0.1:9/c", score_path = "s" }\n'


def _key(tmp_path):
    path = tmp_path / "keys" / "researcher.key"
    if not path.exists():
        path.parent.mkdir(exist_ok=True)
        signing.new_key_file(path)
    return path


def _pack_text(tmp_path, study_id: str, *, signed: bool = True, extra: str = "") -> str:
    root = tmp_path / study_id
    if not root.exists():
        folder.init_folder(root)  # the folder's name is the study id
    # profanity-check only: the restart on the joined study need not load the MiniLM weights again
    text = (root / "study.toml").read_text().replace('[[detectors]]\nname = "minilm-toxicity"\n\n', "", 1)
    (root / "study.toml").write_text(text + extra)
    out = tmp_path / f"{study_id}.modlens"
    pack.write(folder.load_folder(root), out, _key(tmp_path) if signed else None)
    return out.read_text(encoding="utf-8")


def _join_msg(mid: str, text: str, **extra) -> dict:
    return {"type": "join_study", "id": mid, "pack": text, "file_name": "pilot.modlens", **extra}


async def _hello(url: str, token: str) -> tuple[Client, dict]:
    ws = await connect(url, token=token).__aenter__()
    client = Client(ws)
    msg = {"type": "hello", "id": "h1", "protocol": 1, "client": "test", "client_version": "0", "token": token,
           "rater_id": "rater-1"}
    return client, await client.request(msg, "hello_ok", timeout=30)


def _wait_for_study(home, study_id: str, pid: int, timeout: float = 90.0) -> dict:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            info = json.loads((home / "daemon.json").read_text())
            if info.get("pid") == pid and info.get("study_id") == study_id:
                return info
        except (FileNotFoundError, ValueError):
            pass
        time.sleep(0.1)
    raise AssertionError(f"serve did not restart on {study_id}:\n{(home / 'serve.log').read_text()}")


def test_serve_joins_a_pack_from_the_extension_and_restarts_on_it(tmp_path, modlens_home):
    unsigned = _pack_text(tmp_path, "pilot", signed=False)
    pilot, other = _pack_text(tmp_path, "pilot", extra=REMOTE), _pack_text(tmp_path, "other")
    signer = pack.parse(pilot, "pilot").signer
    # no --config (a daemon that may join): the embedded default study, MiniLM included, so allow a slow start
    proc, info = serve_process(modlens_home, "--db", str(tmp_path / "study.sqlite"), timeout=120)
    token = pairing.ensure()

    async def scenario() -> None:
        client, ok = await _hello(info["url"], token)
        assert ok["study"]["study_id"] != "pilot"
        tampered = pilot.replace('"pilot"', '"pilot2"', 1)
        bad = await client.request(_join_msg("j1", tampered), "join_study_ok")
        assert bad["type"] == "error" and bad["code"] == "join_refused"
        assert "pilot.modlens: checksum mismatch" in bad["message"]
        assert join.joined() is None  # nothing was joined
        refused = await client.request(_join_msg("j1u", unsigned), "join_study_ok")
        assert refused["type"] == "error" and refused["code"] == "join_refused"
        assert "unsigned" in refused["message"] and "modlens join pilot.modlens --allow-unsigned" in refused["message"]
        assert join.joined() is None
        good = await client.request(_join_msg("j2", pilot), "join_study_ok")
        assert good == {"type": "join_study_ok", "id": "j2", "study_id": "pilot", "title": good["title"],
                        "tasks": good["tasks"], "restarting": True, "signer": signer,
                        "remote_off": ["http://127.0.0.1:9"]}
        assert good["tasks"] >= 1 and signer.startswith("ed25519:")
        await asyncio.wait_for(client.ws.wait_closed(), 30)  # the daemon stops to start again

    asyncio.run(scenario())
    try:
        again = _wait_for_study(modlens_home, "pilot", proc.pid)
        assert again["port"] == info["port"]  # the extension reconnects where it was
        assert join.joined()["source"] == "the extension's options page (pilot.modlens)"

        async def after_restart() -> None:
            client, ok = await _hello(again["url"], token)
            assert ok["study"]["study_id"] == "pilot" and ok["study"]["tasks"]
            assert "collector is off" in ok["study"]["consent_text"] and signer in ok["study"]["consent_text"]
            same = await client.request(_join_msg("j3", pilot), "join_study_ok")
            assert same["restarting"] is False  # the same pack again changes nothing
            switch = await client.request(_join_msg("j4", other), "join_study_ok")
            assert switch["code"] == "join_refused" and "would replace it" in switch["message"]
            assert "Replace the joined study" in switch["message"]
            await client.ws.close()

        asyncio.run(after_restart())
        assert join.joined()["study_id"] == "pilot" and join.joined()["accepted_remote"] == []
        assert proc.poll() is None
    finally:
        proc.terminate()
        proc.wait(30)
    log = (modlens_home / "serve.log").read_text()
    assert "restarting on the joined study" in log and log.count("listening") == 2


@pytest.mark.asyncio
async def test_a_daemon_on_a_fixed_study_refuses_to_join(tmp_path, modlens_home):
    text = _pack_text(tmp_path, "pilot")
    async with running_daemon(tmp_path) as (url, _app):
        async with connect(url) as ws:
            client = Client(ws)
            await client.hello()
            answer = await client.request(_join_msg("j1", text), "join_study_ok")
    assert answer["code"] == "join_refused" and "given with --config" in answer["message"]
    assert join.joined() is None


@pytest.mark.asyncio
async def test_a_pack_over_the_message_limit_is_joined_from_the_extension(tmp_path, modlens_home, capsys):
    # the options page sends the pack in one message; the daemon (on the default study, before a
    # first join) refused one over limits.max_message_bytes (1 MiB) as too_large, while `modlens join`
    # reads packs up to pack.PACK_MAX_BYTES. A daemon that can join now reads frames up to
    # JOIN_FRAME_BYTES from a paired socket (its read limit is fixed at the upgrade, before hello),
    # then refuses them too_large unless they are a join_study after hello
    from modlens.cli import main as cli_main
    from test_study_folder import item_set_folder

    root = item_set_folder(tmp_path / "large", 1_200_000)
    out = tmp_path / "large.modlens"
    assert cli_main(["study", "pack", str(root), "--out", str(out), "--sign-key", str(_key(tmp_path))]) == 0
    assert "cannot send" not in capsys.readouterr().out  # what pack said of such a pack is no longer so
    text = out.read_text(encoding="utf-8")
    limit = 1 << 20
    assert len(text.encode()) > limit
    restarts: list[bool] = []
    async with running_daemon(tmp_path, restart_on_join=lambda: restarts.append(True)) as (url, _app):
        async with connect(url) as ws:
            client = Client(ws)
            early = await client.request(_join_msg("j0", text), "join_study_ok")
            assert early["code"] == "too_large"  # not before hello: only the paired extension
            await client.hello()
            # another message as large is still refused, even one that names join_study inside
            ping = {"type": "ping", "id": "p1", "pad": {"type": "join_study"}, "x": "a" * limit}
            assert (await client.request(ping))["code"] == "too_large"
            # nor one that starts as a join_study and parses as another type (a repeated key: the last wins)
            await client.send('{"type": "join_study", "id": "p2", "x": "' + "a" * limit + '", "type": "ping"}')
            assert (await client.until(lambda m: m.get("id") == "p2"))["code"] == "too_large"
            answer = await client.request(_join_msg("j1", text), "join_study_ok", timeout=60)
    assert answer["type"] == "join_study_ok" and answer["study_id"] == "large" and answer["restarting"] is True
    assert restarts == [True]
    joined = join.joined()
    assert joined is not None and joined["study_id"] == "large"


@pytest.mark.asyncio
async def test_a_daemon_that_cannot_join_reads_no_frame_past_the_hard_limit(tmp_path, modlens_home):
    # the join_study allowance (twice PACK_MAX_BYTES) was the socket's read cap on every daemon, so a
    # `serve --config` daemon, which refuses every join, read a 5 MiB frame of any type in full (before
    # hello too) and answered too_large; it closes the socket with 1009 past 4 × max_message_bytes, as
    # before the allowance. A daemon that can join still reads a pack over the message limit (above)
    import websockets

    from modlens.live.join import JOIN_FRAME_BYTES

    big = 5 << 20
    assert 4 * (1 << 20) < big < JOIN_FRAME_BYTES
    for frame in (_join_msg("j1", "a" * big), {"type": "comments", "id": "c1", "x": "a" * big}):
        async with running_daemon(tmp_path) as (url, _app):
            async with connect(url) as ws:
                client = Client(ws)
                await client.hello()
                with pytest.raises(websockets.ConnectionClosed) as closed:
                    await client.send(frame)  # the daemon may close while the frame is still being sent
                    await client.until(lambda m: m.get("id") in ("j1", "c1"))
        assert closed.value.rcvd is not None and closed.value.rcvd.code == 1009, closed.value


@pytest.mark.asyncio
async def test_a_join_does_not_stall_the_other_sockets(tmp_path, modlens_home, monkeypatch):
    # join_study checked and wrote the pack on the event loop (about 2 s for a 16 MiB pack), so every
    # other socket waited; it runs in an executor now. The join here is made slow (1.5 s) on purpose:
    # another socket's ping is answered while it runs, and the join gets the same answer and restart
    import modlens.live.join as live_join

    real = live_join.join_from_extension

    def slow_join(*args, **kwargs):
        time.sleep(1.5)
        return real(*args, **kwargs)

    monkeypatch.setattr(live_join, "join_from_extension", slow_join)
    text = _pack_text(tmp_path, "pilot")
    restarts: list[bool] = []
    async with running_daemon(tmp_path, restart_on_join=lambda: restarts.append(True)) as (url, _app):
        async with connect(url) as a, connect(url) as b:
            joiner, other = Client(a), Client(b)
            await joiner.hello()
            await other.hello()
            arrived: dict[str, float] = {}

            async def join_answer():
                answer = await joiner.request(_join_msg("j1", text), "join_study_ok", timeout=30)
                arrived["join"] = time.monotonic()
                return answer

            joining = asyncio.create_task(join_answer())
            await asyncio.sleep(0.3)  # the daemon has read the join frame and is joining
            await other.request({"type": "ping", "id": "p1"}, timeout=10)
            arrived["ping"] = time.monotonic()
            answer = await joining
    assert arrived["ping"] < arrived["join"]  # answered while the join ran
    assert answer["type"] == "join_study_ok" and answer["study_id"] == "pilot" and answer["restarting"] is True
    assert restarts == [True]
    assert join.joined()["study_id"] == "pilot"


def _wait_for_restart(home, pid: int, timeout: float = 90.0) -> dict:
    """The runtime file of serve's second start (after a restart on a joined study)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if (home / "serve.log").read_text().count("modlens: listening") >= 2:
            return _wait_for_study(home, "pilot", pid, timeout=10)
        time.sleep(0.1)
    raise AssertionError(f"serve did not restart:\n{(home / 'serve.log').read_text()}")


@contextmanager
def _serving(home, db) -> Iterator[tuple[subprocess.Popen, dict, str]]:
    """A real `modlens serve` on the joined study in `home`: its process, runtime file and pairing token."""
    proc, info = serve_process(home, "--db", str(db), timeout=120)
    token = pairing.ensure()
    try:
        yield proc, info, token
    finally:
        proc.terminate()
        proc.wait(30)


Check = Callable[[dict], None]


def _join_restart_join(home, proc, info: dict, token: str, text: str,
                       served: Check, answered: Check, restarted: Check, answered_again: Check) -> None:
    """The pack `text` joined from the options page on the daemon of `info`, which must restart on it,
    then joined again on the restarted daemon. Each check runs where the test looked before: `served`
    on the first hello_ok, `answered` on the join's answer (before waiting for the socket a restart
    closes), `restarted` on the second daemon's hello_ok, `answered_again` on the second join's answer."""
    async def scenario() -> None:
        client, ok = await _hello(info["url"], token)
        served(ok)
        answered(await client.request(_join_msg("j1", text), "join_study_ok"))
        await asyncio.wait_for(client.ws.wait_closed(), 30)

    asyncio.run(scenario())
    again = _wait_for_restart(home, proc.pid)

    async def after_restart() -> None:
        client, ok = await _hello(again["url"], token)
        restarted(ok)
        answered_again(await client.request(_join_msg("j2", text), "join_study_ok"))
        await client.ws.close()

    asyncio.run(after_restart())


def test_a_pack_joined_at_a_terminal_meanwhile_is_restarted_on_when_joined_again_from_the_extension(
        tmp_path, modlens_home):
    # serve started on pack P1; `modlens join P2` at a terminal (the same study, a revised consent
    # text) wrote P2 on disk, and serve went on with P1, as it says. Joining P2 from the options
    # page compared P2 with the pack on disk (P2) and answered restarting: false ("It was already
    # the daemon's study") while the daemon still served P1. It compares with what the daemon
    # started on now, so it restarts on P2
    from modlens.cli import main as cli_main

    first = tmp_path / "p1.modlens"
    first.write_text(_pack_text(tmp_path, "pilot"), encoding="utf-8")
    assert cli_main(["join", str(first)]) == 0
    with _serving(modlens_home, tmp_path / "study.sqlite") as (proc, info, token):
        consent = tmp_path / "pilot" / "consent.md"
        consent.write_text(consent.read_text() + "\nRevised: your ratings are kept for five years.\n")
        revised = _pack_text(tmp_path, "pilot")
        second = tmp_path / "p2.modlens"
        second.write_text(revised, encoding="utf-8")
        assert cli_main(["join", str(second)]) == 0
        assert join.joined()["pack_sha256"] == pack.parse(revised, "p2").sha256

        def served(ok: dict) -> None:
            assert "five years" not in ok["study"]["consent_text"]  # still P1, as `modlens join` said

        def answered(answer: dict) -> None:
            assert answer["type"] == "join_study_ok" and answer["restarting"] is True, answer

        def restarted(ok: dict) -> None:
            assert "five years" in ok["study"]["consent_text"]  # what the answer said: serving P2 now

        def answered_again(same: dict) -> None:
            assert same["restarting"] is False  # P2 again: truly the daemon's study

        _join_restart_join(modlens_home, proc, info, token, revised, served, answered, restarted, answered_again)
        assert proc.poll() is None
    assert (modlens_home / "serve.log").read_text().count("modlens: listening") == 2


def test_remote_detectors_accepted_at_a_terminal_meanwhile_are_restarted_on_when_joined_from_the_extension(
        tmp_path, modlens_home):
    # the same pack, its remote detector off when serve started; `modlens join --accept-remote` at a
    # terminal turned it on on disk. Joining the pack from the options page kept that yes and answered
    # restarting: false with remote_off [] while the daemon ran with the detector off. It restarts
    from modlens.cli import main as cli_main

    path = tmp_path / "p1.modlens"
    path.write_text(text := _pack_text(tmp_path, "pilot", extra=REMOTE), encoding="utf-8")
    assert cli_main(["join", str(path)]) == 0
    proc, info = serve_process(modlens_home, "--db", str(tmp_path / "study.sqlite"), timeout=120)
    token = pairing.ensure()
    try:
        assert cli_main(["join", str(path), "--accept-remote"]) == 0
        assert join.joined()["accepted_remote"] == ["http://127.0.0.1:9"]

        async def scenario() -> None:
            client, ok = await _hello(info["url"], token)
            assert "collector is off" in ok["study"]["consent_text"]
            answer = await client.request(_join_msg("j1", text), "join_study_ok")
            assert answer["remote_off"] == [] and answer["restarting"] is True, answer
            await asyncio.wait_for(client.ws.wait_closed(), 30)

        asyncio.run(scenario())
        again = _wait_for_restart(modlens_home, proc.pid)

        async def after_restart() -> None:
            client, ok = await _hello(again["url"], token)
            assert "collector is off" not in ok["study"]["consent_text"]  # on, as remote_off [] said
            same = await client.request(_join_msg("j2", text), "join_study_ok")
            assert same["restarting"] is False and same["remote_off"] == []
            await client.ws.close()

        asyncio.run(after_restart())
    finally:
        proc.terminate()
        proc.wait(30)


@pytest.mark.parametrize("config", ["home", "home/study.toml"])
def test_serve_given_the_joined_home_as_config_serves_it_as_joined(tmp_path, modlens_home, config):
    # `modlens serve --config $MODLENS_HOME` read the joined study as any study folder: the remote
    # detector the participant did not accept at join ran, and the consent text did not say it was off
    from modlens.cli import main as cli_main
    from modlens.live.run import served_study

    path = tmp_path / "p1.modlens"
    path.write_text(_pack_text(tmp_path, "pilot", extra=REMOTE), encoding="utf-8")
    assert cli_main(["join", str(path)]) == 0  # without --accept-remote
    assert join.joined()["accepted_remote"] == []

    served = served_study(config.replace("home", str(modlens_home)))
    study, lines = served[0], served[2]
    assert study.study_id == "pilot" and "collector" not in [d.key for d in study.detectors]
    notice = study.data_flow_notice()  # what the consent text the extension shows says of where comments go
    assert "Detector collector is off" in notice and "127.0.0.1:9" not in notice.split("off")[0], notice
    assert any("detector collector: off" in line for line in lines), lines


def test_serve_starts_on_the_pack_of_the_study_it_serves_when_a_join_lands_at_its_start(
        tmp_path, modlens_home, monkeypatch):
    # serve read which pack it started on (joined-study.json), then the study it serves, apart: a
    # `modlens join` of P2 at a terminal landing between the two reads made it serve P2 while it took
    # itself to run P1, and a join of P1 from the options page then answered restarting: false
    from modlens.cli import main as cli_main
    from modlens.daemon import serve
    from modlens.live import run as live_run
    from modlens.live.join import join_study
    from modlens.protocol import JoinStudy

    p1 = _pack_text(tmp_path, "pilot")
    (tmp_path / "p1.modlens").write_text(p1, encoding="utf-8")
    consent = tmp_path / "pilot" / "consent.md"
    consent.write_text(consent.read_text() + "\nRevised: your ratings are kept for five years.\n")
    (tmp_path / "p2.modlens").write_text(_pack_text(tmp_path, "pilot"), encoding="utf-8")
    assert cli_main(["join", str(tmp_path / "p1.modlens")]) == 0

    real, started = live_run.served_study, []

    def join_lands_first(config, **kw):
        if not started:  # the terminal's join, as serve starts
            assert cli_main(["join", str(tmp_path / "p2.modlens")]) == 0
        return real(config, **kw)

    async def app(study, *args, started_on=None, **kw):  # what serve hands its app, instead of serving
        started.append((study, started_on))

    monkeypatch.setattr(live_run, "served_study", join_lands_first)
    monkeypatch.setattr(serve, "_serve", app)
    parser = __import__("argparse").ArgumentParser()
    serve.add_arguments(parser)
    assert serve.run(parser.parse_args(["--db", str(tmp_path / "study.sqlite")])) == 0

    [(study, started_on)] = started
    assert "five years" in study.consent_text  # P2 is served
    answer = join_study(JoinStudy(id="j1", pack=p1, file_name="p1.modlens"), study, can_join=True,
                        running_pack=started_on)
    assert answer.restarting is True  # P1 is not what runs


def test_a_hand_edited_joined_study_is_restarted_on_when_its_pack_is_joined_again_from_the_extension(
        tmp_path, modlens_home):
    # serve started on pack P's study, its consent text edited by hand in study.toml before; joining P again from the
    # options page wrote P's files back and answered restarting: false ("It was already the daemon's
    # study") while the daemon went on with the edited text. It restarts on P's files now
    from modlens.cli import main as cli_main

    text = _pack_text(tmp_path, "pilot")
    first = tmp_path / "p.modlens"
    first.write_text(text, encoding="utf-8")
    assert cli_main(["join", str(first)]) == 0
    study = modlens_home / "study.toml"
    assert study.read_text().count('consent_text = "') == 1
    study.write_text(study.read_text().replace('consent_text = "', 'consent_text = "Edited by hand. ', 1))
    with _serving(modlens_home, tmp_path / "study.sqlite") as (proc, info, token):
        def served(ok: dict) -> None:
            assert "Edited by hand" in ok["study"]["consent_text"]  # the daemon serves the edit

        def answered(answer: dict) -> None:
            assert answer["type"] == "join_study_ok" and answer["restarting"] is True, answer

        def restarted(ok: dict) -> None:
            assert "Edited by hand" not in ok["study"]["consent_text"]  # P's own text, as the answer said

        def answered_again(same: dict) -> None:
            assert same["restarting"] is False  # P's files, read at this start: truly the daemon's study

        _join_restart_join(modlens_home, proc, info, token, text, served, answered, restarted, answered_again)
