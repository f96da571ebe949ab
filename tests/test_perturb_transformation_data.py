"""A transformation names the data it proposes from by content (`Transformation.data`): an attack
records it (`transformation_data`), so an attack run with other data is another attack, never a reused
one (docs/PERTURB.md). wordnet_synonym reads a WordNet folder (the option, $MODLENS_WORDNET or
Debian's) and embedding_neighbour a MiniLM model folder, yet both said they read none: an audit run
again with another WordNet or other vectors proposed other words under the same attack config."""
from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from modlens.perturb import wordnet, wordvectors
from modlens.perturb.generate import word_slots
from modlens.perturb.transformations import create

TEXT = "you are so stupid"


def wordnet_copy(folder: Path, edit: bool) -> Path:
    """A copy of the WordNet here, with 'stupid' taken out of its index files when `edit`."""
    folder.mkdir()
    for f in wordnet.wordnet_dir().iterdir():
        if f.is_file():
            if edit and f.name.startswith("index."):
                lines = f.read_text(encoding="utf-8").splitlines(keepends=True)
                (folder / f.name).write_text("".join(ln for ln in lines if not ln.startswith("stupid ")),
                                             encoding="utf-8")
            else:
                shutil.copyfile(f, folder / f.name)
    return folder


@pytest.mark.skipif(wordnet.availability() is not None, reason="WordNet not installed (make system-deps)")
def test_wordnet_synonym_names_its_wordnet_by_content(tmp_path):
    same = create("wordnet_synonym", path=str(wordnet_copy(tmp_path / "same", edit=False)))
    other = create("wordnet_synonym", path=str(wordnet_copy(tmp_path / "other", edit=True)))
    here = create("wordnet_synonym")
    slots = word_slots(TEXT)
    proposed = {name: [c.new for c in t.changes(TEXT, slots, 3, None, 5)]
                for name, t in (("here", here), ("same", same), ("other", other))}
    assert proposed["here"] == proposed["same"] != proposed["other"]  # another WordNet, other words
    assert here.data() and here.data() == same.data()                # the same bytes under another folder
    assert other.data() != here.data()


@pytest.mark.skipif(wordvectors.availability() is not None, reason="the embedded MiniLM is not installed")
def test_embedding_neighbour_names_its_vectors_by_content():
    t = create("embedding_neighbour")
    vectors = wordvectors.load()
    assert t.data() == {"vectors": vectors.source, "vectors_version": vectors.version}
    for change in t.changes(TEXT, word_slots(TEXT), 3, None, 3):
        assert {k: change.params[k] for k in ("vectors", "vectors_version")} == t.data()


@pytest.mark.skipif(wordnet.availability() is not None, reason="WordNet not installed (make system-deps)")
def test_pos_kept_names_its_wordnet_by_content(tmp_path):
    """pos_kept reads parts of speech from the same WordNet; its describe() (an attack's constraints)
    named it 'WordNet 3.0' whatever the folder held."""
    from modlens.perturb.constraints import create as constraint

    same = constraint("pos_kept", path=str(wordnet_copy(tmp_path / "same", edit=False)))
    other = constraint("pos_kept", path=str(wordnet_copy(tmp_path / "other", edit=True)))
    here = constraint("pos_kept")
    assert here.pos("stupid") == same.pos("stupid") != other.pos("stupid")
    assert here.describe() == same.describe() != other.describe()
