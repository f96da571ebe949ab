"""The rows of a data set the user named (`modlens audit FILE --name NAME --id-col COLUMN`,
`datasets.generic.declared_name`) whose text is not the text the log holds under their key.

Every version of such a file is one data set, so an edited row can come back under a key the log
already holds with another text. The log keeps the first text seen under a key (`register_items`:
the comment, its scores, ratings and variants are of that text), so the audit must not let the
edited text pass as that comment's: `KeptTexts` hands the row on with the logged text (the chunk
then neither scores the edited text nor derives variants from it for a comment that does not hold
it; the row's labels are still stored, as for any row read again), counts such rows, names the
first few, and words the warning the audit prints. Rows an earlier attempt of the run finished are
checked too: they are read (and skipped) like the others."""
from __future__ import annotations

import dataclasses
import json
from typing import Iterator

from modlens.datasets.base import DatasetItem
from modlens.studylog.store import StudyLog

BLOCK = 512     # rows looked up in the log at a time (one query each)
EXAMPLES = 5    # keys the warning names

LOGGED_TEXTS = ("SELECT c.comment_key, t.text FROM comments c JOIN texts t USING (text_id) "
                "WHERE c.platform = ? AND c.comment_key IN (SELECT value FROM json_each(?))")


class KeptTexts:
    """Watches a declared data set's rows (`items`) against the log's comments of `platform`."""

    def __init__(self, log: StudyLog, platform: str):
        self.log, self.platform = log, platform
        self.n_edited = 0
        self.examples: list[str] = []

    def _logged(self, block: list[DatasetItem]) -> dict[str, str]:
        keys = json.dumps([it.key for it in block])
        return {r["comment_key"]: r["text"] for r in self.log.query(LOGGED_TEXTS, (self.platform, keys))}

    def items(self, items: Iterator[DatasetItem]) -> Iterator[DatasetItem]:
        """`items` as the audit should take them: a row whose text differs from its key's logged text
        carries the logged text, counted when it is handed on (a `--limit` that stops reading before it
        leaves it out). A bad row the reader meets stops the rows after it only: those read before it
        in its block are handed on first, then its error is raised (the audit logs them, as without
        the check)."""
        try:
            while True:
                block: list[DatasetItem] = []
                failed: Exception | None = None
                try:
                    for it in items:
                        block.append(it)
                        if len(block) == BLOCK:
                            break
                except Exception as err:  # a bad row: its message names it; raised after the rows before it
                    failed = err
                logged = self._logged(block) if block else {}
                for it in block:
                    text = logged.get(it.key)
                    if text is not None and text != it.text:
                        self.n_edited += 1
                        if len(self.examples) < EXAMPLES:
                            self.examples.append(it.key)
                        it = dataclasses.replace(it, text=text, read_as=None)
                    yield it
                if failed is not None:
                    raise failed
                if len(block) < BLOCK:
                    return
        finally:
            close = getattr(items, "close", None)
            if close is not None:
                close()  # the reader's file, now (a --limit stops reading early)

    def warnings(self) -> list[str]:
        """The line the audit prints about edited rows (none when there were none)."""
        n = self.n_edited
        if not n:
            return []
        keys = ", ".join(self.examples) + (", …" if n > len(self.examples) else "")
        if n == 1:
            return [f"1 row has another text than the comment its key names in {self.platform} ({keys}): the log "
                    "keeps the first text seen under a key, so the edited text is not logged, scored or varied; "
                    "give the row a new id, or audit the file under another --name, to log it"]
        return [f"{n} rows have other texts than the comments their keys name in {self.platform} ({keys}): the log "
                "keeps the first text seen under a key, so the edited texts are not logged, scored or varied; "
                "give the rows new ids, or audit the file under another --name, to log them"]
