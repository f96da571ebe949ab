"""`modlens audit --engine ray` of modlens's own CSV export gives the original texts back, as the
local readers do (tests/test_csv_cells.py): Ray Data's CSV reader hands the cells as written, with
the leading `'` a formula character got, and `scale/ray_read.py` takes it off."""
from __future__ import annotations

import pytest
import ray_local

from modlens.scale.sources import load_dataset
from modlens.studylog.export import export
from modlens.studylog.store import StudyLog
from test_csv_cells import HOSTILE

pytestmark = pytest.mark.slow  # starts a local Ray


@pytest.fixture(scope="module", autouse=True)
def local_ray():
    with ray_local.local_ray():
        yield


def test_ray_reads_an_exported_csv_back_exactly(tmp_path):
    with StudyLog(tmp_path / "log.sqlite") as log:
        page = log.ensure_page("youtube", "vid", None, None)
        for n, text in enumerate(HOSTILE):
            log.add_comment("youtube", f"c{n}", page, text)
    export(tmp_path / "log.sqlite", tmp_path / "csv", "csv")
    f = tmp_path / "csv" / "comments.csv"
    read = load_dataset(f.as_uri(), engine="ray", id_col="comment_key")
    assert "with Ray Data" in read.notes[0]
    by_ray = {i.key: i.text for i in read.iter_items()}
    local = {i.key: i.text for i in load_dataset(str(f), id_col="comment_key").iter_items()}
    assert by_ray == local and sorted(t for t in by_ray.values() if t.strip()) == sorted(t for t in HOSTILE if t.strip())
