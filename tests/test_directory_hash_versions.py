"""`directory_hash` is part of a detector's version (and of an attack constraint's, a word list's): every
score carries it. It was read once per (file name, modification time, size): a model file rewritten with
other bytes of the same size and its time kept (`cp -p`, `rsync -t`, an unpacked archive) kept the old
hash, and a changed model's scores carried the old version. It is now read once per file version as the
data-set caches key it (`fileversion.stamp`: device, inode, size, modification and change time), and only
once every file's times are older than the timestamps' resolution (`fileversion.settled`)."""
from __future__ import annotations

import hashlib
import os
import time

import pytest

from modlens import fileversion
from modlens.detectors import base
from modlens.detectors.base import directory_hash


def _model(root):
    root.mkdir()
    (root / "config.json").write_text('{"hidden_size": 384}', encoding="utf-8")
    (root / "model.safetensors").write_bytes(b"weights: 0123456789")
    return root


def _expected(root) -> str:
    """The hash by its definition: each file's name, then its bytes, in sorted order."""
    h = hashlib.sha256()
    for p in sorted(p for p in root.rglob("*") if p.is_file()):
        h.update(str(p.relative_to(root)).encode())
        h.update(p.read_bytes())
    return h.hexdigest()[:12]


def _read_later(monkeypatch, seconds: int = 10) -> None:
    """As if every hash were asked `seconds` after the files were last written: all of them settled."""
    real = fileversion.time_ns
    monkeypatch.setattr(fileversion, "time_ns", lambda: real() + seconds * 10**9)


def _reads(monkeypatch) -> list[str]:
    """The files `directory_hash` reads (not served from its cache)."""
    reads: list[str] = []
    hash_file = base.hash_file

    def counted(h, path, **kw):
        reads.append(path.name)
        return hash_file(h, path, **kw)

    monkeypatch.setattr(base, "hash_file", counted)
    return reads


@pytest.mark.parametrize("rename_over", [False, True])
def test_a_same_size_rewrite_with_its_time_kept_changes_the_hash(tmp_path, monkeypatch, rename_over):
    """Checked with the read 10 s after the writes, so the cache is used: it is its key that tells them apart."""
    _read_later(monkeypatch)
    model = _model(tmp_path / "minilm")
    weights = model / "model.safetensors"
    first = directory_hash(model)
    assert first == _expected(model)
    st = weights.stat()
    time.sleep(0.02)  # the rewrite comes a clock tick after the first version, as any later one does
    new = b"weights: 9876543210"
    if rename_over:  # rsync -t: a new file with the old times, renamed over the old one
        other = model / "model.safetensors.tmp"
        other.write_bytes(new)
        os.utime(other, ns=(st.st_atime_ns, st.st_mtime_ns))
        os.replace(other, weights)
    else:  # cp -p over it: the same inode, the old times set back
        with open(weights, "r+b") as fh:
            fh.write(new)
        os.utime(weights, ns=(st.st_atime_ns, st.st_mtime_ns))
    after = weights.stat()
    assert (after.st_size, after.st_mtime_ns) == (st.st_size, st.st_mtime_ns)
    assert directory_hash(model) == _expected(model) != first


def test_a_file_changed_within_one_tick_of_the_read_is_read_again(tmp_path, monkeypatch):
    """A coarse clock (Linux before 6.13, FAT file systems) leaves a same-size rewrite within one tick with its
    whole stamp; a folder with a file that recent is hashed again at the next ask. The read is pinned to the
    moment the files were written, so a loaded machine taking over 2 s cannot make them settled."""
    model = _model(tmp_path / "minilm")
    written = max(max(p.stat().st_mtime_ns, p.stat().st_ctime_ns) for p in model.iterdir())
    monkeypatch.setattr(fileversion, "time_ns", lambda: written)
    held = {p: fileversion.stamp(p) for p in model.iterdir()}
    monkeypatch.setattr(base, "stamp", lambda p: held[p])
    reads = _reads(monkeypatch)
    first = directory_hash(model)
    with open(model / "model.safetensors", "r+b") as fh:
        fh.write(b"weights: 9876543210")
    assert directory_hash(model) == _expected(model) != first
    assert reads == ["config.json", "model.safetensors"] * 2


def test_a_settled_folder_is_read_once(tmp_path, monkeypatch):
    """A detector, its heads and the constraints that share its encoder each ask for the same folder's hash."""
    model = _model(tmp_path / "minilm")
    _read_later(monkeypatch)
    reads = _reads(monkeypatch)
    assert [directory_hash(model) for _ in range(3)] == [_expected(model)] * 3
    assert reads == ["config.json", "model.safetensors"]
