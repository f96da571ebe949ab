"""The lines `modlens audit` prints about a folder of data files say what was read from the folder,
not from its first file only: the name is the folder's (the one its rows are logged under), and a
gold label or label column one file has and another has not is said of the files that have it."""
from __future__ import annotations

import sqlite3

from modlens.cli import main
from modlens.scale.sources import load_dataset


def _folder(tmp_path):
    folder = tmp_path / "shards"
    folder.mkdir()
    (folder / "a.csv").write_text("text,toxic\nhello there,0\nyou idiot,1\n", encoding="utf-8")
    (folder / "b.csv").write_text("text,label\nnice day,neither\nyou fool,hateful\n", encoding="utf-8")
    return folder


def test_a_folder_is_named_in_its_notes_as_it_is_logged(tmp_path, capsys):
    folder, db = _folder(tmp_path), tmp_path / "log.sqlite"
    data = load_dataset(str(folder))
    named = [n for n in data.notes if n.startswith("named ")]
    assert named == [f"named {data.name} by its content (its files' paths and SHA-256), not by the folder's name"]
    assert main(["audit", str(folder), "--db", str(db), "--detector", "profanity-check", "--quiet"]) == 0
    err = capsys.readouterr().err
    said = {line.split("named ", 1)[1].split(" ", 1)[0] for line in err.splitlines() if "audit: named " in line}
    con = sqlite3.connect(db)
    logged = {p for (p,) in con.execute("SELECT DISTINCT platform FROM comments")}
    con.close()
    assert said == {data.name} and logged == {f"dataset:{data.name}"}


def test_notes_that_differ_between_files_name_the_files(tmp_path):
    data = load_dataset(str(_folder(tmp_path)))
    gold = [n for n in data.notes if "gold label recognized" in n]
    assert len(gold) == 2
    assert any(n.startswith("a.csv: ") and "toxic = toxic " in n for n in gold)
    assert any(n.startswith("b.csv: ") and "toxic = label " in n for n in gold)
    stored = [n for n in data.notes if "labels stored" in n]
    assert any(n.startswith("b.csv: ") and "toxic, label" in n for n in stored)


def test_notes_every_file_shares_are_said_once(tmp_path):
    folder = tmp_path / "same"
    folder.mkdir()
    for name in ("a.csv", "b.csv"):
        (folder / name).write_text(f"text,toxic\n{name} one,0\n{name} two,1\n", encoding="utf-8")
    data = load_dataset(str(folder))
    gold = [n for n in data.notes if "gold label recognized" in n]
    assert gold == [n for n in load_dataset(str(folder / "a.csv")).notes if "gold label recognized" in n]


def test_a_declared_name_and_a_look_alikes_reason_stay(tmp_path, data_dir):
    folder = _folder(tmp_path)
    for name in ("a.csv", "b.csv"):  # ids to declare a name with
        rows = (folder / name).read_text(encoding="utf-8").splitlines()
        (folder / name).write_text("\n".join([f"cid,{rows[0]}", *(f"{name}-{i},{r}" for i, r in enumerate(rows[1:]))]) + "\n")
    declared = load_dataset(str(folder), id_col="cid", name="forum")
    assert declared.name == "forum" and sum(n.startswith("named forum as declared") for n in declared.notes) == 1
    look_alike = tmp_path / "tweets"
    look_alike.mkdir()
    (look_alike / "x.csv").write_text("tweet,class\nsome tweet,2\nanother one,1\n", encoding="utf-8")
    (look_alike / "y.csv").write_text("tweet,class\nthird tweet,0\n", encoding="utf-8")
    data = load_dataset(str(look_alike))
    assert any("read in davidson's layout, but its bytes are not" in n for n in data.notes), data.notes
    assert [n for n in data.notes if n.startswith("named ")] == [
        f"named {data.name} by its content (its files' paths and SHA-256), not by the folder's name"]
