"""`modlens serve` on a joined study serves copies of the home's item set and assignment
(`live.run._snapshot`), said to be removed when the daemon exits; atexit does not run for a daemon
killed with SIGKILL, so every killed daemon left its /tmp/modlens-joined-study-* folder behind. The
next snapshot removes the folders of this user's daemons that are gone, and only theirs."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

from modlens.live.run import _snapshot
from modlens.study import assignment, itemset


def _home(tmp_path: Path) -> Path:
    home = tmp_path / "home"
    home.mkdir()
    (home / itemset.FILE).write_text('{"items": []}')
    (home / assignment.FILE).write_text('{"tasks": [], "assignments": []}')
    return home


def test_a_killed_daemons_snapshot_is_removed_by_the_next_one_and_a_live_ones_kept(tmp_path):
    home = _home(tmp_path)
    killed = subprocess.run(
        [sys.executable, "-c", "import os, sys; from pathlib import Path; from modlens.live.run import _snapshot; "
                               "print(_snapshot(Path(sys.argv[1])), flush=True); os.kill(os.getpid(), 9)", str(home)],
        capture_output=True, text=True, timeout=120)
    assert killed.returncode == -signal.SIGKILL, killed.stderr
    left = Path(killed.stdout.strip())
    assert (left / itemset.FILE).is_file()  # atexit did not run: the folder stayed

    mine = _snapshot(home)  # this process is alive: its own folder stays
    assert mine is not None and (mine / itemset.FILE).read_bytes() == (home / itemset.FILE).read_bytes()
    assert not left.exists()
    again = _snapshot(home)
    assert again is not None and mine.is_dir() and again.is_dir() and str(os.getpid()) in mine.name


def test_a_folder_named_with_digits_no_pid_can_be_does_not_stop_the_start(tmp_path):
    """`os.kill` raises OverflowError, not OSError, for digits past the pid range: a stray folder of that
    name in the temporary folder stopped every `serve` at start."""
    import tempfile

    from modlens.live.run import SNAPSHOT_PREFIX

    stray = Path(tempfile.gettempdir()) / f"{SNAPSHOT_PREFIX}99999999999999999999-x"
    stray.mkdir(exist_ok=True)
    try:
        assert _snapshot(_home(tmp_path)) is not None
        assert stray.is_dir()  # not a daemon's pid: left alone
    finally:
        stray.rmdir()
