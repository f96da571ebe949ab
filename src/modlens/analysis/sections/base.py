"""What a report section is: its key, title, method note, `analyze` (reads the study log, returns
the section's JSON or `Skip(reason)`) and `render` (that JSON as an HTML fragment). The report
frame (`analysis/report.py`) knows sections only through this type; docs/ANALYSIS.md shows how to
add one."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

from modlens.analysis.skip import Skip

SectionResult = dict[str, Any] | Skip
# analyze(data, *results of the sections named in `needs`, in that order)
Analyze = Callable[..., SectionResult]
Render = Callable[[dict[str, Any]], str]


@dataclass(frozen=True)
class Section:
    key: str            # the JSON key under `sections` / `skipped`
    title: str          # "HateCheck by functionality"; the HTML page numbers the sections present 1, 2, …
                        # (a leading number, as in older plug-ins' titles, is dropped: `short_title`)
    method: str         # the methods note shown under the title (and in the JSON's `methods`)
    analyze: Analyze    # reads `StudyData` only: no model is loaded at report time
    render: Render
    needs: tuple[str, ...] = ()    # earlier sections whose result `analyze` takes after `data`
    private: tuple[str, ...] = ()  # keys other sections read that the report's JSON leaves out

    @property
    def short_title(self) -> str:
        """The title without its number ("HateCheck by functionality")."""
        head, _, rest = self.title.partition(" ")
        return rest if rest and head[:1].isdigit() else self.title
