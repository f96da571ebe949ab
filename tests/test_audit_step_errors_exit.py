"""`modlens audit` with a step (the normalizer, the variant generator) that failed for some texts: the
texts are logged as `step_errors` rows and the audit goes on, but its summary says so (per step, how
many texts and the first error) and it exits 1 after the summary, as for a score that is an error
(README, "Exit codes"). Exit 0 and a summary without them read as a complete audit."""
from __future__ import annotations

import csv
import json
import random
import sqlite3
from importlib.metadata import EntryPoint
from pathlib import Path
from typing import Any

import pytest

from modlens.cli import main as cli_main
from modlens.normalize.steps._base import Step
from modlens.perturb.strategies._word import Strategy, WordEdit, replace_chars

BREAKS = "moron"  # the word both broken components raise on (one whose removal lowers the score: always tried)
ROWS = ["you are a stupid idiot", f"what a {BREAKS} you are", "thanks for the nice post",
        f"stupid {BREAKS} again", "great point well made"]


class BrittleStep(Step):
    """A normalizer step with a bug: it raises on one word, and leaves every other token as it is."""
    name, kind = "brittle", "char"

    def fold(self, token: str, lexicon: Any) -> str:
        if token == BREAKS:
            raise ValueError(f"cannot fold {token!r}")
        return token


class BrittleSwap(Strategy):
    """A perturbation strategy with a bug: it raises on one word, and upper-cases the first letter of others."""
    key, description = "brittle_swap", "upper-cases a word's first letter (raises on one word)"

    def perturb(self, word: str, rng: random.Random) -> WordEdit | None:
        if word == BREAKS:
            raise ValueError(f"cannot perturb {word!r}")
        return replace_chars(word, {0: word[0].upper()}) if word[:1].islower() else None


def plug_in(monkeypatch: pytest.MonkeyPatch, registry: Any, name: str, cls: type) -> None:
    """`cls` installed as a plug-in under `name`, as a package's entry point adds one."""
    monkeypatch.setattr(registry, "_plugins", {**registry.plugins(),
                                               name: EntryPoint(name, f"{__name__}:{cls.__name__}", "test")})


def data(tmp_path: Path) -> Path:
    path = tmp_path / "c.csv"
    with open(path, "w", newline="") as fh:
        csv.writer(fh).writerows([["text"], *[[r] for r in ROWS]])
    return path


def step_errors(db: Path) -> list[tuple[str, str]]:
    con = sqlite3.connect(db)
    try:
        return sorted(con.execute("SELECT t.text, e.step FROM step_errors e JOIN texts t USING (text_id)").fetchall())
    finally:
        con.close()


def audited(tmp_path: Path, capsys: pytest.CaptureFixture[str], study_toml: str, *flags: str
            ) -> tuple[int, str, str, Path]:
    """`modlens audit` of ROWS with profanity-check, the study file `study_toml` and `flags`:
    (exit code, stdout, stderr, the study log)."""
    study = tmp_path / "study.toml"
    study.write_text(study_toml)
    db = tmp_path / "log.sqlite"
    code = cli_main(["audit", str(data(tmp_path)), "--db", str(db), "--detectors", "profanity-check",
                     "--study", str(study), *flags, "--quiet"])
    out, err = capsys.readouterr()
    return code, out, err, db


def test_an_audit_whose_normalizer_failed_for_some_texts_says_so_and_exits_1(tmp_path, monkeypatch, capsys):
    from modlens.normalize.steps import REGISTRY

    plug_in(monkeypatch, REGISTRY, "brittle", BrittleStep)
    code, out, err, db = audited(tmp_path, capsys, '[normalizer]\nsteps = ["brittle", "leet"]\n', "--normalize")
    failed = [r for r in ROWS if BREAKS in r]
    assert step_errors(db) == sorted((t, "normalize") for t in failed)  # the event: two texts' rows
    summary = json.loads(out)
    assert summary["n_items"] == 5
    got = summary["step_errors"]["normalize"]
    assert got["errors"] == 2 and "cannot fold 'moron'" in got["first"]
    con = sqlite3.connect(db)
    (component,) = con.execute("SELECT DISTINCT component || '@' || version FROM step_errors").fetchone()
    con.close()
    assert got["component"] == component  # the normalizer that failed, as its rows name it
    assert code == 1
    assert f"modlens audit: step normalize ({component}) failed for 2 texts\n" in err


def test_an_audit_whose_variant_generator_failed_for_some_texts_says_so_and_exits_1(tmp_path, monkeypatch, capsys):
    from modlens.perturb.registry import REGISTRY

    plug_in(monkeypatch, REGISTRY, "brittle_swap", BrittleSwap)
    code, out, err, db = audited(tmp_path, capsys, '[perturbation]\nimportance_threshold = 0.0\nbudget = 5\n',
                                 "--perturb", "brittle_swap")
    failed = [r for r in ROWS if BREAKS in r]
    assert step_errors(db) == sorted((t, "variants") for t in failed)
    got = json.loads(out)["step_errors"]["variants"]
    assert got["errors"] == 2 and "cannot perturb 'moron'" in got["first"]
    assert code == 1
    assert "modlens audit: step variants (" in err and ") failed for 2 texts\n" in err


def test_an_audit_whose_steps_all_worked_exits_0_with_no_step_errors(tmp_path, capsys):
    db = tmp_path / "log.sqlite"
    code = cli_main(["audit", str(data(tmp_path)), "--db", str(db), "--detectors", "profanity-check",
                     "--normalize", "--perturb", "mixed_case", "--quiet"])
    out, _ = capsys.readouterr()
    assert code == 0 and step_errors(db) == [] and json.loads(out)["step_errors"] == {}


def test_rescore_variants_whose_generator_failed_for_a_deferred_comment_says_so_and_exits_1(tmp_path, monkeypatch,
                                                                                           capsys):
    """`modlens rescore --variants` makes the daemon's deferred variants: a comment whose generation raised
    is a step_errors row and is marked done (never made again), so the command says it as the audit does
    and exits 1 after the summary."""
    from modlens.perturb.registry import REGISTRY
    from modlens.studylog.records.deferred import defer_variants
    from modlens.studylog.store import StudyLog

    plug_in(monkeypatch, REGISTRY, "brittle_swap", BrittleSwap)
    db, study = tmp_path / "log.sqlite", tmp_path / "study.toml"
    study.write_text('study_id = "deferred"\ndetectors = [{ name = "profanity-check" }]\n[normalizer]\nenabled = false\n'
                     '[perturbation]\nenabled = true\nimportance_threshold = 0.0\nbudget = 5\nstrategies = ["brittle_swap"]\n')
    with StudyLog(db) as log:
        page = log.ensure_page("youtube", "v1", None, None)
        cids = [log.add_comment("youtube", f"c{i}", page, text) for i, text in enumerate(ROWS)]
        defer_variants(log, [(cid, "live variant budget reached") for cid in cids])
    code = cli_main(["rescore", "--variants", "--db", str(db), "--config", str(study)])
    out, err = capsys.readouterr()
    failed = [r for r in ROWS if BREAKS in r]
    assert step_errors(db) == sorted((t, "variants") for t in failed)
    summary = json.loads(out)
    assert summary["failed"] == 2 and summary["step_errors"]["variants"]["errors"] == 2
    assert code == 1
    assert "modlens rescore: step variants (" in err and ") failed for 2 texts\n" in err
