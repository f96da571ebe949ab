"""DeepWordBug/TextBugger substitute: a typo on a neighbouring QWERTY key, stupid -> stupud."""
from __future__ import annotations

import random

from modlens.perturb.strategies._word import Strategy, WordEdit, interior

_ROWS = ["qwertyuiop", "asdfghjkl", "zxcvbnm"]


def _neighbours() -> dict[str, str]:
    """Keys left/right on the same row and the nearest keys on the rows above and below."""
    where = {c: (r, i) for r, row in enumerate(_ROWS) for i, c in enumerate(row)}
    out = {}
    for c, (r, i) in where.items():
        near = []
        for rr, cols in ((r, (i - 1, i + 1)), (r - 1, (i, i + 1)), (r + 1, (i - 1, i))):
            if 0 <= rr < len(_ROWS):
                near += [_ROWS[rr][j] for j in cols if 0 <= j < len(_ROWS[rr])]
        out[c] = "".join(near)
    return out


NEIGHBOURS = _neighbours()


class KeySubstitute(Strategy):
    key = "key_substitute"
    description = "replace one inner letter by a neighbouring key on a QWERTY keyboard (stupid -> stupud)"

    def perturb(self, word: str, rng: random.Random) -> WordEdit | None:
        inner = [i for i in interior(word) if word[i].lower() in NEIGHBOURS]
        if not inner:
            return None
        i = rng.choice(inner)
        c = rng.choice(NEIGHBOURS[word[i].lower()])
        c = c.upper() if word[i].isupper() else c
        return WordEdit(word[:i] + c + word[i + 1:], [(i, i + 1)], {"index": i, "original": word[i], "key": c})
