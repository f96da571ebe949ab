"""Hostile and damaged bundles: every one is refused with one line naming the file,
memory stays bounded, the other bundles on the command line still merge, and a merge that merges
nothing creates nothing. Real bundle files, built here byte by byte where a writer would refuse."""
from __future__ import annotations

import hashlib
import io
import json
import os
import struct
import tracemalloc
import zipfile
import zlib
from pathlib import Path

import pytest
from bench_hostile_files import UNDECLARED, forge, parts, with_member
from test_bundle_merge import counts, make_pack, participant

from modlens.cli import main as cli_main
from modlens.exchange import bundle as bundle_mod
from modlens.studylog.codec import canonical_json
from modlens.studylog.connection import Turnstile

MiB = 1 << 20


@pytest.fixture
def two(tmp_path, monkeypatch, capsys):
    """Two good bundles of one study (raters 0 and 1)."""
    study_pack = make_pack(tmp_path)
    made = [participant(tmp_path, monkeypatch, study_pack, r) for r in range(2)]
    capsys.readouterr()
    return made


def merge(tmp_path: Path, capsys, *paths: Path, out: str = "merged.sqlite") -> tuple[int, list[str]]:
    code = cli_main(["merge", "--out", str(tmp_path / out), *map(str, paths)])
    err = capsys.readouterr().err
    assert "Traceback" not in err
    return code, err.splitlines()


def refused_line(lines: list[str], path: Path) -> str:
    mine = [line for line in lines if str(path) in line]
    assert len(mine) == 1, lines
    return mine[0]


def test_a_bit_flip_inside_the_deflated_manifest_is_one_line_and_the_next_bundle_still_merges(two, tmp_path, capsys):
    good, other = two
    raw = good.read_bytes()
    with zipfile.ZipFile(good) as zf:
        info = zf.getinfo("manifest.json")
    name_len, extra_len = struct.unpack("<HH", raw[info.header_offset + 26:info.header_offset + 30])
    start = info.header_offset + 30 + name_len + extra_len
    flipped = tmp_path / "flipped.bundle"
    for pos in range(start, start + info.compress_size):  # the first flip that breaks the deflate stream itself
        candidate = raw[:pos] + bytes([raw[pos] ^ 0x10]) + raw[pos + 1:]
        try:
            with zipfile.ZipFile(io.BytesIO(candidate)) as zf:
                zf.read("manifest.json")
        except zlib.error:
            flipped.write_bytes(candidate)
            break
        except zipfile.BadZipFile:
            continue
    assert flipped.exists()
    code, lines = merge(tmp_path, capsys, flipped, other)
    assert code == 2
    assert "manifest.json" in refused_line(lines, flipped)
    assert counts(tmp_path / "merged.sqlite")["ratings"] == 11, "the bundle after the damaged one is merged"


def test_a_manifest_inflating_past_its_ceiling_is_refused_with_bounded_memory(two, tmp_path, capsys):
    good, other = two
    manifest, tables = parts(good)
    padded = json.dumps(manifest).encode()[:-1] + b" " * (64 * MiB) + b"}"  # same content, same checksum
    bomb = forge(tmp_path / "bomb.bundle", manifest, tables, manifest_text=padded, seal=False)
    assert bomb.stat().st_size < 2 * MiB
    tracemalloc.start()
    try:
        code, lines = merge(tmp_path, capsys, bomb, other)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert code == 2 and "manifest.json" in refused_line(lines, bomb)
    assert peak < 32 * MiB, f"peak {peak / MiB:.0f} MiB while reading a 64 MiB manifest"
    assert counts(tmp_path / "merged.sqlite")["ratings"] == 11


def test_a_table_that_is_not_parquet_is_refused_in_one_line(two, tmp_path, capsys):
    good, other = two
    manifest, tables = parts(good)
    junk = forge(tmp_path / "junk.bundle", manifest, tables | {"tables/ratings.parquet": b"not parquet at all"})
    code, lines = merge(tmp_path, capsys, junk, other)
    assert code == 2 and "ratings" in refused_line(lines, junk)
    assert counts(tmp_path / "merged.sqlite")["ratings"] == 11


def _with_huge_table(dst: Path, manifest: dict, tables: dict[str, bytes], size: int) -> Path:
    """ratings.parquet replaced by `size` zero bytes, deflated (the checksum of those bytes recomputed)."""
    h = hashlib.sha256()
    chunk = bytes(MiB)
    for _ in range(size // MiB):
        h.update(chunk)
    manifest = json.loads(json.dumps(manifest))
    manifest["tables"]["ratings"]["sha256"] = h.hexdigest()
    body = {k: v for k, v in manifest.items() if k != "bundle_sha256"}
    manifest["bundle_sha256"] = hashlib.sha256(canonical_json(body).encode()).hexdigest()
    with zipfile.ZipFile(dst, "w") as zf:
        for name, data in tables.items():
            if name != "tables/ratings.parquet":
                zf.writestr(name, data)
        info = zipfile.ZipInfo("tables/ratings.parquet")
        info.compress_type = zipfile.ZIP_DEFLATED
        with zf.open(info, "w") as fh:
            for _ in range(size // MiB):
                fh.write(chunk)
        zf.writestr("manifest.json", json.dumps(manifest))
    return dst


def _lie_about_size(path: Path, member: str, claimed: int) -> None:
    """Patch the central directory so `member` claims `claimed` uncompressed bytes."""
    raw = bytearray(path.read_bytes())
    at = raw.find(b"PK\x01\x02")
    while at != -1:
        name_len = struct.unpack("<H", raw[at + 28:at + 30])[0]
        if raw[at + 46:at + 46 + name_len] == member.encode():
            raw[at + 24:at + 28] = struct.pack("<I", claimed)
            path.write_bytes(bytes(raw))
            return
        at = raw.find(b"PK\x01\x02", at + 4)
    raise AssertionError(f"{member} not in the central directory")


def test_tables_inflating_to_512_mib_are_refused_whatever_size_they_declare(two, tmp_path, capsys):
    good, other = two
    manifest, tables = parts(good)
    honest = _with_huge_table(tmp_path / "honest.bundle", manifest, tables, 512 * MiB)
    liar = _with_huge_table(tmp_path / "liar.bundle", manifest, tables, 512 * MiB)
    _lie_about_size(liar, "tables/ratings.parquet", 1000)
    assert honest.stat().st_size < 2 * MiB
    tracemalloc.start()
    try:
        code, lines = merge(tmp_path, capsys, honest, liar, other)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert code == 2
    assert "ratings" in refused_line(lines, honest) and "ratings" in refused_line(lines, liar)
    assert peak < 64 * MiB, f"peak {peak / MiB:.0f} MiB"
    assert counts(tmp_path / "merged.sqlite")["ratings"] == 11


def test_special_files_are_refused_at_once(two, tmp_path, capsys):
    _good, other = two
    fifo = tmp_path / "pipe.bundle"
    os.mkfifo(fifo)  # opening it would wait for a writer forever
    folder = tmp_path / "folder.bundle"
    folder.mkdir()
    code, lines = merge(tmp_path, capsys, Path("/dev/zero"), fifo, folder, other)
    assert code == 2
    for path in (Path("/dev/zero"), fifo, folder):
        assert "not a regular file" in refused_line(lines, path)
    assert counts(tmp_path / "merged.sqlite")["ratings"] == 11


def test_a_merge_that_merges_nothing_creates_nothing(two, tmp_path, capsys):
    good, _other = two
    truncated = tmp_path / "truncated.bundle"
    truncated.write_bytes(good.read_bytes()[:-200])
    code, lines = merge(tmp_path, capsys, truncated, out="new.sqlite")
    assert code == 2 and "truncated" in refused_line(lines, truncated)
    assert not list(tmp_path.glob("new.sqlite*")), "no empty log is left behind"
    # a writer that had to wait for the fresh log's lock leaves the writers' turnstile beside it
    turnstile = Turnstile(tmp_path / "new.sqlite")
    assert turnstile.enter(create=True) == Turnstile.HELD and turnstile.path.exists()
    turnstile.close()
    code, lines = merge(tmp_path, capsys, truncated, out="new.sqlite")
    assert code == 2 and not list(tmp_path.glob("new.sqlite*")), "nor the turnstile of its writers"


def test_a_missing_format_version_and_a_misshapen_manifest_say_so(two, tmp_path, capsys):
    good, other = two
    manifest, tables = parts(good)
    unversioned = forge(tmp_path / "unversioned.bundle", {k: v for k, v in manifest.items() if k != "format_version"}, tables)
    no_tables = forge(tmp_path / "no-tables.bundle", manifest | {"tables": ["ratings"]}, tables)
    deep = forge(tmp_path / "deep.bundle", manifest, tables,
                 manifest_text=b'{"format": "modlens-bundle", "x": ' + b"[" * 100_000 + b"]" * 100_000 + b"}")
    code, lines = merge(tmp_path, capsys, unversioned, no_tables, deep, other)
    assert code == 2
    line = refused_line(lines, unversioned)
    assert "no format_version" in line and "newer" not in line
    assert "tables" in refused_line(lines, no_tables)
    assert "nested deeper than" in refused_line(lines, deep)
    assert counts(tmp_path / "merged.sqlite")["ratings"] == 11


def test_reading_a_bundle_in_code_raises_bundle_error_only(tmp_path):
    with pytest.raises(bundle_mod.BundleError, match="not a regular file"):
        bundle_mod.read_bundle("/dev/zero")
    with pytest.raises(FileNotFoundError):
        bundle_mod.read_bundle(tmp_path / "absent.bundle")


def test_a_repeat_bundle_with_another_studys_pack_is_refused_for_the_study_not_called_already_merged(two, tmp_path, capsys):
    good, _other = two
    merged = tmp_path / "merged.sqlite"
    assert merge(tmp_path, capsys, good)[0] == 0
    code = cli_main(["merge", "--out", str(merged), "--study", str(make_pack(tmp_path, "another")), str(good)])
    out = capsys.readouterr()
    assert code == 2
    assert "belongs to another study" in refused_line(out.err.splitlines(), good)
    assert "already merged" not in out.out + out.err


@pytest.mark.parametrize("what", list(UNDECLARED))
def test_a_member_the_manifest_does_not_declare_is_refused_and_nothing_is_written(what, two, tmp_path, capsys):
    good, other = two
    name = UNDECLARED[what]
    sneaky = with_member(good, tmp_path / "sneaky.bundle", name)
    code, lines = merge(tmp_path, capsys, sneaky, other)
    assert code == 2
    line = refused_line(lines, sneaky)
    assert "not declared" in line and name in line, line
    assert counts(tmp_path / "merged.sqlite")["ratings"] == 11, "only the other bundle is merged"
    assert not (Path.cwd().parent.parent / "escaped.txt").exists() and not Path("/tmp/modlens-absolute.txt").exists()


def test_a_declared_table_file_outside_tables_is_refused(two, tmp_path, capsys):
    good, other = two
    manifest, tables = parts(good)
    data = tables.pop("tables/ratings.parquet")
    manifest["tables"]["ratings"]["file"] = "../ratings.parquet"
    moved = forge(tmp_path / "moved.bundle", manifest, tables | {"../ratings.parquet": data})
    code, lines = merge(tmp_path, capsys, moved, other)
    assert code == 2 and "tables/ratings.parquet" in refused_line(lines, moved)
