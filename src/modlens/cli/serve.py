"""run the daemon the browser extension talks to

Listens on 127.0.0.1 by default. Prints where the study log is, the address, and how to
pair; writes `paths.runtime_file()` so `modlens status` and `modlens feed` can find it;
SIGINT/SIGTERM close the sockets, drain the study-log writer and remove that file.
"""
from __future__ import annotations

import argparse
import asyncio
import ipaddress
import json
import logging
import os
import signal
import sys
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from modlens import paths

DEFAULT_HOST, DEFAULT_PORT = "127.0.0.1", 8765


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--config", metavar="STUDY.toml", help="study configuration (default: embedded defaults)")
    parser.add_argument("--db", metavar="PATH", help=f"study log (default: {paths.default_db()})")
    parser.add_argument("--host", default=DEFAULT_HOST, help="address to listen on (default: 127.0.0.1)")
    parser.add_argument("--port", type=int, default=DEFAULT_PORT, help="port (default: 8765; 0 picks a free one)")
    parser.add_argument("--allow-remote", action="store_true",
                        help="DANGEROUS: allow a non-loopback --host and Host headers; anyone on the network "
                             "who learns the token can then feed and read your study log")
    parser.add_argument("--log-level", default="INFO", choices=["DEBUG", "INFO", "WARNING", "ERROR"])


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


# --- the runtime file (read by status and feed) ---------------------------------------------

def write_runtime(info: dict[str, Any]) -> None:
    path = paths.runtime_file()
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.write_text(json.dumps(info, indent=2), encoding="utf-8")
    os.replace(tmp, path)


def remove_runtime(pid: int) -> None:
    info = read_runtime(check_alive=False)
    if info and info.get("pid") == pid:
        paths.runtime_file().unlink(missing_ok=True)


def pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def read_runtime(check_alive: bool = True) -> dict[str, Any] | None:
    """The running daemon's {host, port, pid, ...}, or None (stale files are ignored)."""
    try:
        info = json.loads(paths.runtime_file().read_text(encoding="utf-8"))
    except (FileNotFoundError, ValueError):
        return None
    if check_alive and not pid_alive(int(info.get("pid", -1))):
        return None
    return info


def daemon_url(host: str | None = None, port: int | None = None) -> str:
    """ws URL of the daemon: explicit host/port, else the runtime file, else the defaults."""
    info = read_runtime() or {}
    host = host or info.get("host") or DEFAULT_HOST
    port = port or info.get("port") or DEFAULT_PORT
    if host in ("0.0.0.0", "::"):
        host = DEFAULT_HOST
    if ":" in host and not host.startswith("["):
        host = f"[{host}]"
    return f"ws://{host}:{port}/ws"


# --- serving -----------------------------------------------------------------------------

async def _serve(study, db: Path, host: str, port: int, allow_remote: bool) -> int:
    from aiohttp import web

    from modlens.daemon.app import ENGINE, create_app
    from modlens.pairing import TokenSource

    app = create_app(study, db, TokenSource(), allow_remote=allow_remote)
    runner = web.AppRunner(app, handle_signals=False, shutdown_timeout=5)
    print(f"modlens: loading detectors for study {study.study_id!r} ...", flush=True)
    await runner.setup()  # opens the study log and loads the engine (cleanup_ctx)
    site = web.TCPSite(runner, host, port)
    try:
        await site.start()
    except OSError as err:
        await runner.cleanup()
        print(f"modlens serve: cannot listen on {host}:{port}: {err.strerror or err}; "
              "is another `modlens serve` running? (`modlens status`) or pick --port", file=sys.stderr)
        return 1
    bound_port = site._server.sockets[0].getsockname()[1]
    url_host = f"[{host}]" if ":" in host else host
    write_runtime({"host": host, "port": bound_port, "pid": os.getpid(), "db": str(db),
                   "url": f"ws://{url_host}:{bound_port}/ws", "study_id": study.study_id,
                   "started_at": datetime.now(timezone.utc).isoformat(timespec="seconds")})

    engine = app[ENGINE]
    for s in engine.statuses:
        line = f"  detector {s.name}: {s.status}" + (f" ({s.version})" if s.version else "")
        print(line + (f" — {s.message}; fix: {s.fix}" if s.status != "loaded" else ""), flush=True)
    for what, err in engine.component_errors.items():
        print(f"  {what}: unavailable — {err}", flush=True)
    print(f"modlens: study log   {db}", flush=True)
    print(f"modlens: listening   ws://{url_host}:{bound_port}/ws", flush=True)
    print("modlens: pair        run `modlens pair` and paste the token into the extension's options,"
          " or `modlens browse` to start Chromium with the extension already paired", flush=True)
    if allow_remote and not is_loopback(host):
        print("modlens: WARNING     listening beyond this computer (--allow-remote)", flush=True)

    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    try:
        await stop.wait()
    finally:
        print("modlens: shutting down (draining the study log) ...", flush=True)
        await runner.cleanup()  # closes sockets, then stops engine and writer (commits what is queued)
        remove_runtime(os.getpid())
    print("modlens: stopped", flush=True)
    return 0


def run(args: argparse.Namespace) -> int:
    from modlens.config import StudyConfigError, load_study
    from modlens.pairing import ensure

    logging.basicConfig(level=args.log_level, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    if not is_loopback(args.host) and not args.allow_remote:
        print(f"modlens serve: refusing to listen on {args.host}: not a loopback address. The daemon would be "
              "reachable from other machines; pass --allow-remote only if you really mean it.", file=sys.stderr)
        return 2
    try:
        study = load_study(args.config)
    except StudyConfigError as err:
        print(err, file=sys.stderr)
        return 2
    db = Path(args.db) if args.db else paths.default_db()
    ensure()  # create the pairing token on first run
    try:
        return asyncio.run(_serve(study, db, args.host, args.port, args.allow_remote))
    except Exception as err:
        from modlens.studylog.store import StudyLogError
        if isinstance(err, StudyLogError):
            print(f"modlens serve: {err}", file=sys.stderr)
            return 1
        if isinstance(err, StudyConfigError):  # e.g. gold items checked by daemon/calibration.py
            print(f"modlens serve: {err}", file=sys.stderr)
            return 2
        raise
