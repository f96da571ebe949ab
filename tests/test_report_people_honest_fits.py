"""The people section says of a fit only what the fit supports.

A detector whose scores are all the same cannot show how people's ratings change with its score
(the score column is the intercept's twin), yet its fit was called reliable, with a score
coefficient and crossings. And a crossing without a standard error was printed "± 0.000", a
precision the fit never had."""
import sqlite3

import numpy as np

from modlens.analysis import ordlogit, synthetic
from modlens.analysis.report import render_html, report_from_db


def _study(tmp_path):
    db = tmp_path / "study.sqlite"
    synthetic.generate(db, synthetic.SyntheticSpec(seed=1))
    return db


def test_a_detector_with_one_score_for_every_comment_is_not_fitted(tmp_path):
    db = _study(tmp_path)
    with sqlite3.connect(db) as con:  # a detector that answers 0.5 whatever the text
        con.execute("UPDATE scores SET toxicity = 0.5")
    report = report_from_db(db)
    assert "people" not in report["sections"]
    reason = report["skipped"]["people"]
    assert "every comment's score is 0.5" in reason and "toxicity" in reason
    assert "rate more comments" not in reason  # not the reason: the comments are there
    assert "UNRELIABLE" not in render_html(report) and "crossing (top level)" not in render_html(report)


def test_one_constant_detector_beside_a_real_one_gets_no_fit_of_its_own(tmp_path):
    db = _study(tmp_path)
    with sqlite3.connect(db) as con:
        con.execute("INSERT INTO detectors (name, version, toxicity_label, threshold, config_json, first_used) "
                    "SELECT 'stuck', '1', toxicity_label, threshold, config_json, first_used FROM detectors")
        stuck = con.execute("SELECT detector_id FROM detectors WHERE name = 'stuck'").fetchone()[0]
        con.execute("INSERT INTO scores (text_id, detector_id, toxicity, error, created_at) "
                    "SELECT text_id, ?, 0.25, NULL, created_at FROM scores", (stuck,))
    people = report_from_db(db)["sections"]["people"]
    by_name = {d["detector"]: d["attributes"] for d in people["detectors"]}
    assert by_name["synthetic-detector"]["toxicity"]["reliable"] is True
    fit = by_name["stuck"]["toxicity"]
    assert "every comment's score is 0.25" in fit["error"] and "reliable" not in fit


def test_a_crossing_without_a_standard_error_says_so_instead_of_plus_minus_zero(tmp_path, monkeypatch):
    db = _study(tmp_path)

    class Singular:  # numpy, but the information matrix cannot be inverted (as when it is singular)
        def __getattr__(self, name):
            return getattr(np, name)

        class linalg:
            def __getattr__(self, name):
                return getattr(np.linalg, name)

            @staticmethod
            def inv(_):
                raise np.linalg.LinAlgError("Singular matrix")
        linalg = linalg()

    monkeypatch.setattr(ordlogit, "np", Singular())
    report = report_from_db(db)
    monkeypatch.undo()
    fit = report["sections"]["people"]["detectors"][0]["attributes"]["toxicity"]
    news = fit["platforms"]["news"]
    assert fit["reliable"] is False and news["crossing_top"] is not None and news["crossing_top_se"] is None
    page = render_html(report)
    assert "UNRELIABLE" in page
    assert "± 0.000" not in page
    assert f"above {news['crossing_top']:.3f} (no SE) ⚠" in page
