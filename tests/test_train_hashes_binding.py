"""A head's hash set of fit texts names the head file it was written for (its sha256, first in the
file): beside a head trained again in its place, an older set says nothing of the new head's fit
texts, and the overlap is unknown, with why, rather than decided by the other head's texts."""
from __future__ import annotations

import hashlib
import json
import shutil

import pytest

from modlens import paths
from modlens.cli import main
from modlens.detectors.exclusion import benchmark_texts
from modlens.detectors.head import Head, load_labelled, split_sample
from modlens.detectors.minilm import DEFAULT_HEAD, head_training
from modlens.detectors.minilm6 import DEFAULT_HEAD6, head6_training
from modlens.detectors.head_multi import MultiHead
from modlens.trainingdata import hashes_path, overlap, read_hash_file, read_hashes, run_record, text_hashes, write_hashes


def _copy(head, tmp_path):
    out = tmp_path / head.name
    shutil.copy(head, out)
    shutil.copy(hashes_path(head), hashes_path(out))
    return out


@pytest.mark.parametrize("shipped", [DEFAULT_HEAD, DEFAULT_HEAD6], ids=["one-label", "six-label"])
def test_shipped_sets_name_their_heads(shipped, tmp_path):
    load, training = (Head.load, head_training) if shipped == DEFAULT_HEAD else (MultiHead.load, head6_training)
    t = training(load(shipped), shipped)
    assert t.hashes_path == hashes_path(shipped) and t.notes == []
    out = _copy(shipped, tmp_path)
    head = load(out)
    head.meta["training"]["note"] = "trained again"  # another head file in the same place, the old set beside it
    head.save(out)
    t = training(load(out), out)
    assert t.hashes_path is None and t.hashes() is None
    [why] = t.notes
    assert why.startswith(f"{hashes_path(out).name} lists the fit texts of another head") and out.name in why
    assert t.summary().endswith(f"; {why}")  # what `modlens detectors` prints
    davidson = benchmark_texts(sass_dir=None)["davidson"]
    assert overlap(training(load(shipped), shipped), davidson)["in_sample"] >= 11  # tweets in the shipped head's set
    assert overlap(t, davidson) == {"level": "unknown", "in_sample": None, "checked": "unknown"}


def test_a_set_naming_no_head_is_not_read_for_one(tmp_path):
    out = _copy(DEFAULT_HEAD, tmp_path)
    write_hashes(hashes_path(out), ["a text the head never saw"])  # no head named: a set as written before
    assert read_hash_file(hashes_path(out))[1] is None
    t = head_training(Head.load(out), out)
    assert t.hashes_path is None and "does not name the head it lists the fit texts of" in t.notes[0]

    class Det:
        name, version, training = "minilm-toxicity", "x", t
    record, notes = run_record({"m": Det()}, "davidson")
    assert "hashes" not in record["m"] and record["m"]["notes"] == t.notes
    assert notes == [f"training overlap: m: in-sample or not: unknown; it declares training on davidson, jigsaw-toxic "
                     f"({t.source}); {t.notes[0]}"]


@pytest.mark.slow  # trains a head on MiniLM embeddings
def test_train_head_in_place_of_a_head_writes_the_new_heads_set(data_dir, tmp_path, capsys):
    out = _copy(DEFAULT_HEAD, tmp_path)
    old = read_hashes(hashes_path(out))
    data = data_dir / "davidson" / "labeled_data.csv"
    assert main(["train-head", "--data", str(data), "--text-col", "tweet", "--label-col", "class",
                 "--positive", "0,1", "--sample", "80", "--seed", "3", "--out", str(out)]) == 0
    summary = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert summary["hashes"] == str(hashes_path(out))
    t = head_training(Head.load(out), out)
    assert t.hashes_path == hashes_path(out) and t.notes == []
    labelled = load_labelled(str(data), text_col="tweet", label_col="class", positive=["0", "1"])
    _, fit = split_sample(labelled.labels, 80, 3, 0.2)
    new = t.hashes()
    assert new is not None and list(new) == list(text_hashes(labelled.texts[i] for i in fit)) and len(new) != len(old)


def test_a_run_audited_with_a_set_before_it_named_its_head_still_reads_it(tmp_path, monkeypatch):
    """A study audited before hash sets named their head recorded the sha256 of the bare set: the
    same hashes with a head named first are the same set (its rows still checked), other hashes are not."""
    from modlens.trainingdata import recorded_hashes

    monkeypatch.setenv(paths.DATA_ENV, str(tmp_path))
    bare = write_hashes(tmp_path / "h.train-hashes.bin", ["you fool", "a kind word"])
    head = tmp_path / "h.json"
    head.write_text("{}")
    record = {"detector": f"minilm-toxicity@minilm-l6.bcfe46d679df+head.{_sha12(head)}.len128",
              "hashes": "data:h.train-hashes.bin", "hashes_sha256": hashlib.sha256(bare.read_bytes()).hexdigest()}
    write_hashes(bare, ["you fool", "a kind word"], describes=head)
    found, why = recorded_hashes(record)
    assert why == "" and found is not None and list(found) == list(text_hashes(["you fool", "a kind word"]))
    write_hashes(bare, ["you fool"], describes=head)
    assert recorded_hashes(record) == (None, "hash set data:h.train-hashes.bin differs from the one the audit recorded")


def test_a_set_whose_hashes_cannot_be_read_is_refused_when_the_head_is_loaded(tmp_path):
    """The set is read whole when the head is loaded, by the one parser: a good header over a cut
    body is no set of fit texts (a note says why), not one that breaks `modlens detectors` later."""
    out = _copy(DEFAULT_HEAD, tmp_path)
    good = hashes_path(out).read_bytes()
    hashes_path(out).write_bytes(good[:-3])  # its last hash cut short
    t = head_training(Head.load(out), out)
    assert t.hashes_path is None and t.hashes() is None and "not a hash set file" in t.notes[0]
    assert t.summary().endswith(t.notes[0])


def test_the_set_checked_at_load_is_the_set_used(tmp_path):
    """A set rewritten after the head was loaded (for another head) is not read in its place: the
    hashes checked against the head are the ones its overlap, summary and record use."""
    out = _copy(DEFAULT_HEAD, tmp_path)
    t = head_training(Head.load(out), out)
    at_load = hashes_path(out).read_bytes()
    checked = read_hashes(hashes_path(out))
    other = tmp_path / "other.json"
    other.write_text("{}")
    write_hashes(hashes_path(out), ["a text the head never saw"], describes=other)
    assert list(t.hashes()) == list(checked)
    assert f"{len(checked):,} distinct keys" in t.summary() and t.record()["n_hashes"] == len(checked)
    assert t.record()["hashes_sha256"] == hashlib.sha256(at_load).hexdigest()  # the set used, not the file now


def test_a_recorded_set_naming_another_head_is_not_read_for_the_audited_one(tmp_path, monkeypatch):
    """The file the record's sha256 names, when it names another head than the audited version's
    (a record written while the set beside the head was another head's), is not that head's set."""
    from modlens.trainingdata import recorded_hashes

    monkeypatch.setenv(paths.DATA_ENV, str(tmp_path))
    y, x = tmp_path / "y.json", tmp_path / "x.json"
    y.write_text('{"head": "y"}')
    x.write_text('{"head": "x"}')
    named_x = write_hashes(tmp_path / "h.train-hashes.bin", ["a text the head never saw"], describes=x)
    record = {"detector": f"minilm-toxicity@minilm-l6.bcfe46d679df+head.{_sha12(y)}.len128",
              "hashes": "data:h.train-hashes.bin", "hashes_sha256": hashlib.sha256(named_x.read_bytes()).hexdigest()}
    found, why = recorded_hashes(record)
    assert found is None and "another head" in why and _sha12(x) in why and _sha12(y) in why
    record["detector"] = record["detector"].replace(_sha12(y), _sha12(x))
    found, why = recorded_hashes(record)
    assert why == "" and list(found) == list(text_hashes(["a text the head never saw"]))


def _sha12(path):
    return hashlib.sha256(path.read_bytes()).hexdigest()[:12]


@pytest.mark.parametrize("kind", ["head", "head6"])
def test_an_old_audits_bare_set_is_not_read_as_the_set_of_another_head(kind, tmp_path, monkeypatch):
    """An old audit of head Y recorded the bare set's sha256; the set rebuilt for head X with the same
    hashes names X: the record's version names Y, so the set is not taken as the one it audited with."""
    from modlens.trainingdata import recorded_hashes

    monkeypatch.setenv(paths.DATA_ENV, str(tmp_path))
    bare = write_hashes(tmp_path / "h.train-hashes.bin", ["you fool", "a kind word"])
    y, x = tmp_path / "y.json", tmp_path / "x.json"
    y.write_text('{"head": "y"}')
    x.write_text('{"head": "x"}')
    record = {"detector": f"minilm-toxicity@minilm-l6.bcfe46d679df+{kind}.{_sha12(y)}.len128",
              "hashes": "data:h.train-hashes.bin", "hashes_sha256": hashlib.sha256(bare.read_bytes()).hexdigest()}
    write_hashes(bare, ["you fool", "a kind word"], describes=x)
    found, why = recorded_hashes(record)
    assert found is None and "another head" in why and _sha12(x) in why and _sha12(y) in why
    write_hashes(bare, ["you fool", "a kind word"], describes=y)  # the set of the head it audited
    found, why = recorded_hashes(record)
    assert why == "" and list(found) == list(text_hashes(["you fool", "a kind word"]))


def _build_head_hashes():
    import importlib.util
    from pathlib import Path

    tool = Path(__file__).resolve().parents[1] / "tools" / "build_head_hashes.py"
    spec = importlib.util.spec_from_file_location("build_head_hashes_under_test", tool)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.main


@pytest.mark.parametrize("shipped", [DEFAULT_HEAD, DEFAULT_HEAD6], ids=["one-label", "six-label"])
def test_build_head_hashes_writes_a_set_for_a_one_label_head_only(shipped, tmp_path, capsys):
    """tools/build_head_hashes.py draws a one-label head's fit rows (`train`'s draw): pointed at a
    six-label head, whose fit rows are drawn otherwise (after an exclusion), it must write no set
    naming that head, though the numbers of its training record add up."""
    data = tmp_path / "pool.csv"
    data.write_text("text,is_offensive\n" + "".join(f"text number {i} here,{i % 2}\n" for i in range(40)))
    labelled = load_labelled(data)
    head = tmp_path / shipped.name
    raw = json.loads(shipped.read_text())
    raw["training"].update(data_sha256=labelled.sha256, sample=20, seed=1, test_size=0.2, n_train=16)
    head.write_text(json.dumps(raw))
    rc = _build_head_hashes()(["--data", str(data), "--head", str(head)])
    err = capsys.readouterr().err
    if shipped == DEFAULT_HEAD:
        _, fit = split_sample(labelled.labels, 20, 1, 0.2)
        assert rc == 0 and list(read_hashes(hashes_path(head))) == list(text_hashes(labelled.texts[i] for i in fit))
        assert read_hash_file(hashes_path(head))[1] == hashlib.sha256(head.read_bytes()).hexdigest()
    else:
        assert rc == 1 and "not a modlens head file (modlens-logistic-head/1)" in err
        assert not hashes_path(head).exists()
