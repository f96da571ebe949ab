"""The papers the report's methods follow, cited by authors and year in the method notes (`cite`)
and listed in full at the end of the report (`cited_in`: those whose citation a note contains)."""
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
)}


def cite(key: str, where: str = "") -> str:
    """"Piedras, Rosenblatt and Wilkins 2022" (plus `where`, e.g. "Table 5")."""
    return REFERENCES[key].citation() + (f", {where}" if where else "")


def cited_in(texts: Iterable[str]) -> list[Reference]:
    """The references whose citation appears in any of the texts, in the order of first appearance."""
    joined = "\n".join(texts)
    found = [(joined.find(r.citation()), r) for r in REFERENCES.values() if r.citation() in joined]
    return [r for _, r in sorted(found, key=lambda p: p[0])]
