"""The papers the report's methods follow and the data sets it reads, cited by authors and year in
the method notes (`cite`) and listed in full at the end of the report (`used`: those whose
citation a note of a section present contains, then the papers of the data sets the log's audits
read). A method note that uses a method cites it through `cite(key)`, so the list cannot miss it;
every data set of the catalog (`datasets/catalog.py`) has its paper here (`DATASETS`, checked by
tests/test_report_tables.py)."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable


@dataclass(frozen=True)
class Reference:
    key: str
    authors: str      # as listed in the paper
    short: str        # how the notes cite it
    year: int
    title: str
    venue: str

    def citation(self) -> str:
        return f"{self.short} {self.year}"

    def full(self) -> str:
        return f"{self.authors} ({self.year}). {self.title}. {self.venue}."


REFERENCES = {r.key: r for r in (
    Reference("noisyhate", "Yiran Ye, Thai Le, Dongwon Lee", "Ye, Le and Lee", 2025,
              "NoisyHate: Mining Online Human-Written Perturbations for Realistic Robustness Benchmarking of "
              "Content Moderation Models", "ICWSM"),
    Reference("duo", "Wenxuan Wang, Jingyuan Huang, Chang Chen, Jiazhen Gu, Jianping Zhang, Weibin Wu, Pinjia He, "
              "Michael R. Lyu", "Wang et al.", 2023, "Validating Multimedia Content Moderation Software via "
              "Semantic Fusion", "ISSTA 2023"),
    Reference("taebench", "Xuan Zhu, Dmitriy Bespalov, Liwen You, Ninad Kulkarni, Yanjun Qi", "Zhu et al.", 2024,
              "TaeBench: Improving Quality of Toxic Adversarial Examples", "arXiv preprint"),
    Reference("human_centered", "Meena Devii Muralikumar, Yun Shan Yang, David W. McDonald",
              "Muralikumar, Yang and McDonald", 2023, "A Human-centered Evaluation of a Toxicity Detection API: "
              "Testing Transferability and Unpacking Latent Attributes", "ACM Transactions on Social Computing 6(1-2), "
              "article 4"),
    Reference("sass", "Lorena Piedras, Lucas Rosenblatt, Julia Wilkins", "Piedras, Rosenblatt and Wilkins", 2022,
              "Critical Perspectives: A Benchmark Revealing Pitfalls in PerspectiveAPI",
              "Second Workshop on NLP for Positive Impact (NLP4PI), EMNLP 2022"),
    Reference("hatecheck", "Paul Röttger, Bertie Vidgen, Dong Nguyen, Zeerak Waseem, Helen Margetts, "
              "Janet B. Pierrehumbert", "Röttger et al.", 2021, "HateCheck: Functional Tests for Hate Speech "
              "Detection Models", "ACL-IJCNLP 2021"),
    Reference("davidson", "Thomas Davidson, Dana Warmsley, Michael Macy, Ingmar Weber", "Davidson et al.", 2017,
              "Automated Hate Speech Detection and the Problem of Offensive Language", "ICWSM 2017"),
    Reference("tweeteval", "Francesco Barbieri, Jose Camacho-Collados, Luis Espinosa-Anke, Leonardo Neves",
              "Barbieri et al.", 2020, "TweetEval: Unified Benchmark and Comparative Evaluation for Tweet "
              "Classification", "Findings of the Association for Computational Linguistics: EMNLP 2020"),
    Reference("hatexplain", "Binny Mathew, Punyajoy Saha, Seid Muhie Yimam, Chris Biemann, Pawan Goyal, "
              "Animesh Mukherjee", "Mathew et al.", 2021, "HateXplain: A Benchmark Dataset for Explainable Hate "
              "Speech Detection", "Proceedings of the AAAI Conference on Artificial Intelligence 35(17)"),
    Reference("civil_comments", "Daniel Borkan, Lucas Dixon, Jeffrey Sorensen, Nithum Thain, Lucy Vasserman",
              "Borkan et al.", 2019, "Nuanced Metrics for Measuring Unintended Bias with Real Data for Text "
              "Classification", "Companion Proceedings of The 2019 World Wide Web Conference (WWW '19 Companion)"),
    # the statistics the sections use
    Reference("efron", "Bradley Efron", "Efron", 1979, "Bootstrap Methods: Another Look at the Jackknife",
              "The Annals of Statistics 7(1), 1-26"),
    Reference("krippendorff", "Klaus Krippendorff", "Krippendorff", 2004,
              "Content Analysis: An Introduction to Its Methodology (2nd edition)", "Sage"),
    Reference("wilson", "Edwin B. Wilson", "Wilson", 1927, "Probable Inference, the Law of Succession, and "
              "Statistical Inference", "Journal of the American Statistical Association 22(158), 209-212"),
    Reference("mccullagh", "Peter McCullagh", "McCullagh", 1980, "Regression Models for Ordinal Data",
              "Journal of the Royal Statistical Society, Series B 42(2), 109-142"),
)}

# data set (its catalog name, as an audit records it) -> the paper that introduced it
DATASETS = {"noisyhate": "noisyhate", "hatecheck": "hatecheck", "davidson": "davidson", "sass": "sass",
            "tweeteval": "tweeteval", "hatexplain": "hatexplain", "civil-comments": "civil_comments"}


def catalog_data_set(name: str, reader: str) -> str | None:
    """The catalog data set an audit read, from the name it recorded and the reader that read it: the
    name itself when its own reader gave it (`davidson`), the reader's for one of its tasks
    (`tweeteval-hate`, a name its reader gives the released files only); None for a file named by its
    content (`file-…`, even one read in a catalog data set's layout), by a declared name, or by a
    reader that is no catalog data set's (a plug-in's)."""
    if reader in DATASETS and (name == reader or name.startswith(f"{reader}-")):
        return reader
    return None


def cite(key: str, where: str = "") -> str:
    """"Piedras, Rosenblatt and Wilkins 2022" (plus `where`, e.g. "Table 5")."""
    return REFERENCES[key].citation() + (f", {where}" if where else "")


def cited_in(texts: Iterable[str]) -> list[Reference]:
    """The references whose citation appears in any of the texts, in the order of first appearance."""
    joined = "\n".join(texts)
    found = [(joined.find(r.citation()), r) for r in REFERENCES.values() if r.citation() in joined]
    return [r for _, r in sorted(found, key=lambda p: p[0])]


def used(methods: Iterable[str], datasets: Iterable[str]) -> list[Reference]:
    """What a report cites: the references its method notes cite (in order of first citation),
    then the papers of the data sets it read (a data set modlens does not know, e.g. a file
    audited by its path, has none here: the report names it, its user cites it)."""
    out = cited_in(methods)
    for name in datasets:
        ref = REFERENCES.get(DATASETS.get(name, ""))
        if ref is not None and ref not in out:
            out.append(ref)
    return out
