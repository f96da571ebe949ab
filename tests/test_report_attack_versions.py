"""The attacks section's transfer matrix names its columns by detector name: when a detector was
scored at two versions (a retrained head, a rescore), each example's seed and adversarial text are
judged by the same version, and the matrix says which versions its column pooled."""
from __future__ import annotations

from modlens.analysis.report import render_html, report_from_db
from modlens.perturb.base import Variant
from modlens.studylog.store import StudyLog


def _attack(lg, key: str, seed: str, text: str) -> None:
    cid = lg.add_comment("dataset:x", key, None, seed)
    lg.add_variant(cid, Variant(
        text=text, strategy="recipe:hand", params={"recipe": "hand", "edits": []}, seed=0, source_text=seed,
        target_detector="tgt", attack={"goal": "tae", "status": "success", "search": "hand", "queries": 1,
                                       "max_queries": 1, "target": "tgt", "target_name": "tgt", "target_version": "1",
                                       "threshold": 0.5, "n_words": 2, "words_edited": 1}))


def _two_versions_log(db) -> None:
    with StudyLog(db) as lg:
        tgt = lg.ensure_detector("tgt", "1", "toxic", 0.5, {})
        b1 = lg.ensure_detector("b", "1", "toxic", 0.5, {})
        b2 = lg.ensure_detector("b", "2", "toxic", 0.5, {})

        def score(text: str, det: int, s: float) -> None:
            lg.add_score(text, det, {"toxic": s}, s, 1.0, None)

        # one: b@1 judged its seed right (0.9) and was fooled by its text (0.1)
        _attack(lg, "one", "seed one", "text one")
        score("seed one", b1, 0.9), score("text one", b1, 0.1)
        # two: b@2 scored both, the same way
        _attack(lg, "two", "seed two", "text two")
        score("seed two", b2, 0.9), score("text two", b2, 0.1)
        # three: b@1 scored both (seed right, fooled by the text); b@2 scored only the seed, and misjudged it.
        # Judged by b@1 the attack transferred; pairing b@1's text score with b@2's seed score drops it.
        _attack(lg, "three", "seed three", "text three")
        score("seed three", b1, 0.9), score("text three", b1, 0.1), score("seed three", b2, 0.3)
        for text in ("seed one", "seed two", "seed three"):
            score(text, tgt, 0.9)
        for text in ("text one", "text two", "text three"):
            score(text, tgt, 0.1)


def test_transfer_judges_seed_and_text_by_one_version_and_says_which_versions_a_column_pools(tmp_path):
    db = tmp_path / "log.sqlite"
    _two_versions_log(db)
    report = report_from_db(db)
    (matrix,) = report["sections"]["attacks"]["matrices"]
    assert matrix["n"]["tgt"]["b"] == 3 and matrix["rate"]["tgt"]["b"] == 1.0
    assert matrix["pooled_versions"] == {"b": {"1": 2, "2": 1}}  # tgt: one version, nothing to say
    # on the page the versions go by the report's short names (b#1, b#2: the Detectors table gives them)
    assert "column b pools b#1 (2 examples), b#2 (1 example)" in render_html(report)


def test_verified_success_says_over_how_many_attempts_when_the_target_scored_fewer(tmp_path):
    """'success (verified)' recomputes the rate from the target's logged score of each adversarial
    text; attempts whose text the target has no score of drop out of it, so the cell says over how
    many, beside an 'attempts' column that counts them all."""
    db = tmp_path / "log.sqlite"
    with StudyLog(db) as lg:
        tgt = lg.ensure_detector("tgt", "1", "toxic", 0.5, {})
        for i, score in enumerate((0.1, 0.8, None)):  # fooled, not fooled, never scored
            _attack(lg, f"k{i}", f"seed {i}", f"text {i}")
            lg.add_score(f"seed {i}", tgt, {"toxic": 0.9}, 0.9, 1.0, None)
            if score is not None:
                lg.add_score(f"text {i}", tgt, {"toxic": score}, score, 1.0, None)
    report = report_from_db(db)
    (row,) = report["sections"]["attacks"]["rows"]
    assert row["attempts"] == 3 and row["n_verified"] == 2 and row["success_verified"] == 0.5
    assert "0.500 (2 of 3 verified)" in render_html(report)


def test_a_tables_notes_travel_with_it_into_csv_and_latex(tmp_path):
    """The page says under the transfer table which versions its column pools; a table written for a
    paper (--format csv, latex) must carry the notes of its part of the page, not the cells alone."""
    from modlens.analysis.report_tables import read_csv
    from modlens.cli import main

    db = tmp_path / "log.sqlite"
    _two_versions_log(db)
    assert main(["report", "--db", str(db), "--format", "csv", "--out", str(tmp_path / "csv")]) == 0
    assert main(["report", "--db", str(db), "--format", "latex", "--out", str(tmp_path / "t.tex")]) == 0
    index = read_csv(tmp_path / "csv" / "index.csv")
    assert index[0] == ["table", "file", "caption", "rows", "columns", "notes"]
    transfer = next(r for r in index[1:] if "Transfer" in r[2])
    pooled = "column b pools b#1 (2 examples), b#2 (1 example)"
    assert pooled in transfer[5]
    tex = (tmp_path / "t.tex").read_text()
    number = int(transfer[0])
    block = tex.split(rf"\label{{tab:modlens-{number:02d}}}")[1].split(r"\label{tab:modlens-")[0]
    assert pooled in block.replace(r"\#", "#")
    detectors = next(r for r in index[1:] if r[2] == "Detectors")
    assert "short name" in detectors[5] and pooled not in detectors[5]  # each table its own part's notes
