"""The daemon admits only the extensions it was paired with: a token that leaked to
another extension does not open the socket. Trust on first use for an extension paired by hand,
`modlens pair --extension` for one more, `modlens browse` for the copy it loads, `--rotate` to
start over."""
from __future__ import annotations

import json
import os
import stat

import pytest
import websockets

from modlens import pairing
from modlens.cli import main
from modlens.protocol.security import check_handshake

from daemon_helpers import EXT_ORIGIN, TOKEN, Client, connect, running_daemon

CHROMIUM_B = "chrome-extension://ponmlkjihgfedcbaponmlkjihgfedcba"
FIREFOX = "moz-extension://0b1c2d3e-4f50-4a6b-8c7d-9e0f1a2b3c4d"


def handshake(origin: str | None, token: str = "sekrit"):
    headers = {"Host": "127.0.0.1:8765", "Sec-WebSocket-Protocol": f"modlens.v1, modlens.token.{token}"}
    return check_handshake(headers | ({"Origin": origin} if origin else {}), "sekrit")


def test_the_first_extension_is_paired_and_another_is_refused(modlens_home):
    assert pairing.paired_extensions() == []
    assert handshake(FIREFOX) is None  # trust on first use
    assert pairing.paired_extensions() == [FIREFOX]
    assert stat.S_IMODE(os.stat(pairing.extensions_file()).st_mode) == 0o600
    refusal = handshake(CHROMIUM_B)
    assert refusal is not None and refusal.status == 403
    assert f"modlens pair --extension {CHROMIUM_B}" in refusal.reason
    assert handshake(FIREFOX) is None and handshake(None) is None  # the paired one, and a CLI client
    assert pairing.paired_extensions() == [FIREFOX]


def test_a_wrong_token_pairs_nothing(modlens_home):
    assert handshake(CHROMIUM_B, token="guess").status == 401
    assert handshake("chrome-extension://not-an-id") .status == 403  # no browser sends such an origin
    assert pairing.paired_extensions() == []
    assert handshake(EXT_ORIGIN) is None and pairing.paired_extensions() == [EXT_ORIGIN]


def test_pair_extension_adds_one_and_rotate_forgets_them_all(modlens_home, capsys):
    assert handshake(EXT_ORIGIN) is None
    assert main(["pair", "--extension", FIREFOX.removeprefix("moz-extension://").upper(), "--json"]) == 0
    shown = json.loads(capsys.readouterr().out)
    assert shown["extensions"] == [EXT_ORIGIN, FIREFOX]
    assert handshake(FIREFOX) is None and handshake(CHROMIUM_B).status == 403

    assert main(["pair", "--rotate", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["extensions"] == []
    assert not pairing.extensions_file().exists()
    assert handshake(CHROMIUM_B) is None and handshake(EXT_ORIGIN).status == 403


def test_a_bad_extension_id_is_a_clear_error(modlens_home, capsys):
    assert main(["pair", "--extension", "https://evil.example"]) != 0
    assert "is not an extension id" in capsys.readouterr().err
    assert not pairing.extensions_file().exists()
    for text, origin in ((f"{EXT_ORIGIN}/options.html", EXT_ORIGIN), (EXT_ORIGIN.split("//")[1], EXT_ORIGIN),
                         (FIREFOX.upper(), FIREFOX)):
        assert pairing.extension_origin(text) == origin


def test_rotate_with_a_bad_extension_id_rotates_nothing(modlens_home, capsys):
    """`pair --rotate --extension BAD` replaced the token and unpaired every extension, then exited 2
    on the id, printing no new token: the error read as if nothing had happened while every paired
    client was cut off. The id is checked first: nothing changes."""
    assert main(["pair", "--extension", FIREFOX]) == 0
    token = pairing.read()
    capsys.readouterr()
    assert main(["pair", "--rotate", "--extension", "https://evil.example"]) == 2
    assert "is not an extension id" in capsys.readouterr().err
    assert pairing.read() == token and pairing.paired_extensions() == [FIREFOX]


def test_an_unreadable_pairing_file_opens_nothing(modlens_home):
    pairing.extensions_file().write_text("{not json", encoding="utf-8")
    refusal = handshake(EXT_ORIGIN)
    assert refusal.status == 403 and "modlens pair --rotate" in refusal.reason
    pairing.extensions_file().write_text(json.dumps({"extensions": []}), encoding="utf-8")
    assert handshake(EXT_ORIGIN).status == 403
    pairing.rotate()
    assert handshake(EXT_ORIGIN) is None


def test_browse_pairs_the_copy_it_loads(modlens_home, capsys):
    assert main(["browse", "--print-command", "--browser", "/bin/true", "--daemon", "ws://127.0.0.1:9/ws"]) == 0
    copy = modlens_home / "browser-profile" / "extension"
    assert f"--load-extension={copy}" in capsys.readouterr().out
    origin = pairing.chromium_unpacked_origin(copy)
    assert pairing.extension_origin(origin) == origin
    assert pairing.paired_extensions() == [origin]
    assert handshake(origin) is None and handshake(EXT_ORIGIN).status == 403


async def test_the_daemon_socket_refuses_an_unpaired_extension(tmp_path):
    async with running_daemon(tmp_path) as (url, _):
        async with connect(url) as ws:  # the first extension: paired on this handshake
            assert (await Client(ws).hello())["type"] == "hello_ok"
        with pytest.raises(websockets.exceptions.InvalidStatus) as refused:
            async with connect(url, origin=CHROMIUM_B):
                pass
        assert refused.value.response.status_code == 403
        pairing.pair_extension(CHROMIUM_B)  # `modlens pair --extension`: a running daemon follows at once
        async with connect(url, origin=CHROMIUM_B) as ws:
            assert (await Client(ws).hello())["type"] == "hello_ok"
        async with connect(url, origin=None, additional_headers={"Authorization": f"Bearer {TOKEN}"}) as ws:
            assert (await Client(ws).hello())["type"] == "hello_ok"  # a CLI client: no origin to pair
