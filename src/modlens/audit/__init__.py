"""Batch audits: run the engine (the daemon's detectors, batchers, normalizer and variant
generator) over a dataset file and write everything into the same study log as live data,
through the same recording services (`modlens.services`).

One dataset file = one page on platform `dataset:<name>`; every item = one comment, with its
labels and any human-made variants the dataset records. Each run is one `audit_runs` row;
an item enters `run_items` only in the same transaction that stores its last score, so an
interrupted audit resumes where it stopped (same dataset, path and parameters) without
duplicate rows, and a later run re-scores only what is missing or failed.

With an `AttackSpec` every seed comment is also attacked (TaeBench-style TAE/BAE, see
docs/PERTURB.md) against each target detector; every outcome (success, failed, skipped) is
one `variants` row, and each adversarial text is scored by every detector (transfer).

- `run.py`: `run_audit`, the run's life cycle (resume, progress, status);
- `auditor.py`: what happens to each chunk of items;
- `attacks.py`: `AttackSpec`, target/judge planning, the attack's view of the engine.
"""
from modlens.audit.attacks import AttackSpec, plan_attacks
from modlens.audit.run import AuditResult, audit_study, run_audit
from modlens.services.detectors import parse_detector_spec
from modlens.services.errors import SetupError as AuditError

__all__ = ["AttackSpec", "AuditError", "AuditResult", "audit_study", "parse_detector_spec", "plan_attacks", "run_audit"]
