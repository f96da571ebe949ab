"""Plug-ins: one registry type (`modlens.names.Registry`) for every kind, and Python entry points
through which an installed package adds a detector, a reader, ... without editing modlens.

The third-party package is CONTRIBUTING.md's worked example, built from its code blocks into a
folder holding the modules and a dist-info (METADATA + entry_points.txt): what `pip install`
leaves, found by `importlib.metadata` on PYTHONPATH (a subprocess) or `sys.path` (in process)."""
from __future__ import annotations

import json
import os
import re
import sqlite3
import subprocess
import sys
import tomllib
import warnings
from pathlib import Path

import pytest

from modlens.cli import main
from modlens.datasets import registry as datasets
from modlens.detectors import registry as detectors
from modlens.names import PluginError, PluginWarning, Registry, UnknownName

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = re.compile(r"```(?:toml|python)\n# (\S+)\n(.*?)```", re.S)


def install(site: Path, name: str, version: str, files: dict[str, str], entry_points: dict[str, dict[str, str]]) -> Path:
    """What `pip install --target site` leaves for a package: its modules and a dist-info."""
    for rel, text in files.items():
        (site / rel).parent.mkdir(parents=True, exist_ok=True)
        (site / rel).write_text(text)
    info = site / f"{name.replace('-', '_')}-{version}.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n")
    (info / "entry_points.txt").write_text("".join(
        f"[{group}]\n" + "".join(f"{k} = {v}\n" for k, v in entries.items()) for group, entries in entry_points.items()))
    return site


def install_example(site: Path) -> Path:
    """CONTRIBUTING.md's worked example, as written there."""
    files = dict(EXAMPLE.findall((ROOT / "CONTRIBUTING.md").read_text(encoding="utf-8")))
    project = tomllib.loads(files.pop("pyproject.toml"))["project"]
    return install(site, project["name"], project["version"], files, project["entry-points"])


def install_broken(site: Path) -> Path:
    """A second package: one detector that cannot import, and one reusing a built-in's name."""
    return install(site, "modlens-broken", "2.0", {"broken_plugin.py": "import no_such_dependency_anywhere\n"},
                   {"modlens.detectors": {"broken": "broken_plugin", "profanity-check": "broken_plugin"}})


@pytest.fixture
def site(tmp_path, monkeypatch):
    """Both packages installed in this process (sys.path), the registries made to look again."""
    path = install_broken(install_example(tmp_path / "site"))
    monkeypatch.syspath_prepend(str(path))
    for reg in (detectors.DETECTORS, datasets.READER_REGISTRY):
        reg.refresh()
    yield path
    for reg in (detectors.DETECTORS, datasets.READER_REGISTRY):
        reg.refresh()  # looked up again once monkeypatch has put sys.path back


# --- the registry type ----------------------------------------------------------------------

def test_the_detector_registry_raises_the_projects_unknown_name_with_close_matches():
    with pytest.raises(UnknownName) as err:
        detectors.describe("profanty-check")
    assert str(err.value) == "unknown detector 'profanty-check'; did you mean profanity-check?"
    assert isinstance(err.value, KeyError)


def test_a_built_in_lookup_never_scans_the_installed_packages(monkeypatch):
    reg = Registry("detector", "modlens.detectors", {"cached": "cached"}, group="modlens.detectors")

    def scan(**_):
        raise AssertionError("scanned the installed packages")

    monkeypatch.setattr("importlib.metadata.entry_points", scan)
    assert reg.load("cached").__name__ == "modlens.detectors.cached" and "cached" in reg


def test_a_built_in_may_be_named_by_its_full_module_path_and_must_define_what_the_kind_needs(tmp_path, monkeypatch):
    """`modlens serve` lives in the daemon: `COMMANDS` names it by its module path, the registry
    loads it as it loads every command and checks it has the command's two functions."""
    from modlens.cli import COMMAND_REGISTRY, command_module

    assert command_module("serve") == "modlens.daemon.serve" and command_module("audit") == "modlens.cli.audit"
    assert COMMAND_REGISTRY.load("serve").__name__ == "modlens.daemon.serve"
    reg = Registry("command", "modlens.cli", {"paths": "modlens.paths"}, group="modlens.commands", needs=("run",))
    with pytest.raises(TypeError, match="built-in command 'paths' .* lacks run"):
        reg.load("paths")
    install(tmp_path / "site", "modlens-half", "1.0", {"half_cmd.py": "def add_arguments(parser): pass\n"},
            {"modlens.commands": {"half": "half_cmd"}})
    monkeypatch.syspath_prepend(str(tmp_path / "site"))
    reg = Registry("command", "modlens.cli", {}, group="modlens.commands", needs=("add_arguments", "run"))
    with pytest.raises(PluginError, match="command plug-in 'half' from package modlens-half 1.0 failed to load: "
                                          "TypeError: half_cmd does not define run"):
        reg.load("half")


def test_plug_ins_follow_the_built_ins_and_broken_or_clashing_ones_are_reported(site):
    with pytest.warns(PluginWarning, match="modlens-broken 2.0 registers detector 'profanity-check', the name of modlens's built-in; "
                                          "its plug-in is ignored"):
        names = detectors.available()
    assert names[:len(detectors.PLUGINS)] == list(detectors.PLUGINS) and names[len(detectors.PLUGINS):] == ["broken", "wordlist"]
    assert detectors.DETECTORS.origin("profanity-check") is None  # the built-in won
    assert detectors.DETECTORS.origin("wordlist") == "modlens-wordlist 0.1.0"
    with pytest.raises(PluginError, match=r"detector plug-in 'broken' from package modlens-broken 2\.0 failed to load: "
                                          r"ModuleNotFoundError") as err:
        detectors.DETECTORS.load("broken")
    assert err.value.fix == "reinstall or uninstall modlens-broken"
    assert detectors.create("wordlist").score(["you idiot", "hello"]) == [{"toxic": 1.0}, {"toxic": 0.0}]
    with pytest.raises(UnknownName, match="did you mean wordlist"):  # plug-ins are close matches too
        detectors.create("wordlst")


def test_an_unknown_format_is_a_dataset_error_with_close_matches(tmp_path):
    (tmp_path / "a.csv").write_text("text\nhi\n")
    with pytest.raises(datasets.DatasetError, match="unknown dataset format 'jsnl'$") as err:
        datasets.load(str(tmp_path / "a.csv"), "jsnl")
    assert err.value.fix == "did you mean jsonl?"


# --- an installed package, end to end --------------------------------------------------------

def test_modlens_detectors_lists_an_installed_detector_and_reports_a_broken_one(site, capsys):
    """`modlens detectors` in this process (the built-in detectors' models load in the test process
    once, not in a fresh interpreter; discovery on PYTHONPATH in a subprocess is
    test_an_installed_package_adds_a_subcommand's)."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert main(["detectors", "--json", "--no-presets"]) == 0
    listed = {d["name"]: d for d in map(json.loads, capsys.readouterr().out.splitlines())}
    assert set(detectors.PLUGINS) <= set(listed)  # the broken package costs no built-in
    wordlist = listed["wordlist"]
    assert wordlist["status"] == "loaded" and wordlist["version"].startswith("0.1.0+")
    assert wordlist["extra"]["package"] == "modlens-wordlist 0.1.0"
    assert wordlist["extra"]["description"].startswith("wordlist: flags a comment")
    broken = listed["broken"]
    assert broken["status"] == "missing_dependency" and "modlens-broken 2.0" in broken["message"]
    assert any("registers detector 'profanity-check'" in str(w.message) for w in caught
               if issubclass(w.category, PluginWarning))
    assert listed["profanity-check"].get("extra", {}).get("package") is None


def test_score_and_audit_use_installed_plug_ins(site, tmp_path, capsys):
    assert main(["score", "--detector", "wordlist", "you idiot", "have a nice day"]) == 0
    lines = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert [line["scores"]["wordlist"]["toxicity"] for line in lines] == [1.0, 0.0]

    comments = tmp_path / "comments.txt"
    comments.write_text("you moron\n\nlovely photo\n")
    db = tmp_path / "log.sqlite"
    assert main(["audit", str(comments), "--format", "lines", "--detectors", "wordlist", "--db", str(db), "--quiet"]) == 0
    conn = sqlite3.connect(db)
    got = conn.execute("SELECT t.text, s.toxicity FROM comments c JOIN texts t USING (text_id) "
                       "JOIN scores s USING (text_id) JOIN detectors d USING (detector_id) "
                       "WHERE d.name = 'wordlist' ORDER BY c.comment_id").fetchall()
    conn.close()
    assert got == [("you moron", 1.0), ("lovely photo", 0.0)]
    # a misspelt plug-in format is argparse's usage error with the close match
    with pytest.raises(SystemExit) as exit_:
        main(["audit", str(comments), "--format", "line", "--db", str(db)])
    assert exit_.value.code == 2 and "did you mean lines" in capsys.readouterr().err


def test_a_registry_warns_once_per_discovery_not_per_lookup(site):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        detectors.available()
        detectors.available()
        "wordlist" in detectors.DETECTORS  # noqa: B015 - the lookup is the point
    assert len([w for w in caught if issubclass(w.category, PluginWarning)]) == 1


def test_an_installed_package_adds_a_subcommand(tmp_path):
    """A command module under `modlens.commands`: listed in `modlens --help` with its docstring's
    first line, run with its own flags; a broken one costs the other commands nothing."""
    site = install(tmp_path / "site", "modlens-hello", "0.3", {"hello_cmd.py": (
        '"""Say hello to a name (a plug-in command)\n\nExample: modlens hello --name Ada\n"""\n'
        "def add_arguments(p):\n    p.add_argument('--name', required=True)\n\n\n"
        "def run(args):\n    print(f'hello {args.name}')\n    return 0\n")},
        {"modlens.commands": {"hello": "hello_cmd"}})
    install(site, "modlens-bad-cmd", "1.0", {"bad_cmd.py": "import no_such_dependency_anywhere\n"},
            {"modlens.commands": {"bad": "bad_cmd"}})
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(site), os.environ.get("PYTHONPATH", "")])}

    def modlens(*argv: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "modlens", *argv], env=env, capture_output=True, text=True,
                              timeout=120)

    listing = modlens("--help")
    assert listing.returncode == 0 and "Say hello to a name (a plug-in command)" in listing.stdout
    assert "modlens-bad-cmd 1.0" in listing.stderr and "score" in listing.stdout
    ran = modlens("hello", "--name", "Ada")
    assert (ran.returncode, ran.stdout) == (0, "hello Ada\n")
    typo = modlens("helo")
    assert typo.returncode == 2 and "did you mean hello" in typo.stderr
    builtin = modlens("pair", "--help")  # a built-in command imports no plug-in, broken or not
    assert builtin.returncode == 0 and "modlens-bad-cmd" not in builtin.stderr
