"""Reading files other people send: `modlens.safe_archive` itself, and study packs
read through it (`modlens join`). Real files built here; every refusal is one line naming the file."""
from __future__ import annotations

import hashlib
import io
import json
import os
import zipfile
from pathlib import Path

import pytest

from modlens import safe_archive
from modlens.cli import main as cli_main
from modlens.safe_archive import ArchiveError, Limits, SafeZip, loads_json
from modlens.study import folder, pack

MiB = 1 << 20


def _canonical(value) -> bytes:
    return json.dumps(value, sort_keys=True, ensure_ascii=False, separators=(",", ":")).encode()


def sealed_pack(tmp_path: Path, name: str, change) -> Path:
    """A real pack of a fresh study folder, changed by `change(raw)` and its checksum recomputed
    (as anyone holding the file can): only the reader's own limits stand in the way."""
    root = tmp_path / f"{name}-folder"
    if not root.exists():
        folder.init_folder(root, "pilot")
    raw = pack.build(folder.load_folder(root))
    raw.pop("sha256")
    change(raw)
    raw["sha256"] = hashlib.sha256(_canonical(raw)).hexdigest()
    out = tmp_path / f"{name}.modlens"
    out.write_text(json.dumps(raw), encoding="utf-8")
    return out


def join_refused(path: Path, capsys) -> str:
    code = cli_main(["join", str(path), "--allow-unsigned"])
    captured = capsys.readouterr()
    assert code == 2, captured
    assert "Traceback" not in captured.err
    first = captured.err.splitlines()[0]
    assert str(path) in first
    return first


def test_a_pack_nested_100000_levels_is_refused_before_decoding(tmp_path, capsys):
    deep = tmp_path / "deep.modlens"
    deep.write_text('{"format": "modlens-study-pack", "x": ' + "[" * 100_000 + "]" * 100_000 + "}")
    assert "nested deeper than" in join_refused(deep, capsys)


def test_a_pack_without_format_version_says_so(tmp_path, capsys):
    unversioned = sealed_pack(tmp_path, "unversioned", lambda raw: raw.pop("format_version"))
    line = join_refused(unversioned, capsys)
    assert "no format_version" in line and "newer" not in line


def test_a_consent_text_has_a_size_limit(tmp_path, capsys):
    # 100 MiB of consent: refused from the file's size, before it is decoded
    huge = sealed_pack(tmp_path, "huge", lambda raw: raw["study"].update(consent_text="I agree. " * (100 * MiB // 9)))
    assert huge.stat().st_size > 100 * MiB
    assert "larger than" in join_refused(huge, capsys)
    # a pack of ordinary size whose consent text is longer than any consent form
    long = sealed_pack(tmp_path, "long", lambda raw: raw["study"].update(consent_text="I agree. " * 20_000))
    assert "consent_text" in join_refused(long, capsys)
    # and the researcher hears it first, from `study check`
    root = tmp_path / "long-folder"
    (root / "consent.md").write_text("I agree. " * 20_000, encoding="utf-8")
    assert cli_main(["study", "check", str(root)]) == 2
    assert "consent_text" in capsys.readouterr().err


def test_special_files_are_refused_as_packs(tmp_path, capsys):
    fifo = tmp_path / "pipe.modlens"
    os.mkfifo(fifo)
    assert "not a regular file" in join_refused(fifo, capsys)
    assert "not a regular file" in join_refused(Path("/dev/zero"), capsys)
    with pytest.raises(FileNotFoundError):
        pack.read(tmp_path / "absent.modlens")


def test_the_daemon_side_parse_bounds_depth_too():
    with pytest.raises(pack.PackError, match="nested deeper than"):
        pack.parse('{"format": "modlens-study-pack", "x": ' + "[" * 5000 + "]" * 5000 + "}", "options page")


# --- the module itself -------------------------------------------------------------------------

def _zip(members: dict[str, bytes]) -> io.BytesIO:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as zf:
        for name, data in members.items():
            zf.writestr(name, data)
    buf.seek(0)
    return buf


def test_members_are_inflated_under_a_ceiling_each_and_in_total():
    limits = Limits(member_bytes=4 * MiB, total_bytes=5 * MiB, members=8)
    archive = _zip({"a": bytes(3 * MiB), "b": bytes(3 * MiB), "big": bytes(5 * MiB)})
    with SafeZip(archive, "x.zip", limits) as zf:
        assert len(zf.read("a")) == 3 * MiB
        assert len(zf.read("a")) == 3 * MiB, "reading a member again costs nothing new"
        with pytest.raises(ArchiveError, match=r"^x\.zip: big declares 5 MiB, past its 4 MiB ceiling"):
            zf.read("big")
        with pytest.raises(ArchiveError, match=r"^x\.zip: b .*archive"):
            zf.read("b")
        with pytest.raises(KeyError):
            zf.read("absent")
    with pytest.raises(ArchiveError, match="more than the 1 this kind of file holds"):
        SafeZip(_zip({"a": b"1", "b": b"2"}), "two.zip", Limits(members=1))


def test_json_is_bounded_in_size_depth_and_encoding():
    assert loads_json(b'{"a": ["[[[[", {"b": 1}]}', "ok.json", max_bytes=100, max_depth=3) == {"a": ["[[[[", {"b": 1}]}
    assert safe_archive.json_depth(b'"[[[" [["\\"[["]]') == 2
    with pytest.raises(ArchiveError, match=r"^d\.json: JSON nested deeper than 3 levels \(4\)"):
        loads_json(b"[[[[]]]]", "d.json", max_bytes=100, max_depth=3)
    with pytest.raises(ArchiveError, match="larger than 10 bytes"):
        loads_json(b"[" + b" " * 20 + b"]", "s.json", max_bytes=10)
    with pytest.raises(ArchiveError, match="not UTF-8"):
        loads_json(b'"\xff"', "u.json", max_bytes=10)
    with pytest.raises(ArchiveError, match="not JSON"):
        loads_json(b'{"a": ', "t.json", max_bytes=10)
