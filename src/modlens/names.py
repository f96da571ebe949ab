"""Unknown names (detectors, strategies) and the close matches to suggest, worded once for the
CLI, study.toml validation and the registries."""
from __future__ import annotations

import difflib
import importlib
from typing import Any, Iterable


def close_matches(name: str, known: Iterable[str], n: int = 3) -> list[str]:
    """Known names that look like a misspelling of `name`, closest first."""
    return difflib.get_close_matches(name, list(known), n=n, cutoff=0.6)


class UnknownName(KeyError):
    """A name no registry knows. A KeyError, as the registries raised before, but printed as
    its message (a bare KeyError prints its argument's repr)."""

    def __init__(self, what: str, name: str, known: Iterable[str]) -> None:
        self.what, self.name, self.known = what, name, list(known)
        self.suggestions = close_matches(name, self.known)
        super().__init__(self.message)

    @property
    def message(self) -> str:
        return f"unknown {self.what} {self.name!r}"

    @property
    def fix(self) -> str:
        if self.suggestions:
            return f"did you mean {' or '.join(self.suggestions)}?"
        return f"known: {', '.join(self.known)}"

    def __str__(self) -> str:
        return f"{self.message}; {self.fix}"


def check_known(what: str, names: Iterable[str], known: Iterable[str]) -> None:
    """Raises UnknownName for the first name not in `known`."""
    known = list(known)
    for name in names:
        if name not in known:
            raise UnknownName(what, name, known)


def registered_class(what: str, package: str, entries: dict[str, str], key: str) -> Any:
    """The class a registry lists under `key` as "module:Class" (module relative to `package`);
    an unknown key raises UnknownName with the close matches. The one lookup every registry
    of small one-file parts (strategies, transformations, constraints, searches, recipes) uses."""
    if key not in entries:
        raise UnknownName(what, key, entries)
    module, cls = entries[key].split(":")
    return getattr(importlib.import_module(f"{package}.{module}"), cls)
