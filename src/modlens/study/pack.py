"""The study pack (`study.modlens`): the one file a participant opens with `modlens join`.

A UTF-8 JSON object:

    {"format": "modlens-study-pack", "format_version": 1, "modlens_version": "...",
     "study_id": "...", "salt": "...", "study_key": "...", "study": {...}, "sha256": "..."}

`study` is the study configuration as the researcher wrote it (all files of the folder, merged);
`salt` is its `author_salt`, the per-study salt for author hashing and sampling; `study_key`
identifies the study in bundles and merged logs without revealing the salt; `sha256` is the
SHA-256 of the canonical JSON (sorted keys, no spaces, UTF-8) of every other field. It holds no
pairing token, no researcher key, and no participant data: detector options that look like
secrets are refused when packing.
"""
from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from modlens import __version__
from modlens.config import StudyConfig, StudyConfigError, parse_study
from modlens.study.folder import StudyFolder

FORMAT = "modlens-study-pack"
FORMAT_VERSION = 1
SECRET_NAME = re.compile(r"(api[_-]?key|token|secret|password|credential)", re.I)


class PackError(ValueError):
    """A pack that cannot be made or read; the message says why and what to do."""


def canonical(value: Any) -> bytes:
    return json.dumps(value, sort_keys=True, ensure_ascii=False, separators=(",", ":")).encode("utf-8")


def study_key(study_id: str, salt: str) -> str:
    """What bundles and merged logs compare: one study id + salt, without revealing the salt."""
    return hashlib.sha256(f"modlens-study\0{study_id}\0{salt}".encode()).hexdigest()[:32]


@dataclass(frozen=True)
class Pack:
    study_id: str
    salt: str
    study_key: str
    sha256: str
    data: dict[str, Any]     # the study configuration as written
    study: StudyConfig


def _secrets_in(study: StudyConfig) -> list[str]:
    return [f"detectors[{d.key}].options.{k}" for d in study.detectors for k in d.options if SECRET_NAME.search(k)]


def build(folder: StudyFolder) -> dict[str, Any]:
    study = folder.study
    if study.author_salt is None:
        raise PackError("author_salt: not set; every participant must hash authors with the same salt — "
                        'fix: add author_salt = "<24+ random characters>" to study.toml (study init writes one)')
    leaks = _secrets_in(study)
    if leaks:
        raise PackError(f"{', '.join(leaks)}: looks like a secret, and a pack goes to every participant — "
                        "fix: remove it and let each detector read its key from the environment")
    body = {"format": FORMAT, "format_version": FORMAT_VERSION, "modlens_version": __version__,
            "study_id": study.study_id, "salt": study.author_salt,
            "study_key": study_key(study.study_id, study.author_salt), "study": folder.data}
    return body | {"sha256": hashlib.sha256(canonical(body)).hexdigest()}


def write(folder: StudyFolder, out: str | Path) -> dict[str, Any]:
    pack = build(folder)
    Path(out).write_text(json.dumps(pack, indent=2, ensure_ascii=False, sort_keys=True) + "\n", encoding="utf-8")
    return pack


def read(path: str | Path) -> Pack:
    """Read and verify a pack file: format, version, checksum, then the study itself."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise FileNotFoundError(f"{path}: no such study pack") from None
    except UnicodeDecodeError as err:
        raise PackError(f"{path}: not a modlens study pack (not UTF-8 text: {err}) — "
                        "fix: ask the researcher for the file again") from None
    return parse(text, str(path))


def parse(text: str, name: str) -> Pack:
    """Verify a pack's content (`name` says where it came from, in messages): what `read` does
    for a file, and what the daemon does with a pack the extension's options page opened."""
    try:
        raw = json.loads(text)
    except json.JSONDecodeError as err:
        raise PackError(f"{name}: not a modlens study pack (not JSON: {err}); it may be truncated — "
                        "fix: ask the researcher for the file again") from None
    if not isinstance(raw, dict) or raw.get("format") != FORMAT:
        raise PackError(f"{name}: not a modlens study pack (format is {raw.get('format') if isinstance(raw, dict) else None!r})")
    version = raw.get("format_version")
    if not isinstance(version, int) or version > FORMAT_VERSION:
        raise PackError(f"{name}: pack format {version!r} is newer than this modlens reads ({FORMAT_VERSION}) — "
                        "fix: upgrade modlens (`pip install -U modlens`)")
    claimed = raw.pop("sha256", None)
    actual = hashlib.sha256(canonical(raw)).hexdigest()
    if claimed != actual:
        raise PackError(f"{name}: checksum mismatch (pack says {claimed}, content hashes to {actual}); the file was "
                        "changed or damaged after packing — fix: ask the researcher for the file again")
    try:
        study = parse_study(raw["study"], f"{name} (study)")
    except StudyConfigError as err:
        raise PackError(str(err)) from None
    if study.study_id != raw["study_id"] or study.author_salt != raw["salt"] \
            or raw["study_key"] != study_key(study.study_id, raw["salt"]):
        raise PackError(f"{name}: study_id, salt and study_key do not agree with the study inside")
    return Pack(raw["study_id"], raw["salt"], raw["study_key"], actual, raw["study"], study)
