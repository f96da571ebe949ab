"""A clone needs nothing outside the repository: data ships in the package, nothing reads the
workspace folder the copies came from, shorthands find the shipped copies without a path, and no
line sends its reader to an outside tracker's or reading list's numbers for what it means."""
from __future__ import annotations

import csv
import re
import subprocess
from pathlib import Path

import pytest

from modlens import paths
from modlens.datasets import registry
from modlens.perturb.strategies.human_lookup import HumanLookup

REPO = Path(__file__).resolve().parents[1]
# Built from parts so this file does not match itself.
OUTSIDE = re.compile("|".join([r"\.\./" + "shared", r"['\"]" + "shared" + r"['\"]\s*/", "/work/" + "shared", "SHARED" + "_DATA"]))
SCANNED = (".py", ".md", ".toml", ".js", ".json", ".html", ".sh", ".txt", ".cfg", "Makefile", "run")
# An issue number or a paper's number in the workspace's seed list means nothing to a reader of the
# repository: name the behaviour, the paper (NoisyHate, DUO, TaeBench, SASS, the Perspective study on
# news sites, YouTube and Twitter) or the date. Built from parts, like OUTSIDE, so this file passes.
TRACKER_NUMBER = re.compile("|".join([r"(?<![A-Za-z])" + "issue" + r"s?[ _#-]*\d",
                                      r"(?<![A-Za-z])" + "seed" + r"s?[ _-]*(?:paper[ _-]*)?#?0\d\d(?!\d)"]),
                            re.IGNORECASE)


def tracked_files(suffixes: tuple[str, ...] | None = SCANNED, untracked: bool = True) -> list[Path]:
    try:
        out = subprocess.run(["git", "ls-files", "-co" if untracked else "-c", "--exclude-standard"], cwd=REPO,
                             capture_output=True, text=True, check=True).stdout
    except (OSError, subprocess.CalledProcessError):
        pytest.skip("not a git checkout")
    return [REPO / line for line in out.splitlines() if suffixes is None or line.endswith(suffixes)]


def test_nothing_in_the_repository_reads_the_workspace_data_folder():
    offenders = []
    for path in tracked_files():
        if not path.is_file() or path.stat().st_size > 2_000_000:
            continue
        for n, line in enumerate(path.read_text(encoding="utf-8", errors="replace").splitlines(), 1):
            if OUTSIDE.search(line):
                offenders.append(f"{path.relative_to(REPO)}:{n}: {line.strip()[:100]}")
    assert not offenders, "these lines point outside the repository:\n" + "\n".join(offenders)


def test_no_file_names_things_by_issue_or_seed_number():
    """Every file git tracks: code, tests, benches, fixtures, docs, the Makefile, README and CONTRIBUTING
    (not untracked ones: a tool's virtual environment left in the checkout is other projects' words)."""
    offenders = []
    for path in tracked_files(None, untracked=False):
        if not path.is_file():
            continue
        data = path.read_bytes()
        if b"\0" in data:  # images, hash tables
            continue
        text = data.decode("utf-8", errors="replace")
        for m in TRACKER_NUMBER.finditer(text):
            n = text.count("\n", 0, m.start()) + 1
            line = text[text.rfind("\n", 0, m.start()) + 1:].partition("\n")[0]
            offenders.append(f"{path.relative_to(REPO)}:{n}: {line.strip()[:100]}")
    assert not offenders, ("name the behaviour, the paper or the date instead of an issue or seed number:\n"
                           + "\n".join(offenders))


@pytest.mark.parametrize("name, columns", [
    ("noisyhate", {"clean", "perturbed", "position", "perspective_clean"}),
    ("hatecheck", {"case_id", "test_case", "label_gold", "functionality"}),
    ("davidson", {"tweet", "class"}),
])
def test_shorthands_find_the_shipped_copies_with_their_licence(name, columns, monkeypatch):
    monkeypatch.delenv(paths.DATA_ENV, raising=False)
    path, fmt = registry.resolve(name)
    assert fmt == name and path.is_relative_to(paths.shipped_data())
    assert (path.parent / "LICENSE").is_file()
    with path.open(encoding="utf-8", newline="") as fh:
        assert columns <= set(csv.DictReader(fh).fieldnames or [])
    assert len(registry.load(name).items) > 500


def test_modlens_data_folder_wins_over_the_shipped_copy(tmp_path, monkeypatch):
    own = tmp_path / "noisyhate" / "dev.csv"
    own.parent.mkdir()
    shipped = (paths.shipped_data() / "noisyhate" / "dev.csv").read_text(encoding="utf-8").splitlines()
    own.write_text("\n".join(shipped[:4]) + "\n", encoding="utf-8")
    monkeypatch.setenv(paths.DATA_ENV, str(tmp_path))
    assert registry.resolve("noisyhate")[0] == own
    assert len(registry.load("noisyhate").items) < 10


def test_missing_shorthand_says_how_to_get_it(tmp_path, monkeypatch):
    monkeypatch.setattr(paths, "shipped_data", lambda: tmp_path / "nothing-shipped")
    with pytest.raises(registry.DatasetError, match="dataset 'davidson' not found") as err:
        registry.resolve("davidson")
    assert "modlens data fetch davidson" in (err.value.fix or "")  # the remedy travels as .fix


def test_human_lookup_reads_the_shipped_table_by_default(monkeypatch):
    monkeypatch.delenv("MODLENS_PERTURBATIONS", raising=False)
    strategy = HumanLookup()
    assert strategy.availability() is None
    assert strategy.path.is_relative_to(paths.shipped_data())
    assert strategy.forms("idiot"), "the shipped table knows perturbations of 'idiot'"
