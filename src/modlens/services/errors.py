"""The one error a run from a study raises when it cannot start."""
from __future__ import annotations


class SetupError(ValueError):
    """A run (audit, attack) that cannot start: a bad dataset or detector spec, no detector
    that loads, an unusable option. Raised before anything is written; the message says why."""
