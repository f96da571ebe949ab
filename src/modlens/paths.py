"""Where modlens keeps its state. Everything lives under one data directory so a study
can be moved or deleted as a whole; MODLENS_HOME overrides it (tests use a temp dir)."""
from __future__ import annotations

import os
from pathlib import Path


def home() -> Path:
    root = Path(os.environ.get("MODLENS_HOME") or Path.home() / ".local" / "share" / "modlens")
    root.mkdir(parents=True, exist_ok=True)
    return root


def default_db() -> Path:
    return home() / "study.sqlite"


def token_file() -> Path:
    """The pairing token the extension must present (see `modlens pair`)."""
    return home() / "pairing-token"


def runtime_file() -> Path:
    """Written by a running `modlens serve`: host, port, pid, started_at (JSON)."""
    return home() / "daemon.json"
