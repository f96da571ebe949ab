"""An audit run again recognises the attacks an older modlens logged: rows whose recorded config lacks
a field added later (transformation_data, 2026-12-06) are the same attack when the current value is
the one that era ran with (the package's own perturbation table) and the row shows it (a table edit
naming it, or a skipped seed), and only then."""
from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from modlens.audit.attacks import ERA_DEFAULTS, same_attack
from modlens.cli import main

BASE = ["--quiet", "--detector", "profanity-check", "--attack", "tae", "--no-ensemble"]
ARGS = [*BASE, "--strategies", "human_lookup"]  # every edit the attack makes then names its table
SHIPPED = {"lexicon": "perturbations.json", "lexicon_sha": "eb06062ed6bb"}


def _audit(data: Path, db: Path, capsys: pytest.CaptureFixture[str], args: list[str] = ARGS) -> dict[str, int]:
    assert main(["audit", str(data), "--db", str(db), *args]) == 0
    return json.loads(capsys.readouterr().out)["attacks"]["profanity-check"]


def _rows(db: Path) -> list[tuple[int, dict[str, Any]]]:
    con = sqlite3.connect(db)
    rows = con.execute("SELECT variant_id, params_json FROM variants WHERE attack_json IS NOT NULL").fetchall()
    con.close()
    return [(i, json.loads(p)) for i, p in rows]


def _rewrite(db: Path, change: Any) -> None:
    """The logged attack rows as an older modlens wrote them (`change` edits each one's params)."""
    con = sqlite3.connect(db)
    for vid, params in _rows(db):
        change(params)
        con.execute("UPDATE variants SET params_json = ? WHERE variant_id = ?", (json.dumps(params), vid))
    con.commit()
    con.close()


@pytest.fixture
def logged(tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch):
    """A log with the character attack's rows for two toxic seeds, written with the shipped table, each
    final text with a human_lookup edit."""
    monkeypatch.delenv("MODLENS_PERTURBATIONS", raising=False)
    monkeypatch.setenv("MODLENS_DATA", str(tmp_path / "no-data"))  # no fetched table: the package's
    data = tmp_path / "c.csv"
    data.write_text("text,toxic\nyou are an idiot,1\nwhat a stupid idiot you are,1\n")
    db = tmp_path / "log.sqlite"
    first = _audit(data, db, capsys)
    attempts = sum(first[k] for k in ("success", "failed", "skipped"))  # "unknown" counts some of these again
    assert attempts == 2 and first["reused"] == 0
    rows = _rows(db)
    assert all(p["transformation_data"] == {"char:human_lookup": SHIPPED} for _, p in rows)
    assert all(p["edits"] and all({k: e["params"]["edit"][k] for k in SHIPPED} == SHIPPED for e in p["edits"])
               for _, p in rows)
    return data, db, len(rows)


def test_a_row_from_before_transformation_data_is_reused_when_the_shipped_table_is_read(logged, capsys):
    data, db, n = logged
    _rewrite(db, lambda p: p.pop("transformation_data"))
    again = _audit(data, db, capsys)
    assert again == {"success": 0, "failed": 0, "skipped": 0, "reused": 2, "unknown": 0}
    assert len(_rows(db)) == n  # no query spent again, no second row


def test_a_row_from_before_transformation_data_is_redone_with_another_table(logged, capsys, tmp_path, monkeypatch):
    data, db, n = logged
    _rewrite(db, lambda p: p.pop("transformation_data"))
    table = tmp_path / "other.json"
    table.write_text(json.dumps({"idiot": ["idi0t"]}))
    monkeypatch.setenv("MODLENS_PERTURBATIONS", str(table))
    again = _audit(data, db, capsys)
    assert again["reused"] == 0 and sum(again.values()) == 2
    assert len(_rows(db)) == n + 2


def test_a_row_lacking_a_field_that_had_no_earlier_value_is_redone(logged, capsys):
    data, db, n = logged
    _rewrite(db, lambda p: p.pop("k"))  # `k` was recorded from the start: a row without it is not this attack
    again = _audit(data, db, capsys)
    assert again["reused"] == 0 and len(_rows(db)) == n + 2


def test_a_row_whose_value_differs_is_redone(logged, capsys):
    data, db, n = logged
    _rewrite(db, lambda p: p.update(max_queries=50))
    again = _audit(data, db, capsys)
    assert again["reused"] == 0 and len(_rows(db)) == n + 2


def test_an_older_success_through_other_transformations_is_redone(tmp_path, capsys, monkeypatch):
    """Every character strategy: the seeds fall to char_swap edits, which name no table, though the
    search also tried human_lookup's forms from whichever table that modlens read."""
    monkeypatch.delenv("MODLENS_PERTURBATIONS", raising=False)
    monkeypatch.setenv("MODLENS_DATA", str(tmp_path / "no-data"))
    data = tmp_path / "c.csv"
    data.write_text("text,toxic\nyou are an idiot,1\nwhat a stupid idiot you are,1\n")
    db = tmp_path / "log.sqlite"
    assert _audit(data, db, capsys, BASE)["success"] >= 1
    rows = _rows(db)
    assert all(p["transformation_data"] == {"char:human_lookup": SHIPPED} for _, p in rows)
    assert all(e["transformation"] != "char:human_lookup" for _, p in rows for e in p["edits"])
    _rewrite(db, lambda p: p.pop("transformation_data"))
    again = _audit(data, db, capsys, BASE)
    assert again["reused"] == 0 and len(_rows(db)) == 2 * len(rows)


def test_an_older_row_whose_own_edits_name_another_table_differs():
    """The row's human_lookup edits name the table they came from: another one is another attack,
    and a row with none (not skipped) says nothing of its table."""
    table = {"char:human_lookup": {"lexicon": "perturbations.json", "lexicon_sha": "eb06062ed6bb"}}
    config = {"recipe": "char_greedy", "k": 2, "transformation_data": table}
    edit = {"transformation": "char:human_lookup", "params": {"strategy": "human_lookup", "edit": {
        "replacement": "idi0t", "lexicon": "mine.json", "lexicon_sha": "0123456789ab"}}}
    old = {"params": {"recipe": "char_greedy", "k": 2, "edits": [edit]}, "attack": {"status": "success"}}
    assert not same_attack(old, config)
    edit["params"]["edit"].update(lexicon="perturbations.json", lexicon_sha="eb06062ed6bb")
    assert same_attack(old, config)
    old["params"]["edits"] = [{"transformation": "char:char_swap", "params": {"strategy": "char_swap", "edit": {}}}]
    assert not same_attack(old, config)
    old["attack"]["status"] = "skipped"
    assert same_attack(old, config)
    assert not same_attack(old, {**config, "transformation_data": {
        "char:human_lookup": {"lexicon": "perturbations.json", "lexicon_sha": "0123456789ab"}}})
    assert set(ERA_DEFAULTS) == {"transformation_data"}


def test_an_older_row_without_a_table_edit_is_redone_unless_skipped(tmp_path, capsys, monkeypatch):
    """A failed attack's final text has no human_lookup edit to say which table it searched: since
    2026-11-22 that was $MODLENS_PERTURBATIONS or a fetched table as well as the package's, so the row
    is attacked again. A skipped seed was never perturbed: its row is this attack whatever the table."""
    monkeypatch.delenv("MODLENS_PERTURBATIONS", raising=False)
    monkeypatch.setenv("MODLENS_DATA", str(tmp_path / "no-data"))
    data = tmp_path / "c.csv"
    data.write_text("text,toxic\nyou are an idiot,1\nwhat a stupid idiot you are,1\nthis is a fine day,1\n")
    db = tmp_path / "log.sqlite"
    args = ["audit", str(data), "--db", str(db), *BASE, "--max-queries", "1"]
    assert main(args) == 0
    first = json.loads(capsys.readouterr().out)["attacks"]["profanity-check"]
    assert first == {"success": 0, "failed": 2, "skipped": 1, "reused": 0, "unknown": 0}
    assert all(not p["edits"] for _, p in _rows(db))  # one query: no edit made it into a final text
    _rewrite(db, lambda p: p.pop("transformation_data"))
    assert main(args) == 0
    again = json.loads(capsys.readouterr().out)["attacks"]["profanity-check"]
    assert again == {"success": 0, "failed": 2, "skipped": 0, "reused": 1, "unknown": 0}
    assert len(_rows(db)) == 5
