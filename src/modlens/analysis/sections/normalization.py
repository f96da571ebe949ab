"""Section 4: normalization accuracy on NoisyHate-style variants (`analysis/normalization.py`)."""
from __future__ import annotations

from typing import Any

from modlens.analysis import normalization
from modlens.analysis.data import StudyData
from modlens.analysis.references import cite
from modlens.analysis.sections.base import Section
from modlens.analysis.sections.html import source_heading, table
from modlens.analysis.skip import Skip

METHOD = ("Token at the perturbed position of the normalizer's output, lowercased, equals the clean word "
          f"(NoisyHate: {cite('noisyhate', 'Table 3')}). Google and Bing are the dataset authors' recorded results. "
          "Per source, never pooled: only dataset:noisyhate (the catalog's bytes) is NoisyHate; a file in its layout "
          "with other bytes (file-DIGEST) gets a table of its own, its recorded results being that file's.")


def analyze(data: StudyData) -> dict[str, Any] | Skip:
    result = normalization.analyze(data)
    if result:
        return result
    if not data.normalizations:
        return Skip("no normalized texts: run modlens audit with --normalize")
    return Skip("no variant records the perturbed word's position and clean word (NoisyHate's layout): "
                "modlens audit noisyhate --normalize")


def render(section: dict[str, Any]) -> str:
    """A table per source, NoisyHate first."""
    return "".join(source_heading(s, "NoisyHate", "NoisyHate's layout, not NoisyHate") + _table(s)
                   for s in section["sources"])


def _table(s: dict[str, Any]) -> str:
    return table(["system", *s["types"]], [[sys, *[None if t not in per else f"{per[t]['accuracy']:.3f} (n={per[t]['n']})"
                                                    for t in s["types"]]] for sys, per in s["systems"].items()])


SECTION = Section(key='normalization', title='4. Normalization accuracy', method=METHOD, analyze=analyze, render=render)
