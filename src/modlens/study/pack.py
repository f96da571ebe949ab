"""The study pack (`study.modlens`): the one file a participant opens with `modlens join`.

A UTF-8 JSON object:

    {"format": "modlens-study-pack", "format_version": 2, "modlens_version": "...",
     "study_id": "...", "salt": "...", "study_key": "...", "study": {...},
     "signer": {"algorithm": "ed25519", "public_key": "<base64>"},     (signed packs only)
     "sha256": "...", "signature": "<base64>"}                         (signed packs only)

`study` is the study configuration as the researcher wrote it (all files of the folder, merged);
`salt` is its `author_salt`, the per-study salt for author hashing and sampling; `study_key`
identifies the study in bundles and merged logs without revealing the salt; `sha256` is the
SHA-256 of the canonical JSON (sorted keys, no spaces, UTF-8) of every other field but `signature`.
`itemset` and `assignment` (format 3) are the folder's `itemset.json` and `assignment.json` when it
has them (`modlens sample`, `study assign`), so every participant gets the same tasks; `join`
writes them beside the joined study. `signature` is the researcher's Ed25519 signature (`modlens study keygen`, `pack --sign-key`) of
those same canonical bytes, `signer` included: anyone can recompute a checksum, only the key's
holder can sign. It holds no pairing token, no researcher key, and no participant data: detector
options that look like secrets are refused when packing, and so is any environment variable a
detector would read that the study does not declare in `[secrets] names`.
"""
from __future__ import annotations

import errno
import hashlib
import json
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from modlens import __version__, safe_archive, signing
from modlens.config import StudyConfig, StudyConfigError, parse_study
from modlens.errors import ErrorKind, ModlensError, Problem, check_format, problem_lines
from modlens.pairing import write_atomically
from modlens.study.folder import StudyFolder
from modlens.study.pack_rules import refusals

if TYPE_CHECKING:
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

FORMAT = "modlens-study-pack"
# 2: may be signed (`signer`, `signature`); version 1 packs read as unsigned. 3: carries an item
# set and its assignment; only such packs are written as 3 (an older modlens would drop the tasks
# silently; it refuses the pack instead), the others stay 2.
FORMAT_VERSION = 3
READS = range(1, FORMAT_VERSION + 1)  # every version a modlens ever wrote
ITEMSET_VERSION = 3  # what build() writes when the folder has an item set
# a pack is a study configuration (consent, gold and review texts, tasks): some KB, rarely a few MB
PACK_MAX_BYTES = 16 << 20


class PackError(ModlensError, ValueError):
    """A pack that cannot be made or read; the message says why, `fix` what to do."""


ASK_AGAIN = "ask the researcher for the file again"


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
    signer: str | None = None  # fingerprint of the key that signed it (verified); None: unsigned
    itemset: dict[str, Any] | None = None      # itemset.json, checked (checksum, fits the assignment)
    assignment: dict[str, Any] | None = None   # assignment.json


def build(folder: StudyFolder, key: Ed25519PrivateKey | None = None) -> dict[str, Any]:
    study = folder.study
    if study.author_salt is None:
        raise PackError("author_salt: not set; every participant must hash authors with the same salt",
                        fix='add author_salt = "<24+ random characters>" to study.toml (study init writes one)')
    refused = refusals(study)  # join refuses a pack that reads undeclared variables: it is not written
    if len(refused) == 1:
        raise PackError(refused[0].message, fix=refused[0].fix)
    if refused:
        raise PackError(f"{folder.path}: cannot be packed\n" + problem_lines(refused))
    body = {"format": FORMAT, "format_version": 2, "modlens_version": __version__,
            "study_id": study.study_id, "salt": study.author_salt,
            "study_key": study_key(study.study_id, study.author_salt), "study": folder.data}
    tasks = _item_tasks(folder)
    if tasks is not None:
        body |= {"format_version": ITEMSET_VERSION, "itemset": tasks[0], "assignment": tasks[1]}
    if key is not None:
        body["signer"] = {"algorithm": signing.ALGORITHM, "public_key": signing.public_key_b64(key)}
    signed = {"signature": signing.sign(key, canonical(body))} if key is not None else {}
    return body | {"sha256": hashlib.sha256(canonical(body)).hexdigest()} | signed


def _item_tasks(folder: StudyFolder) -> tuple[dict[str, Any], dict[str, Any]] | None:
    """The folder's item set and assignment, checked as `study check` checks them; None without an
    item set. A set without its assignment is refused: participants would get no tasks."""
    from modlens.study import assignment, itemset

    if not (folder.path / itemset.FILE).exists() and not (folder.path / assignment.FILE).exists():
        return None
    bad = assignment.check_folder(folder.path, folder.study)
    if not bad and not (folder.path / assignment.FILE).exists():
        bad = [Problem(f"{assignment.FILE}: missing beside {itemset.FILE}", f"`modlens study assign {folder.path}`")]
    if bad:
        raise PackError(f"{folder.path}: the item set cannot be packed:\n" + problem_lines(bad))
    return itemset.read(folder.path / itemset.FILE), assignment.read(folder.path)


def outside_folder(key_path: Path, folder: Path | None = None) -> None:
    """A signing key must not live in a study folder (`folder`, or any folder holding a study.toml):
    folders are copied, shared and committed."""
    key_dir = key_path.resolve().parent
    for parent in (key_dir, *key_dir.parents):
        if (parent / "study.toml").is_file() or (folder is not None and parent == folder.resolve()):
            raise PackError(f"{key_path}: inside the study folder {parent}; a folder is shared with others "
                            "and the key would travel with it",
                            fix="keep the key elsewhere, e.g. ~/.config/modlens/researcher.key")


def write(folder: StudyFolder, out: str | Path, key_path: str | Path | None = None) -> dict[str, Any]:
    key = None
    if key_path is not None:
        outside_folder(Path(key_path), folder.path)
        try:
            key = signing.load_private_key(Path(key_path))
        except signing.SigningError as err:
            raise PackError(str(err)) from None
    pack = build(folder, key)
    data = (json.dumps(pack, indent=2, ensure_ascii=False, sort_keys=True) + "\n").encode("utf-8")
    if len(data) > PACK_MAX_BYTES:  # every join would refuse it unread
        raise PackError(f"{out}: not written: the pack would be {len(data) / (1 << 20):.1f} MiB, and `modlens join` "
                        f"reads packs of at most {PACK_MAX_BYTES >> 20} MiB",
                        fix="a smaller item set (`modlens sample --per-platform N`), or fewer review items")
    _write_file(Path(out), data)
    return pack


def _write_file(out: Path, data: bytes) -> None:
    """Under a temporary name, then renamed: a write cut short (a full disk) leaves the last pack as it was."""
    try:
        if out.is_dir():
            raise IsADirectoryError(errno.EISDIR, "a folder, not a file")
        write_atomically(out, data, 0o644)  # a pack goes to every participant: readable as before
    except OSError as err:
        kind = (ErrorKind.USAGE if isinstance(err, IsADirectoryError)
                else ErrorKind.NOT_FOUND if isinstance(err, FileNotFoundError) else ErrorKind.FAILED)
        raise PackError(f"{out}: cannot write the pack ({err.strerror or err})", kind=kind,
                        fix="give --out a file in a folder that exists and has room") from None


def read(path: str | Path) -> Pack:
    """Read and verify a pack file: format, version, checksum, then the study itself."""
    path = Path(path)
    try:  # a regular file of bounded size only: a FIFO or /dev/zero is refused before any read
        data = safe_archive.read_file(path, PACK_MAX_BYTES)
    except FileNotFoundError:
        raise FileNotFoundError(f"{path}: no such study pack") from None
    except safe_archive.ArchiveError as err:
        raise _refusal(str(path), err) from None
    return parse(data, str(path))


def _refusal(name: str, err: safe_archive.ArchiveError) -> PackError:
    reason = str(err).removeprefix(f"{name}: ")
    return PackError(f"{name}: not a modlens study pack ({reason})", fix=ASK_AGAIN)


def parse(text: str | bytes, name: str) -> Pack:
    """Verify a pack's content (`name` says where it came from, in messages): what `read` does
    for a file, and what the daemon does with a pack the extension's options page opened.
    Size, UTF-8 and nesting depth are checked before the JSON is decoded."""
    try:
        raw = safe_archive.loads_json(text, name, max_bytes=PACK_MAX_BYTES)
    except safe_archive.ArchiveError as err:
        raise _refusal(name, err) from None
    check_format(raw, name=name, what="modlens study pack", fmt=FORMAT, reads=READS, fix=ASK_AGAIN, error=PackError)
    claimed = raw.pop("sha256", None)
    signature = raw.pop("signature", None)
    actual = hashlib.sha256(canonical(raw)).hexdigest()
    if claimed != actual:
        raise PackError(f"{name}: checksum mismatch (pack says {claimed}, content hashes to {actual}); the file was "
                        "changed or damaged after packing", fix=ASK_AGAIN)
    signer = _verified_signer(raw, signature, name)
    try:
        study = parse_study(raw["study"], f"{name} (study)")
    except StudyConfigError as err:
        raise PackError(err.message, fix=err.fix) from None
    undeclared = study.undeclared_env()
    if undeclared:
        raise PackError(f"{name}: refused, a study pack may not read this computer's environment: "
                        f"{undeclared[0].message}" + (f" (and {len(undeclared) - 1} more)" if len(undeclared) > 1 else ""),
                        fix=undeclared[0].fix)
    if study.study_id != raw["study_id"] or study.author_salt != raw["salt"] \
            or raw["study_key"] != study_key(study.study_id, raw["salt"]):
        raise PackError(f"{name}: study_id, salt and study_key do not agree with the study inside")
    tasks = _carried_tasks(raw, study, name)
    return Pack(raw["study_id"], raw["salt"], raw["study_key"], actual, raw["study"], study, signer, *tasks)


def _carried_tasks(raw: dict[str, Any], study: StudyConfig, name: str) -> tuple[Any, Any]:
    """The pack's item set and assignment, checked like the folder's (both or neither)."""
    from modlens.study import assignment, itemset

    if "itemset" not in raw and "assignment" not in raw:
        return None, None
    # a participant cannot draw or assign again, only the researcher can: the pack's fix, except for
    # a newer format_version, which the readers answer with upgrading modlens
    try:
        data = itemset.validate(raw.get("itemset"), f"{name} (itemset)", fix=ASK_AGAIN)
    except itemset.ItemSetError as err:
        raise PackError(err.message, fix=err.fix) from None
    tasks = raw.get("assignment")
    bad = (assignment.problems(tasks, data, study, fix=ASK_AGAIN) if isinstance(tasks, dict)
           else [Problem("an item set without its assignment")])
    if bad:
        raise PackError(f"{name}: the pack's item set and assignment cannot be used: "
                        + "; ".join(p.message for p in bad), fix=next((p.fix for p in bad if p.fix), ASK_AGAIN))
    return data, tasks


def _verified_signer(raw: dict[str, Any], signature: Any, name: str) -> str | None:
    """The signer's fingerprint when the signature verifies; None for an unsigned pack."""
    signer = raw.get("signer")
    if signer is None and signature is None:
        return None
    bad = PackError(f"{name}: signature does not verify; the pack was changed after the researcher signed it, "
                    "or not signed by the key it names", fix=ASK_AGAIN)
    if not isinstance(signer, dict) or signer.get("algorithm") != signing.ALGORITHM \
            or not isinstance(signer.get("public_key"), str) or not isinstance(signature, str):
        raise bad
    if not signing.verify(signer["public_key"], signature, canonical(raw)):
        raise bad
    return signing.fingerprint(signer["public_key"])
