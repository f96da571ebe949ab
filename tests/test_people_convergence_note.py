"""The people section's JSON says which convergence check a fit failed (`convergence_note`, beside
`converged`), not only inside a warning's text, and the HTML table marks the fit's coefficient."""
import json

from modlens.analysis import ordlogit, synthetic
from modlens.analysis.report import render_html, report_from_db


def _toxicity_fit(report):
    return report["sections"]["people"]["detectors"][0]["attributes"]["toxicity"]


def test_a_fit_that_stopped_at_its_iteration_limit_says_so_beside_converged(tmp_path, monkeypatch):
    db = tmp_path / "study.sqlite"
    synthetic.generate(db, synthetic.SyntheticSpec(seed=1))
    report = report_from_db(db)
    fit = _toxicity_fit(report)
    assert fit["converged"] is True and fit["convergence_note"] is None
    assert "did not converge" not in render_html(report)

    monkeypatch.setattr(ordlogit, "MAX_ITER", 3)  # a real search, cut short
    report = json.loads(json.dumps(report_from_db(db)))  # as the report's JSON carries it
    fit = _toxicity_fit(report)
    assert fit["converged"] is False and "iteration limit" in fit["convergence_note"]
    assert f"the fit did not converge ({fit['convergence_note']})" in fit["warnings"][-1]
    page = render_html(report)
    assert "⚠ did not converge" in page and "UNRELIABLE" in page
