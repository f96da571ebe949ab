"""TweetEval's and HateXplain's layouts name their data sets like the catalog's readers do: the
layout's name only for the bytes the catalog pins (`base.catalog_name`), any other file in the
layout `file-DIGEST` with a note. HateXplain's reader named every file in its layout `hatexplain`
and keyed its rows by post id, so a second file's posts were the first file's comments: its texts
never reached the log and its labels landed on the first file's comments. TweetEval's named a data
set after its task folder, so a user's own `hate/` folder was pooled with TweetEval's hate task and
cited as Barbieri et al."""
from __future__ import annotations

import dataclasses
import hashlib
import json
from unittest import mock

from modlens.analysis.data import load
from modlens.analysis.report import build, render_html
from modlens.audit import run_audit
from modlens.datasets.base import content_name, file_digest
from modlens.datasets.catalog import CATALOG, RemoteFile
from modlens.datasets.registry import load as load_dataset
from modlens.detectors.base import Detector


class Words(Detector):
    labels, toxicity_label = ("toxicity",), "toxicity"

    def __init__(self):
        self.name, self.version, self.training = "words", "test-1", None

    def score(self, texts):
        return [{"toxicity": 0.9 if "awful" in t else 0.1} for t in texts]


def _post(text, labels):
    return {"post_tokens": text.split(), "rationales": [],
            "annotators": [{"label": lab, "annotator_id": i, "target": ["None"]} for i, lab in enumerate(labels)]}


def _hatexplain(path, posts):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({pid: _post(t, labs) for pid, (t, labs) in posts.items()}), encoding="utf-8")
    return path


HATE, NORMAL = ["hatespeech"] * 3, ["normal"] * 3


def _texts_by_platform(db):
    data = load(db)
    out: dict[str, set[str]] = {}
    for c in data.comments.values():
        out.setdefault(c["platform"], set()).add(data.texts[c["text_id"]])
    return out


def test_two_hatexplain_files_are_two_data_sets_and_the_second_is_scored(tmp_path):
    """A subset of the release with one post's text edited, audited after the release: the same post
    ids, other texts. Both files were `hatexplain`, so the edited text was never logged or scored."""
    first = _hatexplain(tmp_path / "release" / "dataset.json",
                        {"1_gab": ("you are an awful lot", HATE), "2_gab": ("lovely weather today", NORMAL)})
    second = _hatexplain(tmp_path / "mine" / "dataset.json",
                         {"1_gab": ("you are a lovely lot", NORMAL), "3_gab": ("an awful take", HATE)})
    db = tmp_path / "log.sqlite"
    results = [run_audit(str(f), db=db, detector_objects={"w": Words()}, progress=False) for f in (first, second)]
    assert [r.format for r in results] == ["hatexplain", "hatexplain"]
    logged = set().union(*_texts_by_platform(db).values())
    assert {"you are a lovely lot", "an awful take"} <= logged, logged  # the second file's texts, scored
    assert [r.dataset for r in results] == [content_name(file_digest(first)), content_name(file_digest(second))]
    # neither is the release the catalog pins (by its upstream git blob id), and the note says so
    assert any("its bytes are not the hatexplain data set's" in n for n in results[1].notes), results[1].notes
    texts = _texts_by_platform(db)
    assert texts[f"dataset:{results[1].dataset}"] == {"you are a lovely lot", "an awful take"}
    assert texts[f"dataset:{results[0].dataset}"] == {"you are an awful lot", "lovely weather today"}
    again = run_audit(str(first), db=db, detector_objects={"w": Words()}, progress=False)
    assert again.dataset == results[0].dataset  # the same bytes are the same data set: nothing logged anew
    assert sum(len(t) for t in _texts_by_platform(db).values()) == 4


def test_the_released_hatexplain_file_is_hatexplain_by_its_git_blob_id(tmp_path):
    """The catalog pins HateXplain's dataset.json by its git blob id in the authors' repository (the
    file could not be read where the pin was written): a file with that blob id is `hatexplain` and is
    cited, under any name or folder; another is named by its content."""
    release = _hatexplain(tmp_path / "somewhere" / "posts.json",
                          {"1_gab": ("you are an awful lot", HATE), "2_twitter": ("lovely weather today", NORMAL)})
    other = _hatexplain(tmp_path / "hatexplain" / "dataset.json", {"1_gab": ("you are a lovely lot", NORMAL)})
    assert CATALOG["hatexplain"].blob_pinned_files() == [("dataset.json", "741bc082c38f4f8ee45cebdc868b3768e3901089")]
    assert load_dataset(str(release)).name.startswith("file-")  # not the release's bytes
    blob = hashlib.sha1(b"blob %d\0" % release.stat().st_size + release.read_bytes()).hexdigest()
    pinned = (RemoteFile("dataset.json", "", git_blob=blob),)
    with mock.patch.dict(CATALOG, {"hatexplain": dataclasses.replace(CATALOG["hatexplain"], files=pinned)}):
        assert load_dataset(str(release)).name == "hatexplain"
        data = load_dataset(str(other))
        assert data.name.startswith("file-") and any("its bytes are not the hatexplain data set's" in n
                                                      for n in data.notes)
        db = tmp_path / "log.sqlite"
        run_audit(str(release), db=db, detector_objects={"w": Words()}, progress=False)
        report = build(load(db))
        assert any("Mathew" in r and "HateXplain" in r for r in report["references"]), report["references"]


def _tweeteval(folder, texts, labels, mapping="0\tnot-hate\n1\thate"):
    folder.mkdir(parents=True)
    (folder / "test_text.txt").write_text("".join(t + "\n" for t in texts), encoding="utf-8")
    (folder / "test_labels.txt").write_text("".join(f"{v}\n" for v in labels), encoding="utf-8")
    (folder / "mapping.txt").write_text(mapping, encoding="utf-8")
    return folder


def _as_released(folder, task):
    """The catalog takes the folder's three files for TweetEval's `task` test split while inside (the
    release is not shipped, and tests never read it from elsewhere)."""
    entry = CATALOG["tweeteval"]
    pins = tuple(RemoteFile(f"{task}/{f}", "", hashlib.sha256((folder / f).read_bytes()).hexdigest())
                 for f in ("test_text.txt", "test_labels.txt", "mapping.txt"))
    return mock.patch.dict(CATALOG, {"tweeteval": dataclasses.replace(entry, files=entry.files + pins)})


TWEETS = ["@user you awful person ", "a sunny morning", "@user so awful", "nice one "]


def test_a_tweeteval_split_is_tweeteval_only_with_the_released_files(tmp_path):
    """The release's files keep `tweeteval-TASK`, the task the pinned files are, under any folder name;
    a look-alike `hate/` folder, and the release's tweets with an edited label, are named by content."""
    release = _tweeteval(tmp_path / "tweeteval" / "hate", TWEETS, [1, 0, 1, 0])
    copy = _tweeteval(tmp_path / "downloads" / "split", TWEETS, [1, 0, 1, 0])
    mine = _tweeteval(tmp_path / "mine" / "hate", ["my own awful tweet", "my own kind tweet"], [1, 0])
    relabelled = _tweeteval(tmp_path / "relabelled" / "hate", TWEETS, [1, 1, 1, 0])
    with _as_released(release, "hate"):
        for given in (release, release / "test_labels.txt", copy / "test_text.txt"):
            data = load_dataset(str(given))
            assert (data.format, data.name) == ("tweeteval", "tweeteval-hate"), given
            assert not any("by its content" in n for n in data.notes)
        data = load_dataset(str(mine))
        assert data.format == "tweeteval" and data.name == content_name(file_digest(mine / "test_text.txt"))
        assert any("its bytes are not the tweeteval data set's" in n for n in data.notes), data.notes
        data = load_dataset(str(relabelled))
        assert data.name == content_name(file_digest(relabelled / "test_text.txt"))
        assert any("is TweetEval's hate test split, but test_labels.txt beside it is not the release's" in n
                   for n in data.notes), data.notes
        (copy / "mapping.txt").unlink()  # the labels' names would be 0 and 1: not the release's
        assert load_dataset(str(copy)).name.startswith("file-")
    # without the pins (a folder named `hate` says nothing), the release stand-in is content-named too
    assert load_dataset(str(release)).name == content_name(file_digest(release / "test_text.txt"))


def test_only_the_released_tweeteval_split_is_pooled_and_cited_as_tweeteval(tmp_path):
    release = _tweeteval(tmp_path / "tweeteval" / "hate", TWEETS, [1, 0, 1, 0])
    mine = _tweeteval(tmp_path / "mine" / "hate", ["my own awful tweet", "my own kind tweet"], [1, 0])
    db = tmp_path / "log.sqlite"
    with _as_released(release, "hate"):
        results = [run_audit(str(f), db=db, detector_objects={"w": Words()}, progress=False) for f in (release, mine)]
    assert [r.dataset for r in results] == ["tweeteval-hate", content_name(file_digest(mine / "test_text.txt"))]
    texts = _texts_by_platform(db)
    assert texts == {"dataset:tweeteval-hate": set(TWEETS),
                     f"dataset:{results[1].dataset}": {"my own awful tweet", "my own kind tweet"}}
    report = build(load(db))
    assert report["reference_keys"].count("tweeteval") == 1
    html = render_html(report)
    assert html.count("Francesco Barbieri, Jose Camacho-Collados") == 1
    assert f"cite their sources): {results[1].dataset}." in html
