"""The report's tables for a paper: `modlens report --format csv|latex` write every table the HTML
report shows, cell for cell (figures with their intervals), because all three are rendered from one
table model; the report ends with the references of the methods and data sets it used; detectors are
named by short names in cells and legends, their versions standing once in the Detectors table."""
import html as html_mod
import re
from html.parser import HTMLParser
from pathlib import Path

import pytest

from modlens.analysis import references, synthetic
from modlens.analysis.report import render, report_from_db
from modlens.analysis.report_tables import LONG, latex_escape, read_csv
from modlens.audit import run_audit
from modlens.cli import main
from modlens.datasets.catalog import CATALOG
from modlens.detectors.base import Detector

HASH = "sha256-" + "0123456789abcdef" * 4  # a version as long as a model's content hash


class LengthDetector(Detector):
    """Test detector: the longer the text, the more toxic it looks."""
    name, labels, toxicity_label = "length", ("toxicity",), "toxicity"

    def __init__(self, version: str, scale: float) -> None:
        self.version, self.scale = version, scale

    def score(self, texts):
        return [{"toxicity": min(1.0, len(t) / self.scale)} for t in texts]


@pytest.fixture(scope="module")
def log(tmp_path_factory):
    """Ratings on three platforms (human, overlap and people sections), then a labelled file audited by
    two versions of one detector (labelled section, with bootstrap intervals and a negative-free mix)."""
    folder = tmp_path_factory.mktemp("tables")
    db = folder / "log.sqlite"
    synthetic.generate(db, synthetic.SyntheticSpec(seed=2))
    f = folder / "sample.csv"
    rows = [(f"comment number {i} " + "very rude words " * (i % 4), int(i % 4 >= 2)) for i in range(60)]
    f.write_text("text,toxic\n" + "".join(f"{t},{y}\n" for t, y in rows))
    dets = {"a": LengthDetector("1.0", 90.0), "b": LengthDetector(HASH, 60.0)}
    run_audit(str(f), db=db, detector_objects=dets, progress=False, reader_options={"label": "toxic"})
    run_audit("davidson", db=db, detector_objects=dets, progress=False, limit=40)  # the real one, by its reader
    run_audit("hatecheck", db=db, detector_objects=dets, progress=False, limit=150)  # HateCheck's own tables
    return db


@pytest.fixture(scope="module")
def report(log):
    """The log's report, built once for the tests that only read it (building it bootstraps every interval)."""
    return report_from_db(log)


@pytest.fixture(scope="module")
def rendered(report):
    return render(report)


class _Tables(HTMLParser):
    """The HTML report's tables by id: header and rows of cell texts."""

    def __init__(self) -> None:
        super().__init__()
        self.tables: dict[str, list[list[str]]] = {}
        self._id: str | None = None
        self._row: list[str] | None = None
        self._cell: list[str] | None = None

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag == "div" and a.get("class") == "tw":
            self._id = a.get("id")
            self.tables[self._id] = []
        elif tag == "tr" and self._id:
            self._row = []
        elif tag in ("td", "th") and self._row is not None:
            self._cell = []

    def handle_endtag(self, tag):
        if tag in ("td", "th") and self._cell is not None:
            self._row.append("".join(self._cell))
            self._cell = None
        elif tag == "tr" and self._row is not None:
            self.tables[self._id].append(self._row)
            self._row = None
        elif tag == "table":
            self._id = None

    def handle_data(self, data):
        if self._cell is not None:
            self._cell.append(data)


def html_tables(page: str) -> dict[str, list[list[str]]]:
    p = _Tables()
    p.feed(page)
    return p.tables


NUMBER = re.compile(r"(?<![\w.-])-?\d+(?:\.\d+)?")


def numbers(text: str) -> list[str]:
    return NUMBER.findall(text.replace("\u00a0", " "))


def latex_tables(tex: str) -> dict[str, list[list[str]]]:
    """Each table's header and rows, as LaTeX text, by its label's number."""
    out = {}
    for m in re.finditer(r"\\label\{tab:modlens-(\d+)\}(.*?)\\bottomrule", tex, re.S):
        body = m.group(2).split(r"\endhead")[-1] if r"\endhead" in m.group(2) else m.group(2)
        lines = [ln for ln in body.splitlines() if ln.endswith(r" \\") and not ln.startswith(r"\caption")]
        out[f"t{int(m.group(1))}"] = [ln[:-3].split(" & ") for ln in lines]
    return out


def test_csv_and_latex_carry_exactly_the_html_reports_figures(log, tmp_path):
    assert main(["report", "--db", str(log), "--out", str(tmp_path / "r.html")]) == 0
    assert main(["report", "--db", str(log), "--format", "csv", "--out", str(tmp_path / "csv")]) == 0
    assert main(["report", "--db", str(log), "--format", "latex", "--out", str(tmp_path / "t.tex")]) == 0
    page = (tmp_path / "r.html").read_text()
    from_html = html_tables(page)
    index = read_csv(tmp_path / "csv" / "index.csv")
    assert index[0] == ["table", "file", "caption", "rows", "columns", "notes"]
    assert [f"t{r[0]}" for r in index[1:]] == list(from_html), "one CSV per table of the page, in its order"
    from_latex = latex_tables((tmp_path / "t.tex").read_text())
    assert list(from_latex) == list(from_html)
    captions = [r[2] for r in index[1:]]
    for title in ("Detectors", "Human ratings", "Detectors vs people", "Detectors on labelled data", "HateCheck by functionality"):
        assert any(title in c for c in captions), title
    checked = 0
    for (number, file, caption, n_rows, _, _notes), (tid, rows) in zip(index[1:], from_html.items()):
        assert f"<caption>Table {number}</caption>" in page
        from_csv = read_csv(tmp_path / "csv" / file)
        assert len(from_csv) == len(rows) == int(n_rows) + 1, caption
        for r_html, r_csv, r_tex in zip(rows, from_csv, from_latex[tid]):
            # the CSV holds each cell's exact text; LaTeX the same figures (its escapes aside)
            assert r_csv == r_html, caption
            assert [numbers(c.replace("---", "—").replace("--", "–")) for c in r_tex] == [numbers(c) for c in r_html]
            assert r_tex == [latex_escape(c) for c in r_html]
            checked += sum(len(numbers(c)) for c in r_html)
    assert checked > 300  # the comparison saw the report's figures, not empty tables
    # the intervals travel too: a labelled figure with its bootstrap interval, in all three
    ci = re.compile(r"^\d\.\d{3} \[\d\.\d{3},\u00a0\d\.\d{3}\]$")
    assert any(ci.match(c) for rows in from_html.values() for r in rows for c in r)


def test_references_cite_the_methods_and_data_sets_used(report, rendered):
    refs = "\n".join(report["references"])
    for who in ("Efron", "Krippendorff", "Muralikumar", "McCullagh", "Davidson, Dana Warmsley"):
        assert who in refs, who
    assert {"name": "davidson", "reader": "davidson"} in report["datasets"]
    page = rendered.html
    assert "<h2>References</h2>" in page and "Bradley Efron (1979)" in page
    assert "bootstrap intervals (Efron 1979)" in report["methods"]["labelled"]  # the note cites what it uses


def test_a_file_is_never_cited_by_its_name(tmp_path):
    """A generic file called davidson.csv is not Davidson's data: named in a note, not cited."""
    f = tmp_path / "davidson.csv"
    f.write_text("text,toxic\n" + "".join(f"text {i},{i % 2}\n" for i in range(20)))
    db = tmp_path / "log.sqlite"
    run_audit(str(f), db=db, detector_objects={"a": LengthDetector("1.0", 90.0)}, progress=False,
              reader_options={"label": "toxic"})
    report = report_from_db(db)
    assert not any("Davidson" in r for r in report["references"])
    # named by its content hash: the name davidson belongs to the data set the davidson reader identifies
    assert "by the name an audit declared; cite their sources): file-" in render(report).html


def test_every_method_note_citation_and_catalog_data_set_has_a_reference():
    from modlens.analysis.sections import SECTIONS

    for s in SECTIONS:  # a note that cites "X 2001" without its reference would list nothing
        for cited in re.findall(r"\b([A-Z][\w.]+(?:,? (?:and )?[A-Z][\w.]+)*(?: et al\.)?) (\d{4})\b", s.method):
            assert references.cited_in([" ".join(cited)]), (s.key, cited)
    for name, entry in CATALOG.items():
        ref = references.REFERENCES[references.DATASETS[name]]
        first_author = entry.citation.split(",")[0].split(".")[0]
        assert first_author in ref.authors, name


def test_detectors_go_by_short_names_and_their_versions_stand_once(report, rendered):
    assert {(d["short"], d["version"]) for d in report["detectors"]} >= {("length#1", "1.0"), ("length#2", HASH)}
    page = rendered.html
    assert page.count(HASH) == 1, "the version is in the Detectors table only"
    detectors = html_tables(page)["t1"]
    assert ["length#1", "length", "1.0"] in [r[:3] for r in detectors]
    assert ["length#2", "length", HASH] in [r[:3] for r in detectors]
    assert f"<td class=nowrap>{HASH}</td>" in page  # never broken mid-hash
    legends = re.findall(r'<text [^>]*font-size="9" text-anchor="start" >([^<]*)</text>', page)
    assert "length#2" in legends and not any("sha256" in t for t in legends)


def test_latex_is_booktabs_with_captions_and_long_tables_break(log, tmp_path):
    assert main(["report", "--db", str(log), "--format", "latex", "--out", str(tmp_path / "t.tex")]) == 0
    tex = (tmp_path / "t.tex").read_text()
    assert r"\toprule" in tex and r"\midrule" in tex and r"\bottomrule" in tex and r"\hline" not in tex
    assert tex.count(r"\caption{") == tex.count(r"\label{tab:modlens-")
    assert r"\bibitem{efron} Bradley Efron (1979)" in tex
    for m in re.finditer(r"\\begin\{(table|longtable)\}(.*?)\\end\{\1\}", tex, re.S):
        n_rows = m.group(2).split(r"\midrule")[-1].count(r" \\")
        assert (m.group(1) == "longtable") == (n_rows > LONG)
    # what LaTeX reserves is escaped: no bare & % _ # in a cell
    for line in tex.splitlines():
        if line.endswith(r" \\") and not line.startswith("\\"):
            assert not re.search(r"(?<!\\)[%_#$]", line.replace("$\\", "").replace("$", "")), line


def test_csv_cells_a_spreadsheet_would_run_are_neutralised(tmp_path):
    from modlens.analysis.report_tables import Table, write_csv

    t = Table.of(["text", "score"], [["=HYPERLINK(\"x\")", -0.25], ["-0.1 [-0.2, 0.0]", 3]])
    t.number, t.caption = 1, "probe"
    write_csv([t], [], tmp_path)
    raw = (tmp_path / "01-probe.csv").read_text().splitlines()
    assert raw[1].startswith("\"'=HYPERLINK") and raw[1].endswith(",-0.250")  # a number stays a number
    assert raw[2].startswith("\"'-0.1")
    assert read_csv(tmp_path / "01-probe.csv")[1:] == [["=HYPERLINK(\"x\")", "-0.250"], ["-0.1 [-0.2, 0.0]", "3"]]


def test_every_section_builds_its_tables_through_the_one_model():
    """A table written as raw HTML would be on the page only: no section writes one."""
    from modlens.analysis import sections

    for path in Path(sections.__file__).parent.glob("*.py"):
        if path.name != "html.py":
            assert not re.search(r"<t(able|r|d|h)\b", path.read_text()), path.name


def test_page_and_tables_come_from_one_rendering(rendered):
    """The same render gives the page and the tables: a cell changed in the model changes both."""
    r = rendered
    for t in r.tables:
        assert f"id=t{t.number}>" in r.html
        block = r.html.split(f"id=t{t.number}>", 1)[1].split("</table>", 1)[0]
        assert all(html_mod.escape(c.text) in block for row in t.rows for c in row)
        assert t.caption


def test_csv_folder_written_again_keeps_no_stale_table(tmp_path):
    from modlens.analysis.report_tables import Table, write_csv

    def tables(n):
        out = []
        for i in range(1, n + 1):
            t = Table.of(["x"], [[i]])
            t.number, t.caption = i, f"table {i}"
            out.append(t)
        return out
    out = tmp_path / "tables"
    out.mkdir()
    (out / "notes.csv").write_text("mine\n")
    write_csv(tables(3), [], out)
    assert (out / "03-table-3.csv").is_file()
    write_csv(tables(2), [], out)
    assert sorted(p.name for p in out.iterdir()) == ["01-table-1.csv", "02-table-2.csv", "index.csv", "notes.csv",
                                                           "references.csv"]
