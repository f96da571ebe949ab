"""run the daemon the browser extension talks to

Listens on 127.0.0.1 by default. Prints where the study log is, the address, and how to
pair; writes the runtime file (`modlens.runtime`) so `modlens status` and `modlens feed` can
find it; SIGINT/SIGTERM close the sockets, drain the study-log writer and remove that file. Without
--config it serves the joined study (`modlens join`), and when the extension's options page joins
another one it does the same and starts again on it, on the same port.
It lives in the daemon (`modlens.daemon.serve`); the engine never imports the daemon (tests/test_boundaries.py).
"""
from __future__ import annotations

import argparse
import asyncio
import logging
import os
import signal
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING

from modlens.cli.common import CliError, add_db_option, add_study_option, db_path
from modlens.errors import ErrorKind
from modlens.netutil import is_loopback
from modlens.services.detectors import status_lines
from modlens.runtime import DEFAULT_HOST, DEFAULT_PORT, bracketed, remove_runtime, write_runtime
from modlens.cli.perspective import DROP_IN_PORT  # `--perspective-proxy` without a port

if TYPE_CHECKING:
    from modlens.config import StudyConfig
    from modlens.live.join import StartedOn


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_study_option(parser)
    add_db_option(parser)
    parser.add_argument("--host", default=DEFAULT_HOST, help="address to listen on (default: 127.0.0.1)")
    parser.add_argument("--port", type=int, default=DEFAULT_PORT, help="port (default: 8765; 0 picks a free one)")
    parser.add_argument("--allow-remote", action="store_true",
                        help="DANGEROUS: allow a non-loopback --host and Host headers; anyone on the network "
                             "who learns the token can then feed and read your study log")
    parser.add_argument("--perspective-only", action="store_true",
                        help="serve only the Perspective-compatible API (POST /v1alpha1/comments:analyze), not the "
                             "extension's socket (docs/PERSPECTIVE.md)")
    parser.add_argument("--perspective-proxy", type=int, nargs="?", const=DROP_IN_PORT, default=None, metavar="PORT",
                        help="also answer clients that hard-code https://commentanalyzer.googleapis.com, unchanged, "
                             f"through HTTPS_PROXY on 127.0.0.1:PORT (default {DROP_IN_PORT}); prints what to set "
                             "(docs/PERSPECTIVE.md)")
    parser.add_argument("--log-level", default="INFO", choices=["DEBUG", "INFO", "WARNING", "ERROR"])


async def _serve(study: StudyConfig, db: Path, host: str, port: int, allow_remote: bool, can_join: bool,
                 perspective_only: bool = False, study_dir: Path | None = None,
                 perspective_proxy: int | None = None, started_on: StartedOn | None = None,
                 study_files: dict[str, str | None] | None = None) -> int | None:
    """Serve until SIGINT/SIGTERM (-> None) or until the extension joined a study (-> the port
    to serve it on: the same one, so the extension reconnects where it was). `study_files`: the
    digests of the study's files taken before it was read (`study.folder.study_file_digests`), kept
    in the runtime file for `modlens status` to say when they changed since."""
    from aiohttp import web

    from modlens.daemon.app import ENGINE, create_app
    from modlens.pairing import TokenSource

    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    joined = False

    def restart_on_join() -> None:
        nonlocal joined
        joined = True
        loop.call_later(0.3, stop.set)  # the join_study_ok answer reaches the extension first

    app = create_app(study, db, TokenSource(), allow_remote=allow_remote,
                     restart_on_join=restart_on_join if can_join and not perspective_only else None,
                     extension_protocol=not perspective_only, study_dir=study_dir, started_on=started_on)
    runner = web.AppRunner(app, handle_signals=False, shutdown_timeout=5)
    print(f"modlens: loading detectors for study {study.study_id!r} ...", flush=True)
    await runner.setup()  # opens the study log and loads the engine (cleanup_ctx)
    site = web.TCPSite(runner, host, port)
    try:
        await site.start()
    except OSError as err:
        await runner.cleanup()
        raise CliError(f"cannot listen on {host}:{port}: {err.strerror or err}", kind=ErrorKind.FAILED,
                       fix="is another `modlens serve` running? (`modlens status`) or pick --port") from None
    bound_port = runner.addresses[0][1]  # the real port when --port 0
    url = f"ws://{bracketed(host)}:{bound_port}/ws"
    # before the runtime file says we are up: whoever reads it may signal at once, and the
    # default action would kill us without draining the log or removing the file
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    write_runtime({"host": host, "port": bound_port, "pid": os.getpid(), "db": str(db),
                   "url": url, "study_id": study.study_id, "study_files": study_files or {},
                   "started_at": datetime.now(UTC).isoformat(timespec="seconds")})

    from modlens import heap

    heap.from_env(loop)  # MODLENS_TRACEMALLOC: heap snapshots on SIGUSR1 (diagnosis only; modlens/heap.py)
    for line in status_lines(app[ENGINE].statuses, app[ENGINE].component_errors):
        print(f"  {line}", flush=True)
    print(f"modlens: study log   {db}", flush=True)
    api = f"http://{bracketed(host)}:{bound_port}"
    if perspective_only:
        print(f"modlens: Perspective {api}/v1alpha1/comments:analyze?key=KEY (no extension socket)", flush=True)
    else:
        print(f"modlens: listening   {url}", flush=True)
        print(f"modlens: Perspective {api}/v1alpha1/comments:analyze?key=KEY", flush=True)
    print(f"modlens: discovery   {api}/$discovery/rest?version=v1alpha1 (KEY: `modlens pair` or "
          "`modlens pair --api-key`)", flush=True)
    print("modlens: pair        run `modlens pair` and paste the token into the extension's options,"
          " or `modlens browse` to start Chromium with the extension already paired", flush=True)
    if allow_remote and not is_loopback(host):
        print("modlens: WARNING     listening beyond this computer (--allow-remote)", flush=True)
    drop_in = None
    if perspective_proxy is not None:  # clients that hard-code Google's address (daemon/perspective_proxy.py)
        from modlens.daemon.perspective_proxy import start_drop_in
        from modlens.perspective import tls
        from modlens.perspective.dropin import serve_lines

        drop_in = await start_drop_in(app, runner, DEFAULT_HOST, perspective_proxy)
        print(f"modlens: drop-in     {tls.GOOGLE_HOST} via HTTPS_PROXY; in the client's shell:", flush=True)
        for line in serve_lines(drop_in.material, DEFAULT_HOST, drop_in.port):
            print(f"  {line}", flush=True)

    try:
        await stop.wait()
    finally:
        print("modlens: shutting down (draining the study log) ...", flush=True)
        if drop_in is not None:
            await drop_in.close()
        await runner.cleanup()  # closes sockets, then stops engine and writer (commits what is queued)
        remove_runtime(os.getpid())
    print("modlens: restarting on the joined study" if joined else "modlens: stopped", flush=True)
    return bound_port if joined else None


def run(args: argparse.Namespace) -> int:
    from modlens import paths
    from modlens.live.run import served_study
    from modlens.study.folder import STUDY_FILE, study_file_digests
    from modlens.pairing import ensure
    from modlens.studylog.connection import StudyLogError

    logging.basicConfig(level=args.log_level, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    from modlens.daemon.allocator import pin_mmap_threshold
    # before the models load: their activations then never settle in (and fragment) malloc's heaps
    logging.getLogger("modlens.daemon").info("%s", pin_mmap_threshold())
    if not is_loopback(args.host) and not args.allow_remote:
        raise CliError(f"refusing to listen on {args.host}: not a loopback address; the daemon would be "
                       "reachable from other machines",
                       fix="listen on 127.0.0.1, or pass --allow-remote only if you really mean it")
    db = db_path(args)
    ensure()  # create the pairing token on first run
    try:
        port: int | None = args.port
        while port is not None:  # not None again: the extension joined a study; serve that one
            # the joined pack the study comes from is read with it, in one snapshot (`served_study`): an
            # extension's join of any other pack (one joined since at a terminal too) restarts on it
            # before the study is read: an edit landing while it is read then shows as a change (a
            # restart too many), never as none while the daemon serves the older bytes
            study_files = study_file_digests(args.config if args.config is not None else paths.home() / STUDY_FILE)
            study, study_dir, lines, pack = served_study(args.config, perspective_only=args.perspective_only)
            if pack is not None:  # a join of this pack restarts when its files are not those read here
                pack = replace(pack, study_files=study_files)
            for n, line in enumerate(lines):
                print(f"  {line}" if n else f"modlens: {line}", flush=True)
            port = asyncio.run(_serve(study, db, args.host, port, args.allow_remote,
                                      can_join=args.config is None, perspective_only=args.perspective_only,
                                      study_dir=study_dir, perspective_proxy=args.perspective_proxy,
                                      started_on=pack, study_files=study_files))
        return 0
    except StudyLogError as err:
        raise CliError(str(err), kind=ErrorKind.FAILED) from None
