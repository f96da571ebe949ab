"""`modlens fuse` writes its cases' media through the same store as the daemon. A media folder this
user may not write raised a bare PermissionError out of the command (a traceback, as if modlens had a
bug); it is now said as the daemon says it: which folder, its owner and mode, who modlens runs as, and
how to fix it. The folder's mode is real; as root, the command runs in a thread without
CAP_DAC_OVERRIDE, so it meets the mode as any user does."""
from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor

from modlens.cli import main

from test_cli_fuse import FAST, PAIRS
from test_daemon_media_folder import _meet_file_modes


def test_fuse_into_a_media_folder_it_may_not_write_says_which_and_how_to_fix_it(capsys, tmp_path, modlens_home):
    pairs, db, folder = tmp_path / "pairs.csv", tmp_path / "study.sqlite", tmp_path / "media"
    pairs.write_text(PAIRS, encoding="utf-8")
    folder.mkdir()
    folder.chmod(0o500)
    args = ["fuse", "--pairs-file", str(pairs), "--detectors", "profanity-check", "--db", str(db),
            "--media-dir", str(folder), *FAST]
    try:
        with ThreadPoolExecutor(1, initializer=_meet_file_modes if os.geteuid() == 0 else None) as pool:
            code = pool.submit(main, args).result()
    finally:
        folder.chmod(0o700)
    err = capsys.readouterr().err
    assert code != 0, err
    assert f"modlens fuse: the media folder {folder} is not writable by this user" in err, err
    assert "mode 0500" in err and "fix: give this user write access" in err, err
    assert not any(folder.iterdir())
