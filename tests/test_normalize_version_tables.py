"""The normalizer's version names its built-in tables by their bytes (`modlens.normalize.tables`): a
character map, leet reading, word list, cost or pattern edited without a hand-bumped revision made
other normalizations under the same version, so a score's recorded normalizer version said less than
what made its text. The version stays the same across runs (hash seeds) and installs (paths)."""
from __future__ import annotations

import os
import subprocess
import sys
import unicodedata
from pathlib import Path
from types import SimpleNamespace

import pytest

from modlens.normalize import lexicon, pipeline, tables
from modlens.normalize.pipeline import build_normalizer
from modlens.normalize.steps import edit_distance, leet, unicode_fold, word_split
from modlens.normalize.steps.leet import Leet

CYRILLIC_O = "о"  # renders as Latin "o"


def test_an_edited_character_map_is_another_normalizer(monkeypatch):
    text = f"you idi{CYRILLIC_O}t"
    before = build_normalizer()
    assert [(e.normalized, e.step) for e in before.normalize(text).edits] == [("idiot", "unicode")]
    without = {k: v for k, v in unicode_fold.CONFUSABLES.items() if k != ord(CYRILLIC_O)}
    monkeypatch.setattr(unicode_fold, "CONFUSABLES", without)  # the map edited, no revision bumped
    after = build_normalizer()
    # another normalization (a one-edit typo now, at a lower confidence) ...
    assert [(e.normalized, e.step) for e in after.normalize(text).edits] == [("idiot", "edit_distance")]
    assert after.version != before.version  # ... under another version


@pytest.mark.parametrize("owner, name, value", [
    (leet, "LEET", {**leet.LEET, "0": ("o", "u")}),                      # a leet reading added
    (leet, "WILDCARD_COST", leet.WILDCARD_COST + 0.5),                   # a cost
    (word_split, "SUFFIXES", word_split.SUFFIXES - {"ness"}),            # a word list (a set)
    (edit_distance, "QWERTY", ["qwertyuiop", "asdfghjkl", "zxcvbnm,"]),  # the keyboard rows
    (pipeline, "SEARCH_BEAM", pipeline.SEARCH_BEAM + 1),                 # the pipeline's own constants
    (lexicon, "OFFENSIVE_WEIGHT", lexicon.OFFENSIVE_WEIGHT + 1),
    (Leet, "symbols", leet.LEET_SYMBOLS - {"0"}),                        # a step class's attribute
], ids=["leet-readings", "cost", "word-list", "keyboard", "pipeline-constant", "lexicon-weight", "class-attribute"])
def test_every_kind_of_built_in_table_is_in_the_version(monkeypatch, owner, name, value):
    before = build_normalizer().version
    monkeypatch.setattr(owner, name, value)
    assert build_normalizer().version != before


def test_restoring_a_table_restores_the_version(monkeypatch):
    before = build_normalizer().version
    with monkeypatch.context() as m:
        m.setattr(leet, "WILDCARD_COST", leet.WILDCARD_COST + 0.5)
        assert build_normalizer().version != before
    assert build_normalizer().version == before  # named by the table's content, not by a change


def test_the_version_is_the_same_in_every_run():
    """Sets and dicts are written in a canonical order: another hash seed gives the same version."""
    code = "from modlens.normalize.pipeline import build_normalizer; print(build_normalizer().version)"
    versions = set()
    for seed in ("1", "2"):
        env = {**os.environ, "PYTHONHASHSEED": seed}
        out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
        versions.add(out.stdout.strip())
    assert versions == {build_normalizer().version}


def test_the_tables_do_not_name_where_modlens_is_installed(monkeypatch):
    before = tables.tables_digest()
    monkeypatch.setattr(lexicon, "DEFAULT_LEXICON_PATH", Path("/elsewhere/data/lexicon.txt"))
    assert tables.tables_digest() == before
    assert "DEFAULT_LEXICON_PATH" not in tables.tables(lexicon)


def test_every_step_list_names_the_unicode_database(monkeypatch):
    """Not only the unicode step's NFKC reads it: str.isalpha, .lower and \\w in every pipeline do."""
    before = build_normalizer(["leet"]).version
    newer = SimpleNamespace(unidata_version="99.0.0")
    monkeypatch.setattr(pipeline, "unicodedata", newer)
    assert build_normalizer(["leet"]).version != before
    monkeypatch.setattr(pipeline, "unicodedata", unicodedata)
    assert build_normalizer(["leet"]).version == before
