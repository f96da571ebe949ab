"""Study packs carry the folder's item set and assignment, so every participant who
joins gets the same tasks; and the daemon's slot rule (study/assignment.py) gives raters of one
log distinct assignments while there are free ones, the same ones on every run."""
from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

from modlens import paths
from modlens.study.assignment import client_assignment, load_plan, slot_of
from modlens.study import assignment, folder, itemset, join, pack
from modlens.config import StudyConfigError


def _folder(root: Path, name: str = "s", with_set: bool = True) -> folder.StudyFolder:
    folder.init_folder(root / name)
    if with_set:
        items = [{"id": f"i{n:03d}", "platform": "youtube", "comment_key": f"k{n}", "text": f"comment number {n} here",
                  "stratum": "all", "score": None} for n in range(1, 7)]
        params = {"by": "label:test", "seed": 0}
        data = {"format": itemset.FORMAT, "format_version": itemset.FORMAT_VERSION,
                "sha256": itemset.checksum(params, items), "params": params, "items": items}
        itemset.write(data, root / name)
        study = folder.load(root / name)
        assignment.write(assignment.make(data, study, raters=3, items_per_task=3, gold_per_task=1), root / name)
    return folder.load_folder(root / name)


def test_pack_carries_the_item_set_and_join_writes_it(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MODLENS_HOME", str(tmp_path / "home"))
    f = _folder(tmp_path)
    pack.write(f, tmp_path / "s.modlens")
    got = pack.read(tmp_path / "s.modlens")
    assert json.loads((tmp_path / "s.modlens").read_text())["format_version"] == 3
    assert got.itemset == itemset.read(f.path / itemset.FILE)
    assert got.assignment == assignment.read(f.path)
    join.join(got, "test")
    home = paths.home()
    assert itemset.read(home / itemset.FILE) == got.itemset
    assert assignment.read(home) == got.assignment
    plan = load_plan(home, join.as_joined(folder.load(home), "t")[0])
    assert plan is not None and len(plan.assignment["assignments"]) == 6

    # a pack without a set stays format 2, and joining it removes the set the last study left
    plain = _folder(tmp_path, "plain", with_set=False)
    pack.write(plain, tmp_path / "plain.modlens")
    assert json.loads((tmp_path / "plain.modlens").read_text())["format_version"] == 2
    join.join(pack.read(tmp_path / "plain.modlens"), "test", replace=True)
    assert not (home / itemset.FILE).exists() and not (home / assignment.FILE).exists()


def test_pack_refuses_a_set_that_does_not_fit(tmp_path: Path) -> None:
    f = _folder(tmp_path)
    (f.path / assignment.FILE).unlink()
    with pytest.raises(pack.PackError, match="study assign"):
        pack.build(f)
    # an item set edited inside a pack whose checksum was recomputed: the set's own checksum refuses it
    f = _folder(tmp_path, "t")
    body = pack.build(f)
    body.pop("sha256")
    body["itemset"]["items"][0]["text"] = "edited"
    body["sha256"] = hashlib.sha256(pack.canonical(body)).hexdigest()
    with pytest.raises(pack.PackError, match="checksum mismatch"):
        pack.parse(json.dumps(body), "edited.modlens")
    body = pack.build(f)
    body.pop("sha256")
    del body["assignment"]
    body["sha256"] = hashlib.sha256(pack.canonical(body)).hexdigest()
    with pytest.raises(pack.PackError, match="without its assignment"):
        pack.parse(json.dumps(body), "no-assignment.modlens")


def test_daemon_refuses_a_set_without_assignment(tmp_path: Path) -> None:
    f = _folder(tmp_path)
    (f.path / assignment.FILE).unlink()
    with pytest.raises(StudyConfigError, match="an item set without") as err:
        load_plan(f.path, f.study)
    assert "study assign" in (err.value.fix or "")
    assert load_plan(_folder(tmp_path, "none", with_set=False).path, f.study) is None


def test_slots_are_distinct_on_one_log_then_shared(tmp_path: Path) -> None:
    f = _folder(tmp_path)
    plan = load_plan(f.path, f.study)
    assert plan is not None
    raters = [f"rater-{n}" for n in range(9)]
    slots = [slot_of(raters, r, plan) for r in raters]
    assert sorted(slots[:6]) == list(range(6))          # 6 slots: the first 6 raters get one each
    assert slots == [slot_of(raters, r, plan) for r in raters]
    # a rater's slot depends only on the raters before it, so later arrivals change nothing
    assert [slot_of(raters[:3], r, plan) for r in raters[:3]] == slots[:3]
    alone = client_assignment(plan, slot_of([], "rater-x", plan))
    entry = plan.assignment["assignments"][alone["slot"] - 1]
    assert alone["assignment"] == entry["id"] and [i["ref"] for i in alone["items"]] == entry["order"]
    assert all(i["text"] == plan.text(i["ref"]) for i in alone["items"])
    assert {i["platform"] for i in alone["items"] if i["gold"]} == {"study"}


def _repacked(body: dict) -> str:
    body.pop("sha256")
    body["sha256"] = hashlib.sha256(pack.canonical(body)).hexdigest()
    return json.dumps(body)


def test_a_newer_item_set_or_assignment_in_a_pack_says_upgrade(tmp_path: Path) -> None:
    # every reader says "upgrade modlens" for a format_version newer than it reads; inside a pack the
    # assignment's was replaced by "ask the researcher again" (and the item set's kept only by comparing
    # fix strings), though asking again brings the same newer file. Other problems of the carried
    # files keep the pack's fix: a participant cannot draw or assign again, only the researcher can
    from modlens.errors import UPGRADE

    f = _folder(tmp_path)
    for key, what in (("itemset", "modlens item set"), ("assignment", "modlens assignment")):
        body = pack.build(f)
        body[key]["format_version"] += 1
        with pytest.raises(pack.PackError) as caught:
            pack.parse(_repacked(body), "newer.modlens")
        assert f"{what} format_version 2 is newer than this modlens reads" in caught.value.message, key
        assert "does not fit its study" not in caught.value.message
        assert caught.value.fix == UPGRADE, key
    body = pack.build(f)
    body["itemset"]["items"][0]["text"] = "edited"
    with pytest.raises(pack.PackError, match="checksum mismatch") as caught:
        pack.parse(_repacked(body), "edited.modlens")
    assert caught.value.fix == pack.ASK_AGAIN
    body = pack.build(f)
    body["assignment"]["itemset_sha256"] = "0" * 64
    with pytest.raises(pack.PackError, match="another item set") as caught:
        pack.parse(_repacked(body), "mixed.modlens")
    assert caught.value.fix == pack.ASK_AGAIN
