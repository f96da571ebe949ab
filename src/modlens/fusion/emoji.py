"""The keyword -> emoji table (data/emoji.tsv, documented in docs/FUSION.md "Rendering"): which
emoji stands for a seed's keyword when a fusion swaps the word for an emoji ("women are 🐷") or
draws the keyword as an emoji picture. Users extend it with a file of their own."""
from __future__ import annotations

from pathlib import Path

from modlens.errors import ModlensError
DEFAULT_TABLE = Path(__file__).parent / "data" / "emoji.tsv"
HEADER = ("keyword", "emoji", "note")
TABLE_FIX = ("write the table as UTF-8 lines of three tab-separated columns: keyword, emoji, note "
             f"(a header line 'keyword<TAB>emoji<TAB>note'; lines starting with # are comments); see {DEFAULT_TABLE}")


class EmojiTableError(ModlensError, ValueError):
    """An emoji table file that cannot be read; `.fix` says how to correct it."""

    def __init__(self, message: str, fix: str = TABLE_FIX) -> None:
        super().__init__(message, fix)


def load_emoji_table(path: Path | None = None) -> dict[str, str]:
    """keyword (lowercased) -> emoji: the shipped table, extended by `path` when given (its rows
    win over the shipped ones for the same keyword)."""
    table = dict(_read_table(DEFAULT_TABLE))
    if path is not None:
        table.update(_read_table(Path(path)))
    return table


def _read_table(path: Path) -> tuple[tuple[str, str], ...]:
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise EmojiTableError(f"no emoji table at {path}", "check the path given to --emoji-table") from None
    except UnicodeDecodeError as exc:
        raise EmojiTableError(f"{path} is not UTF-8 text ({exc.reason} at byte {exc.start})") from None
    rows: list[tuple[str, str]] = []
    seen_header = False
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        cols = [c.strip() for c in line.split("\t")]
        if not seen_header:
            seen_header = True
            if tuple(c.lower() for c in cols[:3]) == HEADER:
                continue
        if len(cols) < 2 or not cols[0] or not cols[1]:
            raise EmojiTableError(f"{path}:{number}: expected 'keyword<TAB>emoji<TAB>note', got {line!r}")
        keyword, emoji = cols[0].lower(), cols[1]
        if all(ord(ch) < 0x2000 for ch in emoji):  # letters or digits: a column mix-up, not an emoji
            raise EmojiTableError(f"{path}:{number}: {emoji!r} is not an emoji (keyword {keyword!r})")
        rows.append((keyword, emoji))
    if not rows:
        raise EmojiTableError(f"{path} has no rows")
    return tuple(rows)


def word_forms(keyword: str) -> list[str]:
    """The keyword lowercased, then its likely singular and plural forms, in the order tried:
    "pigs" -> ["pigs", "pig", ...], "puppy" -> ["puppy", "puppys", "puppies"]. English rules
    only, and simple ones: the table and folder labels are short nouns."""
    word = " ".join(keyword.lower().split())
    forms = [word]
    if word.endswith("ies") and len(word) > 4:
        forms.append(word[:-3] + "y")
    if word.endswith(("ches", "shes", "xes", "ses", "zes")):
        forms.append(word[:-2])
    if word.endswith("s") and not word.endswith("ss") and len(word) > 3:
        forms.append(word[:-1])
    forms.append(word + "s")
    if word.endswith(("ch", "sh", "x", "s", "z")):
        forms.append(word + "es")
    if word.endswith("y") and len(word) > 2 and word[-2] not in "aeiou":
        forms.append(word[:-1] + "ies")
    return list(dict.fromkeys(f for f in forms if f))


def emoji_for(keyword: str, table: dict[str, str]) -> str | None:
    """The emoji standing for `keyword` (case-insensitive, singular or plural), or None."""
    for form in word_forms(keyword):
        if form in table:
            return table[form]
    return None
