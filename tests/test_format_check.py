"""Every file modlens writes with a `format` and `format_version` (study pack, bundle manifest, item
set, assignment) is checked by one function, `modlens.errors.format_problem`: each reader says, in
the same words and with its own error type and fix, that a file is not its kind, was written by a
newer modlens (fix: upgrade), or is a version this modlens no longer reads."""
from __future__ import annotations

import io
import json
import zipfile
from types import SimpleNamespace
from typing import Any, Callable

import pytest

from modlens.errors import UPGRADE, ModlensError, format_problem
from modlens.exchange import bundle
from modlens.study import assignment, itemset, pack


def _pack(data: Any) -> None:
    pack.parse(json.dumps(data), "study.modlens")


def _bundle(data: Any) -> None:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        zf.writestr(bundle.MANIFEST, json.dumps(data))
    buf.seek(0)
    bundle.read_bundle(buf, "p1.bundle")


def _itemset(data: Any) -> None:
    itemset.validate(data, "itemset.json")


def _assignment(data: Any) -> None:
    found = assignment.problems(data, {"sha256": "0" * 64, "items": []}, SimpleNamespace(gold=[]))  # type: ignore[arg-type]
    if found:
        raise assignment.AssignmentError(found[0].message, found[0].fix)


# reader, its module, what its messages call the file, its error type, its fix for a file it cannot read
READERS: list[tuple[Callable[[Any], None], Any, str, type[ModlensError], str]] = [
    (_pack, pack, "modlens study pack", pack.PackError, pack.ASK_AGAIN),
    (_bundle, bundle, "modlens bundle", bundle.BundleError, bundle.RESEND),
    (_itemset, itemset, "modlens item set", itemset.ItemSetError, itemset.DRAW_AGAIN),
    (_assignment, assignment, "modlens assignment", assignment.AssignmentError, assignment.ASSIGN_AGAIN),
]
IDS = ["pack", "bundle", "itemset", "assignment"]


def _refusal(read: Callable[[Any], None], error: type[ModlensError], data: Any) -> ModlensError:
    with pytest.raises(error) as caught:
        read(data)
    return caught.value


@pytest.mark.parametrize(("read", "mod", "what", "error", "fix"), READERS, ids=IDS)
def test_another_kind_of_file_is_not_this_kind(read, mod, what, error, fix):
    err = _refusal(read, error, {"format": "modlens-something-else", "format_version": 1})
    assert f"not a {what} (format is 'modlens-something-else', not {mod.FORMAT!r})" in err.message
    assert err.fix == fix
    err = _refusal(read, error, [mod.FORMAT, 1])
    assert f"not a {what} (not a JSON object)" in err.message and err.fix == fix


@pytest.mark.parametrize(("read", "mod", "what", "error", "fix"), READERS, ids=IDS)
def test_a_missing_or_misspelled_version_is_not_this_kind(read, mod, what, error, fix):
    err = _refusal(read, error, {"format": mod.FORMAT})
    assert f"not a {what} (it has no format_version)" in err.message and err.fix == fix
    for bad in ("1", True, 0, 1.0):
        err = _refusal(read, error, {"format": mod.FORMAT, "format_version": bad})
        assert f"not a {what} (format_version {bad!r} is not a version number)" in err.message, bad
        assert err.fix == fix


@pytest.mark.parametrize(("read", "mod", "what", "error", "fix"), READERS, ids=IDS)
def test_a_newer_version_says_upgrade(read, mod, what, error, fix):
    newest = mod.READS[-1]
    assert newest == mod.FORMAT_VERSION, "a reader reads the version its writer writes"
    err = _refusal(read, error, {"format": mod.FORMAT, "format_version": newest + 1})
    assert f"{what} format_version {newest + 1} is newer than this modlens reads" in err.message
    assert "a newer modlens wrote it" in err.message and err.fix == UPGRADE


@pytest.mark.parametrize(("read", "mod", "what", "error", "fix"), READERS, ids=IDS)
def test_the_version_it_writes_passes_the_check(read, mod, what, error, fix):
    # a file of the right kind and version gets past the format check to the reader's next one
    # (a checksum, the items, the item set it was made for), which refuses this empty file
    with pytest.raises(error) as caught:
        read({"format": mod.FORMAT, "format_version": mod.FORMAT_VERSION})
    assert what not in caught.value.message and "format_version" not in caught.value.message


def test_a_version_no_longer_read_says_so_with_the_readers_fix():
    # no reader has dropped a version yet: the rule, on a reader that reads 2 and 3 only
    reads = range(2, 4)
    old = format_problem({"format": "f", "format_version": 1}, name="x.json", what="modlens thing", fmt="f",
                         reads=reads, fix="make it again")
    assert old is not None and old.fix == "make it again"
    assert old.message == ("x.json: modlens thing format_version 1 is older than this modlens reads (versions 2 to 3): "
                           "this modlens no longer reads it")
    newer = format_problem({"format": "f", "format_version": 4}, name="x.json", what="modlens thing", fmt="f",
                           reads=reads, fix="make it again")
    assert newer is not None and "(versions 2 to 3)" in newer.message and newer.fix == UPGRADE
    for v in reads:
        assert format_problem({"format": "f", "format_version": v}, name="x.json", what="modlens thing", fmt="f",
                              reads=reads, fix="make it again") is None
