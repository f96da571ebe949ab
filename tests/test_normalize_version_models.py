"""The normalizer's version names what decides its output (docs/NORMALIZE.md), so an audit run under
one version is never resumed under another and a normalized text says which normalizer made it. Two
steps read what modlens does not ship: pyspell corrects from pyspellchecker's bundled English list
(an unpinned dependency: another release lists other words) and unicode folds with the running
Python's Unicode database (NFKC's tables; a newer Python has a newer one). The version hashed neither:
the same version wrote other texts under another list."""
from __future__ import annotations

import gzip
import json
import pkgutil
import unicodedata
from types import SimpleNamespace

from modlens.normalize.pipeline import build_normalizer
from modlens.normalize.steps import pyspell, unicode_fold

RESOURCE = "resources/en.json.gz"


def test_another_pyspellchecker_word_list_is_another_normalizer(monkeypatch):
    before = build_normalizer(["pyspell"])
    assert before.normalize("so wierd").text == "so weird"
    words = json.loads(gzip.decompress(pkgutil.get_data("spellchecker", RESOURCE)))
    del words["weird"]  # the list of another release, without the word
    other = gzip.compress(json.dumps(words).encode())
    real_get_data = pkgutil.get_data
    monkeypatch.setattr(pkgutil, "get_data",
                        lambda package, name: other if (package, name) == ("spellchecker", RESOURCE)
                        else real_get_data(package, name))
    pyspell.word_list_sha.cache_clear()
    try:
        after = build_normalizer(["pyspell"])
        assert after.normalize("so wierd").text != "so weird"
        assert after.version != before.version
    finally:
        pyspell.word_list_sha.cache_clear()


def test_another_unicode_database_is_another_normalizer(monkeypatch):
    before, leet_only = build_normalizer(), build_normalizer(["leet"])
    newer = SimpleNamespace(**{k: getattr(unicodedata, k) for k in dir(unicodedata) if not k.startswith("__")})
    newer.unidata_version = "99.0.0"
    monkeypatch.setattr(unicode_fold, "unicodedata", newer)
    assert build_normalizer().version != before.version
    # the step's own reading is named only where the step runs (every pipeline names the database the
    # pipeline's own str methods and patterns read: test_normalize_version_tables)
    assert build_normalizer(["leet"]).version == leet_only.version
