"""What an export that does not finish leaves in its output folder (docs/DATA.md, studylog/export.py):
refused before its first rename, the folder as it was (folders it made removed); once renaming began,
never a manifest.json beside tables it does not describe."""
from __future__ import annotations

import os
from pathlib import Path

import pytest

from modlens.errors import ModlensError
from modlens.studylog import export as export_module
from modlens.studylog.export import MANIFEST_FILE, export
from modlens.studylog.store import StudyLog


@pytest.fixture
def db(tmp_path):
    path = tmp_path / "study.sqlite"
    with StudyLog(path) as log:
        log.add_comment("news", "n1", None, "have a nice day")
    return path


def files(folder: Path) -> dict[str, bytes | None]:
    """Every entry under `folder`: a file's bytes, None for a folder."""
    return {str(p.relative_to(folder)): None if p.is_dir() else p.read_bytes() for p in sorted(folder.rglob("*"))}


def test_a_final_name_that_is_a_folder_refuses_the_export_before_any_rename(db, tmp_path):
    out = tmp_path / "out"
    manifest = export(db, out)
    last = manifest["tables"][list(manifest["tables"])[-1]]["file"]  # renamed after every other table
    (out / last).unlink()
    (out / last).mkdir()
    (out / last / "notes.txt").write_text("someone's\n")
    with StudyLog(db) as log:  # the next export's tables differ from the earlier one's
        log.add_comment("news", "n2", None, "another comment")
    before = files(out)
    with pytest.raises(ModlensError, match=f"{last}.*folder"):
        export(db, out)
    assert files(out) == before  # no table replaced, the earlier manifest kept, no temporary file left


def test_a_failed_rename_leaves_no_manifest_beside_new_tables(db, tmp_path, monkeypatch):
    out = tmp_path / "out"
    export(db, out)
    assert (out / MANIFEST_FILE).is_file()
    real, calls = os.replace, []

    def replace_then_fail(src, dst):  # the disk fails on the third rename (as a kill there would stop it)
        calls.append(dst)
        if len(calls) == 3:
            raise OSError(28, "No space left on device")
        real(src, dst)

    monkeypatch.setattr(export_module.os, "replace", replace_then_fail)
    with pytest.raises(OSError, match="No space"):
        export(db, out)
    assert not (out / MANIFEST_FILE).exists()  # two new tables beside old ones: not an export
    assert not list(out.glob("*.tmp"))


def test_a_failed_read_removes_every_folder_it_made(db, tmp_path):
    def broken(log):
        raise RuntimeError("the wide table failed")

    with pytest.raises(RuntimeError, match="wide table failed"):
        export(db, tmp_path / "a" / "b" / "out", derived=[broken])
    assert not (tmp_path / "a").exists()
