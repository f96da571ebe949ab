"""The cached-scores detector answers only from its table, and its version tracks file and options."""
import json

import pytest

from modlens.detectors import registry
from modlens.detectors.base import DetectorUnavailable


def write(path, text):
    path.write_text(text, encoding="utf-8")
    return path


def test_two_mappings_answer_both_columns_and_unknown_is_missing(tmp_path):
    f = write(tmp_path / "s.csv", "clean,perturbed,pc,pp\nyou idiot,you 1d1ot,0.9,0.4\nnice day,n1ce day,0.1,0.05\n")
    det = registry.create("cached", path=str(f), mappings=[["clean", "pc"], ["perturbed", "pp"]], name="perspective")
    assert det.name == "perspective" and det.labels == ("toxicity",)
    out = det.score(["you idiot", "you 1d1ot", "never seen", "n1ce day"])
    assert out == [{"toxicity": 0.9}, {"toxicity": 0.4}, None, {"toxicity": 0.05}]
    assert det.toxicity(out[0]) == 0.9 and det.toxicity(out[2]) is None


def test_version_changes_with_file_bytes_and_options(tmp_path):
    f = write(tmp_path / "s.csv", "text,score\na,0.5\n")
    v1 = registry.create("cached", path=str(f), text_col="text", score_col="score").version
    assert registry.create("cached", path=str(f), text_col="text", score_col="score").version == v1
    assert registry.create("cached", path=str(f), text_col="text", score_col="score", threshold=0.7).version != v1
    write(f, "text,score\na,0.6\n")
    assert registry.create("cached", path=str(f), text_col="text", score_col="score").version != v1


def test_jsonl_and_empty_scores_are_unknown(tmp_path):
    f = tmp_path / "s.jsonl"
    f.write_text("\n".join(json.dumps(r) for r in [{"t": "a", "s": 0.2}, {"t": "b", "s": ""}, {"t": "c", "s": None}]))
    det = registry.create("cached", path=str(f), text_col="t", score_col="s", label="TOXICITY")
    assert det.score(["a", "b", "c"]) == [{"TOXICITY": 0.2}, None, None]


@pytest.mark.parametrize("content,options,message", [
    ("text,score\na,0.5\n", {"text_col": "text", "score_col": "nope"}, "no column 'nope'"),
    ("text,score\na,high\n", {"text_col": "text", "score_col": "score"}, "not a number"),
    ("text,score\na,0.5\na,0.7\n", {"text_col": "text", "score_col": "score"}, "two scores"),
    ("text,score\na,0.5\n", {"text_col": "text"}, "both text_col and score_col"),
    ("text,score\na,0.5\n", {}, "no (text column, score column) pair"),
])
def test_bad_tables_are_clear_errors(tmp_path, content, options, message):
    f = write(tmp_path / "s.csv", content)
    with pytest.raises(DetectorUnavailable, match=message.replace("(", r"\(").replace(")", r"\)")):
        registry.create("cached", path=str(f), **options)


def test_missing_file_is_a_status_not_a_crash(tmp_path):
    st = registry.status("cached", path=str(tmp_path / "gone.csv"), text_col="t", score_col="s")
    assert st.status == "missing_weights" and "not found" in st.message and st.fix


def test_noisyhate_perspective_scores(data_dir):
    import csv
    path = data_dir / "noisyhate" / "dev.csv"
    det = registry.create("cached", path=str(path), name="perspective",
                          mappings=[["clean", "perspective_clean"], ["perturbed", "perspective_perturbed"]])
    rows = list(csv.DictReader(open(path, encoding="utf-8")))
    got = det.score([rows[0]["clean"], rows[0]["perturbed"]])
    assert got == [{"toxicity": float(rows[0]["perspective_clean"])}, {"toxicity": float(rows[0]["perspective_perturbed"])}]


@pytest.mark.parametrize("options,missing", [
    ({}, "path, text_col and score_col (or mappings)"),
    ({"text_col": "text", "score_col": "score"}, "path"),
    ({"mappings": [["text", "score"]]}, "path"),
    ({"text_col": "text"}, "path, score_col"),
])
def test_needs_options_names_only_what_is_missing(options, missing):
    with pytest.raises(DetectorUnavailable) as err:
        registry.create("cached", **options)
    assert (err.value.status, err.value.args[0]) == ("needs_options", f"cached needs options: {missing}")
