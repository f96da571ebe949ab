"""The one place attack transformations are registered (one small file each).

A transformation proposes changes for one word in context (`perturb.parts.Transformation`).
Every character strategy of `perturb/registry.py` is also a transformation, under the key
`char:<strategy key>` (`parts.CharacterTransformation`). An installed package adds one through
the `modlens.transformations` entry point ("module:Class"; see CONTRIBUTING.md)."""
from __future__ import annotations

from typing import Any

from modlens.names import ClassRegistry, UnknownName
from modlens.perturb.parts import Transformation

CHAR_PREFIX = "char:"

# registry key -> "module:Class" (module relative to modlens.perturb.transformations)
TRANSFORMATIONS: dict[str, str] = {
    "wordnet_synonym": "wordnet_synonym:WordNetSynonym",
    "embedding_neighbour": "embedding_neighbour:EmbeddingNeighbour",
    "word_delete": "word_delete:WordDelete",
    "filler_insert": "filler_insert:FillerInsert",
    "composite": "composite:Composite",
}
REGISTRY = ClassRegistry("transformation", __name__, TRANSFORMATIONS, Transformation, group="modlens.transformations")


def available() -> list[str]:
    from modlens.perturb import registry
    return [*REGISTRY.names(), *(CHAR_PREFIX + k for k in registry.available())]


def create(key: str, **options: Any) -> Transformation:
    """Instantiate a transformation by key; unknown keys raise UnknownName with close matches.
    Check `availability()` before use (WordNet or the vectors may be missing)."""
    if key.startswith(CHAR_PREFIX):
        from modlens.perturb import registry
        from modlens.perturb.parts import CharacterTransformation
        if key[len(CHAR_PREFIX):] not in registry.REGISTRY:
            raise UnknownName("transformation", key, available())
        return CharacterTransformation(key[len(CHAR_PREFIX):], **options)
    if key not in REGISTRY:
        raise UnknownName("transformation", key, available())
    return REGISTRY.create(key, **options)
