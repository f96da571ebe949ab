"""The normalizer's built-in tables named by their bytes, for its version (`Normalizer.version`).

A table (a character map, the leet readings, a word list, a cost, a pattern) decides what the
normalizer writes as much as its code does, and a revision bumped by hand misses the edit nobody
bumped for. So every plain-data value at the top level of a module of this package, and every
plain-data attribute of a class defined there, is written in one canonical form and hashed:
change, add or remove a table and the version changes, by construction. The form depends on the
values only, never on hash seeds, set order, the machine or the path: the same tables give the
same digest in every run. What is not a table (functions, classes, paths, caches) is left out:
the lexicon file is named by its own bytes (`Lexicon.digest`), and code changes still bump
`PIPELINE_REVISION`."""
from __future__ import annotations

import hashlib
import importlib
import json
import pkgutil
import re
from types import ModuleType
from typing import Any

import modlens.normalize as package


def modules() -> list[ModuleType]:
    """Every module of the normalizer package (steps included), by name: a step or helper added
    later is covered without being listed."""
    names = sorted(m.name for m in pkgutil.walk_packages(package.__path__, package.__name__ + "."))
    return [package, *(importlib.import_module(n) for n in names)]


def canonical(value: Any) -> str | None:
    """`value` as text that names its type and content, or None when it is not plain data."""
    if value is None or isinstance(value, (bool, int, float)):
        return f"{type(value).__name__}:{value!r}"
    if isinstance(value, str):
        return "str:" + json.dumps(value)  # escaped to ASCII: no dependence on what repr thinks printable
    if isinstance(value, bytes):
        return "bytes:" + value.hex()
    if isinstance(value, re.Pattern):
        pattern = canonical(value.pattern)
        return None if pattern is None else f"re:{value.flags}:{pattern}"
    if isinstance(value, dict):
        pairs = [f"{k}={v}" for k, v in ((canonical(k), canonical(v)) for k, v in value.items())
                 if k is not None and v is not None]
        if len(pairs) < len(value):
            return None
        return f"{type(value).__name__}{{" + ",".join(sorted(pairs)) + "}"  # sorted: no insertion order
    if isinstance(value, (tuple, list, set, frozenset)):
        items = [text for text in map(canonical, value) if text is not None]
        if len(items) < len(value):
            return None
        ordered = sorted(items) if isinstance(value, (set, frozenset)) else items  # a set's order is its hash seed's
        return f"{type(value).__name__}[" + ",".join(ordered) + "]"
    return None


def tables(module: ModuleType) -> dict[str, str]:
    """name -> canonical form of each table of `module`: its top-level plain-data values and the
    plain-data attributes of the classes it defines ("Class.attr"). Dunder names are the module's
    or class's own bookkeeping (its file path among them), not tables."""
    found: dict[str, str] = {}
    for name, value in vars(module).items():
        if name.startswith("__"):
            continue
        if isinstance(value, type) and value.__module__ == module.__name__:
            for attr, member in vars(value).items():
                if not attr.startswith("__") and (text := canonical(member)) is not None:
                    found[f"{name}.{attr}"] = text
        elif (text := canonical(value)) is not None:
            found[name] = text
    return found


def tables_digest() -> str:
    """SHA-256 (12 hex digits) of every table of every module of the package, names included."""
    digest = hashlib.sha256()
    for module in modules():
        for name, text in sorted(tables(module).items()):
            digest.update(f"{module.__name__}.{name}={text}\n".encode())
    return digest.hexdigest()[:12]
