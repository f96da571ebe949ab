"""Human-written perturbations looked up in a word -> [forms seen online] table (NoisyHate's
ANTHRO/CrypText pools, `noisyhate/perturbations.json`)."""
from __future__ import annotations

import difflib
import hashlib
import json
import os
import random
from pathlib import Path
from typing import Any

from modlens import paths
from modlens.perturb.strategies._word import Strategy, WordEdit

ENV_VAR = "MODLENS_PERTURBATIONS"
TABLE = "noisyhate/perturbations.json"


def default_path() -> Path:
    """$MODLENS_PERTURBATIONS, else the table in the data folders (the package ships one)."""
    if os.environ.get(ENV_VAR):
        return Path(os.environ[ENV_VAR])
    return paths.find_data(TABLE) or paths.shipped_data() / TABLE


def diff_spans(old: str, new: str) -> list[tuple[int, int]]:
    """Spans of `old` that differ in `new` (insertions as empty spans)."""
    ops = difflib.SequenceMatcher(None, old, new, autojunk=False).get_opcodes()
    return [(i1, i2) for tag, i1, i2, _, _ in ops if tag != "equal"]


class HumanLookup(Strategy):
    key = "human_lookup"
    description = "replace the word by a perturbation people actually wrote online (lookup table)"

    def __init__(self, path: str | Path | None = None):
        self.path = Path(path) if path else default_path()
        self._table: dict[str, list[str]] | None = None
        self._error: str | None = None
        self.lexicon_hash = ""

    def _load(self) -> None:
        if self._table is not None or self._error is not None:
            return
        fix = f"pass the file's path, or set {ENV_VAR}"
        try:
            raw = self.path.read_bytes()
        except OSError as err:
            self._error = f"human_lookup: cannot read {self.path} ({err.strerror or err}); {fix}"
            return
        try:
            data = json.loads(raw)
        except (json.JSONDecodeError, UnicodeDecodeError) as err:
            self._error = f"human_lookup: {self.path} is not valid JSON ({err}); {fix}"
            return
        if not isinstance(data, dict) or not all(isinstance(v, list) for v in data.values()):
            self._error = f"human_lookup: {self.path} must map each word to a list of perturbations; {fix}"
            return
        self._table = {str(k).lower(): [str(p) for p in v if isinstance(p, str) and p.strip()] for k, v in data.items()}
        self.lexicon_hash = hashlib.sha256(raw).hexdigest()[:12]

    def availability(self) -> str | None:
        self._load()
        return self._error

    def data(self) -> dict[str, Any]:
        self._load()
        return {"lexicon": self.path.name, "lexicon_sha": self.lexicon_hash} if self._table is not None else {}

    def forms(self, word: str) -> list[str]:
        """Recorded perturbations of `word` that really change it (case-only copies such as
        "AIRHEAD" for "airhead" are shouting, not perturbations)."""
        self._load()
        if self._table is None:
            return []
        return [p for p in self._table.get(word.lower(), []) if p.lower() != word.lower() and " " not in p]

    def perturb(self, word: str, rng: random.Random) -> WordEdit | None:
        forms = self.forms(word)
        if not forms:
            return None
        lowered = [p for p in forms if p == p.lower()]
        # Keep the comment's own casing when a lowercase form exists for a lowercase word.
        pool = lowered if word == word.lower() and lowered else forms
        choice = rng.choice(sorted(pool))
        return WordEdit(choice, diff_spans(word, choice),
                        {"replacement": choice, "lexicon": self.path.name, "lexicon_sha": self.lexicon_hash})
