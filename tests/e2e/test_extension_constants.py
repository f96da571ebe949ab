"""The two background script lists (Chromium's importScripts, Firefox's manifest
`background.scripts`) name the same files. The extension's protocol constants are checked against
`modlens.protocol` in one place, tests/test_extension_protocol.py."""
from __future__ import annotations

import json
import re

from .harness import REPO

EXT = REPO / "extension"


def test_background_script_lists_agree():
    manifest = json.loads((EXT / "manifest.json").read_text(encoding="utf-8"))
    source = (EXT / "background.js").read_text(encoding="utf-8")
    imported = re.findall(r'"([\w/.-]+\.js)"', re.search(r"importScripts\(([^)]*)\)", source).group(1))
    assert manifest["background"]["scripts"] == imported + [manifest["background"]["service_worker"]]
    for path in imported:
        assert (EXT / path).is_file(), path
