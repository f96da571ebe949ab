"""One error family: every exception class defined in `src/modlens` and `daemon/` derives from
`modlens.errors.ModlensError` (so the CLI prints it with its fix and its kind's exit code, and the
daemon and exporters can say it the same way), and no two classes share a name (one class per
meaning)."""
from __future__ import annotations

import importlib
import inspect
import pkgutil
from collections import defaultdict
from types import ModuleType

import pytest

import modlens
import modlens.daemon
from modlens.errors import ModlensError

# Not errors, by design (each one why): Ctrl-C must stay a KeyboardInterrupt, which the CLI answers
# with exit 130 and a resume hint; a ModlensError would be printed as a usage error instead.
OUTSIDE_THE_FAMILY = {
    "modlens.audit.run.AuditInterrupted": "Ctrl-C during an audit: a KeyboardInterrupt (exit 130)",
}


def _modules() -> tuple[list[ModuleType], list[str]]:
    """Every module of modlens and of the daemon, imported; and those that need a package that is
    not installed here (an optional extra)."""
    names = [m.name for root in (modlens, modlens.daemon)
             for m in pkgutil.walk_packages(root.__path__, root.__name__ + ".")
             if not m.name.endswith("__main__")]  # __main__ runs the command line
    mods: list[ModuleType] = []
    missing: list[str] = []
    for name in [modlens.__name__, modlens.daemon.__name__, *names]:
        try:
            mods.append(importlib.import_module(name))
        except ModuleNotFoundError as err:
            if (err.name or "").startswith("modlens"):
                raise
            missing.append(f"{name} ({err.name})")
    return mods, missing


def _exception_classes() -> list[type[BaseException]]:
    mods, _ = _modules()
    return [obj for mod in mods for obj in vars(mod).values()
            if inspect.isclass(obj) and issubclass(obj, BaseException) and obj.__module__ == mod.__name__]


def test_every_exception_class_is_a_modlens_error():
    classes = _exception_classes()
    assert len(classes) > 40, "the walk found the package's exception classes"
    outside = [f"{c.__module__}.{c.__qualname__}" for c in classes
               if not issubclass(c, ModlensError) and f"{c.__module__}.{c.__qualname__}" not in OUTSIDE_THE_FAMILY]
    assert not outside, ("derive these from modlens.errors.ModlensError (with the built-in type callers catch as "
                         f"a second base): {outside}")
    for name in OUTSIDE_THE_FAMILY:  # the allowed ones still exist and are still not errors of the family
        assert any(f"{c.__module__}.{c.__qualname__}" == name and not issubclass(c, Exception) for c in classes), name


def test_one_class_per_meaning():
    by_name: dict[str, list[str]] = defaultdict(list)
    for c in _exception_classes():
        by_name[c.__qualname__].append(c.__module__)
    assert not {n: m for n, m in by_name.items() if len(m) > 1}, "two exception classes share a name"


def test_the_walk_covers_every_module_here():
    _, missing = _modules()
    if missing:  # an install without every extra: the classes of these modules went unchecked
        pytest.skip(f"modules that need a package not installed here: {missing}")
