"""What a logged attack record (`attack_json`) says, read the same way by the audit (whether to reuse
it or attack again) and by the report (which row of an attack it counts). No model is imported: the
report reads the log without them."""
from __future__ import annotations

from typing import Any, Sequence

# the reason an attack is skipped when the target gave no score for the seed: its call failed, or its
# answer lacks the goal's label (`perturb.compose.Attack.run`)
NO_SEED_SCORE = "target has no score for the seed"


def result_known(attack: dict[str, Any]) -> bool:
    """Whether a logged attack record (`attack_json`) says what the attack came to; a rerun attacks
    again where it does not (which row then counts: `counting_attack`). Unknown:
    - a seed the target had no score for (its call failed, or its answer lacks the goal's label):
      skipped, the attack never ran. The audit scores such errors again on a rerun, and attacks the
      seed again with them (an answer that lacks the label lacks it again: unknown again);
    - a failed attempt some of whose candidates the target had no score for (`unscored_by_target`):
      one of them may have flipped it;
    - a failed attempt with a flip a judge had no score for (`unscored_by_ensemble`): the flip may
      have passed the judges (a judge that cannot answer it, a cached table, leaves it unknown again);
    - a failed attempt from before `unscored_by_ensemble` (2026-12-06) with rejections: a judge
      with no score for a flip then counted as a judge that said no, so it may have failed on missing
      scores and says "rejected by the judges" either way (the report's `judge_not_told_apart`).
    A success, a failure whose every candidate and flip was answered, a seed the target already
    got wrong, stand."""
    if attack.get("status") == "skipped":
        return attack.get("reason") != NO_SEED_SCORE
    if attack.get("status") == "failed" and (attack.get("unscored_by_target") or attack.get("unscored_by_ensemble")):
        return False
    return not (attack.get("status") == "failed" and attack.get("rejected_by_ensemble")
                and "unscored_by_ensemble" not in attack)


def counting_attack(rows: Sequence[dict[str, Any]]) -> dict[str, Any] | None:
    """Of the logged rows of one attack ({"variant_id", "attack", ...}), the one that counts: the
    newest whose result is known, else the newest (None without rows). A rerun of an attack whose
    result was unknown logs a new row, or rewrites an older row in place when it ends on that row's
    text and parameters, so a known result may sit on an older row than an unknown one. The audit
    reuses the row this returns of the rows of its whole configuration (`audit.attacks.same_attack`,
    `audit.auditor.Auditor._logged_attack`); the report counts the row it returns of the rows that
    share `analysis.attack_examples._attack_of`, which leaves out the judges' versions, the encoder's
    and the lookup tables: after a judge's new version they may be two rows (docs/ANALYSIS.md)."""
    by_age = sorted(rows, key=lambda r: r["variant_id"], reverse=True)
    return next((r for r in by_age if result_known(r["attack"])), by_age[0] if by_age else None)
