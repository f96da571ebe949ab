"""The README's exit-code table, command by command: a missing file, folder or study log is 3
for every command that takes one, a bad flag and a usage error are 2, a daemon that does not
answer is 4 (and 1 for `status`, as the table says). No command keeps an older code."""
from __future__ import annotations

import socket

import pytest

from modlens.cli import COMMANDS, main
from modlens.cli.common import EXIT_CODES
from modlens.errors import ErrorKind

NOT_FOUND, USAGE, UNREACHABLE = (EXIT_CODES[k] for k in (ErrorKind.NOT_FOUND, ErrorKind.USAGE, ErrorKind.UNREACHABLE))

# command line with a missing input (M stands for a path that does not exist)
MISSING_INPUT = {
    "feed": ["feed", "M.csv"],
    "audit": ["audit", "M.csv", "--detector", "length"],
    "attack": ["attack", "M.csv", "--recipe", "deepwordbug", "--target", "length"],
    "export": ["export", "--db", "M.sqlite", "--out", "OUT"],
    "export --bundle": ["export", "--db", "M.sqlite", "--bundle", "OUT.bundle"],
    "export --taebench": ["export", "--db", "M.sqlite", "--taebench", "OUT"],
    "report": ["report", "--db", "M.sqlite", "--format", "json"],
    "normalize --file": ["normalize", "--file", "M.txt"],
    "rescore": ["rescore", "M.sqlite"],
    "merge --list": ["merge", "--list", "M.sqlite"],
    "merge BUNDLE": ["merge", "--out", "OUT.sqlite", "M.bundle"],
    "join": ["join", "M.modlens"],
    "import": ["import", "M"],
    "study check": ["study", "check", "M"],
    "serve --config": ["serve", "--config", "M.toml", "--db", "OUT.sqlite"],
    "perturb --study": ["perturb", "x", "--study", "M.toml"],
    "fuse --images": ["fuse", "--images", "M", "--db", "OUT.sqlite"],
    "train-head --data": ["train-head", "--data", "M.csv", "--out", "OUT.json"],
    "browse --browser": ["browse", "--browser", "M", "--profile", "OUT"],
}


def _paths(argv: list[str], tmp_path) -> list[str]:
    return [str(tmp_path / "missing" / a) if a.startswith("M") else str(tmp_path / a) if a.startswith("OUT") else a
            for a in argv]


@pytest.mark.parametrize("case", list(MISSING_INPUT))
def test_a_missing_input_is_not_found_for_every_command(case, tmp_path, capsys):
    code = _code(_paths(MISSING_INPUT[case], tmp_path))
    err = capsys.readouterr().err
    assert code == NOT_FOUND, err
    assert "Traceback" not in err


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_a_bad_flag_is_usage_for_every_command(command, capsys):
    assert _code([command, "--no-such-flag-at-all"]) == USAGE
    err = capsys.readouterr().err
    assert ("unrecognized argument" in err or "required" in err) and "Traceback" not in err


@pytest.mark.parametrize("argv", [
    ["feed"],                                               # a required argument missing (argparse)
    ["merge"],                                              # neither --out nor --list
    ["normalize"],                                          # nothing to normalize
    ["attack", "--text", "x"],                              # no --recipe
    ["export", "--show"],                                   # --show without --bundle
    ["audit", "x.csv", "--recipe", "pwws"],                 # --recipe without --attack
    ["nosuchcommand"],
])
def test_a_usage_error_is_2(argv, capsys):
    assert _code(argv) == USAGE
    assert capsys.readouterr().err


def _code(argv: list[str]) -> int:
    """main's return value, or argparse's exit code (it exits itself for a missing argument)."""
    try:
        return main(argv)
    except SystemExit as exit_:
        return int(exit_.code or 0)


def _free_port() -> int:
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def test_a_daemon_that_does_not_answer_is_unreachable_for_feed_and_1_for_status(tmp_path, capsys):
    path = tmp_path / "c.csv"
    path.write_text("text\nhello\n")
    assert main(["pair"]) == 0
    assert main(["feed", str(path), "--daemon", f"ws://127.0.0.1:{_free_port()}/ws"]) == UNREACHABLE
    assert "is `modlens serve` running?" in capsys.readouterr().err
    assert main(["status", "--json", "--db", str(tmp_path / "log.sqlite")]) == 1  # the table's own row for status


def test_no_error_overrides_its_kinds_code():
    """The escape hatch for older codes is gone: an error's code is its kind's, always."""
    from modlens.cli.common import CliError

    with pytest.raises(TypeError):
        CliError("x", kind=ErrorKind.NOT_FOUND, exit_code=2)  # type: ignore[call-arg]
