"""The fusion types (DUO section 3.3 and the comment-native ones), registered in one place: a
fusion name -> the module that builds it. Adding a fusion = one module defining `NAMES`,
`DESCRIPTIONS`, `check(name)` and `build(name, seed, ctx, rng)` (see `base.py`) + one line here; an
installed package adds one through the `modlens.fusions` entry point (see CONTRIBUTING.md)."""
from __future__ import annotations

import random
from types import ModuleType
from typing import cast

from modlens.fusion.case import FusedCase
from modlens.fusion.fusions.base import FusionContext, Skip
from modlens.fusion.render import FusionUnavailable
from modlens.fusion.seeds import Seed
from modlens.names import MODULES, Registry

# fusion name -> module in this package; the order is the order of `modlens fuse --list` and of generation
FUSIONS: dict[str, str] = {
    "T+E": "text_emoji",
    "T+I": "text_image",
    "I+T": "image_text",
    "I": "image_only",
    "V+T": "video",
    "V+A": "video",
    "A+T": "video",
    "V+A+T": "video",
}
REGISTRY: Registry[ModuleType] = Registry("fusion", __name__, FUSIONS, group="modlens.fusions",
                                           needs=("check", "build"), kind=MODULES)


# built-in fusions in generation order, then those installed packages add
available = REGISTRY.names
check = REGISTRY.check  # UnknownName (a KeyError, with close matches) for the first name not registered


def describe(name: str) -> str:
    return str(REGISTRY.load(name).DESCRIPTIONS[name])


def unavailable_reason(name: str) -> FusionUnavailable | None:
    """None when the fusion can run here, else the error saying what is missing and the fix."""
    try:
        REGISTRY.load(name).check(name)
    except FusionUnavailable as err:
        return err
    return None


def build(name: str, seed: Seed, ctx: FusionContext, rng: random.Random) -> FusedCase:
    """The fused case; raises Skip when the seed cannot take this fusion."""
    return cast(FusedCase, REGISTRY.load(name).build(name, seed, ctx, rng))


__all__ = ["FUSIONS", "REGISTRY", "FusionContext", "Skip", "available", "build", "describe", "unavailable_reason"]
