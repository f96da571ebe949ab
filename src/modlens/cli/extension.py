"""build the browser extension's store archives, or print its folder

`modlens extension build --out DIR` writes a Chromium zip (Chrome Web Store) and a Firefox
.xpi (addons.mozilla.org) from the same files; only manifest.json differs per browser. Each is
written beside its name and renamed once whole: a build that stops (a file it cannot read, a full
disk; exit 1) leaves the archive built before as it was.
`modlens extension path` prints the unpacked folder to load for development.
"""
from __future__ import annotations

import argparse
from pathlib import Path

from modlens import extension_build
from modlens.cli.common import CliError


def add_arguments(parser: argparse.ArgumentParser) -> None:
    actions = parser.add_subparsers(dest="action", metavar="ACTION", required=True)
    build = actions.add_parser("build", help="write the Chromium zip and the Firefox .xpi")
    build.add_argument("--out", metavar="DIR", required=True, help="folder for the archives (created if missing)")
    build.add_argument("--source", metavar="DIR", help="unpacked extension to package (default: the one installed with modlens)")
    build.add_argument("--browser", choices=extension_build.BROWSERS, action="append",
                       help="only this browser's archive (repeatable; default: all)")
    actions.add_parser("path", help="print the unpacked extension folder (load it unpacked for development)")


def run(args: argparse.Namespace) -> int:
    try:
        source = Path(args.source) if getattr(args, "source", None) else extension_build.source_folder()
        if args.action == "path":
            extension_build.check_source(source)
            print(source)
            return 0
        browsers = tuple(dict.fromkeys(args.browser)) if args.browser else extension_build.BROWSERS
        archives = extension_build.build(source, Path(args.out), browsers)
    except extension_build.ArchiveNotWritten as err:  # a source file it could not read, a full disk: exit 1
        raise CliError(str(err), kind=err.kind) from None
    except (OSError, ValueError) as err:  # missing folder, --out is a file, unreadable manifest
        raise CliError(str(err)) from None
    for archive in archives:
        print(f"{archive}\t{archive.stat().st_size:,} bytes")
    return 0
