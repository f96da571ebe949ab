"""A TaeBench-style dataset of the attack results in a study log: one row per attack (seed text,
adversarial text, recipe, target detector name+version, queries, success, quality-filter
verdicts, share of words changed), written as Parquet and JSONL with a README and a manifest.

The quality filters (`perturb/quality.py`) are applied here, at export time, from what the log
holds: recorded judge verdicts or the other detectors' logged scores for the label check, the
MiniLM similarity and the normalizer for meaning and fluency. Files are written under a
temporary name and renamed, so an interrupted export leaves no half file.
"""
from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any, Callable

from modlens import __version__
from modlens.analysis.attack_examples import examples_from_study
from modlens.perturb.quality import AttackExample, QualityFilters, every_filter_passed

PARQUET_FILE, JSONL_FILE, README_FILE, MANIFEST_FILE = "taebench.parquet", "taebench.jsonl", "README.md", "manifest.json"

# name, type (int|float|str|bool|json), description. JSON columns are strings in Parquet and
# nested objects in JSONL.
COLUMNS: list[tuple[str, str, str]] = [
    ("example_id", "int", "variants.variant_id of the attack result in the study log"),
    ("comment_id", "int", "the seed comment (comments.comment_id)"),
    ("seed_text", "str", "the seed (original) text"),
    ("adversarial_text", "str", "the text the attack returned (the seed when skipped)"),
    ("goal", "str", "tae (toxic seed made to look benign) or bae (benign seed made to look toxic)"),
    ("recipe", "str", "recipe name (char_greedy: the character attack; attack-tae / attack-bae: its first engine's, in older logs)"),
    ("search", "str", "search method"),
    ("target", "str", "the attacked detector's study key"),
    ("target_name", "str", "the attacked detector's name"),
    ("target_version", "str", "the attacked detector's version"),
    ("threshold", "float", "the target's decision threshold"),
    ("source_score", "float", "target toxicity of the seed"),
    ("final_score", "float", "target toxicity of the adversarial text"),
    ("queries", "int", "target queries used (the seed included)"),
    ("max_queries", "int", "query budget"),
    ("judge_queries", "int", "texts sent to the judges during the search"),
    ("status", "str", "success, failed or skipped"),
    ("reason", "str", "why it failed or was skipped"),
    ("success", "bool", "status == success (the attack's own verdict, before the quality filters)"),
    ("n_words", "int", "words in the seed"),
    ("words_edited", "int", "words the attack changed"),
    ("words_changed_share", "float", "words_edited / n_words"),
    ("seed", "int", "the attack's random seed"),
    ("passed_filters", "bool", "true: every quality filter was checked and passed; false: one failed; null: not a "
                               "success, or none failed but one could not be checked (filters_not_checked)"),
    ("filters_not_checked", "json", "the filters that could not be checked for this success (why: filters)"),
    ("dedup_ok", "bool", "not a duplicate of an earlier example (same recipe, target, goal)"),
    ("label_ok", "bool", "every other detector keeps the seed's label (AND ensemble; null: no judge)"),
    ("label_agree_share", "float", "share of the other detectors that keep the seed's label"),
    ("meaning_ok", "bool", "MiniLM sentence similarity >= threshold"),
    ("similarity", "float", "MiniLM cosine similarity of seed and adversarial text (both normalized)"),
    ("fluency_ok", "bool", "extra normalizer edits <= threshold"),
    ("normalizer_edits", "int", "normalizer edits the adversarial text needs beyond the seed's"),
    ("filters", "json", "every filter's verdict {filter: {ok, value, threshold, ...}}"),
    ("params", "json", "the attack's parameters and edits (recipe parts, strategies, judges, ...)"),
]


def _rows(data: Any, quality: QualityFilters) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    examples = examples_from_study(data)
    result = quality.assess(examples)
    variants = {v["variant_id"]: v for v in data.variants}
    comment_of = {v["variant_id"]: v.get("comment_id") for v in data.variants}
    rows = []
    for e, verdict in zip(examples, result.verdicts):
        v = variants[e.id]
        a, p = v["attack"], v.get("params") or {}
        f = verdict or {}

        def ok(name: str, f: dict[str, Any] = f) -> bool | None:
            return f[name]["ok"] if name in f else None

        def value(name: str, f: dict[str, Any] = f) -> Any:
            return f[name]["value"] if name in f else None

        n_words, edited = a.get("n_words"), a.get("words_edited")
        share = a.get("words_changed_share")
        if share is None and isinstance(n_words, int) and n_words and isinstance(edited, int):
            share = edited / n_words
        rows.append({
            "example_id": e.id, "comment_id": comment_of[e.id], "seed_text": e.seed, "adversarial_text": e.text,
            "goal": e.goal, "recipe": e.recipe, "search": a.get("search"), "target": e.target,
            "target_name": e.target_name, "target_version": a.get("target_version"), "threshold": a.get("threshold"),
            "source_score": a.get("source_score"), "final_score": a.get("final_score"), "queries": a.get("queries"),
            "max_queries": a.get("max_queries"), "judge_queries": a.get("judge_queries"), "status": e.status,
            "reason": a.get("reason"), "success": e.success, "n_words": n_words, "words_edited": edited,
            "words_changed_share": share, "seed": v.get("seed"), "passed_filters": every_filter_passed(verdict),
            "filters_not_checked": None if verdict is None else [k for k, x in verdict.items() if x["ok"] is None],
            "dedup_ok": ok("dedup"), "label_ok": ok("label"), "label_agree_share": value("label"),
            "meaning_ok": ok("meaning"), "similarity": value("meaning"), "fluency_ok": ok("fluency"),
            "normalizer_edits": value("fluency"), "filters": verdict, "params": p,
        })
    return rows, {"summary": result.summary, "config": result.config}


_CASTS: dict[str, Callable[[Any], Any]] = {"int": int, "float": float, "str": str, "bool": bool}


def _typed(row: dict[str, Any]) -> dict[str, Any]:
    out = {}
    for name, kind, _ in COLUMNS:
        value = row[name]
        out[name] = value if value is None or kind == "json" else _CASTS[kind](value)
    return out


def _write_atomic(path: Path, write: Callable[[Path], object]) -> None:
    tmp = path.with_name(path.name + ".tmp")
    try:
        write(tmp)
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)


def _parquet(rows: list[dict[str, Any]], path: Path) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    types = {"int": pa.int64(), "float": pa.float64(), "str": pa.string(), "bool": pa.bool_(), "json": pa.string()}
    schema = pa.schema([pa.field(name, types[kind]) for name, kind, _ in COLUMNS])
    columns = {name: [(json.dumps(r[name], sort_keys=True) if kind == "json" and r[name] is not None else r[name])
                      for r in rows] for name, kind, _ in COLUMNS}
    pq.write_table(pa.table(columns, schema=schema), path)


def _jsonl(rows: list[dict[str, Any]], path: Path) -> None:
    with path.open("w", encoding="utf-8") as fh:
        for r in rows:
            fh.write(json.dumps(r, ensure_ascii=False, sort_keys=False) + "\n")


def _readme(manifest: dict[str, Any]) -> str:
    s = manifest["quality"]["summary"]
    unchecked = s["kept"] - s["passed_every_filter"]
    lines = [f"# TaeBench-style attack dataset (modlens {manifest['modlens_version']})", "",
             f"From `{manifest['db']}`, exported {manifest['exported_at']}: {manifest['rows']} attack results, "
             f"{s['successes']} successful. Of the successes, {s['passed_every_filter']} passed every filter "
             f"(each checked); {unchecked} failed none but were not checked by every filter "
             f"(`filters_not_checked`, `passed_filters` null); {s['successes'] - s['kept']} failed one.", "",
             "| filter | checked | passed | failed | not checked |", "|---|---|---|---|---|"]
    lines += [f"| `{name}` | {c['checked']} | {c['passed']} | {c['failed']} | {c['not_checked']} |"
              for name, c in s["per_filter"].items()]
    lines += ["", "A filter is not checked when nothing could judge it here (`filters.<name>.why`): `label` without "
              "judges or another detector's score of the text, or with a judge that had no score, `meaning` and `fluency` without their models.", "",
              f"Files: `{PARQUET_FILE}` and `{JSONL_FILE}` (the same rows; JSON columns are strings in Parquet), "
              f"`{MANIFEST_FILE}` (columns, filter settings, counts). Filters: modlens docs/PERTURB.md, "
              "\"Quality filters\".", "", "| column | type | meaning |", "|---|---|---|"]
    lines += [f"| `{n}` | {k} | {d} |" for n, k, d in COLUMNS]
    return "\n".join(lines) + "\n"


def export_taebench(db: str | Path, out_dir: str | Path, *, quality: QualityFilters | None = None,
                    successes_only: bool = False) -> dict[str, Any]:
    """Write the dataset of every attack in `db` (only successes with `successes_only`) to
    `out_dir`; returns the manifest. Raises StudyLogError for a missing or foreign log."""
    from modlens.analysis.data import load
    from modlens.studylog.codec import now_iso

    data = load(db)  # before creating anything: a bad path leaves no folder behind
    rows, quality_info = _rows(data, quality or QualityFilters())
    if successes_only:
        rows = [r for r in rows if r["success"]]
    rows = [_typed(r) for r in rows]
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    _write_atomic(out / PARQUET_FILE, lambda p: _parquet(rows, p))
    _write_atomic(out / JSONL_FILE, lambda p: _jsonl(rows, p))
    manifest = {"format": "taebench", "modlens_version": __version__, "db": str(Path(db).resolve()),
                "exported_at": now_iso(), "rows": len(rows), "successes_only": successes_only,
                "files": [PARQUET_FILE, JSONL_FILE],
                "columns": [{"name": n, "type": k, "description": d} for n, k, d in COLUMNS],
                "quality": quality_info}
    _write_atomic(out / MANIFEST_FILE, lambda p: p.write_text(json.dumps(manifest, indent=2) + "\n", encoding="utf-8"))
    _write_atomic(out / README_FILE, lambda p: p.write_text(_readme(manifest), encoding="utf-8"))
    return manifest


__all__ = ["COLUMNS", "export_taebench", "AttackExample"]
