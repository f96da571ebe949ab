"""`modlens perspective list`: which detector (key, version, label, languages) answers each
attribute Perspective's clients ask for in a study, its measured quality (the detector's own
metadata, shipped beside the model) or "not measured", and which attributes are refused, with the
detectors really loaded (a model's labels decide what it answers)."""
from __future__ import annotations

import json

import pytest

from modlens.cli import main
from modlens.detectors.minilm import DEFAULT_HEAD
from modlens.detectors.minilm6 import DEFAULT_HEAD6


def _line_after(lines, prefix):
    """The line under the first one starting with `prefix` (a detector's quality line)."""
    return lines[lines.index(next(ln for ln in lines if ln.startswith(prefix))) + 1]


def test_list_shows_each_attributes_detector_and_the_refused(tmp_path, capsys):
    cfg = tmp_path / "study.toml"
    cfg.write_text('study_id = "t"\n[[detectors]]\nname = "profanity-check"\n\n'
                   '[perspective.languages]\nde = "not-loaded"\n')
    assert main(["perspective", "list", "--config", str(cfg), "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    got = {row["attribute"]: row["answered_by"] for row in out["attributes"]}
    [profanity] = got["PROFANITY"]
    assert profanity["detector"] == "profanity-check" and profanity["languages"] == ["en"]
    assert profanity["version"].startswith("alt-profanity-check") and profanity["label"] == "offensive"
    assert profanity["quality"] == [] and profanity["not_measured"] == "not measured"  # nothing measured it here
    assert out["languages_not_loaded"] == {"de": "not-loaded"}
    assert got["SEXUALLY_EXPLICIT"] == [] and got["FLIRTATION"] == [] and got["TOXICITY"] == []
    assert main(["perspective", "list", "--config", str(cfg)]) == 0
    text = capsys.readouterr().out
    assert "PROFANITY  profanity-check@alt-profanity-check" in text
    assert _line_after(text.splitlines(), "PROFANITY  profanity-check@") == "    quality: not measured"
    assert "refused (no detector of this study answers them; docs/PERSPECTIVE.md): TOXICITY" in text
    assert "SEXUALLY_EXPLICIT, FLIRTATION" in text
    assert "language de: mapped to detector not-loaded, which did not load" in text


def test_list_names_the_label_problem_of_a_mislabelled_attribute(tmp_path, capsys):
    """An attribute study.toml maps to a label its (loaded) detector does not give is refused for
    that reason, with the detector's real labels, as the API's refusal says; not as one no detector answers."""
    cfg = tmp_path / "study.toml"
    cfg.write_text('study_id = "t"\n[[detectors]]\nname = "profanity-check"\n\n'
                   '[perspective.attributes.TOXICITY]\ndetector = "profanity-check"\nlabel = "toxic"\n')
    why = ("study.toml maps it to detector profanity-check's label 'toxic', which that detector does not give "
           "(its labels: offensive)")
    assert main(["perspective", "list", "--config", str(cfg), "--json"]) == 0
    rows = {row["attribute"]: row for row in json.loads(capsys.readouterr().out)["attributes"]}
    assert rows["TOXICITY"]["answered_by"] == [] and rows["TOXICITY"]["mislabelled"] == why
    assert rows["PROFANITY"]["mislabelled"] is None and rows["FLIRTATION"]["mislabelled"] is None
    assert main(["perspective", "list", "--config", str(cfg)]) == 0
    lines = capsys.readouterr().out.splitlines()
    refused = next(ln for ln in lines if ln.startswith("refused (no detector")).split(": ", 1)[1].split(", ")
    assert "TOXICITY" not in refused and "FLIRTATION" in refused
    assert f"refused TOXICITY: {why}" in lines


@pytest.mark.slow  # loads the embedded encoder twice and profanity-check (~10 s on 2 cores)
def test_list_without_a_study_prints_the_embedded_heads_measured_quality(capsys):
    """Without --config: what `serve --perspective-only` answers with. The figures are the ones the
    heads' training recorded (read here from the head files themselves), each with its data set,
    size, who labelled it and the day; THREAT has none and says why."""
    one, six = (json.loads(p.read_text()) for p in (DEFAULT_HEAD, DEFAULT_HEAD6))
    assert main(["perspective", "list", "--json"]) == 0
    rows = {r["attribute"]: r["answered_by"] for r in json.loads(capsys.readouterr().out)["attributes"]}
    [tox] = rows["TOXICITY"]
    assert tox["detector"] == "minilm-toxicity" and tox["not_measured"] is None
    held, hatecheck = tox["quality"]
    assert (held["metric"], held["value"], held["n"]) == ("ROC AUC", one["metrics"]["heldout_auc"], one["training"]["n_test"])
    assert "clean_data.csv" in held["dataset"] and held["labelled_by"].startswith("people") and held["measured_on"]
    assert (hatecheck["value"], hatecheck["n"]) == (one["metrics"]["hatecheck"]["auc"], one["metrics"]["hatecheck"]["n"])
    assert hatecheck["dataset"].startswith("HateCheck")
    [insult] = rows["INSULT"]
    assert insult["detector"] == "minilm-toxicity-6"
    assert [q["value"] for q in insult["quality"]] == [six["metrics"]["heldout_auc_vs_teacher"]["insult"]]
    assert insult["quality"][0]["labelled_by"].startswith("a model, not people")  # the teacher's labels, said so
    [threat] = rows["THREAT"]
    assert threat["quality"] == [] and threat["not_measured"].startswith("not measured (")
    assert rows["SEXUALLY_EXPLICIT"] == [] and rows["FLIRTATION"] == []

    assert main(["perspective", "list"]) == 0
    lines = capsys.readouterr().out.splitlines()
    line = _line_after(lines, "TOXICITY  minilm-toxicity@")
    assert line.startswith(f"    quality: ROC AUC {one['metrics']['heldout_auc']:.4f} on ")
    assert f"{one['training']['n_test']:,} rows held out" in line and f"measured {held['measured_on']}" in line
    assert _line_after(lines, "THREAT  minilm-toxicity-6@").startswith("    quality: not measured (")
