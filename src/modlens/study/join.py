"""Joining a study on a participant's computer: the pack's study becomes the study of this
modlens home (`paths.home()/study.toml`, beside `joined-study.json`, which records which pack, who
signed it and which remote destinations the participant accepted). `joined_study_file()` is what
`modlens serve` reads when no --config is given, and `as_joined()` what it runs of it (of a home
given as --config too): remote detectors the participant did not accept stay off, and the consent
text says so.

Joining also makes the participant's bundle key (`bundle-signing.key`, beside the pairing token,
0600): every bundle exported here is signed with it, so `modlens merge` can tell this
participant's bundle from an edited one."""
from __future__ import annotations

import json
import logging
import os
import shlex
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from modlens import paths, signing
from modlens.errors import ErrorKind, ModlensError, inline_fix
from modlens.media import sha256_hex
from modlens.pairing import write_temp
from modlens.config import StudyConfig, StudyConfigError
from modlens.study import join_journal
from modlens.study.join_recovery import (JOINED_FILE, STUDY_FILE, JoinError, complete_left_behind, settled,
                                         turn)
from modlens.study.pack import Pack, PackError, parse
from modlens.study.toml_write import dumps
from modlens.studylog.codec import now_iso

if TYPE_CHECKING:
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

BUNDLE_KEY_FILE = "bundle-signing.key"
log = logging.getLogger("modlens.study")


def joined_study_file() -> Path | None:
    """The joined study's configuration, or None when this home has joined none (a join under way
    is waited for, one a crash interrupted completed first: `settled`)."""
    with settled():
        path = paths.home() / STUDY_FILE
        return path if path.is_file() else None


def joined(home: Path | None = None) -> dict[str, Any] | None:
    """What `modlens join` recorded in `home` (this modlens home by default): study_id, study_key,
    pack sha256, when, from which file (a join under way is waited for, one a crash interrupted
    completed first: `settled`)."""
    with settled(home):
        return _record(home or paths.home())


def _record(home: Path) -> dict[str, Any] | None:
    path = home / JOINED_FILE
    return json.loads(path.read_text(encoding="utf-8")) if path.is_file() else None


def bundle_key() -> Ed25519PrivateKey:
    """This participant's bundle signing key, made on first use (at join)."""
    path = paths.token_file().parent / BUNDLE_KEY_FILE
    return signing.ensure_key_file(path)


def join(pack: Pack, source: str, *, replace: bool = False, accepted_remote: list[str] | None = None) -> Path:
    """Make `pack` this home's study. `source` says where the pack came from (a file's absolute
    path, or the extension's options page), for `joined-study.json` and the file's header;
    `accepted_remote` lists the destinations the participant said yes to (none by default)."""
    home = paths.home()
    with turn(home, exclusive=True):  # no reader reads, and no other join changes, the files meanwhile
        complete_left_behind(home)
        return _join(home, pack, source, replace, accepted_remote)


def _join(home: Path, pack: Pack, source: str, replace: bool, accepted_remote: list[str] | None) -> Path:
    current = _record(home)
    if current and current["study_key"] != pack.study_key and not replace:
        raise JoinError(f"this computer has joined study {current['study_id']!r} (from {current['source']}); "
                        f"joining {pack.study_id!r} would replace it",
                        fix="export and send your bundle first (`modlens export --bundle FILE`), then join again "
                            "with --replace (in the extension's options: tick “Replace the joined study”)")
    header = (f"Study {pack.study_id!r}, written by `modlens join` from {source} "
              f"(sha256 {pack.sha256[:16]}…).\nDo not edit: join the researcher's new pack instead.")
    study_file = home / STUDY_FILE
    record = {"study_id": pack.study_id, "study_key": pack.study_key, "pack_sha256": pack.sha256,
              "joined_at": now_iso(), "source": source, "signer": pack.signer,
              "accepted_remote": sorted(set(accepted_remote or []) & all_destinations(pack.study))}
    files = {study_file: dumps(pack.data, header).encode("utf-8"), **_item_task_files(home, pack),
             home / JOINED_FILE: (json.dumps(record, indent=2) + "\n").encode("utf-8")}
    try:
        bundle_key()  # first: a key that cannot be made fails the join before it changed anything
        _replace_all(home, files, pack.study_id, current["study_id"] if current else None)
    except PartlyReplaced as part:
        raise JoinError(f"{home}: joining {pack.study_id!r} stopped part way: {part.failed.name} could not be "
                        f"{'removed' if part.removing else 'replaced'} ({part.error.strerror or part.error}) after "
                        f"{', '.join(p.name for p in part.done)} {'was' if len(part.done) == 1 else 'were'} "
                        f"changed to the new study's; the rest stays staged and {join_journal.JOURNAL_FILE} records "
                        "the join: until it is completed, nothing runs these files (they mix two studies)",
                        fix=f"remove the cause (is {part.failed} a folder, or read-only?), then run `modlens join` "
                            "or `modlens serve` again: either completes this join first",
                        kind=ErrorKind.FAILED) from None
    except OSError as err:
        still = f"study {current['study_id']!r} is still joined" if current else "no study is joined"
        raise JoinError(f"{home}: cannot write the joined study ({err.strerror or err}); nothing was changed, {still}",
                        fix="make room on the disk (or raise the file-size limit) and join again",
                        kind=ErrorKind.FAILED) from None
    return study_file


class PartlyReplaced(ModlensError):
    """A rename (or removal) of a join failed after `done` had gone through: unlike a failed write,
    the files now mix the new study and the one before (`join` says it as a JoinError)."""

    def __init__(self, error: OSError, failed: Path, done: list[Path], *, removing: bool) -> None:
        super().__init__(str(error), kind=ErrorKind.FAILED)
        self.error, self.failed, self.done, self.removing = error, failed, done, removing


def _replace_all(home: Path, files: dict[Path, bytes | None], study_id: str, replacing: str | None) -> None:
    """Every file of a join: each is written whole to a temp file first, and only once all are are
    they renamed into place (a rename takes no room), the record last; a file the new study has none
    of (None) is removed. A failed write leaves the study joined before whole (OSError). Before the
    first rename the journal (join_journal) records the staged files, so a join a crash stops between
    two renames is completed by whoever opens the joined study next. A rename or removal that fails
    (the target a folder) raises OSError when it was the first change (journal and temps removed),
    else PartlyReplaced naming what changed; the journal and the temps not renamed then stay, for
    the next open to complete the join."""
    staged: dict[Path, Path] = {}
    try:
        for path, data in files.items():
            if data is not None:
                staged[path] = write_temp(path, data, 0o644)
        join_journal.begin(home, join_journal.Journal(
            study_id, replacing, [(p.name, t.name, sha256_hex(files[p] or b"")) for p, t in staged.items()],
            [p.name for p, data in files.items() if data is None]))
    except BaseException:  # no rename yet: the journal goes first (without its temps it could not be completed)
        (home / join_journal.JOURNAL_FILE).unlink(missing_ok=True)
        for tmp in staged.values():
            tmp.unlink(missing_ok=True)
        raise
    done: list[Path] = []
    removing = False
    try:
        for path, tmp in staged.items():
            os.replace(tmp, path)
            done.append(path)
        removing = True
        for path, data in files.items():
            if data is None and path.exists():
                path.unlink()
                done.append(path)
    except OSError as err:
        failed = path  # the file whose rename or removal raised
        if done:
            raise PartlyReplaced(err, failed, done, removing=removing) from err
        # nothing changed: the journal goes first (a journal outliving its temps could not be completed)
        (home / join_journal.JOURNAL_FILE).unlink()
        for tmp in staged.values():
            tmp.unlink(missing_ok=True)
        raise
    try:
        join_journal.end(home)
    except OSError:
        pass  # every file is the new study's: a journal left behind is completed (a no-op) at the next open


@dataclass(frozen=True)
class ExtensionJoin:
    """What joining a pack from the extension's options page did."""
    pack: Pack
    signer: str
    remote_off: list[str]  # where the pack's remote detectors would send comments: off, nobody was asked


def join_from_extension(text: str, file_name: str, *, replace: bool) -> ExtensionJoin:
    """The extension's options page joins only a signed pack: `modlens join` asks a person at a
    terminal about an unsigned one, and nobody is asked here. Remote detectors stay off (no yes was
    asked for), unless a yes given at a terminal to this very pack stands. Raises JoinError (a pack
    that cannot be read is one too) with the fix."""
    name = file_name or "study.modlens"
    try:
        pack = parse(text, name)
    except PackError as err:
        raise JoinError(err.message, fix=err.fix) from None
    if pack.signer is None:
        raise JoinError(f"{name}: unsigned pack refused; nothing shows who made or changed it",
                        fix=f"ask the researcher for a signed pack, or, if you trust where it came from, run "
                            f"`modlens join {shlex.quote(name)} --allow-unsigned` in a terminal")
    before = joined()
    same = before is not None and before["pack_sha256"] == pack.sha256
    accepted = list(before.get("accepted_remote") or []) if before is not None and same else []
    join(pack, f"the extension's options page ({name})", replace=replace, accepted_remote=accepted)
    return ExtensionJoin(pack, pack.signer, sorted(all_destinations(pack.study) - set(accepted)))


def _item_task_files(home: Path, pack: Pack) -> dict[Path, bytes | None]:
    """The pack's item set and assignment beside the joined study (what `modlens serve` shows in the
    extension's item-set page); None: a study joined before with its own set must not leave it behind."""
    from modlens.study import assignment, itemset

    return {home / name: None if data is None else
            (json.dumps(data, indent=1, ensure_ascii=False) + "\n").encode("utf-8")
            for name, data in ((itemset.FILE, pack.itemset), (assignment.FILE, pack.assignment))}


def all_destinations(study: StudyConfig) -> set[str]:
    """Every place the study's detectors may send data: what a participant accepts or not at join."""
    return {d for dest in study.destinations().values() for d in dest}


def as_joined(study: StudyConfig, source: str,
              record: dict[str, Any] | None = None) -> tuple[StudyConfig, list[str]]:
    """What `modlens serve` runs of the joined study, and one line per detector it leaves off.
    The study file came from a pack, so the pack's rules hold here too (the file may have been
    written by an older modlens, or edited): no undeclared environment reads; remote detectors
    only to the destinations the participant accepted at join, as `record` says (the home's
    joined-study.json, read with the study file; None: read this home's now)."""
    undeclared = study.undeclared_env()
    if undeclared:
        raise StudyConfigError(f"{source}: refused, a joined study may not read this computer's environment: "
                               f"{undeclared[0].message}", fix=undeclared[0].fix)
    record = (joined() if record is None else record) or {}
    accepted = set(record.get("accepted_remote") or [])
    # a detector runs only when every place it (or a detector it wraps) sends to was accepted
    off = {key: dest for key, dest in study.destinations().items() if not set(dest) <= accepted}
    lines = [inline_fix(f"detector {key}: off — it would send each comment to {', '.join(dest)}, "
                        f"{'which was not' if len(dest) == 1 else 'not all of them'} accepted at join",
                        "`modlens join --accept-remote PACK` if you agree") for key, dest in off.items()]
    notes = [f"This study pack is signed by {record['signer']}." if record.get("signer")
             else "This study pack is unsigned: its origin is not verified."]
    if off:
        notes.append(f"Detector{'s' if len(off) > 1 else ''} {', '.join(off)} "
                     f"{'are' if len(off) > 1 else 'is'} off: you did not agree to send comments to "
                     f"{', '.join(sorted({d for dest in off.values() for d in dest} - accepted))}.")
    detectors = [d for d in study.detectors if d.key not in off]
    return study.with_provenance(notes, detectors if off else None), lines
