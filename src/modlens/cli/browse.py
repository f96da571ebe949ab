"""start Chromium with the extension loaded and paired

Copies the extension (installed with modlens as package data; the checkout's `extension/` in
development) into a profile directory of its own, writes `seed.json` (daemon address
and pairing token) into that copy — the extension applies it on its first run and whenever a
later `modlens browse` wrote a different one (the daemon on another port, a rotated token), so the
participant has nothing to paste —, pairs the daemon with that copy's extension id (the daemon
admits only paired extensions) and starts Debian's Chromium on that profile. The
participant still reads and accepts the study's consent text (the options page opens
by itself until then): pairing is automatic, consent never is. Without a URL, the browser
then opens on the study's task list (seed.json's `start`).
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

from modlens import extension_build, paths
from modlens.cli.common import CliError, add_daemon_option
from modlens.errors import ErrorKind

CHROMIUM_CANDIDATES = ("/usr/lib/chromium/chromium", "chromium", "chromium-browser", "google-chrome")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("url", nargs="?", help="page to open (default: the study's task list, after the consent text "
                                               "in the options page until you agreed)")
    parser.add_argument("--profile", metavar="DIR", help="browser profile (default: browser-profile in $MODLENS_HOME or ~/.local/share/modlens)")
    add_daemon_option(parser)
    parser.add_argument("--browser", metavar="PATH", help="Chromium binary (default: Debian's /usr/lib/chromium/chromium)")
    parser.add_argument("--extension", metavar="DIR", help="unpacked extension to load (default: the one installed with modlens)")
    parser.add_argument("--headless", action="store_true", help="no window (for checks on machines without a display)")
    parser.add_argument("--print-command", action="store_true", help="prepare the profile, print the browser command, do not start it")


def prepare_extension(source: Path, target: Path, daemon_url: str, token: str, start: str | None = None) -> Path:
    """Fresh copy of the extension with seed.json inside; returns the copy's path. `start`:
    "tasks" makes the extension open the study's task list when the browser starts."""
    extension_build.check_source(source)
    if target.exists():
        shutil.rmtree(target)
    left_out = shutil.ignore_patterns(*extension_build.EXCLUDED_DIRS, *extension_build.EXCLUDED_FILES)
    shutil.copytree(source, target, ignore=left_out)
    seed = {"daemonUrl": daemon_url, "token": token} | ({"start": start} if start else {})
    (target / "seed.json").write_text(json.dumps(seed), encoding="utf-8")
    os.chmod(target / "seed.json", 0o600)
    return target


def find_browser(explicit: str | None) -> str:
    for candidate in ([explicit] if explicit else CHROMIUM_CANDIDATES):
        found = shutil.which(candidate) or (candidate if Path(candidate).is_file() else None)
        if found:
            return found
    raise FileNotFoundError("no Chromium found: install it (apt-get install chromium) or pass --browser PATH")


def browser_command(browser: str, profile: Path, ext: Path, url: str | None, headless: bool) -> list[str]:
    cmd = [browser, f"--user-data-dir={profile / 'user-data'}", f"--disable-extensions-except={ext}",
           f"--load-extension={ext}", "--no-first-run", "--no-default-browser-check"]
    if headless:
        cmd.append("--headless=new")
    if os.geteuid() == 0:
        cmd.append("--no-sandbox")  # Chromium refuses to run as root with its sandbox
    if url:
        cmd.append(url)
    return cmd


def run(args: argparse.Namespace) -> int:
    from modlens import pairing
    from modlens.runtime import daemon_url, read_runtime

    if read_runtime() is None and not args.daemon:
        print("modlens browse: no daemon running; start `modlens serve` (the extension will connect when it is up)",
              file=sys.stderr)
    profile = Path(args.profile) if args.profile else paths.home() / "browser-profile"
    profile.mkdir(parents=True, exist_ok=True)
    try:
        source = Path(args.extension) if args.extension else extension_build.source_folder()
        ext = prepare_extension(source, profile / "extension", args.daemon or daemon_url(), pairing.ensure(),
                                start=None if args.url else "tasks")
        browser = find_browser(args.browser)
    except FileNotFoundError as err:
        raise CliError(str(err), kind=ErrorKind.NOT_FOUND) from None
    try:
        pairing.pair_extension(pairing.chromium_unpacked_origin(ext))
    except pairing.PairedExtensionsError as err:
        raise CliError(str(err), fix="`modlens pair --rotate`, then `modlens browse` again") from None
    cmd = browser_command(browser, profile, ext, args.url, args.headless)
    if args.print_command:
        print(" ".join(cmd))
        return 0
    print(f"modlens: starting {browser} with the extension from {ext} (profile {profile})", flush=True)
    return subprocess.call(cmd)
