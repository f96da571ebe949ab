"""A TweetEval split's label integers mean what its task's mapping.txt says: 1 is `hate` in the hate
task, `irony` in the irony task, `neutral` in sentiment. A split copied without its mapping.txt says
nothing about which integer is toxic, so it gets no gold label (and no note that names a mapping.txt
the folder lacks); `--label label=1` names the toxic integer when the user knows it. Files built here,
in TweetEval's layout, with sentences of our own."""
from modlens.datasets.registry import load


def _split(folder, texts, labels, mapping=None):
    folder.mkdir(parents=True)
    (folder / "test_text.txt").write_text("".join(t + "\n" for t in texts), encoding="utf-8")
    (folder / "test_labels.txt").write_text("".join(f"{v}\n" for v in labels), encoding="utf-8")
    if mapping is not None:
        (folder / "mapping.txt").write_text("".join(f"{k}\t{v}\n" for k, v in mapping.items()), encoding="utf-8")
    return folder


TEXTS = ["oh great, another monday", "the bus was on time today", "i just love waiting in line", "lunch was fine"]


def test_an_irony_split_with_its_mapping_has_no_gold_label(tmp_path):
    folder = _split(tmp_path / "irony", TEXTS, [1, 0, 1, 0], {0: "non_irony", 1: "irony"})
    data = load(str(folder / "test_text.txt"))
    assert [it.labels.get("toxic") for it in data.items] == [None] * 4
    assert data.items[0].labels["label"] == "irony" and data.gold == "none"


def test_a_split_without_mapping_txt_gets_no_gold_label_from_bare_integers(tmp_path):
    # the same irony split, copied without its mapping.txt: its 1s are ironic tweets, not toxic ones
    folder = _split(tmp_path / "irony", TEXTS, [1, 0, 1, 0])
    data = load(str(folder / "test_text.txt"))
    assert [it.labels.get("toxic") for it in data.items] == [None] * 4
    assert data.gold == "none"
    assert data.items[0].labels["label"] == "1"  # the raw integer is still stored
    gold_notes = [n for n in data.notes if "gold label" in n]
    assert gold_notes and all("mapping.txt" in n and "not found" in n for n in gold_notes), data.notes
    assert not any("from test_labels.txt and mapping.txt" in n for n in data.notes)


def test_a_split_without_mapping_txt_takes_the_toxic_integer_from_label(tmp_path):
    folder = _split(tmp_path / "hate", TEXTS, [1, 0, 1, 0])
    data = load(str(folder), label="label=1")
    assert [it.labels.get("toxic") for it in data.items] == ["1", "0", "1", "0"]
    assert data.gold == "label in {1}"
