"""show or rotate the pairing token the extension must present

The token lives in `paths.token_file()` (mode 0600). A running daemon re-reads it, so after
`--rotate` every paired client must pair again with the new token. `--api-key` shows (with
`--rotate`, replaces) the separate key for the Perspective-compatible API (docs/PERSPECTIVE.md),
so a bot or a research tool never holds the token that pairs the browser extension.

The daemon also admits only the extensions it was paired with: the copy `modlens browse` loads,
the first extension to connect while none is paired, and each one added with `--extension ORIGIN`
(a second browser or profile: its options page shows its origin). `--rotate` forgets them all;
an `--extension` that is not an extension's origin is refused before `--rotate` changes anything.
"""
from __future__ import annotations

import argparse
import json

from modlens import pairing, paths
from modlens.cli.common import CliError
from modlens.runtime import daemon_url


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--rotate", action="store_true", help="replace the token (paired clients must pair again)")
    parser.add_argument("--api-key", action="store_true",
                        help="the key for the Perspective-compatible API instead of the pairing token")
    parser.add_argument("--extension", metavar="ORIGIN",
                        help="pair one more extension: chrome-extension://<id> or moz-extension://<uuid> "
                             "(shown in its options page)")
    parser.add_argument("--json", action="store_true", help="print {token, path, url, extensions} as JSON")


def run(args: argparse.Namespace) -> int:
    if args.api_key:
        return _api_key(args)
    fix = "copy the origin from the extension's options page; `modlens pair --rotate` pairs anew"
    try:  # a bad origin is said before --rotate replaces anything: an error means nothing changed
        origin = pairing.extension_origin(args.extension) if args.extension else None
    except ValueError as err:
        raise CliError(str(err), fix=fix) from None
    token = pairing.rotate() if args.rotate else pairing.ensure()
    try:
        extensions = pairing.pair_extension(origin) if origin else pairing.paired_extensions()
    except ValueError as err:  # an unreadable file of paired extensions
        raise CliError(str(err), fix=fix) from None
    url = daemon_url()
    if args.json:
        print(json.dumps({"token": token, "path": str(paths.token_file()), "url": url, "rotated": args.rotate,
                          "extensions": extensions}))
        return 0
    print(token)
    print(f"\n{'New token written' if args.rotate else 'Token stored'} in {paths.token_file()} (readable by you only).")
    print(f"Paste it into the modlens extension's options (daemon address {url}),")
    print("or run `modlens browse` to start Chromium with the extension already paired.")
    print("Paired extensions: " + (", ".join(extensions) if extensions else "none yet (the first to connect is paired)"))
    return 0


def _api_key(args: argparse.Namespace) -> int:
    from modlens.perspective import keys

    key = keys.rotate() if args.rotate else keys.ensure()
    url = daemon_url().replace("ws://", "http://").removesuffix("/ws")
    if args.json:
        print(json.dumps({"api_key": key, "path": str(keys.key_file()), "url": f"{url}/v1alpha1/comments:analyze",
                          "rotated": args.rotate}))
        return 0
    print(key)
    print(f"\n{'New API key written' if args.rotate else 'API key stored'} in {keys.key_file()} (readable by you only).")
    print(f"Perspective clients: POST {url}/v1alpha1/comments:analyze?key=<this key>")
    print(f"Google's client: discoveryServiceUrl={url}/$discovery/rest?version=v1alpha1, developerKey=<this key>")
    return 0
