"""`--label` specs. Every comparison operator works; a `=`/threshold spec that makes no
row toxic, or every row, is an error naming the values the column holds and the close matches
(`class=hate` on Davidson: did you mean hate_speech?); Davidson's stored class names are accepted."""
import pytest

from modlens.cli import main
from modlens.datasets import registry
from modlens.datasets.base import DatasetError
from modlens.datasets.gold import GoldSpec


@pytest.mark.parametrize("spec, toxic", [("toxicity>0.5", [0.6, 0.9]), ("toxicity>=0.5", [0.5, 0.6, 0.9]),
                                         ("toxicity<0.5", [0.1, 0.3]), ("toxicity<=0.5", [0.1, 0.3, 0.5])])
def test_each_operator(tmp_path, spec, toxic):
    f = tmp_path / "c.csv"
    values = [0.1, 0.3, 0.5, 0.6, 0.9]
    f.write_text("text,toxicity\n" + "".join(f"comment {v},{v}\n" for v in values))
    data = registry.load(str(f), label=spec)
    got = [float(i.text.split()[1]) for i in data.items if i.labels["toxic"] == "1"]
    assert got == toxic
    op = spec[len("toxicity"):-len("0.5")]
    assert data.gold == f"toxicity {op} 0.5" and GoldSpec.parse(spec).op == op


def test_threshold_outside_the_values_is_an_error(tmp_path):
    f = tmp_path / "c.csv"
    f.write_text("text,toxicity\na,0.1\nb,0.4\n")
    with pytest.raises(DatasetError, match=r"toxicity>0.5: no row is toxic .*values from 0.1 to 0.4"):
        registry.load(str(f), label="toxicity>0.5")
    with pytest.raises(DatasetError, match=r"every row is toxic"):
        registry.load(str(f), label="toxicity<=0.4")
    with pytest.raises(DatasetError, match=r"'x' is not a number; write COLUMN>0"):
        GoldSpec.parse("toxicity>x")


def test_values_matching_no_row_name_the_values_and_close_matches(tmp_path):
    f = tmp_path / "c.csv"
    f.write_text("text,label\na,hateful\nb,non-hateful\nc,hateful\n")
    with pytest.raises(DatasetError) as err:
        registry.load(str(f), label="label=hatefull")
    msg = str(err.value)
    assert "no row is toxic" in msg and "hateful ×2" in msg and "non-hateful ×1" in msg
    assert "did you mean hateful" in err.value.fix and "did you mean" not in msg
    with pytest.raises(DatasetError, match="every row is toxic"):
        registry.load(str(f), label="label=hateful,non-hateful")
    assert [i.labels["toxic"] for i in registry.load(str(f), label="label=hateful").items] == ["1", "0", "1"]


def test_davidson_class_hate_is_an_error_naming_hate_speech():
    with pytest.raises(DatasetError) as err:
        registry.load("davidson", label="class=hate")
    msg = str(err.value)
    assert "no row is toxic (24783 rows" in msg and "0 (hate_speech) ×1430" in msg
    assert err.value.fix.startswith("did you mean hate_speech?")


def test_davidson_accepts_the_stored_class_names():
    by_name = registry.load("davidson", label="class=hate_speech")
    by_code = registry.load("davidson", label="class=0")
    n_name = sum(i.labels.get("toxic") == "1" for i in by_name.iter_items())
    assert n_name == sum(i.labels.get("toxic") == "1" for i in by_code.iter_items()) == 1430


def test_audit_cli_refuses_a_label_that_matches_nothing(tmp_path, capsys):
    f = tmp_path / "c.csv"
    f.write_text("text,label\na,hateful\nb,non-hateful\n")
    code = main(["audit", str(f), "--db", str(tmp_path / "log.sqlite"), "--label", "label=hate",
                 "--detectors", "profanity-check"])
    err = capsys.readouterr().err
    assert code != 0 and "no row is toxic" in err and "fix: did you mean hateful or non-hateful?" in err
