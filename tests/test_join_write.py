"""`modlens join` changes a participant's study only whole: the study file, the item set and
assignment, and `joined-study.json` (which pack, who signed it, which destinations were accepted)
are all the new study's, or all the one joined before. A write that failed part-way (a full disk, a
file-size limit) left the new study.toml beside the old record and a `.tmp` behind. A rename that
fails after others went through (a target that is a folder) leaves a mix, says which, and nothing
runs it until the next join or serve completes it (join_journal; a crash: test_study_join_crash.py)."""
from __future__ import annotations

import logging
import os
import resource
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from modlens.cli import main as cli_main
from modlens.study import folder, join
from test_study_folder import item_set_folder


def _state(home):
    return {p.name: p.read_bytes() for p in sorted(home.iterdir()) if p.is_file()}


def _pack(study_folder: Path) -> Path:
    """`modlens study pack` of a study folder, beside it."""
    pack = study_folder.with_suffix(".modlens")
    assert cli_main(["study", "pack", str(study_folder), "--out", str(pack)]) == 0
    return pack


def _join_first(tmp_path):
    """Study 'first' (a new study folder's) packed and joined."""
    first = tmp_path / "first"
    folder.init_folder(first)
    assert cli_main(["join", str(_pack(first)), "--allow-unsigned"]) == 0


def test_a_join_whose_write_fails_leaves_the_study_joined_before_whole(tmp_path, modlens_home, capsys):
    _join_first(tmp_path)
    capsys.readouterr()
    before = _state(modlens_home)
    assert join.joined()["study_id"] == "first" and "study.toml" in before

    # a study whose item set is larger than the file-size limit below; its study.toml is not
    second_pack = _pack(item_set_folder(tmp_path / "second", 200_000))

    def small_files() -> None:
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # the write then fails with EFBIG instead of killing it
        resource.setrlimit(resource.RLIMIT_FSIZE, (64 * 1024, 64 * 1024))

    cut = subprocess.run([sys.executable, "-m", "modlens", "join", str(second_pack), "--allow-unsigned", "--replace"],
                         capture_output=True, text=True, preexec_fn=small_files, timeout=120,
                         env={**os.environ, "PYTHONDONTWRITEBYTECODE": "1"})
    assert cut.returncode != 0 and "joined study" not in cut.stdout, cut.stdout
    assert "Traceback" not in cut.stderr and "cannot write the joined study" in cut.stderr, cut.stderr
    assert "first" in cut.stderr  # it says which study is still joined
    assert _state(modlens_home) == before  # no new study.toml beside the old record, no .tmp
    assert join.joined()["study_id"] == "first"

    # with room, the same join goes through whole
    assert cli_main(["join", str(second_pack), "--allow-unsigned", "--replace"]) == 0
    assert join.joined()["study_id"] == "second" and (modlens_home / "itemset.json").is_file()
    assert not [p for p in modlens_home.iterdir() if p.name.endswith(".tmp")]


def test_the_atomic_write_never_renames_a_cut_file_into_place(tmp_path):
    # under a file-size limit the first write() is short (it stops at the limit) and only the next
    # one fails: the write took the short count for the whole and renamed a truncated file into place
    (tmp_path / "keys").mkdir()
    target = tmp_path / "keys" / "key.pem"
    target.write_bytes(b"old\n")
    script = ("import resource, signal, sys; from pathlib import Path; from modlens.pairing import write_atomically\n"
              "signal.signal(signal.SIGXFSZ, signal.SIG_IGN)\n"
              "resource.setrlimit(resource.RLIMIT_FSIZE, (64 * 1024, 64 * 1024))\n"
              "try:\n    write_atomically(Path(sys.argv[1]), b'x' * 200_000)\n"
              "except OSError as err:\n    print('refused', err.errno)\n")
    done = subprocess.run([sys.executable, "-c", script, str(target)], capture_output=True, text=True, timeout=60,
                          env={**os.environ, "PYTHONDONTWRITEBYTECODE": "1"})
    assert done.returncode == 0 and done.stdout.startswith("refused"), done.stdout + done.stderr
    assert target.read_bytes() == b"old\n"
    assert [p.name for p in target.parent.iterdir()] == ["key.pem"]  # no temp file left behind


def test_a_join_whose_rename_fails_part_way_says_what_it_replaced(tmp_path, modlens_home, capsys, caplog):
    # the files are renamed into place one after another once all are written; a rename that failed
    # after others had gone through was reported as "nothing was changed", and the temp files of the
    # files not yet renamed stayed behind. Here itemset.json is a non-empty folder, so its rename fails
    # after study.toml's
    _join_first(tmp_path)
    old_study = (modlens_home / "study.toml").read_bytes()
    blocker = modlens_home / "itemset.json"
    blocker.mkdir()
    (blocker / "keep").write_text("x")
    second_pack = _pack(item_set_folder(tmp_path / "second", 2_000))
    capsys.readouterr()

    assert cli_main(["join", str(second_pack), "--allow-unsigned", "--replace"]) != 0
    err = capsys.readouterr().err
    assert "nothing was changed" not in err, err
    assert (modlens_home / "study.toml").read_bytes() != old_study  # replaced: the message must say so
    assert "study.toml" in err and "itemset.json" in err and "completes this join first" in err, err
    # the files mix two studies: what `modlens serve` opens at start refuses them while the cause stays
    from modlens.live.run import served_study
    with pytest.raises(join.JoinError, match="interrupted part way"):
        served_study(None)
    assert (modlens_home / "join-journal.json").is_file()

    blocker.joinpath("keep").unlink()
    blocker.rmdir()  # the cause removed, the next join completes the interrupted one (saying so), then goes through
    with caplog.at_level(logging.WARNING, logger="modlens.study"):
        assert cli_main(["join", str(second_pack), "--allow-unsigned", "--replace"]) == 0
    assert "had been interrupted part way; it is now completed (itemset.json, " in caplog.text, caplog.text
    assert join.joined()["study_id"] == "second" and (modlens_home / "itemset.json").is_file()
    assert not [p for p in modlens_home.iterdir() if p.name.endswith(".tmp") or p.name == "join-journal.json"]


def test_a_join_stopped_right_after_its_journal_leaves_the_study_joined_before_openable(
        tmp_path, modlens_home, monkeypatch):
    # Ctrl-C (or a failing folder sync) right after the journal was renamed into place, before any
    # file was: the temps were removed but the journal stayed, and every later open refused the
    # study ("the study files may mix two studies") though nothing had been renamed
    _join_first(tmp_path)
    before = _state(modlens_home)
    second_pack = _pack(item_set_folder(tmp_path / "second", 2_000))
    real_replace = os.replace

    def interrupted_after_the_journal(src, dst, *args, **kw):
        real_replace(src, dst, *args, **kw)
        if Path(dst).name == "join-journal.json":
            raise KeyboardInterrupt

    monkeypatch.setattr(os, "replace", interrupted_after_the_journal)
    assert cli_main(["join", str(second_pack), "--allow-unsigned", "--replace"]) == 130  # interrupted
    monkeypatch.setattr(os, "replace", real_replace)

    assert _state(modlens_home) == before  # nothing renamed, nothing left: no journal, no temps
    assert join.joined()["study_id"] == "first"


def test_a_join_whose_journal_could_not_be_removed_is_not_called_interrupted(tmp_path, modlens_home, monkeypatch,
                                                                               caplog):
    # every file renamed, then dropping the journal failed: the next open said the join "had been
    # interrupted part way" and was "now completed", of a join that had finished
    from modlens.study import join_journal

    _join_first(tmp_path)
    second_pack = _pack(item_set_folder(tmp_path / "second", 2_000))
    real_end = join_journal.end

    def failing(home):
        raise OSError(5, "Input/output error")

    monkeypatch.setattr(join_journal, "end", failing)
    assert cli_main(["join", str(second_pack), "--allow-unsigned", "--replace"]) == 0
    monkeypatch.setattr(join_journal, "end", real_end)
    assert (modlens_home / "join-journal.json").is_file()

    with caplog.at_level(logging.WARNING, logger="modlens.study"):
        assert join.joined()["study_id"] == "second"
    assert "interrupted" not in caplog.text and "had completed" in caplog.text, caplog.text
    assert not (modlens_home / "join-journal.json").exists()


def test_an_atomic_write_whose_rename_fails_leaves_no_temp(tmp_path):
    # the one atomic write (a join's journal, the pairing token, a pack) left its synced temp beside a
    # target it could not be renamed onto (here a non-empty folder)
    from modlens.pairing import write_atomically

    target = tmp_path / "home" / "join-journal.json"
    target.mkdir(parents=True)
    (target / "keep").write_text("x")
    with pytest.raises(OSError):
        write_atomically(target, b"{}\n", 0o644, durable=True)
    assert sorted(p.name for p in target.parent.iterdir()) == ["join-journal.json"]
