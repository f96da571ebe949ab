"""`modlens detectors` and `modlens score`."""
from __future__ import annotations

import importlib.util
import io
import json

import pytest

from modlens.cli import main
from modlens.cli.score import parse_options
from modlens.detectors import registry


def test_detectors_lists_every_entry_with_status(capsys, monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    assert main(["detectors", "--json", "--no-presets"]) == 0
    rows = {r["name"]: r for r in map(json.loads, capsys.readouterr().out.splitlines())}
    assert set(registry.available()) <= set(rows)
    assert rows["minilm-toxicity"]["status"] == "loaded" and rows["minilm-toxicity"]["version"]
    assert rows["profanity-check"]["status"] == "loaded"
    six = rows["minilm-toxicity-6"]  # the six labels, each with its version and training data
    assert six["status"] == "loaded" and set(six["extra"]["labels"]) == {
        "toxicity", "severe_toxicity", "insult", "profanity", "threat", "identity_attack"}
    assert all("Jigsaw" in v for v in six["extra"]["labels"].values())
    assert rows["hf-classifier"]["status"] == "needs_options" and rows["hf-classifier"]["fix"]
    for row in rows.values():
        assert row["status"] in {"loaded", "missing_dependency", "missing_weights", "needs_options", "error"}
        assert row["status"] == "loaded" or row["fix"], row


def test_detectors_text_output_shows_fix_lines(capsys, monkeypatch, tmp_path):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf"))
    # one listing with the presets (every detector loads once, not twice)
    assert main(["detectors"]) == 0
    out = capsys.readouterr().out
    presets = [line.split() for line in out.splitlines() if line.startswith("hf-classifier[preset=")]
    assert len(presets) == 7 and all(p[1] == "missing_weights" for p in presets), presets
    assert "minilm-toxicity" in out and "loaded" in out and "fix:" in out


def test_detectors_that_need_options_are_not_listed_as_errors(capsys, monkeypatch):
    """`cached` and `http` cannot be built without options (a file, a URL): the listing says which,
    and nothing is broken, so it exits 0."""
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    assert main(["detectors", "--json", "--no-presets"]) == 0
    rows = {r["name"]: r for r in map(json.loads, capsys.readouterr().out.splitlines())}
    assert rows["cached"]["status"] == "needs_options" and rows["cached"]["message"].startswith("cached needs options: path")
    assert rows["http"]["status"] == "needs_options" and rows["http"]["message"] == "http needs options: url, score_path"
    assert all(r["fix"] for r in (rows["cached"], rows["http"]))
    assert not [r["name"] for r in rows.values() if r["status"] == "error"]
    assert main(["detectors", "--no-presets"]) == 0
    lines = {line.split()[0]: line.split() for line in capsys.readouterr().out.splitlines() if line[:1] != " "}
    assert lines["cached"][1] == lines["http"][1] == "needs_options"
    assert " ".join(lines["http"][3:]) == "http needs options: url, score_path"


def test_hf_detectors_without_a_model_say_they_need_one_and_a_bad_model_is_still_an_error(capsys, monkeypatch, tmp_path):
    """`hf-classifier` and `hf-image` score nothing until a model is given: the listing says so
    (`needs_options`, naming the option), not `available`; a preset that does not exist stays an error."""
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf"))
    assert main(["detectors", "--json", "--no-presets"]) == 0
    rows = {r["name"]: r for r in map(json.loads, capsys.readouterr().out.splitlines())}
    assert (rows["hf-classifier"]["status"], rows["hf-classifier"]["message"]) == (
        "needs_options", "hf-classifier needs options: model (or preset)")
    assert (rows["hf-image"]["status"], rows["hf-image"]["message"]) == ("needs_options", "hf-image needs options: model")
    assert "preset" in rows["hf-classifier"]["fix"] and "model" in rows["hf-image"]["fix"]
    # a detector built on hf-classifier (ocr's text detector) passes the status on
    assert registry.status("ocr", text_detector="hf-classifier").status == "needs_options"
    st = registry.status("hf-classifier", preset="no/such-preset")
    assert st.status == "error" and "no/such-preset" in st.message
    st = registry.status("hf-image", model=str(tmp_path / "no-such-dir") + "/")
    assert st.status == "missing_weights"


def test_a_detector_that_fails_to_load_is_an_error_and_the_listing_exits_1(capsys, monkeypatch, tmp_path):
    """A real load failure (here an installed plug-in whose create raises) stays an error, and the
    exit code says the listing found one."""
    from test_plugins import install

    site = install(tmp_path / "site", "modlens-failing", "1.0",
                   {"failing_plugin.py": '"""failing: a detector whose model file is corrupt"""\n'
                                         "def create(**options):\n    raise RuntimeError('model file is corrupt')\n"},
                   {"modlens.detectors": {"failing": "failing_plugin"}})
    monkeypatch.syspath_prepend(str(site))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    registry.DETECTORS.refresh()
    try:
        assert main(["detectors", "--json", "--no-presets"]) == 1
        captured = capsys.readouterr()
        rows = {r["name"]: r for r in map(json.loads, captured.out.splitlines())}
        assert rows["failing"]["status"] == "error" and "model file is corrupt" in rows["failing"]["message"]
        assert set(registry.PLUGINS) <= set(rows)  # every detector still listed
        assert "1 detector failed to load: failing" in captured.err
        assert main(["detectors", "--no-presets"]) == 1
        assert "failing" in capsys.readouterr().out
    finally:
        monkeypatch.undo()
        registry.DETECTORS.refresh()


def test_score_prints_one_json_line_per_text(capsys):
    assert main(["score", "you are a stupid idiot", "have a nice day"]) == 0
    lines = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert [line["text"] for line in lines] == ["you are a stupid idiot", "have a nice day"]
    for key in ("minilm-toxicity", "profanity-check"):
        insult, greeting = lines[0]["scores"][key], lines[1]["scores"][key]
        assert insult["name"] == key and insult["version"] and insult["labels"]
        assert insult["toxicity"] > greeting["toxicity"]


def test_score_stdin_options_and_unloadable_detector(capsys, monkeypatch):
    monkeypatch.setattr("sys.stdin", io.StringIO("idiot\n\nnice\n"))
    code = main(["score", "--detector", "profanity-check", "--detector", "jigsaw-bilstm"])
    captured = capsys.readouterr()
    if importlib.util.find_spec("tensorflow") is None:
        # a detector asked for by name that cannot load: nothing is scored without it (README's exit codes)
        assert code == 1 and captured.out == "" and "jigsaw-bilstm cannot load" in captured.err, captured
        monkeypatch.setattr("sys.stdin", io.StringIO("idiot\n\nnice\n"))
        code = main(["score", "--detector", "profanity-check"])
        captured = capsys.readouterr()
    assert code == 0
    lines = [json.loads(line) for line in captured.out.splitlines()]
    assert [line["text"] for line in lines] == ["idiot", "nice"]
    assert set(lines[0]["scores"]) <= {"profanity-check", "jigsaw-bilstm"}
    assert main(["score", "--detector", "profanity-check", "-o", "profanity-check.threshold=0.3", "x"]) == 0
    assert main(["score", "--detector", "profanity-check", "-o", "minilm-toxicity.head=x", "x"]) == 2
    assert main(["score", "--detector", "hf-classifier", "x"]) == 1  # no model configured: nothing loaded
    assert parse_options(["hf-classifier.preset=unitary/toxic-bert", "hf-classifier.label_map={\"a\": \"b\"}",
                          "hf-classifier.max_length=64"]) == {
        "hf-classifier": {"preset": "unitary/toxic-bert", "label_map": {"a": "b"}, "max_length": 64}}
    with pytest.raises(ValueError):
        parse_options(["nodot=1"])


def test_score_normalize_scores_the_normalized_text(capsys):
    assert main(["score", "--normalize", "--detector", "profanity-check", "you are a stup1d 1d1ot"]) == 0
    (line,) = [json.loads(x) for x in capsys.readouterr().out.splitlines()]
    norm = line["normalized"]
    assert norm["text"] != line["text"] and norm["edits"]
    from modlens.detectors import registry as reg
    det = reg.create("profanity-check")
    assert norm["scores"]["profanity-check"]["toxicity"] == pytest.approx(det.toxicity(det.score([norm["text"]])[0]))


def test_score_says_a_blank_text_is_not_scored(capsys):
    """A blank text has nothing to score (`datasets.base.blank_reason`, as the audit and the daemon
    leave it unscored): its line says why and carries no detector's number."""
    from modlens.datasets.base import EMPTY, WHITESPACE

    assert main(["score", "--detector", "profanity-check", "", "  \u00a0", "idiot"]) == 0
    lines = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert [line["text"] for line in lines] == ["", "  \u00a0", "idiot"]
    assert [line.get("not_scored") for line in lines] == [EMPTY, WHITESPACE, None]
    assert "scores" not in lines[0] and "scores" not in lines[1] and lines[2]["scores"]["profanity-check"]["toxicity"]


def test_perspective_without_its_key_is_listed_as_the_help_says_missing_dependency_means(capsys, monkeypatch):
    """No API key in the environment is `missing_dependency`: the help says that status covers it,
    not only a missing package."""
    from modlens.detectors.perspective import KEY_ENV

    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.delenv(KEY_ENV, raising=False)
    assert main(["detectors", "--json", "--no-presets"]) == 0
    row = {r["name"]: r for r in map(json.loads, capsys.readouterr().out.splitlines())}["perspective"]
    assert row["status"] == "missing_dependency" and f"no API key in ${KEY_ENV}" in row["message"]
    with pytest.raises(SystemExit):
        main(["detectors", "--help"])
    said = " ".join(capsys.readouterr().out.split())
    assert ("missing_dependency: a package, a program such as tesseract or ffmpeg or its language data, "
            "or perspective's API key in the environment") in said
