"""A file given where a folder is needed (the input of `modlens import`, an output folder, a folder
inside an output path) ends in one line naming the file, with exit code 2 (usage: the path exists
but is the wrong kind), never a NotADirectoryError or FileExistsError traceback."""
from __future__ import annotations

from pathlib import Path

import pytest

from modlens.cli import _file_for_folder, main
from modlens.cli.common import EXIT_CODES
from modlens.errors import ErrorKind
from modlens.studylog.store import StudyLog

USAGE = EXIT_CODES[ErrorKind.USAGE]

# F: a regular file; LOG: an empty study log
CASES = {
    "import FILE": ["import", "F"],
    "export --out FILE": ["export", "--db", "LOG", "--out", "F"],
    "export --out FILE/sub": ["export", "--db", "LOG", "--out", "F/sub"],
    "export --taebench FILE": ["export", "--db", "LOG", "--taebench", "F"],
    "report --out FILE/r.html": ["report", "--db", "LOG", "--out", "F/r.html"],
    "merge --out FILE/x.sqlite": ["merge", "--out", "F/x.sqlite", "F"],
    "browse --profile FILE": ["browse", "--profile", "F", "--browser", "/bin/true"],
    "data fetch --dest FILE": ["data", "fetch", "hatecheck", "--dest", "F"],
}


@pytest.mark.parametrize("case", list(CASES))
def test_a_file_where_a_folder_is_needed_is_one_line_and_usage(case, tmp_path: Path, capsys):
    (tmp_path / "F").write_text("not a folder\n")
    StudyLog(tmp_path / "LOG").close()
    argv = [str(tmp_path / a) if a.split("/")[0] in ("F", "LOG") else a for a in CASES[case]]
    code = main(argv)
    err = capsys.readouterr().err
    assert code == USAGE, err
    assert "Traceback" not in err and "Errno" not in err, err
    assert f"modlens {argv[0]}: {tmp_path / 'F'}: a file, " + (
        "not a folder" if argv[0] == "import" else "where a folder is needed") in err.splitlines(), err


def test_a_file_that_exists_for_another_reason_stays_an_internal_error(tmp_path: Path):
    (tmp_path / "x").write_text("")
    with pytest.raises(FileExistsError) as caught:
        open(tmp_path / "x", "x")
    assert _file_for_folder(caught.value) is None
    with pytest.raises(FileExistsError) as made:
        (tmp_path / "x").mkdir()
    assert _file_for_folder(made.value) is not None
