"""Joining a study on a participant's computer: the pack's study becomes the study of this
modlens home (`paths.home()/study.toml`, beside `joined-study.json`, which records which pack).
`joined_study_file()` is what `modlens serve` reads when no --config is given."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from modlens import paths
from modlens.study.pack import Pack
from modlens.study.toml_write import dumps
from modlens.studylog.store import now_iso

STUDY_FILE = "study.toml"
JOINED_FILE = "joined-study.json"


class JoinError(ValueError):
    """Joining would replace another study; the message says how to switch on purpose."""


def joined_study_file() -> Path | None:
    """The joined study's configuration, or None when this home has joined none."""
    path = paths.home() / STUDY_FILE
    return path if path.is_file() else None


def joined() -> dict[str, Any] | None:
    """What `modlens join` recorded: study_id, study_key, pack sha256, when, from which file."""
    path = paths.home() / JOINED_FILE
    return json.loads(path.read_text(encoding="utf-8")) if path.is_file() else None


def join(pack: Pack, source: str, *, replace: bool = False) -> Path:
    """Make `pack` this home's study. `source` says where the pack came from (a file's absolute
    path, or the extension's options page), for `joined-study.json` and the file's header."""
    current = joined()
    if current and current["study_key"] != pack.study_key and not replace:
        raise JoinError(f"this computer has joined study {current['study_id']!r} (from {current['source']}); "
                        f"joining {pack.study_id!r} would replace it — fix: export and send your bundle first "
                        "(`modlens export --bundle FILE`), then join again with --replace "
                        "(in the extension's options: tick “Replace the joined study”)")
    home = paths.home()
    header = (f"Study {pack.study_id!r}, written by `modlens join` from {source} "
              f"(sha256 {pack.sha256[:16]}…).\nDo not edit: join the researcher's new pack instead.")
    study_file = home / STUDY_FILE
    tmp = study_file.with_name(study_file.name + ".tmp")
    tmp.write_text(dumps(pack.data, header), encoding="utf-8")
    tmp.replace(study_file)
    record = {"study_id": pack.study_id, "study_key": pack.study_key, "pack_sha256": pack.sha256,
              "joined_at": now_iso(), "source": source}
    (home / JOINED_FILE).write_text(json.dumps(record, indent=2) + "\n", encoding="utf-8")
    return study_file
