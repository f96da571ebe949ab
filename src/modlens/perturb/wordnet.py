"""WordNet 3.0 from the Debian `wordnet-base` files, read with nltk's `WordNetCorpusReader`.

Shared by the `wordnet_synonym` transformation, the `pos_kept` constraint and the vector
quality bench. Nothing is downloaded: the reader opens the database files in place.

Two gaps between Debian's package and what nltk expects are bridged here, both without
touching the files:
- Debian ships no `lexnames` file (the 45 lexicographer file names, fixed for WordNet 3.0
  and listed in the lexnames(5WN) man page); the reader gets them from `LEXNAMES`.
- nltk maps every WordNet to its own downloadable 3.0 copy for the multilingual (OMW)
  functions; that mapping needs the download, and nothing here is multilingual, so it is off.
nltk refuses to open corpus paths outside its data path, so the directory is added to
`nltk.data.path`, nltk's documented way to authorise a corpus root.
"""
from __future__ import annotations

import io
import os
import threading
import warnings
from pathlib import Path
from typing import Any

from modlens.errors import inline_fix

DEFAULT_DIR = "/usr/share/wordnet"
ENV_VAR = "MODLENS_WORDNET"
INSTALL_FIX = "apt-get install wordnet-base (or `make system-deps`), or set $MODLENS_WORDNET to a WordNet 3.0 dict folder"
REQUIRED_FILES = ("index.noun", "index.verb", "index.adj", "index.adv",
                  "data.noun", "data.verb", "data.adj", "data.adv")

# WordNet 3.0 lexicographer files, numbered 0..44 (lexnames(5WN)).
LEXNAMES = (
    "adj.all adj.pert adv.all noun.Tops noun.act noun.animal noun.artifact noun.attribute noun.body "
    "noun.cognition noun.communication noun.event noun.feeling noun.food noun.group noun.location "
    "noun.motive noun.object noun.person noun.phenomenon noun.plant noun.possession noun.process "
    "noun.quantity noun.relation noun.shape noun.state noun.substance noun.time verb.body verb.change "
    "verb.cognition verb.communication verb.competition verb.consumption verb.contact verb.creation "
    "verb.emotion verb.motion verb.perception verb.possession verb.social verb.stative verb.weather adj.ppl"
).split()

POS_TAGS = ("n", "v", "a", "r")  # noun, verb, adjective (satellites "s" count as "a"), adverb

_lock = threading.Lock()
# nltk's reader reads the data files through shared seekable streams, which concurrent queries
# corrupt (an audit attacks from several threads): every query holds this lock.
QUERY_LOCK = threading.RLock()
_readers: dict[str, Any] = {}


def wordnet_dir(path: str | os.PathLike[str] | None = None) -> Path:
    """The option, else $MODLENS_WORDNET, else Debian's /usr/share/wordnet."""
    return Path(os.path.expanduser(str(path or os.environ.get(ENV_VAR) or DEFAULT_DIR)))


def availability(path: str | os.PathLike[str] | None = None) -> str | None:
    """None when WordNet can be read here, else the reason and the fix."""
    try:
        import nltk  # noqa: F401
    except ModuleNotFoundError:
        return inline_fix("WordNet needs nltk", "pip install nltk")
    root = wordnet_dir(path)
    missing = [f for f in REQUIRED_FILES if not (root / f).is_file()]
    if missing:
        what = "no WordNet folder" if not root.is_dir() else f"missing {', '.join(missing)}"
        return inline_fix(f"WordNet 3.0 not found at {root} ({what})", INSTALL_FIX)
    return None


def digest(path: str | os.PathLike[str] | None = None) -> str:
    """The WordNet folder by content (its files' names and bytes, not the folder's name): another
    WordNet, or an edited one, gives other synonyms and parts of speech."""
    from modlens.detectors.base import directory_hash

    return directory_hash(wordnet_dir(path))


def pos_tag(synset_pos: str) -> str:
    """WordNet's adjective satellites ("s") are adjectives."""
    return "a" if synset_pos == "s" else synset_pos


def load(path: str | os.PathLike[str] | None = None) -> Any:
    """The reader for `path` (see `wordnet_dir`), built once per process (~3.5 s: nltk indexes
    every lemma up front). Raises RuntimeError with the fix when unavailable."""
    root = wordnet_dir(path)
    key = str(root.resolve())
    with _lock:
        if key in _readers:
            return _readers[key]
        reason = availability(root)
        if reason:
            raise RuntimeError(reason)
        import nltk.data
        from nltk.corpus.reader.wordnet import WordNetCorpusReader

        class _DebianWordNet(WordNetCorpusReader):  # type: ignore[misc]
            def open(self, file: str) -> Any:
                if file == "lexnames" and not (root / "lexnames").is_file():
                    return io.StringIO("".join(f"{i:02d}\t{n}\t0\n" for i, n in enumerate(LEXNAMES)))
                return super().open(file)

            def map_wn(self, version: str = "wordnet") -> None:
                return None  # only the multilingual functions use it (and it needs a download)

        if key not in (str(p) for p in nltk.data.path):
            nltk.data.path.append(key)
        with warnings.catch_warnings():  # "multilingual functions are not available": by design
            warnings.simplefilter("ignore", UserWarning)
            reader = _DebianWordNet(key, None)
        _readers[key] = reader
        return reader


def word_pos(reader: Any, word: str) -> set[str]:
    """Parts of speech WordNet knows `word` (any inflection) as; empty when it does not know it."""
    with QUERY_LOCK:
        return {pos_tag(s.pos()) for s in reader.synsets(word.lower())}


def base_forms(reader: Any, word: str) -> set[str]:
    """The word and its WordNet base forms for every part of speech ("idiots" -> idiot)."""
    w = word.lower()
    forms = {w}
    with QUERY_LOCK:
        for pos in POS_TAGS:
            base = reader.morphy(w, pos)
            if base:
                forms.add(base)
    return forms
