"""Labels as benchmarks name them: HatEval's HS, OLID's subtask_a, TweetEval's text and label files,
Civil Comments' fractional toxicity, Jigsaw's six columns, HateXplain's JSON and the Dynabench hate
set's label are read as gold labels without a flag; where nothing matches, a note names the
columns that look like labels and the --label flag that reads each. Each fixture is written here,
with the benchmark's column names and values and sentences of our own."""
import json

import pytest

from modlens.analysis import labelled
from modlens.analysis.data import load as load_log
from modlens.audit import run_audit
from modlens.datasets.base import DatasetError, content_name, file_digest
from modlens.datasets.registry import load
from modlens.detectors.base import Detector
from csv_files import write_csv as _csv




def _gold(data):
    return [it.labels.get("toxic") for it in data.items]


class Words(Detector):
    name, version, labels, toxicity_label = "words", "test-1", ("toxicity",), "toxicity"

    def score(self, texts):
        return [{"toxicity": 0.9 if "awful" in t else 0.1} for t in texts]


def test_hateval_hs_is_the_gold_label_without_a_flag(tmp_path):
    rows = [(100 + i, f"post {i}: {'you awful lot' if i % 2 else 'a calm remark'}", i % 2, i % 3 == 0, 0)
            for i in range(40)]
    f = _csv(tmp_path / "hateval2019_en_dev.csv", ["id", "text", "HS", "TR", "AG"], [
        (i, t, hs, int(tr), ag) for i, t, hs, tr, ag in rows])
    data = load(str(f))
    assert _gold(data) == [str(i % 2) for i in range(40)]
    assert data.items[3].labels["TR"] == "1" and data.items[3].labels["AG"] == "0"
    assert any(n.startswith("HatEval (SemEval-2019 Task 5) layout: gold label recognized: toxic = HS") for n in data.notes)
    # and the report gets its metrics section
    db = tmp_path / "log.sqlite"
    run_audit(str(f), db=db, detector_objects={"words": Words()}, progress=False)
    out = labelled.analyze(load_log(db))
    (src,) = out["sources"]
    assert src["n"] == 40 and src["positives"] == 20 and src["detectors"][0]["metrics"]["f1"]["value"] == 1.0


def test_olid_subtask_a_off_not(tmp_path):
    f = _csv(tmp_path / "olid-training-v1.0.tsv.csv", ["id", "tweet", "subtask_a", "subtask_b", "subtask_c"],
             [(1, "@USER you are awful", "OFF", "TIN", "IND"), (2, "@USER lovely day", "NOT", "NULL", "NULL"),
              (3, "what an awful take", "OFF", "UNT", "NULL")])
    data = load(str(f))
    assert _gold(data) == ["1", "0", "1"]
    assert data.items[0].labels["subtask_b"] == "TIN" and data.items[0].labels["subtask_c"] == "IND"
    assert any("OLID (OffensEval 2019) layout" in n for n in data.notes)


def _tweeteval(folder, texts, labels, mapping):
    folder.mkdir(parents=True)
    (folder / "test_text.txt").write_text("".join(t + "\n" for t in texts), encoding="utf-8")
    (folder / "test_labels.txt").write_text("".join(f"{v}\n" for v in labels), encoding="utf-8")
    (folder / "mapping.txt").write_text("".join(f"{k}\t{v}\n" for k, v in mapping.items()), encoding="utf-8")
    return folder


def test_tweeteval_text_and_label_files(tmp_path):
    texts = ["@user you awful person ", "a sunny \u2028 morning", "@user so awful", "nice one "]
    folder = _tweeteval(tmp_path / "hate", texts, [1, 0, 1, 0], {0: "not-hate", 1: "hate"})
    for given in (folder / "test_text.txt", folder / "test_labels.txt", folder):
        data = load(str(given))
        # read in TweetEval's layout, but not the released files: named by the text file's content
        # (tests/test_layout_names.py: the release keeps tweeteval-hate)
        assert data.format == "tweeteval" and data.name == content_name(file_digest(folder / "test_text.txt"))
        assert [it.text for it in data.items] == texts  # U+2028 inside a tweet does not split it
        assert _gold(data) == ["1", "0", "1", "0"] and data.items[0].labels["label"] == "hate"
    assert load(str(folder), label="label=not-hate").items[1].labels["toxic"] == "1"
    # a task whose names are neither toxic nor not (sentiment) gets no gold label
    sent = _tweeteval(tmp_path / "sentiment", texts, [0, 1, 2, 1], {0: "negative_x", 1: "neutral_x", 2: "positive_x"})
    assert _gold(load(str(sent))) == [None] * 4
    (folder / "test_labels.txt").write_text("1\n0\n", encoding="utf-8")
    with pytest.raises(DatasetError, match="2 labels for the 4 tweets"):
        load(str(folder / "test_text.txt"))


def test_civil_comments_fractional_toxicity_at_one_half(tmp_path):
    header = ["id", "text", "toxicity", "severe_toxicity", "obscene", "threat", "insult", "identity_attack",
              "sexual_explicit"]
    f = _csv(tmp_path / "civil_comments_test.csv", header,
             [(1, "an awful claim", 0.5, 0.0, 0.1, 0.0, 0.4, 0.0, 0.0),
              (2, "fine by me", 0.49, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0),
              (3, "awful awful", 0.8333, 0.1, 0.2, 0.0, 0.7, 0.1, 0.0)])
    data = load(str(f))
    assert _gold(data) == ["1", "0", "1"]
    assert data.gold == "toxicity >= 0.5" and data.items[2].labels["insult"] == "0.7"


def test_jigsaw_six_columns_and_unlabelled_test_rows(tmp_path):
    header = ["id", "comment_text", "toxic", "severe_toxic", "obscene", "threat", "insult", "identity_hate"]
    f = _csv(tmp_path / "test_merged.csv", header,
             [("a1", "you awful troll", 1, 0, 1, 0, 1, 0), ("a2", "thanks for the edit", 0, 0, 0, 0, 0, 0),
              ("a3", "not scored in the competition", -1, -1, -1, -1, -1, -1)])
    data = load(str(f))
    assert _gold(data) == ["1", "0", None]
    assert data.items[0].labels["obscene"] == "1" and data.items[0].labels["identity_hate"] == "0"
    assert any("Jigsaw Toxic Comment Classification layout" in n and "-1: no gold label" in n for n in data.notes)


def test_hatexplain_json_majority(tmp_path):
    def post(tokens, labels, targets):
        return {"post_tokens": tokens.split(), "rationales": [],
                "annotators": [{"label": lab, "annotator_id": i, "target": t} for i, (lab, t) in
                               enumerate(zip(labels, targets))]}
    posts = {"p1": post("<user> you awful lot", ["hatespeech", "hatespeech", "offensive"],
                        [["Women"], ["Women", "Other"], ["None"]]),
             "p2": post("lovely weather today", ["normal", "normal", "offensive"], [["None"], ["None"], ["None"]]),
             "p3": post("some awful words", ["hatespeech", "offensive", "normal"], [["Arab"], ["None"], ["None"]])}
    f = tmp_path / "dataset.json"
    f.write_text(json.dumps(posts), encoding="utf-8")
    data = load(str(f))
    assert data.format == "hatexplain" and data.name == content_name(file_digest(f))  # no pinned release yet
    by = {it.key: it for it in data.items}
    assert by["p1"].text == "<user> you awful lot"
    assert [by[k].labels.get("toxic") for k in ("p1", "p2", "p3")] == ["1", "0", None]
    assert by["p1"].labels["class"] == "hatespeech" and by["p3"].labels["class"] == "undecided"
    assert by["p1"].labels["target"] == "Women" and by["p2"].labels["target"] == "None"
    assert [it.labels.get("toxic") for it in load(str(f), label="class=hatespeech").items] == ["1", "0", None]
    pretty = tmp_path / "pretty" / "dataset.json"
    pretty.parent.mkdir()
    pretty.write_text(json.dumps(posts, indent=2), encoding="utf-8")  # one object over many lines
    assert _gold(load(str(pretty.parent))) == ["1", "0", None]


def test_dynabench_hate_nothate(tmp_path):
    f = _csv(tmp_path / "Dynamically Generated Hate Dataset v0.2.3.csv",
             ["", "acl.id", "X1", "text", "label", "type", "target", "level", "split", "round.base", "annotator",
              "round", "acl.id.test"],
             [(1, "acl1", 1, "those people are awful", "hate", "derogation", "wom", "original", "train", 1, "GNZ",
               "1", ""),
              (2, "acl2", 2, "those people are lovely", "nothate", "none", "none", "original", "train", 1, "GNZ",
               "1", "")])
    data = load(str(f))
    assert _gold(data) == ["1", "0"] and data.items[0].labels["type"] == "derogation"
    assert data.items[0].labels["target"] == "wom"
    assert any("Dynabench hate" in n for n in data.notes)


def test_no_match_names_the_columns_that_look_like_labels_and_their_flags(tmp_path):
    rows = [(f"text {i}", i % 2, round(i / 50, 2), ["favor", "against", "none"][i % 3], 1000 + i) for i in range(50)]
    f = _csv(tmp_path / "mine.csv", ["text", "majority", "conf", "stance", "user_id"], rows)
    data = load(str(f))
    assert _gold(data) == [None] * 50
    (note,) = [n for n in data.notes if n.startswith("columns that look like labels: ")]
    assert "majority (values 0, 1): --label majority" in note
    assert "conf (numbers from 0 to 0.98): --label 'conf>=0.5'" in note
    assert "stance (values against, favor, none): --label stance=TOXIC_VALUE[,...]" in note
    assert "user_id" not in note
    # the flag it names works
    assert _gold(load(str(f), label="majority"))[:3] == ["0", "1", "0"]


def test_tweeteval_labels_given_as_names_and_an_empty_mapping(tmp_path):
    texts = ["@user you awful person", "a sunny morning"]
    # labels written as names need no mapping.txt to say what they mean (an integer does)
    named = _tweeteval(tmp_path / "named", texts, ["hate", "not-hate"], {})
    data = load(str(named / "test_text.txt"))
    assert _gold(data) == ["1", "0"] and data.items[0].labels["label"] == "hate"
    # mapping.txt there but empty: said so, not "not found"
    empty = _tweeteval(tmp_path / "empty", texts, [1, 0], {})
    (note,) = [n for n in load(str(empty / "test_text.txt")).notes if n.startswith("no gold label")]
    assert "mapping.txt beside test_text.txt names no label" in note and "not found" not in note
    (empty / "mapping.txt").unlink()
    (note,) = [n for n in load(str(empty / "test_text.txt")).notes if n.startswith("no gold label")]
    assert "mapping.txt not found beside test_text.txt" in note


def test_tweeteval_sentiment_as_released_gets_no_gold_label(tmp_path):
    # TweetEval's sentiment mapping.txt, as released: "positive" is a sentiment, not a toxic label
    sent = _tweeteval(tmp_path / "sentiment", ["i hate mondays", "love it", "ok"], [0, 2, 1],
                      {0: "negative", 1: "neutral", 2: "positive"})
    data = load(str(sent / "test_text.txt"))
    assert _gold(data) == [None] * 3 and data.items[1].labels["label"] == "positive"
    assert any("say neither toxic nor not" in n for n in data.notes)
