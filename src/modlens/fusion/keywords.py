"""Keyword pairs for the seed templates (DUO sections 3.1.2-3.1.3), from data modlens already
ships: TF-IDF over the toxic rows of Davidson and HateCheck ranks candidate words, WordNet (Debian
`wordnet-base`, `modlens.perturb.wordnet`) gives their part of speech and senses, and the
normalizer lexicon's offensiveness stands in for the paper's sentiment API as negativity.

Per content type:
- abuse_hate "A is/are B": A a group (groups.txt, ranked by how often the toxic rows name it);
  B a noun for a person or animal, or an adjective, with offensiveness >= MIN_NEGATIVITY;
- spam "A: B": A a product (products.txt), B prefixed contact information (contacts.txt);
- sexual "A your/my B": A a verb of sexual.txt, ranked by TF-IDF; B a noun with a WordNet body
  sense under genitalia, breast, nipple,
  buttocks or thigh, offensive in the lexicon.
Filtered everywhere: stop words, keyword_stoplist.txt, A == B or one base form ("A is A"), and
nonsense (a word neither WordNet nor the lexicon knows)."""
from __future__ import annotations

import csv
import functools
import io
import random
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable

from modlens.errors import ModlensError
from modlens.fusion.case import CONTENT_TYPES
from modlens.fusion.templates import DATA_DIR

DATASETS = ("davidson", "hatecheck")
MIN_NEGATIVITY = 1.0      # lexicon offensiveness (log-odds above the base rate) a B keyword needs
MIN_DF = 3                # a word in fewer toxic-corpus rows is a typo or a name, not a keyword
TOP_A, TOP_B = 12, 40     # how deep into each ranking pairs are drawn from
NOUN_SENSES = ("noun.person", "noun.animal")  # what "group X are <noun>" insults are made of
# WordNet synsets whose hyponyms are the body parts the sexual template means
ORGAN_ROOTS = frozenset({"genitalia.n.01", "sex_organ.n.01", "testis.n.01", "breast.n.02", "nipple.n.01",
                         "buttocks.n.01", "thigh.n.01"})
TOKEN_PATTERN = r"(?u)\b[a-z][a-z]+\b"

# where keywords come from, for `modlens fuse --list`
KEYWORD_SOURCES: dict[str, str] = {
    "davidson": "Davidson et al. 2017 tweets (shipped): toxic rows (hate speech or offensive) for TF-IDF",
    "hatecheck": "HateCheck test cases (shipped): hateful rows for TF-IDF, target groups for groups.txt",
    "lexicon": "the normalizer lexicon's offensiveness (modlens/normalize/data/lexicon.txt): negativity of B",
    "wordnet": "WordNet 3.0 (Debian wordnet-base): part of speech, person/animal and body-part senses",
    "groups.txt": "group names for abuse_hate A (HateCheck's target groups plus common targets)",
    "products.txt": "products for spam A",
    "contacts.txt": "fictional contact information for spam B (Tel, Email, WhatsApp, Ins)",
    "sexual.txt": "sexual verbs for sexual A; organs that fill in sexual B",
    "keyword_stoplist.txt": "chat spellings and non-insults kept out of the slots",
}


class KeywordError(ModlensError, ValueError):
    """Keywords cannot be extracted or read; `fix` says what to do."""


@dataclass(frozen=True)
class KeywordPair:
    content_type: str
    a: str
    b: str
    source: dict[str, Any] = field(default_factory=dict, compare=False)  # how A and B were chosen


@dataclass(frozen=True)
class Candidate:
    word: str
    score: float          # TF-IDF summed over the toxic rows (0 for list words the data never uses)
    why: str              # the rule that admitted it


# --- data files --------------------------------------------------------------------------------
def read_list(name: str) -> list[str]:
    """A shipped one-item-a-line file (comments and blank lines skipped), in file order."""
    lines = (DATA_DIR / name).read_text(encoding="utf-8").splitlines()
    return [line.strip() for line in lines if line.strip() and not line.lstrip().startswith("#")]


def sexual_words(kind: str) -> list[str]:
    return [w for k, w in (line.split("\t", 1) for line in read_list("sexual.txt")) if k == kind]


@functools.lru_cache(maxsize=1)
def stoplist() -> frozenset[str]:
    from sklearn.feature_extraction.text import ENGLISH_STOP_WORDS  # type: ignore[import-untyped,unused-ignore]
    return frozenset(read_list("keyword_stoplist.txt")) | frozenset(ENGLISH_STOP_WORDS)


# --- corpus ------------------------------------------------------------------------------------
@functools.lru_cache(maxsize=4)
def toxic_corpus(datasets: tuple[str, ...] = DATASETS) -> tuple[tuple[str, ...], tuple[bool, ...]]:
    """(texts, is_toxic) of the shipped datasets, via the dataset registry."""
    from modlens.datasets import registry
    from modlens.datasets.base import DatasetError

    texts: list[str] = []
    toxic: list[bool] = []
    for name in datasets:
        try:
            data = registry.load(name)
        except DatasetError as err:
            raise KeywordError(str(err), f"`modlens data fetch {name}`, or use --pairs-file") from None
        for item in data.iter_items():
            texts.append(item.text)
            toxic.append(item.labels.get("toxic") == "1")
    return tuple(texts), tuple(toxic)


@functools.lru_cache(maxsize=4)
def tfidf_ranking(datasets: tuple[str, ...] = DATASETS) -> tuple[tuple[str, float], ...]:
    """Words by TF-IDF summed over the toxic rows, highest first. IDF is fitted on all rows, so a
    word common everywhere ranks below one that marks toxic rows (the paper's keyword rule)."""
    import numpy as np
    from sklearn.feature_extraction.text import TfidfVectorizer  # type: ignore[import-untyped,unused-ignore]

    texts, toxic = toxic_corpus(datasets)
    vectorizer = TfidfVectorizer(stop_words="english", token_pattern=TOKEN_PATTERN, lowercase=True,
                                 min_df=MIN_DF, sublinear_tf=True)
    matrix = vectorizer.fit_transform(texts)
    mask = np.fromiter(toxic, dtype=bool, count=len(toxic))
    scores = np.asarray(matrix[mask].sum(axis=0)).ravel()
    vocab = vectorizer.get_feature_names_out()
    order = sorted(range(len(vocab)), key=lambda i: (-scores[i], vocab[i]))
    return tuple((str(vocab[i]), round(float(scores[i]), 6)) for i in order if scores[i] > 0)


@functools.lru_cache(maxsize=4)
def group_mentions(datasets: tuple[str, ...] = DATASETS) -> dict[str, int]:
    """How many toxic rows name each group of groups.txt (case-insensitive, whole words)."""
    import re

    texts, toxic = toxic_corpus(datasets)
    blob = "\n".join(t.lower() for t, is_toxic in zip(texts, toxic) if is_toxic)
    return {g: len(re.findall(rf"\b{re.escape(g.lower())}\b", blob)) for g in read_list("groups.txt")}


# --- word properties ---------------------------------------------------------------------------
class Lexica:
    """WordNet and the normalizer lexicon, loaded once and queried under WordNet's lock."""

    def __init__(self, wordnet_dir: str | None = None) -> None:
        from modlens.normalize.lexicon import Lexicon
        from modlens.perturb import wordnet

        try:
            self.wn: Any = wordnet.load(wordnet_dir)
        except RuntimeError as err:
            raise KeywordError(f"keyword extraction needs WordNet: {err}", wordnet.INSTALL_FIX) from None
        self.lexicon = Lexicon()
        self._lock = wordnet.QUERY_LOCK

    def negativity(self, word: str) -> float:
        return self.lexicon.offensive.get(word.lower(), 0.0)

    def known(self, word: str) -> bool:
        """Not nonsense: WordNet or the lexicon knows the word."""
        w = word.lower()
        with self._lock:
            return w in self.lexicon or bool(self.wn.synsets(w))

    def base_forms(self, word: str) -> set[str]:
        from modlens.perturb import wordnet
        return wordnet.base_forms(self.wn, word)

    def insult_kind(self, word: str) -> str | None:
        """"adjective" or "noun.person"/"noun.animal" when the word's most common sense is a noun
        or adjective and it has such a sense; None otherwise (verbs, things, places)."""
        with self._lock:
            synsets = self.wn.synsets(word.lower())
            if not synsets or synsets[0].pos() not in ("n", "a", "s"):
                return None
            if any(s.pos() in ("a", "s") for s in synsets):
                return "adjective"
            for s in synsets:
                if s.lexname() in NOUN_SENSES:
                    return str(s.lexname())
        return None

    def organ(self, word: str) -> str | None:
        """The body-part synset ("cock.n.01") when the word names one the sexual template means."""
        with self._lock:
            for s in self.wn.synsets(word.lower(), pos="n"):
                if s.lexname() != "noun.body":
                    continue
                above = {x.name() for x in s.closure(lambda x: x.hypernyms())} | {s.name()}
                if above & ORGAN_ROOTS:
                    return str(s.name())
        return None


# --- candidates per slot -----------------------------------------------------------------------
def candidates(content_type: str, lexica: Lexica, datasets: tuple[str, ...] = DATASETS
               ) -> tuple[list[Candidate], list[Candidate]]:
    """(A candidates, B candidates), best first."""
    if content_type == "abuse_hate":
        return _groups(datasets), _negative_words(lexica, datasets)
    if content_type == "spam":
        return ([Candidate(p, 0.0, "products.txt") for p in read_list("products.txt")],
                [Candidate(c, 0.0, "contacts.txt") for c in read_list("contacts.txt")])
    if content_type == "sexual":
        return _sexual_verbs(datasets), _organs(lexica, datasets)
    raise KeywordError(f"unknown content type {content_type!r}; known: {', '.join(CONTENT_TYPES)}")


def _groups(datasets: tuple[str, ...]) -> list[Candidate]:
    counts = group_mentions(datasets)
    ranked = sorted(counts, key=lambda g: -counts[g])  # stable: file order breaks ties
    return [Candidate(g, float(counts[g]), f"groups.txt; named in {counts[g]} toxic rows") for g in ranked]


def _group_words() -> set[str]:
    return {w.lower() for g in read_list("groups.txt") for w in g.split()}


def _dedupe(found: Iterable[Candidate], lexica: Lexica) -> list[Candidate]:
    """One candidate per base form ("idiots" and "idiot"), the better-ranked surface form kept."""
    seen: set[str] = set()
    out = []
    for c in found:
        forms = lexica.base_forms(c.word)
        if forms & seen:
            continue
        seen |= forms
        out.append(c)
    return out


def _negative_words(lexica: Lexica, datasets: tuple[str, ...]) -> list[Candidate]:
    skip = stoplist() | _group_words()
    found = []
    for word, score in tfidf_ranking(datasets):
        if word in skip or lexica.negativity(word) < MIN_NEGATIVITY:
            continue
        kind = lexica.insult_kind(word)
        if kind is None:
            continue
        found.append(Candidate(word, score, f"tf-idf; {kind}; offensiveness {lexica.negativity(word):.2f}"))
        if len(found) >= 4 * TOP_B:
            break
    return _dedupe(found, lexica)


def _sexual_verbs(datasets: tuple[str, ...]) -> list[Candidate]:
    scores = dict(tfidf_ranking(datasets))
    verbs = sexual_words("verb")
    ranked = sorted(verbs, key=lambda v: -scores.get(v, 0.0))
    return [Candidate(v, scores.get(v, 0.0), "sexual.txt; ranked by tf-idf") for v in ranked]


def _organs(lexica: Lexica, datasets: tuple[str, ...]) -> list[Candidate]:
    skip = stoplist()
    found = []
    for word, score in tfidf_ranking(datasets):
        if word in skip or lexica.negativity(word) < MIN_NEGATIVITY:
            continue
        synset = lexica.organ(word)
        if synset:
            found.append(Candidate(word, score, f"tf-idf; body part {synset}; "
                                                f"offensiveness {lexica.negativity(word):.2f}"))
    found += [Candidate(w, 0.0, "sexual.txt organ") for w in sexual_words("organ")]
    return _dedupe(found, lexica)


# --- pairs -------------------------------------------------------------------------------------
def pair_problem(content_type: str, a: str, b: str, lexica: Lexica | None) -> str | None:
    """Why (A, B) cannot make a seed: empty, "A is A", or nonsense. None when it can."""
    if not a.strip() or not b.strip():
        return "empty keyword"
    if a.strip().casefold() == b.strip().casefold():
        return "A == B"
    if content_type == "spam" or lexica is None:
        return None
    a_forms = set().union(*(lexica.base_forms(w) for w in a.split()))
    b_forms = set().union(*(lexica.base_forms(w) for w in b.split()))
    if a_forms & b_forms:
        return f"A is A: {a!r} and {b!r} share a word"
    unknown = [w for w in (*a.split(), *b.split()) if not lexica.known(w)]
    if unknown:
        return f"nonsense: WordNet and the lexicon do not know {', '.join(unknown)}"
    return None


def extract_pairs(content_type: str, n: int, rng: random.Random, lexica: Lexica,
                  datasets: tuple[str, ...] = DATASETS) -> list[KeywordPair]:
    """`n` pairs drawn with `rng` from the top A and B candidates, every one valid; fewer when
    the candidates allow fewer. Each B is used once before any B repeats, so pairs spread over
    the insults rather than over the groups."""
    a_cands, b_cands = candidates(content_type, lexica, datasets)
    a_top, b_top = a_cands[:TOP_A], b_cands[:TOP_B]
    pool = [(ca, cb) for cb in b_top for ca in a_top if pair_problem(content_type, ca.word, cb.word, lexica) is None]
    rng.shuffle(pool)
    pool.sort(key=lambda p: b_top.index(p[1]))  # stable: shuffled A order within each B
    by_b: dict[str, list[tuple[Candidate, Candidate]]] = {}
    for p in pool:
        by_b.setdefault(p[1].word, []).append(p)
    picked: list[tuple[Candidate, Candidate]] = []
    while len(picked) < n and any(by_b.values()):
        for options in by_b.values():  # round robin over the Bs, best B first
            if options and len(picked) < n:
                picked.append(options.pop(0))
    return [KeywordPair(content_type, ca.word, cb.word,
                        {"a": ca.why, "b": cb.why, "a_score": ca.score, "b_score": cb.score}) for ca, cb in picked]


def read_pairs_file(path: str | Path) -> list[KeywordPair]:
    """Explicit pairs from a CSV with the columns content_type,a,b (a header row is optional)."""
    p = Path(path)
    if not p.is_file():
        raise KeywordError(f"pairs file {p} not found", "give a CSV with the columns content_type,a,b")
    pairs = []
    data = p.read_bytes()
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as err:
        line = data[:err.start].count(b"\n") + 1
        raise KeywordError(f"{p}: line {line} is not UTF-8 text",
                           "convert the file to UTF-8 (e.g. iconv -f cp1252 -t utf-8 FILE > FILE.utf8)") from None
    with io.StringIO(text, newline="") as fh:
        for n, row in enumerate(csv.reader(fh), 1):
            if not row or not "".join(row).strip() or row[0].lstrip().startswith("#"):
                continue
            cells = [c.strip() for c in row]
            if n == 1 and [c.lower() for c in cells[:3]] == ["content_type", "a", "b"]:
                continue
            if len(cells) != 3:
                raise KeywordError(f"{p}: line {n}: expected 3 columns content_type,a,b, got {len(cells)}",
                                   "quote a keyword that holds a comma")
            if cells[0] not in CONTENT_TYPES:
                raise KeywordError(f"{p}: line {n}: content type {cells[0]!r} is not one of {', '.join(CONTENT_TYPES)}")
            pairs.append(KeywordPair(cells[0], cells[1], cells[2], {"a": f"{p.name}:{n}", "b": f"{p.name}:{n}"}))
    if not pairs:
        raise KeywordError(f"{p}: no pairs", "one line per pair: content_type,a,b")
    return pairs
