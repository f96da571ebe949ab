"""Section 5: attacks and transfer (`analysis/attacks.py`); reads the attack checks `audit --attack` / `rescore` stored."""
from __future__ import annotations

import html
from typing import Any

from modlens.analysis import attacks
from modlens.analysis.data import StudyData
from modlens.analysis.sections.base import Section
from modlens.analysis.sections.html import counts, detector, fewer, table
from modlens.analysis.skip import Skip

METHOD = ("Attack success rate: false-negative rate of the target on TAEs (false-positive rate on BAEs), "
          "skipped attempts excluded; 'verified' recomputes it from the target's logged score, over the attempts "
          "whose text it scored ('k of n verified' when fewer). Transfer: share "
          "of successful adversarial texts that each detector also gets wrong at its own threshold, counting "
          "for a detector only texts whose seed it judged right; exact duplicates once (Zhu et al. 2024). Rows are "
          "recipe x target. 'After filters': successes that every one of TaeBench's quality filters checked and passed "
          "(dedup, the AND ensemble of the other detectors, MiniLM meaning similarity, normalizer-edit fluency); "
          "those that failed none but one could not check are counted beside it, never as passed. 'Undone by "
          "normalization': share of successes the target gets right again once the text is normalized.")


def analyze(data: StudyData) -> dict[str, Any] | Skip:
    return attacks.analyze(data) or Skip("no attack variants: run modlens audit with --attack tae|bae")


def render(s: dict[str, Any]) -> str:
    def filtered(r: dict[str, Any]) -> str:
        parts = [f"{f} {n}" for f, n in r.get("filtered_out", {}).items()]
        parts += [f"{f} not checked {n}" for f, n in r.get("not_checked", {}).items()]
        return ", ".join(parts)

    def recovered(r: dict[str, Any]) -> str:
        rec = r.get("recovery") or {}
        if not rec.get("n"):
            return "–" if not rec.get("unmeasured") else f"not measured ({rec['unmeasured']})"
        return f"{rec['share']:.3f} ({rec['recovered']}/{rec['n']})"

    def verified(r: dict[str, Any]) -> Any:
        """The verified rate, and over how many attempts when the target scored fewer of their texts."""
        value, suffix = r["success_verified"], fewer(r.get("n_verified"), r["attempts"], "verified")
        return f"{value:.3f}{suffix}" if value is not None and suffix else value

    def after_filters(r: dict[str, Any]) -> Any:
        """Successes every filter checked and passed; those that failed none unchecked by one, apart."""
        rate, more = r.get("success_after_filters"), r.get("kept_not_checked")
        if rate is None or not more:
            return rate
        return f"{rate:.3f} ({more} more failed no filter, not every filter checked)"

    out = [table(["recipe", "target", "goal", "attempts", "skipped", "success (recorded)", "success (verified)",
                   "success after filters", "removed by filters", "queries / success", "words changed",
                   "undone by normalization", "judges"],
                  [[r.get("recipe", ""), r["target"] + (f" [{r['config']}]" if r.get("config") else ""), r["goal"],
                    r["attempts"], r.get("skipped"), r["success_recorded"], verified(r),
                    after_filters(r), filtered(r), r["queries_per_success"],
                    r.get("words_changed_share"), recovered(r), ", ".join(r.get("judges", []))] for r in s["rows"]])]
    out += [f'<p class="note">{html.escape(r["target"])} ({r["goal"]}, {html.escape(r.get("recipe", ""))}): '
            f'{r["set_aside"]} other row{"s" * (r["set_aside"] != 1)} of attacks redone by a rerun set aside '
            '(one attack per seed, recipe and target version counts: the newest whose result is known, '
            'else the newest)</p>'
            for r in s["rows"] if r.get("set_aside")]
    out += [f'<p class="note">{html.escape(_judged(r))}</p>' for r in s["rows"]
            if r.get("judge_no_score") or r.get("judge_not_told_apart")]
    q = s.get("quality") or {}
    if q:
        out.append(f'<p class="note">Quality filters: {html.escape(", ".join(q.get("filters", [])))}; similarity ≥ '
                   f'{q.get("min_similarity")}, at most {q.get("max_normalizer_edits")} extra normalizer edits'
                   + "".join(f"; {html.escape(k)} not checked: {html.escape(v)}" for k, v in q.get("unavailable", {}).items())
                   + ".</p>")
    out += [f'<p class="note">{html.escape(n)}</p>' for n in s.get("recovery_notes", [])]
    human_rows = (s.get("human") or {}).get("rows") or []
    if human_rows:
        out.append("<h3>Human check (reviewed attack texts rated like any comment)</h3>")
        out.append(table(["recipe", "target", "goal", "items", "rated", "ratings", "ratings 'toxic'",
                           "ratings 'hard to say'", "items most raters call toxic"],
                          [[h["recipe"], h["target"], h["goal"], h["items"], h["rated"], h["ratings"],
                            h["share_ratings_toxic"], h["share_ratings_hard_to_say"], h["items_majority_toxic"]]
                           for h in human_rows]))
        if s["human"].get("excluded"):
            out.append('<p class="note">Ratings or answers left out, as in section 1 (one vote per rater and text, '
                       "no inconsistent anchor pair, no answer on another scale than the reported one): " + counts(s["human"]["excluded"])
                       + ".</p>")
    out.append("<h3>Transfer (rows: attacked target; cells: share the column detector also gets wrong)</h3>")
    out.append(table(["successful against", *s["detectors"]],
                      [[k, *[row[d]["rate"] for d in s["detectors"]]] for k, row in s["transfer"].items()]))
    notes = [n for m in s.get("matrices", []) for n in m.get("notes", [])]
    notes += [f"column {name} pools " + ", ".join(f"{detector(name, v)} ({n} example{'s' * (n != 1)})"
                                                  for v, n in used.items())
              + " (each example's text and seed judged by one of them)"
              for m in s.get("matrices", []) for name, used in (m.get("pooled_versions") or {}).items()]
    out += [f'<p class="note">{html.escape(n)}</p>' for n in notes]
    return "".join(out)


def _judged(r: dict[str, Any]) -> str:
    """What the judges did with the flips of a row's failed attempts: a judge with no score for a
    flip did not say no to it (the flip was not accepted, unverified)."""
    def n(k: int) -> str:
        return f"{k} failed attempt{'s' * (k != 1)}"

    parts = []
    if r.get("judge_rejected"):
        parts.append(f"{n(r['judge_rejected'])} had a flip a judge said no to")
    if r.get("judge_no_score"):
        parts.append(f"{n(r['judge_no_score'])} had a flip a judge had no score for (not accepted as unverified; "
                     "not a judge's no)")
    if r.get("judge_not_told_apart"):
        parts.append(f"{n(r['judge_not_told_apart'])} logged before missing judge scores were told apart count "
                     "them among the judges' rejections (the same audit or attack run again attacks those seeds "
                     "again)")
    return f"{r['target']} ({r['goal']}, {r.get('recipe', '')}): " + "; ".join(parts)


SECTION = Section(key='attacks', title='5. Attacks and transfer', method=METHOD, analyze=analyze, render=render)
