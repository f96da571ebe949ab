"""A join killed between its renames (power loss, kill -9) leaves a study whole: `modlens join` renames
the new study's files into place one after another, and a process killed between two of them left
the new study.toml beside the old joined-study.json and the old item set, which `modlens serve`
then ran as one study. Here a real `modlens join` process is killed with SIGKILL right after each of
its renames and removals in the modlens home, in turn; a fresh process then opens the joined study
as `modlens serve` does at start, and the home must hold the old study whole or the new one whole,
saying so when it completed an interrupted join."""
from __future__ import annotations

import json
import os
import shutil
import signal
import queue
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from modlens.cli import main as cli_main
from modlens.study import folder
from test_study_folder import item_set_folder

JOIN_FILES = ("study.toml", "joined-study.json", "itemset.json", "assignment.json")

def _child_script() -> str:
    """`modlens join` in a child that SIGKILLs itself right after its K-th rename (os.replace, by its
    target) or removal (os.unlink) in the modlens home (K = 0: at the first, before it happens): a
    real kill of a real process; nothing in modlens knows of it. KILL_WITH=SIGSTOP in its environment
    stops it there instead: a join still under way, alive, until it is sent SIGCONT."""
    return """
import os, signal, sys
home, kill_at = os.path.realpath(os.environ["MODLENS_HOME"]), int(sys.argv[1])
sig = getattr(signal, os.environ.get("KILL_WITH", "SIGKILL"))  # SIGSTOP: a join still under way, paused
count = 0
def killing(op, which):
    def wrapped(*args, **kw):
        global count
        if os.path.dirname(os.path.realpath(args[which])) != home:
            return op(*args, **kw)
        if kill_at == 0:
            os.kill(os.getpid(), sig)
        result = op(*args, **kw)
        count += 1
        if count == kill_at:
            os.kill(os.getpid(), sig)
        return result
    return wrapped
os.replace = killing(os.replace, 1)
os.unlink = killing(os.unlink, 0)
from modlens.cli import main
sys.exit(main(sys.argv[2:]))
"""


# what `modlens serve` does at start without --config: open the joined study and run it
OPEN_LIKE_SERVE = ("from modlens.live.run import served_study; from modlens.study import join\n"
                   "study, folder, lines, _ = served_study(None)\n"
                   "print(study.study_id, join.joined()['study_id'])\n")


def _run(args, home, *, script=None, timeout=120):
    env = {**os.environ, "MODLENS_HOME": str(home), "PYTHONDONTWRITEBYTECODE": "1"}
    return subprocess.run([sys.executable, "-c", script or _child_script(), *args], capture_output=True, text=True,
                          env=env, timeout=timeout)


def _state(home: Path) -> dict[str, object]:
    """The joined study's files; the record without its time of joining."""
    out: dict[str, object] = {}
    for name in JOIN_FILES:
        path = home / name
        if path.is_file():
            out[name] = path.read_bytes()
    if "joined-study.json" in out:
        record = json.loads(out["joined-study.json"])
        record.pop("joined_at")
        out["joined-study.json"] = record
    return out


def _pack(study_folder: Path) -> Path:
    pack = study_folder.with_suffix(".modlens")
    assert cli_main(["study", "pack", str(study_folder), "--out", str(pack)]) == 0
    return pack


def _plain(root: Path) -> Path:
    folder.init_folder(root)
    return root


@pytest.mark.slow  # a real `modlens join` process per kill point, and one more to open the study after it
@pytest.mark.parametrize("first_has_set", [True, False], ids=["set-to-plain", "plain-to-set"])
def test_a_join_killed_after_any_rename_leaves_one_study_whole(tmp_path, modlens_home, first_has_set, capsys):
    sets = {True: lambda r: item_set_folder(r, 2_000), False: _plain}
    first = _pack(sets[first_has_set](tmp_path / "first"))
    second = _pack(sets[not first_has_set](tmp_path / "second"))
    join_second = ["1_000_000", "join", str(second), "--allow-unsigned", "--replace"]
    # the two whole states: the first study joined, and the second joined cleanly (its own home)
    reference = tmp_path / "reference-home"
    reference.mkdir()
    assert _run(join_second, reference).returncode == 0
    new = _state(reference)
    capsys.readouterr()

    joined_first = tmp_path / "first-home"
    joined_first.mkdir()
    assert _run(["1_000_000", "join", str(first), "--allow-unsigned"], joined_first).returncode == 0
    old = _state(joined_first)
    kill_at, mixed_seen = 0, 0
    while True:
        home = tmp_path / f"home-{kill_at}"
        shutil.copytree(joined_first, home)
        assert old != new and old["joined-study.json"]["study_id"] == "first"

        killed = _run([str(kill_at), *join_second[1:]], home)
        if killed.returncode == 0:  # past the join's last step: nothing left to kill it after
            assert _state(home) == new
            break
        assert killed.returncode == -signal.SIGKILL, killed.stderr
        mixed_seen += _state(home) not in (old, new)
        interrupted = (home / "join-journal.json").exists()  # killed after its journal, before its end
        finished = _state(home) == new  # killed after its last rename or removal: only the journal is left

        opened = _run([], home, script=OPEN_LIKE_SERVE)
        assert opened.returncode == 0, (kill_at, opened.stderr)
        after = _state(home)
        assert after in (old, new), f"killed after step {kill_at}: the home mixes two studies: {sorted(after)}"
        served, recorded = opened.stdout.split()
        assert served == recorded == after["joined-study.json"]["study_id"]
        assert not (home / "join-journal.json").exists()
        if interrupted:  # it completed the join the kill interrupted (or dropped the journal of one done), and said so
            said = "had completed, but its join-journal.json was left behind" if finished else \
                "had been interrupted part way; it is now completed"
            assert after == new and said in opened.stderr, opened.stderr
            assert finished or "had completed" not in opened.stderr, opened.stderr
            assert not [p.name for p in home.iterdir() if p.name.endswith(".tmp")]
        else:
            assert "interrupted" not in opened.stderr, opened.stderr
        kill_at += 1
    assert kill_at >= 3, "the join made fewer steps than files: the kill points did not cover it"
    assert mixed_seen, "no kill left the files mixed: the test would pass without the journal"


def test_a_journal_whose_files_are_neither_staged_nor_in_place_is_refused_not_taken_as_done(tmp_path, modlens_home):
    # the journal's completion takes a missing temp for one already renamed; it checks the bytes in
    # place against the journal before calling the join complete, so staged files lost after a kill
    # (cleaned away by hand) are refused, never reported as the new study joined
    from modlens.study import join

    first = _pack(item_set_folder(tmp_path / "first", 2_000))
    second = _pack(_plain(tmp_path / "second"))
    assert _run(["1_000_000", "join", str(first), "--allow-unsigned"], modlens_home).returncode == 0
    killed = _run(["2", "join", str(second), "--allow-unsigned", "--replace"], modlens_home)  # journal, study.toml
    assert killed.returncode == -signal.SIGKILL
    for temp in [p for p in modlens_home.iterdir() if p.name.endswith(".tmp")]:
        temp.unlink()
    with pytest.raises(join.JoinError, match="joined-study.json: neither staged nor in place") as refused:
        join.joined()
    assert "delete" in refused.value.fix and "join-journal.json" in refused.value.fix
    assert (modlens_home / "itemset.json").is_file()  # nothing removed on a journal it could not complete

    (modlens_home / "join-journal.json").unlink()  # the fix: then the same join writes every file anew
    assert cli_main(["join", str(second), "--allow-unsigned", "--replace"]) == 0
    assert join.joined()["study_id"] == "second" and not (modlens_home / "itemset.json").exists()


def test_a_journal_not_written_by_a_join_is_refused_with_its_fix(modlens_home):
    from modlens.study import join

    (modlens_home / "join-journal.json").write_text('{"study_id": "x", "files": [{"name": "../escape"}]}')
    with pytest.raises(join.JoinError, match="join-journal.json: not a journal `modlens join` wrote") as refused:
        join.joined_study_file()
    assert "may mix two studies" in refused.value.message and "join-journal.json" in refused.value.fix


def _temps(home: Path) -> list[str]:
    return sorted(p.name for p in home.iterdir() if p.name.endswith(".tmp"))


def _set_then_plain(tmp_path: Path, home: Path) -> Path:
    """Study 'first' (with an item set) joined in `home`; the pack of study 'second' (none) returned."""
    first = _pack(item_set_folder(tmp_path / "first", 2_000))
    assert _run(["1_000_000", "join", str(first), "--allow-unsigned"], home).returncode == 0
    return _pack(_plain(tmp_path / "second"))


def test_a_join_killed_before_its_journal_leaves_no_staged_files_after_the_next_open(tmp_path, modlens_home):
    # killed once every file was staged but before its journal was renamed into place: the old study
    # is whole, and its staged temps stayed in the home for good; the next open or join removes the
    # temps of a process that is gone, never those of one alive (a join staging right now)
    second = _set_then_plain(tmp_path, modlens_home)
    old = _state(modlens_home)
    killed = _run(["0", "join", str(second), "--allow-unsigned", "--replace"], modlens_home)
    assert killed.returncode == -signal.SIGKILL, killed.stderr
    staged = _temps(modlens_home)
    assert ".join-journal.json." in " ".join(staged) and ".study.toml." in " ".join(staged), staged
    assert not (modlens_home / "join-journal.json").exists()
    alive = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"])
    try:
        live_temp = modlens_home / f".study.toml.{alive.pid}.tmp"
        live_temp.write_text("staged by a process still running")
        opened = _run([], modlens_home, script=OPEN_LIKE_SERVE)
        assert opened.returncode == 0, opened.stderr
        assert opened.stdout.split() == ["first", "first"] and "interrupted" not in opened.stderr, opened.stderr
        assert _state(modlens_home) == old
        assert _temps(modlens_home) == [live_temp.name]
    finally:
        alive.kill()
        alive.wait()
    # its process gone, the next join removes it too
    assert cli_main(["join", str(second), "--allow-unsigned", "--replace"]) == 0
    assert _temps(modlens_home) == [] and json.loads((modlens_home / "joined-study.json").read_text())["study_id"] \
        == "second"


@pytest.mark.parametrize("config", ["home", "home/study.toml"])
def test_serve_given_the_home_as_config_completes_an_interrupted_join_first(tmp_path, modlens_home, config):
    # `modlens serve --config $MODLENS_HOME` read the home's files as any study folder: killed after
    # its journal and study.toml, a join left the new study.toml beside the old item set, which was served
    from modlens.live.run import served_study

    second = _set_then_plain(tmp_path, modlens_home)
    killed = _run(["2", "join", str(second), "--allow-unsigned", "--replace"], modlens_home)
    assert killed.returncode == -signal.SIGKILL and (modlens_home / "join-journal.json").is_file()
    assert (modlens_home / "itemset.json").is_file()  # the old study's, beside the new study.toml

    study, study_dir, _, _ = served_study(config.replace("home", str(modlens_home)))
    assert study.study_id == "second"
    assert not (modlens_home / "join-journal.json").exists() and not (modlens_home / "itemset.json").exists()
    assert study_dir is None or not (study_dir / "itemset.json").exists()


def _lines(stream) -> queue.Queue:
    lines: queue.Queue = queue.Queue()
    threading.Thread(target=lambda: [lines.put(line) for line in stream], daemon=True).start()
    return lines


def test_a_reader_waits_for_a_join_under_way_and_never_calls_it_interrupted(tmp_path, modlens_home, monkeypatch):
    # a join stopped (alive) between its renames: a reader opening the study completed it as one a
    # crash had interrupted, said so, and the join, resumed, failed on the temps taken from under it
    from modlens.study import join, join_recovery

    second = _set_then_plain(tmp_path, modlens_home)
    env = {**os.environ, "MODLENS_HOME": str(modlens_home), "PYTHONDONTWRITEBYTECODE": "1", "KILL_WITH": "SIGSTOP"}
    joiner = subprocess.Popen([sys.executable, "-c", _child_script(), "2", "join", str(second), "--allow-unsigned",
                               "--replace"], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    reader = None
    try:
        _, status = os.waitpid(joiner.pid, os.WUNTRACED)
        assert os.WIFSTOPPED(status), status
        assert (modlens_home / "join-journal.json").is_file()  # between its renames, and alive

        # a stuck join is not waited for without end, nor completed: the reader is refused, saying why
        monkeypatch.setattr(join_recovery, "JOIN_WAIT_S", 0.5)
        with pytest.raises(join.JoinError, match="under way") as refused:
            join.joined()
        assert "interrupted" not in refused.value.message
        assert (modlens_home / "join-journal.json").is_file() and (modlens_home / "itemset.json").is_file()

        reader = subprocess.Popen([sys.executable, "-c", OPEN_LIKE_SERVE], stdout=subprocess.PIPE,
                                  stderr=subprocess.PIPE, text=True, env={**env, "KILL_WITH": ""})
        said = _lines(reader.stderr)
        line = said.get(timeout=120)  # the reader's first word: that it waits (before: that it completed it)
        assert "waiting" in line and "interrupted" not in line, line
        time.sleep(0.5)
        assert reader.poll() is None and (modlens_home / "join-journal.json").is_file()
        os.kill(joiner.pid, signal.SIGCONT)
        out, err = joiner.communicate(timeout=120)
        assert joiner.returncode == 0, err
        reader.wait(timeout=120)
        rest = "".join(iter(said.get_nowait, None)) if not said.empty() else ""
        assert reader.returncode == 0 and "interrupted" not in rest, rest
        assert reader.stdout.read().split() == ["second", "second"]
    finally:
        for proc in (joiner, reader):
            if proc is not None and proc.poll() is None:
                os.kill(proc.pid, signal.SIGCONT)
                proc.kill()
                proc.wait()
    assert not (modlens_home / "join-journal.json").exists() and not (modlens_home / "itemset.json").exists()
    assert _temps(modlens_home) == []


def test_the_daemon_starts_on_one_snapshot_of_the_joined_study(tmp_path, modlens_home):
    # `modlens serve` read study.toml, then (when its app started) itemset.json and assignment.json:
    # a join at a terminal in between gave the daemon study 'first' without its item set
    from modlens.live.run import check_study, served_study
    from modlens.study import assignment

    second = _set_then_plain(tmp_path, modlens_home)
    first_set = json.loads((modlens_home / "itemset.json").read_text(encoding="utf-8"))
    study, study_dir, _, _ = served_study(None)
    assert cli_main(["join", str(second), "--allow-unsigned", "--replace"]) == 0  # lands between the reads

    assert study.study_id == "first" and study_dir is not None
    check_study(study, study_dir)
    plan = assignment.load_plan(study_dir, study)
    assert plan is not None and plan.itemset == first_set
