"""The extension's wire constants agree with the daemon's, and the two background script lists
(Chromium's importScripts, Firefox's manifest `background.scripts`) name the same files. Fast;
needs node, no browser."""
from __future__ import annotations

import json
import re
import shutil
import subprocess


from .harness import REPO
from realtools import need, requires

EXT = REPO / "extension"


def daemon_protocol():
    """The module defining the protocol constants (the daemon's today; `modlens.protocol` if moved)."""
    try:
        from modlens import protocol
        if hasattr(protocol, "SUBPROTOCOL"):
            return protocol
    except ImportError:
        pass
    from modlens.daemon import protocol
    return protocol


def js_constants() -> dict:
    need("node")
    node = shutil.which("node")
    script = ("const ns = require(process.argv[1]); console.log(JSON.stringify({protocol: ns.PROTOCOL, "
              "subprotocol: ns.SUBPROTOCOL, prefix: ns.TOKEN_SUBPROTOCOL_PREFIX, offered: ns.wsSubprotocols('T0K')}))")
    res = subprocess.run([node, "-e", script, str(EXT / "lib" / "constants.js")], capture_output=True, text=True, timeout=60)
    assert res.returncode == 0, res.stderr
    return json.loads(res.stdout)


@requires("node")
def test_subprotocols_and_version_match_the_daemon():
    p = daemon_protocol()
    js = js_constants()
    assert js["subprotocol"] == p.SUBPROTOCOL
    assert js["prefix"] == p.TOKEN_SUBPROTOCOL_PREFIX
    assert js["protocol"] == p.PROTOCOL_VERSION
    assert js["offered"] == [p.SUBPROTOCOL, p.TOKEN_SUBPROTOCOL_PREFIX + "T0K"]


@requires("node")
def test_the_daemon_reads_the_token_the_extension_offers():
    try:
        from modlens.daemon.security import offered_token
    except ImportError:  # the Python refactor may move it next to the protocol
        from modlens.security import offered_token
    offered = js_constants()["offered"]
    assert offered_token({"Sec-WebSocket-Protocol": ", ".join(offered)}) == "T0K"


def test_background_script_lists_agree():
    manifest = json.loads((EXT / "manifest.json").read_text(encoding="utf-8"))
    source = (EXT / "background.js").read_text(encoding="utf-8")
    imported = re.findall(r'"([\w/.-]+\.js)"', re.search(r"importScripts\(([^)]*)\)", source).group(1))
    assert manifest["background"]["scripts"] == imported + [manifest["background"]["service_worker"]]
    for path in imported:
        assert (EXT / path).is_file(), path
