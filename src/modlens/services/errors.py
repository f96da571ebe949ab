"""The one error a run from a study raises when it cannot start."""
from __future__ import annotations

from modlens.errors import ModlensError


class SetupError(ModlensError, ValueError):
    """A run (audit, attack) that cannot start: a bad dataset or detector spec, no detector
    that loads, an unusable option. Raised before anything is written; the message says why,
    `fix` what to do, `kind` is not found for a file or shorthand that does not exist."""
