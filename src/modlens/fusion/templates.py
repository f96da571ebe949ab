"""Seed-sentence templates (DUO section 3.1.1): one per content type, read from
`fusion/data/templates.toml`, extended or overridden by a user's file of the same layout
(`modlens fuse --templates FILE`). A template filled with a keyword pair is a seed sentence."""
from __future__ import annotations

import random
import tomllib
from dataclasses import dataclass
from pathlib import Path

from modlens.errors import ModlensError
from modlens.fusion.case import CONTENT_TYPES

DATA_DIR = Path(__file__).with_name("data")
DEFAULT_TEMPLATES = DATA_DIR / "templates.toml"
MIDDLE_RULES = ("number", "choice", "fixed")
# plural nouns that do not end in "s" (the number rule's exceptions)
IRREGULAR_PLURALS = frozenset({"people", "women", "men", "children", "folk", "police", "cattle", "clergy"})


class TemplateError(ModlensError, ValueError):
    """A templates file that cannot be used; the message names the file and the field."""


@dataclass(frozen=True)
class Template:
    name: str
    content_type: str
    pattern: str                 # e.g. "{a} {middle} {b}"
    middle: tuple[str, ...]      # the connecting words ("is", "are")
    middle_rule: str             # one of MIDDLE_RULES
    a: str = ""                  # what slot A holds (documentation)
    b: str = ""

    def choose_middle(self, a: str, rng: random.Random) -> str:
        """The connecting word for keyword A: by A's number, by a seeded choice, or the only one."""
        if self.middle_rule == "number":
            return self.middle[1 if is_plural(a) else 0]
        if self.middle_rule == "choice":
            return rng.choice(self.middle)
        return self.middle[0]

    def fill(self, a: str, middle: str, b: str) -> str:
        return self.pattern.format(a=a, middle=middle, b=b)

    def left(self, a: str, middle: str) -> str:
        """The sentence up to B ("women are", "Tobacco:"): the half a caption carries."""
        return self.pattern.split("{b}")[0].format(a=a, middle=middle).strip()

    def right(self, middle: str, b: str) -> str:
        """The sentence from the middle word on ("are pigs", ": Tel: 555-0142")."""
        return self.pattern.split("{a}", 1)[1].format(middle=middle, b=b).strip()


def is_plural(phrase: str) -> bool:
    """The number of a group name by its last word: "women", "gay people", "Muslims" are plural,
    "Islam" is not. A rule, not a parser: group lists hold plural nouns almost only."""
    words = phrase.strip().lower().split()
    last = words[-1] if words else ""
    return last in IRREGULAR_PLURALS or (last.endswith("s") and not last.endswith("ss"))


def load_templates(path: str | Path | None = None) -> dict[str, Template]:
    """The shipped templates by name, with those of `path` added (a same-named one replaces)."""
    templates = _read(DEFAULT_TEMPLATES)
    if path is not None:
        templates.update(_read(Path(path)))
    return templates


def by_content_type(templates: dict[str, Template]) -> dict[str, list[Template]]:
    out: dict[str, list[Template]] = {}
    for t in templates.values():
        out.setdefault(t.content_type, []).append(t)
    return out


def _read(path: Path) -> dict[str, Template]:
    if not path.is_file():
        raise TemplateError(f"templates file {path} not found")
    try:
        raw = tomllib.loads(path.read_text(encoding="utf-8"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as err:
        raise TemplateError(f"{path}: not valid TOML ({err})") from None
    entries = raw.get("template")
    if not isinstance(entries, list) or not entries:
        raise TemplateError(f"{path}: no [[template]] tables")
    out: dict[str, Template] = {}
    for i, entry in enumerate(entries):
        t = _template(entry, f"{path}: template {i + 1}")
        out[t.name] = t
    return out


def _template(entry: object, where: str) -> Template:
    if not isinstance(entry, dict):
        raise TemplateError(f"{where}: expected a table")
    missing = [k for k in ("name", "content_type", "pattern", "middle") if k not in entry]
    if missing:
        raise TemplateError(f"{where}: missing {', '.join(missing)}")
    middle = entry["middle"]
    if isinstance(middle, str):
        middle = [middle]
    if not isinstance(middle, list) or not middle or not all(isinstance(m, str) for m in middle):
        raise TemplateError(f"{where}: middle must be a list of words")
    rule = str(entry.get("middle_rule", "fixed" if len(middle) == 1 else "choice"))
    t = Template(str(entry["name"]), str(entry["content_type"]), str(entry["pattern"]), tuple(middle), rule,
                 str(entry.get("a", "")), str(entry.get("b", "")))
    if t.content_type not in CONTENT_TYPES:
        raise TemplateError(f"{where} ({t.name}): content_type must be one of {', '.join(CONTENT_TYPES)}, "
                            f"not {t.content_type!r}")
    if rule not in MIDDLE_RULES:
        raise TemplateError(f"{where} ({t.name}): middle_rule must be one of {', '.join(MIDDLE_RULES)}")
    if rule == "number" and len(middle) != 2:
        raise TemplateError(f"{where} ({t.name}): the number rule needs two middle words (singular, plural)")
    if [t.pattern.count(s) for s in ("{a}", "{middle}", "{b}")] != [1, 1, 1] or \
            not t.pattern.index("{a}") < t.pattern.index("{middle}") < t.pattern.index("{b}"):
        raise TemplateError(f"{where} ({t.name}): pattern must hold {{a}}, {{middle}} and {{b}} once each, "
                            "in that order")
    return t
