"""The report only reads the log: the same log renders to the same JSON (and HTML) whether or not
any detector, torch, transformers or sentence encoder can be imported, because what a section
shows that needs a model (attack quality verdicts, normalization recovery) was stored by
`audit --attack` / `modlens rescore`. Also: the report frame knows sections only through
`analysis/sections/`, and a section that returns neither a dict nor a Skip is refused."""
from __future__ import annotations

import json
import subprocess
import sys

import pytest

from modlens.analysis import synthetic
from modlens.analysis.data import load
from modlens.analysis.report import analyze_sections, render_html, report_from_db, to_json
from modlens.analysis.sections import SECTIONS
from modlens.analysis.sections.base import Section
from modlens.analysis.skip import Skip
from modlens.audit.attack_checks import check_attacks
from modlens.cli import main
from modlens.detectors import registry
from modlens.perturb.base import Variant
from modlens.perturb.quality import MODEL_FILTERS, QualityFilters
from modlens.studylog.store import StudyLog

BLOCKED = ("modlens.detectors", "torch", "transformers", "sentence_transformers")
REPORT_WITHOUT_MODELS = f"""
import importlib.abc, json, sys
class Block(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if any(name == b or name.startswith(b + ".") for b in {BLOCKED!r}):
            raise ImportError(f"blocked for this test: {{name}}")
sys.meta_path.insert(0, Block())
for name in list(sys.modules):
    if any(name == b or name.startswith(b + ".") for b in {BLOCKED!r}):
        del sys.modules[name]
from modlens.analysis.report import render_html, report_from_db, to_json
report = report_from_db(sys.argv[1])
report.pop("generated_at")
html = render_html({{**report, "generated_at": "-"}})
print(json.dumps({{"json": json.loads(to_json(report)), "html_len": len(html)}}))
"""


class WordOverlap:
    """Stand-in sentence encoder (the real one is tested in test_attack_quality.py): shared words."""

    def similarities(self, source: str, texts: list[str]) -> list[float]:
        a = set(source.split())
        return [len(a & set(t.split())) / len(a | set(t.split())) for t in texts]


@pytest.fixture(scope="module")
def log_with_attacks(tmp_path_factory):
    db = tmp_path_factory.mktemp("pure") / "log.sqlite"
    synthetic.generate(db, synthetic.SyntheticSpec(seed=2))
    target = registry.create("profanity-check")
    seed = "you are an idiot"
    with StudyLog(db) as lg:
        did = lg.ensure_detector(target.name, target.version, target.toxicity_label, target.threshold, {})
        for i, text in enumerate(("you are an 1d10t", "you are a dolt")):
            cid = lg.add_comment("dataset", f"a{i}", None, seed)
            tox = target.toxicity(target.score([text])[0])
            for t, r in zip((seed, text), target.score([seed, text])):
                lg.add_score(t, did, r, target.toxicity(r), None, None)
            lg.add_variant(cid, Variant(
                text=text, strategy="attack-tae", params={}, seed=0, source_text=seed, target_detector="profanity-check",
                attack={"goal": "tae", "status": "success", "queries": 3, "target": "profanity-check",
                        "target_name": target.name, "target_version": target.version, "threshold": target.threshold,
                        "source_score": 1.0, "final_score": tox, "n_words": 4, "words_edited": 1}))
        check_attacks(lg, QualityFilters(filters=MODEL_FILTERS, similarity=WordOverlap()))
    # the normalized forms the checks stored get the target's score
    assert main(["rescore", str(db), "--detectors", "profanity-check", "--quiet"]) == 0
    return db


def test_same_json_with_no_model_importable(log_with_attacks):
    report = report_from_db(log_with_attacks)
    report.pop("generated_at")
    attacks = report["sections"]["attacks"]
    (row,) = attacks["rows"]
    assert row["recovery"] == {"n": 2, "recovered": 1, "share": 0.5, "unchanged": 1, "unmeasured": 0}
    assert attacks["quality"]["summary"]["not_checked"] == {"dedup": 0, "label": 2, "meaning": 0, "fluency": 0}
    assert {"human", "people", "attacks"} <= set(report["sections"])
    out = subprocess.run([sys.executable, "-c", REPORT_WITHOUT_MODELS, str(log_with_attacks)], capture_output=True,
                         text=True)
    assert out.returncode == 0, out.stderr[-3000:]
    blocked = json.loads(out.stdout)
    assert blocked["json"] == json.loads(to_json(report))
    assert blocked["html_len"] == len(render_html({**report, "generated_at": "-"}))


def test_the_meaning_verdict_is_read_from_the_log_not_recomputed(log_with_attacks):
    verdicts = [json.loads(r["attack_json"])["checks"] for r in StudyLog(log_with_attacks, readonly=True).query(
        "SELECT attack_json FROM variants WHERE attack_json IS NOT NULL ORDER BY variant_id")]
    assert [v["meaning"]["value"] for v in verdicts] == [0.6, 0.333333]  # the stand-in encoder's word overlap
    assert [v["fluency"]["value"] for v in verdicts] == [1, 0]
    row = report_from_db(log_with_attacks)["sections"]["attacks"]["rows"][0]
    assert row["filtered_out"]["meaning"] == 2  # both below 0.8 by the stored values


def test_sections_are_listed_once_and_in_report_order(log_with_attacks):
    keys = [s.key for s in SECTIONS]
    assert keys == ["human", "itemset", "overlap", "people", "robustness", "normalization", "attacks", "sass", "labelled",
                    "hatecheck", "fusion", "api"]
    report = report_from_db(log_with_attacks)
    for part in ("sections", "skipped"):
        assert list(report[part]) == [k for k in keys if k in report[part]]
    assert set(report["sections"]) | set(report["skipped"]) == set(keys)
    assert "majority" not in report["sections"]["human"]  # private: read by people, left out of the JSON


def test_a_section_must_return_a_dict_or_a_skip(log_with_attacks):
    data = load(log_with_attacks)
    broken = Section(key="broken", title="99. Broken", method="-", analyze=lambda data: None, render=lambda s: "")
    with pytest.raises(TypeError, match="broken"):
        analyze_sections(data, [broken])
    needy = Section(key="needy", title="98. Needy", method="-", analyze=lambda data, h: Skip("x"), render=lambda s: "",
                    needs=("human",))
    with pytest.raises(ValueError, match="needs"):
        analyze_sections(data, [needy])
