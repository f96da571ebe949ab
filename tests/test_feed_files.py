"""`modlens feed FILE` reads files as `modlens audit` does: the dataset readers' encoding
detection and --encoding, delimiter sniffing, broken quotes with their line, binary files and
empty/header-only files refused with the same message and exit code as audit's; its own platform,
url and author columns still apply. And feed says once when the daemon's variants slow it."""
from __future__ import annotations

import json

import pytest

from modlens.cli import main
from modlens.cli.feed import read_rows

from daemon_helpers import TOKEN, daemon_thread, study


def _feed_error(path, capsys, *extra) -> tuple[int, str]:
    """feed's exit code and message, without a daemon: the file is read before any connection."""
    code = main(["feed", str(path), "--token", "t", "--daemon", "ws://127.0.0.1:9/ws", *extra])
    return code, capsys.readouterr().err


def _audit_error(path, tmp_path, capsys, *extra) -> tuple[int, str]:
    code = main(["audit", str(path), "--db", str(tmp_path / "l.sqlite"), "--quiet", "--detectors", "profanity-check",
                 *extra])
    return code, capsys.readouterr().err


def _same_error(path, tmp_path, capsys, *extra) -> tuple[int, str]:
    """feed's error for `path` is audit's: the same exit code, and feed's problem and fix lines in
    audit's (which may add what it had logged before a bad row, and how to resume)."""
    code, err = _feed_error(path, capsys, *extra)
    audit_code, audit_err = _audit_error(path, tmp_path, capsys, *extra)
    assert code == audit_code, (err, audit_err)
    problem, _, fix = err.removeprefix("modlens feed: ").partition("\n  fix: ")
    assert problem.strip() and problem.strip() in audit_err and fix.strip() in audit_err, (err, audit_err)
    return code, err


def test_a_byte_order_mark_is_not_part_of_the_first_column(tmp_path):
    f = tmp_path / "excel.csv"
    f.write_bytes("text,author\nyou idiot,ann\nhello there,bob\n".encode("utf-8-sig"))
    rows = list(read_rows(f, "text", None))
    assert [(r.text, r.author) for r in rows] == [("you idiot", "ann"), ("hello there", "bob")]


def test_latin1_is_refused_with_audits_message_and_read_with_encoding(tmp_path, capsys):
    f = tmp_path / "windows.csv"
    f.write_bytes("text,platform\nhello,yt\ncaf\u00e9 idiot,yt\n".encode("latin-1"))
    code, err = _same_error(f, tmp_path, capsys)
    assert code == 2 and "windows.csv: line 3: not UTF-8 text (byte 0xe9)" in err and "fix: --encoding cp1252" in err
    rows = list(read_rows(f, "text", None, encoding="latin-1"))
    assert [(r.text, r.platform) for r in rows] == [("hello", "yt"), ("caf\u00e9 idiot", "yt")]


def test_semicolons_are_sniffed_and_the_platform_url_author_columns_still_apply(tmp_path):
    f = tmp_path / "european.csv"
    f.write_text('text;platform;url;author\nyou idiot;YouTube;https://y/1;ann\n"hello, there";;;\n', encoding="utf-8")
    rows = list(read_rows(f, "text", None))
    assert [(r.text, r.platform, r.url, r.author) for r in rows] == [
        ("you idiot", "youtube", "https://y/1", "ann"), ("hello, there", None, None, None)]


def test_an_unterminated_quote_is_refused_with_its_line(tmp_path, capsys):
    f = tmp_path / "broken.csv"
    f.write_text('text\nhello\n"you idiot\nthird\n', encoding="utf-8")
    code, err = _same_error(f, tmp_path, capsys)
    assert code == 2 and "broken.csv: line 3: a quote opened here is never closed" in err and "fix:" in err


@pytest.mark.parametrize("content", ["", "text,label\n"])
def test_empty_and_header_only_files_are_one_error(tmp_path, capsys, content):
    f = tmp_path / "nothing.csv"
    f.write_text(content, encoding="utf-8")
    code, err = _same_error(f, tmp_path, capsys)
    assert code == 2 and "nothing.csv: no rows to read" in err


def test_a_binary_file_is_refused_with_its_name(tmp_path, capsys):
    f = tmp_path / "data.csv"
    f.write_bytes(b"PK\x03\x04" + b"\x00" * 100)
    code, err = _same_error(f, tmp_path, capsys)
    assert code == 2 and "data.csv: a ZIP archive" in err and "codec" not in err


def test_a_missing_file_and_a_missing_column(tmp_path, capsys):
    code, err = _feed_error(tmp_path / "missing.csv", capsys)
    assert code == 3 == _audit_error(tmp_path / "missing.csv", tmp_path, capsys)[0]
    assert "missing.csv: file not found" in err
    f = tmp_path / "c.csv"
    f.write_text("body\nhello\n", encoding="utf-8")
    code, err = _feed_error(f, capsys)
    assert code == 2 and "no column 'text'" in err and "--text-col" in err


def test_an_unknown_encoding_is_a_usage_error(tmp_path, capsys):
    f = tmp_path / "c.csv"
    f.write_text("text\nhello\n", encoding="utf-8")
    code, err = _feed_error(f, capsys, "--encoding", "klingon")
    assert code == 2 and "'klingon' is not an encoding" in err


def test_jsonl_lines_that_are_not_objects_are_refused(tmp_path, capsys):
    f = tmp_path / "c.jsonl"
    f.write_text('{"text": "hello"}\n[1, 2]\n', encoding="utf-8")
    code, err = _feed_error(f, capsys)
    assert code == 2 and "c.jsonl:2: expected a JSON object" in err


def test_attack_takes_encoding_too():
    from modlens.cli import build_parser

    assert build_parser("attack").parse_args(["attack", "x.csv", "--encoding", "cp1252"]).encoding == "cp1252"


# --- variants slow feed down: it says so, once ------------------------------------------------
VARIANTS_ON = {"enabled": True, "live_rate": 1000, "budget": 1, "strategies": ["repeat_char"]}


@pytest.mark.parametrize("variants, flags, noted", [(True, [], True), (True, ["--no-variants"], False),
                                                    (False, [], False)])
def test_feed_notes_once_that_variants_slow_it_and_how_to_turn_them_off(tmp_path, capsys, variants, flags, noted):
    f = tmp_path / "c.csv"
    f.write_text("text\n" + "".join(f"you stupid idiot {i}\n" for i in range(7)), encoding="utf-8")
    cfg = study(perturbation=VARIANTS_ON if variants else {"enabled": False})
    with daemon_thread(tmp_path, cfg) as url:
        assert main(["feed", str(f), "--daemon", url, "--token", TOKEN, "--page-size", "2", *flags]) == 0
    out, err = capsys.readouterr()
    assert len(out.splitlines()) == 7
    assert all(("variants" in json.loads(line)) == (variants and not flags) for line in out.splitlines())
    notes = [line for line in err.splitlines() if "variants are on" in line]
    assert len(notes) == (1 if noted else 0), err
    if noted:
        assert "--no-variants" in notes[0]
