"""show or rotate the pairing token the extension must present

The token lives in `paths.token_file()` (mode 0600). A running daemon re-reads it, so after
`--rotate` every paired client must pair again with the new token.
"""
from __future__ import annotations

import argparse
import json

from modlens import pairing, paths
from modlens.runtime import daemon_url


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--rotate", action="store_true", help="replace the token (paired clients must pair again)")
    parser.add_argument("--json", action="store_true", help="print {token, path, url} as JSON")


def run(args: argparse.Namespace) -> int:
    token = pairing.rotate() if args.rotate else pairing.ensure()
    url = daemon_url()
    if args.json:
        print(json.dumps({"token": token, "path": str(paths.token_file()), "url": url, "rotated": args.rotate}))
        return 0
    print(token)
    print(f"\n{'New token written' if args.rotate else 'Token stored'} in {paths.token_file()} (readable by you only).")
    print(f"Paste it into the modlens extension's options (daemon address {url}),")
    print("or run `modlens browse` to start Chromium with the extension already paired.")
    return 0
