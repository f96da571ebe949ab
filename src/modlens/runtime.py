"""The running daemon's address file (`paths.runtime_file()`): `modlens serve` writes it once
it listens and removes it on shutdown; `status`, `feed`, `pair` and `browse` read it to find the
daemon. A file whose pid is gone (a daemon that was killed) reads as no daemon."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from modlens import paths
from modlens.pairing import write_atomically

DEFAULT_HOST, DEFAULT_PORT = "127.0.0.1", 8765
WILDCARD_HOSTS = ("0.0.0.0", "::")


def write_runtime(info: dict[str, Any]) -> None:
    """Atomically, so a reader never sees half a file."""
    write_atomically(paths.runtime_file(), json.dumps(info, indent=2).encode("utf-8"), 0o644)


def read_runtime(check_alive: bool = True) -> dict[str, Any] | None:
    """The running daemon's {host, port, pid, url, db, ...}, or None (stale files are ignored)."""
    try:
        info = json.loads(paths.runtime_file().read_text(encoding="utf-8"))
    except (FileNotFoundError, ValueError):
        return None
    if not isinstance(info, dict):
        return None
    if check_alive and not pid_alive(int(info.get("pid", -1))):
        return None
    return info


def remove_runtime(pid: int) -> None:
    """Remove the file only if it is this daemon's (a second `serve` may have replaced it)."""
    info = read_runtime(check_alive=False)
    if info and info.get("pid") == pid:
        paths.runtime_file().unlink(missing_ok=True)


def pid_alive(pid: int) -> bool:
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # alive, owned by someone else
        return True
    return True


def bracketed(host: str) -> str:
    """`host` as it goes into a URL: an IPv6 address in brackets."""
    return f"[{host}]" if ":" in host and not host.startswith("[") else host


def url_host(host: str) -> str:
    """`host` as a client connects to it: a wildcard bind is reached through loopback."""
    return bracketed(DEFAULT_HOST if host in WILDCARD_HOSTS else host)


def daemon_url(host: str | None = None, port: int | None = None) -> str:
    """ws URL of the daemon: explicit host/port, else the runtime file, else the defaults."""
    info = read_runtime() or {}
    host = host or info.get("host") or DEFAULT_HOST
    port = port or info.get("port") or DEFAULT_PORT
    return f"ws://{url_host(host)}:{port}/ws"


def status_url(info: dict[str, Any]) -> str:
    """The daemon's HTTP status endpoint, from its runtime file."""
    return f"http://{url_host(info['host'])}:{info['port']}/status"


def start_serve(home: Path, *args: str, timeout: float = 120.0,
                poll_s: float = 0.1) -> tuple["subprocess.Popen[bytes]", dict[str, Any]]:
    """Start `python -m modlens serve --port 0 ARGS` with MODLENS_HOME=`home` (its output appended
    to `home/serve.log`) and wait until it wrote its address file; (process, address info). For
    benches and tests that need a real daemon. Raises RuntimeError, with the log, when it exits or
    does not start within `timeout` (then it is killed). The caller stops it."""
    runtime = home / "daemon.json"
    runtime.unlink(missing_ok=True)
    env = {**os.environ, "MODLENS_HOME": str(home), "PYTHONUNBUFFERED": "1"}
    with open(home / "serve.log", "ab") as log:
        proc = subprocess.Popen([sys.executable, "-m", "modlens", "serve", "--port", "0", *args],
                                env=env, stdout=log, stderr=subprocess.STDOUT)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"modlens serve exited with {proc.returncode}:\n{(home / 'serve.log').read_text()}")
        try:
            info = json.loads(runtime.read_text())
            if isinstance(info, dict) and info.get("pid") == proc.pid:
                return proc, info
        except (FileNotFoundError, ValueError):
            pass
        time.sleep(poll_s)
    proc.kill()
    raise RuntimeError(f"modlens serve did not start in {timeout:g} s:\n{(home / 'serve.log').read_text()}")
