"""The one study reader (`modlens.study.load`): a study.toml, or a study folder (study.toml plus
consent.md, calibration.toml and tasks.toml), read as one study configuration. Every error names the file and the key and says how to fix it (config.py's
validation, with the file each top-level key came from)."""
from __future__ import annotations

import hashlib
import re
import secrets
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from modlens.config import StudyConfig, StudyConfigError, parse_study
from modlens.errors import ErrorKind, Problem, problem_lines
from modlens.study import templates
from modlens.study.pack_rules import refusals
from modlens.study.calibration import gold_problems

STUDY_FILE = "study.toml"
CONSENT_FILE = "consent.md"
CALIBRATION_FILE = "calibration.toml"
TASKS_FILE = "tasks.toml"

# the keys each side file may hold; anything else there is refused with the file to move it to
SIDE_FILES: dict[str, tuple[str, ...]] = {CALIBRATION_FILE: ("anchors", "gold", "review"), TASKS_FILE: ("tasks", "free_browsing")}


@dataclass(frozen=True)
class StudyFolder:
    path: Path
    data: dict[str, Any]        # the configuration as written (what a pack carries)
    study: StudyConfig


def init_folder(path: str | Path, study_id: str | None = None, title: str | None = None) -> list[Path]:
    """Write the four files (refuses to overwrite any); returns them."""
    root = Path(path)
    study_id = study_id or re.sub(r"[^A-Za-z0-9_.-]", "-", root.resolve().name)[:64] or "study"
    title = title or f"modlens study {study_id}"
    files = {STUDY_FILE: templates.STUDY_TOML, CONSENT_FILE: templates.CONSENT_MD,
             CALIBRATION_FILE: templates.CALIBRATION_TOML, TASKS_FILE: templates.TASKS_TOML}
    existing = [root / f for f in files if (root / f).exists()]
    if existing:
        raise FileExistsError(f"{existing[0]} already exists; init writes a new study folder and never overwrites")
    root.mkdir(parents=True, exist_ok=True)
    values = {"study_id": study_id, "title": title.replace('"', "'"), "salt": secrets.token_urlsafe(24)}
    for name, text in files.items():
        (root / name).write_text(text.format(**values), encoding="utf-8")
    return [root / f for f in files]


def _toml(path: Path) -> dict[str, Any]:
    try:
        return tomllib.loads(path.read_text(encoding="utf-8"))
    except tomllib.TOMLDecodeError as err:
        raise StudyConfigError(f"{path}: not valid TOML: {err}", fix="correct the TOML syntax at that line") from None
    except (OSError, UnicodeDecodeError) as err:
        raise StudyConfigError(f"{path}: cannot read: {getattr(err, 'strerror', None) or err}",
                               fix="give a readable UTF-8 text file") from None


def study_file_digests(path: str | Path) -> dict[str, str | None]:
    """The sha256 of each file that makes the study at `path` (a study.toml or its folder), by path:
    the study file, the side files beside it and the item set and assignment there; None for one that
    is not there. `modlens serve` takes them before it reads the study, `modlens status` again later
    (`changed_study_files`): the daemon serves what it read at start, whatever an edit made of them since."""
    from modlens.study import assignment, itemset

    root = Path(path).absolute()  # `modlens status` may run in another directory than serve
    study_file = root / STUDY_FILE if root.is_dir() else root
    folder = study_file.parent
    files = [study_file, *(folder / name for name in (CONSENT_FILE, *SIDE_FILES, itemset.FILE, assignment.FILE))]
    digests: dict[str, str | None] = {}
    for f in files:
        try:
            digests[str(f)] = hashlib.sha256(f.read_bytes()).hexdigest()
        except FileNotFoundError:
            digests[str(f)] = None
        except OSError as err:  # unreadable now: not the bytes it read, so said to have changed
            digests[str(f)] = f"unreadable: {err.strerror or err}"
    return digests


def changed_study_files(recorded: dict[str, str | None]) -> list[str]:
    """The files of `recorded` (`study_file_digests` at serve's start) whose bytes differ now, or that
    appeared or went away since, in its order."""
    if not recorded:
        return []
    any_file = next(iter(recorded))
    now = study_file_digests(any_file)
    return [f for f, digest in recorded.items() if now.get(f, digest) != digest]


def load(path: str | Path | None) -> StudyConfig:
    """The study every command and the daemon run: a study.toml or a study folder, read by
    `load_folder`; `None` gives the embedded defaults."""
    return StudyConfig() if path is None else load_folder(path).study


def load_folder(path: str | Path) -> StudyFolder:
    """Read and validate a study: a folder, or the study.toml in it or anywhere else. The side
    files (consent.md, calibration.toml, tasks.toml) are read whenever they exist beside the
    study.toml, however it was named, so `--config DIR` and `--config DIR/study.toml` are one study."""
    root = Path(path)
    study_file = root / STUDY_FILE if root.is_dir() else root
    if not study_file.is_file():
        hint = f"`modlens study init {root}` writes a study folder there" if root.is_dir() or not root.suffix \
            else "check the path (a study.toml, or its folder); `modlens study init DIR` writes a study folder"
        raise StudyConfigError(f"{study_file}: study file not found", fix=hint, kind=ErrorKind.NOT_FOUND)
    folder = study_file.parent
    from modlens.study.join_recovery import finish_interrupted_join, is_joined_home

    if is_joined_home(folder):  # a modlens home: never read while a join there is stopped part way
        finish_interrupted_join(folder)
    data = _toml(study_file)
    key_files = {k: study_file.name for k in data}
    consent = folder / CONSENT_FILE
    side_files = [consent, *(folder / name for name in SIDE_FILES)]
    is_folder = root.is_dir() or any(f.is_file() for f in side_files)
    if consent.is_file():
        _claim(data, key_files, "consent_text", consent.read_text(encoding="utf-8").strip(), CONSENT_FILE)
    for name, allowed in SIDE_FILES.items():
        side = folder / name
        if not side.is_file():
            continue
        for key, value in _toml(side).items():
            if key not in allowed:
                raise StudyConfigError(f"{side}: {key}: not a key of {name} (it holds {', '.join(allowed)})",
                                       fix=f"move it to {STUDY_FILE}")
            _claim(data, key_files, key, value, name)
    # which file a bad key is in matters only where there are several
    study = parse_study(data, str(folder), key_files) if is_folder else parse_study(data, str(study_file))
    problems = gold_problems(study, CALIBRATION_FILE if (folder / CALIBRATION_FILE).is_file() else "")
    # a folder is made to be packed: what a pack may not do is an error here already; a lone
    # study.toml the researcher runs may read any variable (docs/STUDY.md, secrets.names)
    if is_folder:
        problems += [p.where(f" (in {study_file.name})") for p in refusals(study)]
    if problems:
        raise StudyConfigError(f"{folder if is_folder else study_file}: invalid study configuration\n"
                               + problem_lines(problems))
    return StudyFolder(folder, data, study)


def _claim(data: dict[str, Any], key_files: dict[str, str], key: str, value: Any, file: str) -> None:
    if key in data:
        raise StudyConfigError(f"{key}: set in both {key_files[key]} and {file}", fix=f"keep it in {file} only")
    data[key] = value
    key_files[key] = file


def data_flow(study: StudyConfig) -> list[str]:
    """Where each remote detector sends comments and the secrets it reads: what participants are
    shown at join and must accept."""
    reads = study.secret_reads()
    return [f"detector {key} sends comments to {', '.join(dest)}" + (f", with the participant's own {', '.join(reads[key])}"
                                                          if key in reads else "")
            + "; participants see this at join and must accept it, or it stays off"
            for key, dest in study.destinations().items()]


def warnings(folder: StudyFolder) -> list[Problem]:
    """Not errors, but a pack would carry them to every participant."""
    from modlens.study import itemset

    out = []
    if folder.study.author_salt is None:
        out.append(Problem("author_salt: not set — packing needs it", 'add author_salt = "<24+ random characters>"'))
    placeholders = [t.url for t in folder.study.tasks if "REPLACE_ME" in t.url]
    if placeholders:
        out.append(Problem(f"tasks: {len(placeholders)} example page(s) still to replace (in {TASKS_FILE}): "
                           f"{placeholders[0]}"))
    # an item set is what its participants rate (the extension's task list shows their assignment)
    if not folder.study.tasks and not folder.study.free_browsing and not (folder.path / itemset.FILE).exists():
        out.append(Problem("tasks: none, and free_browsing = false: participants would find no comments to rate"))
    return out
