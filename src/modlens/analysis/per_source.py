"""Sections that set a data set beside its paper (SASS, HateCheck, NoisyHate) report each source on
its own: only the catalog's bytes (`dataset:NAME`) are that data set and compared with the paper; a
file in the same layout with other bytes (`dataset:file-DIGEST`) gets a block of its own. One rule
for the order and for what counts as unscored, so the sections cannot drift apart."""
from __future__ import annotations

from typing import Any, Callable, Iterable, Mapping, TypeVar

from modlens.analysis.skip import Skip

Row = TypeVar("Row")


def release_first(sources: Iterable[str], release: str) -> list[str]:
    """The release's source first, the others by name."""
    return sorted(sources, key=lambda src: (src != release, src))


def blocks(by_source: Mapping[str, list[Row]], release: str,
           block: Callable[[str, list[Row]], dict[str, Any] | None]) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Each source's block, the release first, and the sources `block` found nothing scored in
    ({"source", "n"}): `block` returns None for those."""
    out: list[dict[str, Any]] = []
    unscored: list[dict[str, Any]] = []
    for source in release_first(by_source, release):
        got = block(source, by_source[source])
        if got is None:
            unscored.append({"source": source, "n": len(by_source[source])})
        else:
            out.append(got)
    return out, unscored


def section(by_source: Mapping[str, list[Row]], release: str, block: Callable[[str, list[Row]], dict[str, Any] | None],
            *, none: str, what: str) -> dict[str, Any] | Skip:
    """A per-source section: {"sources": blocks, "unscored": [...]}, or why it is skipped (`none`: no rows in
    any source; `what`: what its rows are, e.g. "SASS texts", when no detector scored any of them)."""
    if not by_source:
        return Skip(none)
    found, unscored = blocks(by_source, release, block)
    if not found:
        n = sum(len(v) for v in by_source.values())
        return Skip(f"no detector scored the {n} {what}: score them with modlens rescore --detectors KEY")
    return {"sources": found, "unscored": unscored}
