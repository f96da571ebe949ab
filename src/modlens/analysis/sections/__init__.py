"""The report's sections, one file each, in report order. Adding a section: its file (key, title,
method, `analyze`, `render`, `SECTION`) and one line in `BUILTINS` (docs/ANALYSIS.md#adding-a-section); an
installed package adds one through the `modlens.report_sections` entry point (CONTRIBUTING.md)."""
from __future__ import annotations

import warnings

from modlens.analysis.sections.base import Section
from modlens.names import PluginError, PluginWarning, Registry, instances

# section key -> "module:SECTION" in this package, in report order
BUILTINS: dict[str, str] = {
    "human": "human:SECTION",
    "itemset": "itemset:SECTION",
    "overlap": "overlap:SECTION",
    "people": "people:SECTION",
    "robustness": "robustness:SECTION",
    "normalization": "normalization:SECTION",
    "attacks": "attacks:SECTION",
    "sass": "sass:SECTION",
    "labelled": "labelled:SECTION",
    "hatecheck": "hatecheck:SECTION",
    "fusion": "fusion:SECTION",
    "api": "api:SECTION",
}
REGISTRY = Registry("report section", __name__, BUILTINS, group="modlens.report_sections", kind=instances(Section))


def load_sections() -> list[Section]:
    """The built-in sections in report order, then those installed packages add (`modlens.report_sections`
    entry points naming a `Section`, so their `needs` may name any built-in). A plug-in that fails to
    load, is not a Section or whose key is not its entry point's name is left out with a warning
    naming its package: one broken plug-in never costs the report."""
    out: list[Section] = []
    for key in REGISTRY.names():
        try:
            section = REGISTRY.load(key)
        except PluginError as err:  # it failed to import, or is not a Section
            warnings.warn(f"{err}; the report leaves it out", PluginWarning, stacklevel=2)
            continue
        if section.key != key:
            warnings.warn(f"{REGISTRY.origin(key)} registers report section {key!r} as {section!r}, a "
                          f"Section with another key; the report leaves it out", PluginWarning, stacklevel=2)
            continue
        out.append(section)
    return out


SECTIONS: list[Section] = load_sections()
