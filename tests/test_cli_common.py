"""The shared CLI layer: one error type printed once with its exit code, shared options with
both spellings, the daemon's runtime file and the one loopback check."""
from __future__ import annotations

import argparse
import os

import pytest

from modlens import runtime
from modlens.cli import main
from modlens.cli.common import (
    EXIT_CODES,
    CliError,
    add_attack_limit_options,
    add_db_option,
    add_detectors_option,
    add_study_option,
    print_error,
)
from modlens.errors import ErrorKind
from modlens.netutil import host_header_is_loopback, is_loopback


def test_an_error_is_printed_once_with_its_fix_and_kind_code(capsys):
    assert EXIT_CODES == {ErrorKind.FAILED: 1, ErrorKind.USAGE: 2, ErrorKind.NOT_FOUND: 3, ErrorKind.UNREACHABLE: 4}
    err = CliError("no daemon at ws://x", kind=ErrorKind.UNREACHABLE, fix="start `modlens serve`")
    assert print_error("feed", err) == 4
    assert capsys.readouterr().err == "modlens feed: no daemon at ws://x\n  fix: start `modlens serve`\n"
    assert CliError("gone", kind=ErrorKind.NOT_FOUND).exit_code == 3


def test_main_prints_command_errors_without_a_traceback(capsys):
    assert main(["score", "--detector", "profanity-check", "-o", "bad", "x"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("modlens score: bad option 'bad'") and "Traceback" not in err


def test_a_missing_study_file_is_not_found(tmp_path, capsys):
    assert main(["audit", "hatecheck", "--config", str(tmp_path / "nope.toml")]) == 3
    assert "study file not found" in capsys.readouterr().err
    bad = tmp_path / "bad.toml"
    bad.write_text("[study\n")
    assert main(["perturb", "x", "--study", str(bad)]) == 2
    assert "not valid TOML" in capsys.readouterr().err


def parse(add, *argv: str, **kwargs) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    add(parser, **kwargs)
    return parser.parse_args(list(argv))


def test_shared_options_accept_both_spellings():
    assert parse(add_detectors_option, "--detectors", "a", "b", "--detector", "c").detectors == ["a", "b", "c"]
    assert parse(add_detectors_option, "--detector", "a", dest="detector").detector == ["a"]
    assert parse(add_detectors_option).detectors is None
    assert parse(add_study_option, "--study", "s.toml").config == "s.toml"
    assert parse(lambda p: add_study_option(p, "--study", "--config"), "--config", "s.toml").study == "s.toml"
    limits = parse(add_attack_limit_options, "--max-queries", "50", "--max-edit-fraction", "0.5")
    assert (limits.query_budget, limits.max_edit_ratio) == (50, 0.5)
    limits = parse(add_attack_limit_options, "--query-budget", "7", queries_dest="max_queries",
                   edit_ratio_dest="max_edit_fraction")
    assert (limits.max_queries, limits.max_edit_fraction) == (7, None)  # None: the attack's own limit
    assert parse(add_db_option, "--db", "x.sqlite").db == "x.sqlite"


def test_runtime_file_round_trip(modlens_home):
    assert runtime.read_runtime() is None and runtime.daemon_url() == "ws://127.0.0.1:8765/ws"
    runtime.write_runtime({"host": "::1", "port": 9001, "pid": os.getpid()})
    assert runtime.read_runtime()["port"] == 9001
    assert runtime.daemon_url() == "ws://[::1]:9001/ws"
    assert runtime.status_url({"host": "0.0.0.0", "port": 9001}) == "http://127.0.0.1:9001/status"
    runtime.remove_runtime(os.getpid() + 1)  # another daemon's: left alone
    assert runtime.read_runtime() is not None
    runtime.remove_runtime(os.getpid())
    assert runtime.read_runtime() is None


def test_a_dead_daemons_file_reads_as_no_daemon(modlens_home):
    runtime.write_runtime({"host": "127.0.0.1", "port": 9001, "pid": 2 ** 22 + 12345})
    assert runtime.read_runtime() is None and runtime.read_runtime(check_alive=False)["port"] == 9001


@pytest.mark.parametrize("host, ok", [
    ("127.0.0.1", True), ("127.9.9.9", True), ("localhost", True), ("LOCALHOST", True), ("::1", True),
    ("[::1]", True), ("0.0.0.0", False), ("::", False), ("192.168.1.4", False), ("localhost.evil.com", False),
    ("", False),
])
def test_loopback_bind_addresses(host, ok):
    assert is_loopback(host) is ok


def test_the_handshake_uses_the_same_check():
    from modlens.protocol import security

    assert security.host_is_loopback is host_header_is_loopback
    assert host_header_is_loopback("[::1]:8765") and not host_header_is_loopback("::1")
