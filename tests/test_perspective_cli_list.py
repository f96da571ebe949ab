"""`modlens perspective list`: which detector (key, version, label, languages) answers each
attribute Perspective's clients ask for in a study, and which attributes are refused, with the
detectors really loaded (a model's labels decide what it answers)."""
from __future__ import annotations

import json

from modlens.cli import main


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
    assert out["languages_not_loaded"] == {"de": "not-loaded"}
    assert got["SEXUALLY_EXPLICIT"] == [] and got["FLIRTATION"] == [] and got["TOXICITY"] == []
    assert main(["perspective", "list", "--config", str(cfg)]) == 0
    text = capsys.readouterr().out
    assert "PROFANITY  profanity-check@alt-profanity-check" in text
    assert "refused (no detector of this study answers them; docs/PERSPECTIVE.md): TOXICITY" in text
    assert "SEXUALLY_EXPLICIT, FLIRTATION" in text
    assert "language de: mapped to detector not-loaded, which did not load" in text
