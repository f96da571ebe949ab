"""What a report section's `analyze()` returns when the log cannot fill it: the reason, worded so
a user can act on it ("no gold labels: pass --label COLUMN to modlens audit"). The report lists
every such section under `skipped` instead of leaving it out without a word."""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Skip:
    reason: str
