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


# --- data sets ----------------------------------------------------------------------------
DATA_ENV = "MODLENS_DATA"


def shipped_data() -> Path:
    """The small public data sets that ship inside the package (licences beside them)."""
    return Path(__file__).resolve().parent / "datasets" / "data"


def fetched_data() -> Path:
    """Where `modlens data fetch` puts the full public versions by default."""
    return home() / "data"


def data_dirs() -> list[Path]:
    """Where dataset shorthands (`noisyhate`, `hatecheck`, …) are looked up, first match wins:
    $MODLENS_DATA, then the fetched full versions, then the shipped copies."""
    dirs = [Path(os.environ[DATA_ENV]).expanduser()] if os.environ.get(DATA_ENV) else []
    return dirs + [fetched_data(), shipped_data()]


def find_data(relative: str | Path) -> Path | None:
    """The first `data_dirs()` entry holding `relative` (e.g. "noisyhate/dev.csv")."""
    return next((d / relative for d in data_dirs() if (d / relative).is_file()), None)
