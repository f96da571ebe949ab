"""A data set's identity (its name, and the platform its comments are logged and reported under)
comes from the reader or shorthand that identified it, never from the file's name: a plain file
saved as davidson.csv or hatecheck.csv is not Davidson's or HateCheck's data, is never pooled with
them in the report and is not cited as them."""


from modlens.analysis import labelled
from modlens.analysis.data import load
from modlens.analysis.report import build, render_html
from modlens.audit import run_audit
from modlens.datasets.registry import load as load_dataset
from modlens.detectors.base import Detector
from csv_files import write_csv as _table
from csv_files import labelled_csv as _write
from realtools import requires


class Words(Detector):
    labels, toxicity_label = ("toxicity",), "toxicity"

    def __init__(self):
        self.name, self.version, self.training = "words", "test-1", None

    def score(self, texts):
        return [{"toxicity": 0.9 if "bad" in t else 0.1} for t in texts]




ROWS = [(f"comment {i} {'bad' if i % 2 else 'fine'} words", i % 2) for i in range(30)]


def test_a_file_named_like_a_shipped_data_set_is_not_that_data_set(tmp_path):
    db = tmp_path / "log.sqlite"
    run_audit("davidson", db=db, detector_objects={"w": Words()}, progress=False, limit=40)
    fake = _write(tmp_path / "davidson.csv", ROWS)
    result = run_audit(str(fake), db=db, detector_objects={"w": Words()}, progress=False)
    assert result.dataset != "davidson"
    out = labelled.analyze(load(db))
    by = {s["source"]: s for s in out["sources"]}
    assert by["dataset:davidson"]["n"] == 40  # the real Davidson alone, never pooled with the file
    (other,) = [s for s in by if s != "dataset:davidson"]
    assert by[other]["n"] == 30 and not other.startswith("dataset:davidson")
    report = build(load(db))
    assert report["reference_keys"].count("davidson") == 1  # the real audit cites Davidson et al.
    html = render_html(report)
    assert html.count("Thomas Davidson, Dana Warmsley") == 1
    # the file is listed among those read by a generic reader, under its content hash, not as Davidson
    assert f"cite their sources): {other.removeprefix('dataset:')}." in html


def test_identity_follows_the_bytes_not_the_name(tmp_path):
    """Every name a known data set owns is refused to a plain file; the same bytes under two names
    are one source, two files with different bytes under one reserved name are two."""
    for name in ("davidson", "hatecheck", "noisyhate", "sass", "tweeteval", "civil-comments", "csv", "Davidson"):
        data = load_dataset(str(_write(tmp_path / f"{name}.csv", ROWS)))
        assert data.format == "csv" and data.name.lower() != name.lower(), (name, data.name)
        assert f"named {data.name} by its content: {name} names a data set" in data.notes[-1]
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    one = load_dataset(str(_write(tmp_path / "a" / "davidson.csv", ROWS)))
    again = load_dataset(str(_write(tmp_path / "b" / "davidson.csv", ROWS)))
    other = load_dataset(str(_write(tmp_path / "b" / "hatecheck.csv", ROWS[:10])))
    assert one.name == again.name != other.name
    mine = load_dataset(str(_write(tmp_path / "mine.csv", ROWS)))  # an ordinary name decides nothing either
    assert mine.name == one.name and "not by its file name" in mine.notes[-1]


def test_a_path_that_shadows_a_shorthand_is_read_and_not_named_by_it(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    _write(tmp_path / "hatecheck", ROWS)  # no suffix: the path `hatecheck` exists here
    data = load_dataset("hatecheck")
    assert data.format == "csv" and data.name.startswith("file-") and len(data.items) == 30
    assert any("the path hatecheck is read, not the shorthand's data set" in n for n in data.notes), data.notes




SASS_ROWS = [(0.8 if i % 2 else 0.1, "Sarcasm" if i % 3 else "Neutral", "filtered", f"text {i}") for i in range(12)]


def test_sass_human_scores_are_found_by_the_columns_not_the_file_name(tmp_path):
    """The released human-score file's header (toxicity, category, tag, text) makes `toxicity` the
    human score under any name; "human" in a file's name makes nothing a gold label."""
    renamed = load_dataset(str(_table(tmp_path / "scores.csv", ["toxicity", "category", "tag", "text"], SASS_ROWS)))
    assert renamed.format == "sass" and renamed.gold != "none"
    assert [i.labels["toxic"] for i in renamed.items] == ["1" if r[0] > 0.5 else "0" for r in SASS_ROWS]
    other = [(t, c, tag, f"text {i}", "x") for i, (t, c, tag, _) in enumerate(SASS_ROWS)]
    named = load_dataset(str(_table(tmp_path / "human_scores.csv", ["toxicity", "category", "tag", "text", "source"],
                                    other)))
    assert named.format == "sass" and all("toxic" not in i.labels for i in named.items)


def test_a_file_in_davidsons_layout_is_davidson_only_with_davidsons_bytes(tmp_path):
    """Davidson's columns and its index, other tweets: the shipped data set's name would pool and cite
    them as Davidson's, and the index would key them as Davidson's own tweets (tweet-0, tweet-1),
    so the file's texts never entered the log."""
    db = tmp_path / "log.sqlite"
    run_audit("davidson", db=db, detector_objects={"w": Words()}, progress=False, limit=2)
    own = tmp_path / "davidson.csv"
    own.write_text(",count,hate_speech,offensive_language,neither,class,tweet\n"
                   "0,3,0,0,3,2,my own unrelated tweet\n1,3,0,3,0,1,another bad tweet of mine\n", encoding="utf-8")
    result = run_audit(str(own), db=db, detector_objects={"w": Words()}, progress=False)
    assert result.format == "davidson" and result.dataset.startswith("file-")
    assert any("its bytes are not the davidson data set's" in n for n in result.notes)
    data = load(db)
    texts = {data.texts[c["text_id"]] for c in data.comments.values()}
    assert {"my own unrelated tweet", "another bad tweet of mine"} <= texts and len(data.comments) == 4
    by = {s["source"]: s["n"] for s in labelled.analyze(data)["sources"]}
    assert by == {"dataset:davidson": 2, f"dataset:{result.dataset}": 2}
    assert build(data)["reference_keys"].count("davidson") == 1
    assert load_dataset("davidson").name == "davidson"  # the shipped bytes, by shorthand or path


def test_noisyhate_is_noisyhate_only_with_the_shipped_bytes(tmp_path):
    """NoisyHate's reader named every file in its layout `noisyhate`: a modified dev.csv (a row dropped,
    a perturbation edited) was pooled with the real one and cited as Ye, Le and Lee's. The catalog pins
    the shipped files' SHA-256; the same bytes under any name are NoisyHate, other bytes are not."""
    import hashlib

    from modlens.datasets.catalog import CATALOG
    from modlens.paths import shipped_data

    shipped = shipped_data() / "noisyhate"
    pins = dict(CATALOG["noisyhate"].shipped_sha256)
    assert set(pins) == {"dev.csv", "perturbations.json"}  # every shipped data file, its hash beside it
    for file, pin in pins.items():
        assert hashlib.sha256((shipped / file).read_bytes()).hexdigest() == pin, file
    assert load_dataset("noisyhate").name == load_dataset(str(shipped / "dev.csv")).name == "noisyhate"
    copy = tmp_path / "pairs.csv"
    copy.write_bytes((shipped / "dev.csv").read_bytes())
    assert load_dataset(str(copy)).name == "noisyhate"
    lines = (shipped / "dev.csv").read_bytes().splitlines(keepends=True)
    edited = tmp_path / "noisyhate" / "dev.csv"
    edited.parent.mkdir()
    edited.write_bytes(b"".join(lines[:-1]))  # the last pair dropped
    data = load_dataset(str(edited))
    assert data.format == "noisyhate" and data.name.startswith("file-") and len(data.items) == len(lines) - 2
    assert any("its bytes are not the noisyhate data set's" in n for n in data.notes), data.notes
    db = tmp_path / "log.sqlite"
    for path in (shipped / "dev.csv", edited):
        run_audit(str(path), db=db, detector_objects={"w": Words()}, progress=False, limit=5)
    by = {s["source"]: s["n"] for s in labelled.analyze(load(db))["sources"]}
    assert by == {"dataset:noisyhate": 5, f"dataset:{data.name}": 5}


def test_sass_is_sass_only_with_the_released_bytes(tmp_path):
    """SASS's reader named every file in its layout `sass`. The catalog pins the four released files'
    SHA-256 (fetched as released, the paths in the authors' repository); a file with other bytes in
    SASS's layout is named by its content, and a released file under any name is SASS."""
    from modlens.datasets.catalog import CATALOG

    released = {f.path: f.sha256 for f in CATALOG["sass"].files}
    assert set(released) == {"full_toxicity_benchmark.tsv", "norm_human_toxicity_scores.csv",
                             "toxicity_benchmark_scores.csv", "final_experiment_results.csv"}
    assert all(h and len(h) == 64 for h in released.values())
    mine = load_dataset(str(_table(tmp_path / "norm_human_toxicity_scores.csv", ["toxicity", "category", "tag", "text"],
                                   SASS_ROWS)))
    assert mine.format == "sass" and mine.name.startswith("file-") and mine.gold != "none"
    assert any("its bytes are not the sass data set's" in n for n in mine.notes), mine.notes
    # a folder is the data set its files are: SASS when every file is a released one, else its content
    from modlens.scale.sources import load_dataset as load_folder
    from sass_release import as_released

    assert load_folder(str(tmp_path)).name.startswith("file-")
    with as_released(tmp_path / "norm_human_toxicity_scores.csv"):
        assert load_folder(str(tmp_path)).name == "sass"


@requires("sass-release")
def test_the_released_sass_files_are_sass():
    """The release is not shipped (no licence): read where it lies (MODLENS_SASS); each of its files,
    by its pinned SHA-256, is SASS."""
    from modlens.datasets.catalog import CATALOG
    from test_report_sass_paper import RELEASED

    for f in CATALOG["sass"].files:
        assert load_dataset(str(RELEASED / f.path)).name == "sass", f.path
