"""The datasets modlens knows: where each comes from, under which licence, how to cite it.

One `DatasetEntry` per dataset; adding a dataset = one entry in `CATALOG`. `modlens data fetch NAME`
puts an entry's files in a folder named after it (`<data dir>/NAME/<file.path>`), which is the
layout the readers and the shorthands in `registry.SHORTHANDS` look for.

Checksums: `sha256` is pinned only where modlens has seen the bytes — the shipped copies of HateCheck
and Davidson are byte copies of the upstream files, so their hashes are those of
`src/modlens/datasets/data/`; SASS's four released files were checked byte for byte against the
authors' repository (never shipped: no licence). NoisyHate's shipped copies are a part of the data
set, not an upstream file: their hashes are `shipped_sha256`. A file whose bytes could not be read
but whose repository's tree could is pinned by its git blob id there (`git_blob`: HateXplain's
dataset.json); the fetch checks it and records the SHA-256. Files that could not be seen from
where this was written have `sha256=None`: the first fetch records their hash in `NAME/SHA256SUMS`
and prints it so it can be pinned here or with `--sha256` (docs/DATASETS.md).

The pins also say which bytes are the data set (`base.catalog_name`): a file read in a layout whose
entry pins hashes gets the entry's name only when its SHA-256 is one of them; any other file in
that layout is named by its content, so it is neither pooled with the data set nor cited as it. URLs marked `verified=False` are the best
reading of the project's public pages; a 404 from one means the file name moved upstream.
"""
from __future__ import annotations

import os
from dataclasses import dataclass

from modlens.names import UnknownName

MIRROR_ENV = "MODLENS_DATA_MIRROR"


@dataclass(frozen=True)
class RemoteFile:
    path: str                 # where it lands inside the dataset folder (what readers expect)
    url: str                  # canonical address
    sha256: str | None = None  # pinned hash; None = recorded by the first fetch (trust on first use)
    verified: bool = True     # False: the exact address could not be checked when it was written
    # the file's git blob id in its upstream repository at the commit its address names (`git ls-tree`:
    # SHA-1 of "blob SIZE\0" + the bytes, `fetch.git_blob_of`): a pin for a file whose bytes could not be
    # read where this was written but whose repository tree could (HateXplain's dataset.json)
    git_blob: str | None = None


@dataclass(frozen=True)
class DatasetEntry:
    name: str
    title: str
    description: str
    homepage: str
    licence: str
    licence_url: str
    citation: str
    files: tuple[RemoteFile, ...]
    shipped: str | None = None  # what ships in `paths.shipped_data()/NAME` (None: fetch-only)
    note: str = ""
    # (file under `paths.shipped_data()/NAME`, its SHA-256) of shipped copies that are no upstream
    # file (NoisyHate's dev half): the bytes modlens ships as this data set
    shipped_sha256: tuple[tuple[str, str], ...] = ()

    def pinned_files(self) -> list[tuple[str, str]]:
        """(file, SHA-256) of every pinned file: the fetched files' (their paths in the data set's folder)
        and the shipped copies'. A layout whose data set's name depends on which file it is (TweetEval's
        task folders) asks which file a file's bytes are (`base.catalog_files`)."""
        return [(f.path, f.sha256) for f in self.files if f.sha256] + list(self.shipped_sha256)

    def blob_pinned_files(self) -> list[tuple[str, str]]:
        """(file, git blob id) of the files pinned by their upstream git blob id only (`RemoteFile.git_blob`)."""
        return [(f.path, f.git_blob) for f in self.files if f.git_blob and not f.sha256]

    def url(self, file: RemoteFile, mirror: str | None = None) -> str:
        """The file's address; a mirror is laid out like the fetched folder: MIRROR/NAME/PATH."""
        mirror = mirror or os.environ.get(MIRROR_ENV)
        return f"{mirror.rstrip('/')}/{self.name}/{file.path}" if mirror else file.url


GITHUB_RAW = "https://raw.githubusercontent.com"
HF = "https://huggingface.co/datasets"

CATALOG: dict[str, DatasetEntry] = {e.name: e for e in [
    DatasetEntry(
        name="noisyhate",
        title="NoisyHate (full set)",
        description="1,339 toxic Civil Comments, each with one human-written perturbation, Perspective "
                    "scores and recorded spell-checker results",
        homepage="https://github.com/YiranYe/NoisyHate (data: doi:10.5281/zenodo.14654784)",
        licence="MIT", licence_url="https://github.com/YiranYe/NoisyHate",
        citation="Ye, Le, Lee. NoisyHate: Mining Online Human-Written Perturbations for Realistic Robustness "
                 "Benchmarking of Content Moderation Models. ICWSM 2025.",
        # UNVERIFIED: the file name on the hub was not visible from here; if it 404s, see
        # https://huggingface.co/datasets/NoisyHate/Noisy_Hate_Data/tree/main and fix the URL.
        files=(RemoteFile("noisyhate_full.csv", f"{HF}/NoisyHate/Noisy_Hate_Data/resolve/main/noisyhate_full.csv",
                          verified=False),),
        shipped="the dev half (588 pairs, dev.csv) and perturbations.json",
        note="the `noisyhate` shorthand stays the shipped dev half (the other half is held out on "
             "purpose); audit the full file by its path (named noisyhate once its hash is pinned here)",
        shipped_sha256=(("dev.csv", "669f6bdf13e1e4ef97db2702a97dd8b466bb877ace39c2edb7ab04ea6f8223b8"),
                        ("perturbations.json", "eb06062ed6bbfbc2d5e82e16c8617fade975c52fcfff7763a86e8a0d417646a7")),
    ),
    DatasetEntry(
        name="hatecheck",
        title="HateCheck",
        description="3,728 functional test cases for hate speech detection (29 functionalities) "
                    "and the annotators' labels",
        homepage="https://github.com/paul-rottger/hatecheck-data",
        licence="CC BY 4.0", licence_url="https://creativecommons.org/licenses/by/4.0/",
        citation="Röttger, Vidgen, Nguyen, Waseem, Margetts, Pierrehumbert. HateCheck: Functional Tests "
                 "for Hate Speech Detection Models. ACL 2021.",
        # branch name `main` not checked from here; the pinned hashes guard the bytes either way
        files=(RemoteFile("test_suite_cases.csv",
                          f"{GITHUB_RAW}/paul-rottger/hatecheck-data/main/test_suite_cases.csv",
                          "ecf0dc1e93fccc90b6f880e632b19e635c0f0a68b3157915a9e20b6938f121cf", verified=False),
               RemoteFile("test_suite_annotations.csv",
                          f"{GITHUB_RAW}/paul-rottger/hatecheck-data/main/test_suite_annotations.csv",
                          "93aa6f760f2d311cfbce26881f0e5eea3ad8b4e095e1916f9f14a6c749f15231", verified=False)),
        shipped="both files, byte for byte",
    ),
    DatasetEntry(
        name="davidson",
        title="Davidson et al. hate speech and offensive language",
        description="24,783 tweets labelled hate speech / offensive / neither",
        homepage="https://github.com/t-davidson/hate-speech-and-offensive-language",
        licence="MIT (code and labels); tweets under Twitter's terms",
        licence_url="https://github.com/t-davidson/hate-speech-and-offensive-language/blob/master/LICENSE",
        citation="Davidson, Warmsley, Macy, Weber. Automated Hate Speech Detection and the Problem of "
                 "Offensive Language. ICWSM 2017.",
        files=(RemoteFile("labeled_data.csv",
                          f"{GITHUB_RAW}/t-davidson/hate-speech-and-offensive-language/master/data/labeled_data.csv",
                          "fcb8bc7c68120ae4af04a5b9acd58585513ede11e1548ebf36a5c2040b6f6281"),),
        shipped="the whole file, byte for byte",
    ),
    DatasetEntry(
        name="sass",
        title="SASS (Selected Adversarial Semantics)",
        description="short texts in ten categories (sarcasm, gaslighting, stereotyping, …) with human "
                    "toxicity ratings and recorded Perspective scores",
        homepage="https://github.com/lurosenb/sass",
        licence="none stated in the repository (all rights reserved): fetched for your own research "
                "use, never shipped or redistributed by modlens",
        licence_url="https://github.com/lurosenb/sass",
        citation="Piedras, Rosenblatt, Wilkins. Critical Perspectives: A Benchmark Revealing Pitfalls in "
                 "PerspectiveAPI. NLP for Positive Impact workshop, EMNLP 2022.",
        # the released files: paths on the repository's main branch and their bytes checked against a
        # copy of the repository (commit 3a37ed7); never shipped, so these pins are how modlens knows them
        files=(RemoteFile("full_toxicity_benchmark.tsv",
                          f"{GITHUB_RAW}/lurosenb/sass/main/data/raw/full_toxicity_benchmark.tsv",
                          "ef9eb0975ecbed21b815ddeed558eb4df3d117c4cad9c62a5e1b84d3c473b0d1"),
               RemoteFile("norm_human_toxicity_scores.csv",
                          f"{GITHUB_RAW}/lurosenb/sass/main/data/processed/norm_human_toxicity_scores.csv",
                          "8448fe7d26fac043152ab69a827ed6d74b0d88ec7f3e0f63c1b053bcd7da3c5b"),
               RemoteFile("toxicity_benchmark_scores.csv",
                          f"{GITHUB_RAW}/lurosenb/sass/main/data/processed/toxicity_benchmark_scores.csv",
                          "1020ae55281234c1e08e7e12c7ead627a820acf175dd766262eb4bac453d489c"),
               RemoteFile("final_experiment_results.csv",
                          f"{GITHUB_RAW}/lurosenb/sass/main/data/processed/final_experiment_results.csv",
                          "6608f03732bc0bafc2052b93d61bfdf4c0a3793e04f3599f196be3da5f954075")),
    ),
    DatasetEntry(
        name="tweeteval",
        title="TweetEval (hate and offensive tasks)",
        description="tweets labelled for hate speech (SemEval 2019 HatEval, English) and offensive language "
                    "(SemEval 2019 OffensEval), in fixed train/val/test splits: a task folder of text and "
                    "label files (audit a split by its path: tweeteval/hate/test_text.txt)",
        homepage="https://github.com/cardiffnlp/tweeteval",
        licence="none beyond the repository's README: released without restrictions, but restrictions may "
                "apply to each task's original data set and to Twitter's content; never shipped by modlens",
        licence_url="https://github.com/cardiffnlp/tweeteval#license",
        citation="Barbieri, Camacho-Collados, Espinosa-Anke, Neves. TweetEval: Unified Benchmark and "
                 "Comparative Evaluation for Tweet Classification. Findings of EMNLP 2020.",
        # each split's text and label files and each task's mapping.txt, hashed from the authors'
        # repository at commit 4fbd22cd78421f05b1ecdb4fc5725bc7a7bd8f66 (the addresses name that commit, so
        # they serve these bytes). The reader names a split `tweeteval-TASK` only when its text file, its
        # labels file and the task's mapping.txt are these files of one task and split: an edited label or
        # mapping would otherwise be stored on the release's own comments. Only the two tasks with a
        # toxicity gold label are pinned; a file of another task is named by its content.
        files=tuple(RemoteFile(f"{task}/{file}",
                               f"{GITHUB_RAW}/cardiffnlp/tweeteval/4fbd22cd78421f05b1ecdb4fc5725bc7a7bd8f66/"
                               f"datasets/{task}/{file}", sha256)
                    for task, file, sha256 in (
            ("hate", "mapping.txt", "3fc75504ffae64ddc82e13afb5790af7798cd3167d7d35790abe78b39b991896"),
            ("hate", "train_text.txt", "6572bb3a42143128a5dfa99af8debeb0668e637c34b2d1e3140dac47316fe2c2"),
            ("hate", "train_labels.txt", "4e8fde025a453a25c94632794254131dedeac4e57228ad64157c41571cc88f71"),
            ("hate", "val_text.txt", "1ff78b1ed4c5ce43284b9eba32eb7d60c6d45d0d1b3b4d6df456ae01640764f1"),
            ("hate", "val_labels.txt", "5092badf1a0e70036ea6264bcd0b78afc07d0f4a512fa6af34c2c4973600656b"),
            ("hate", "test_text.txt", "bc4762876a8dd8baa55c3cd7b03108e3231a5d691e80b8b1ef97c5be31b9da9a"),
            ("hate", "test_labels.txt", "c14adca6b3627616a835c5ccea8a1cceb0235cd79417257f093eb0e16a69c62f"),
            ("offensive", "mapping.txt", "3e427f483dd5d5be21ae85dcf224c36b3d024af27999939fa0d438d695801c50"),
            ("offensive", "train_text.txt", "78a7a32e38b10af7d8970b008bf17f661c8d0a90dad145fa0fa6a944669650db"),
            ("offensive", "train_labels.txt", "c0b7d6ebdaa4ebcf6fc557ef1e775d92eda160218a0e3b1dd48eb8234dc892a6"),
            ("offensive", "val_text.txt", "816f36d180c35f15a5104838cb73856a0bef42043482fe738f3481b06242a55c"),
            ("offensive", "val_labels.txt", "ed2deb776bd1c52fb8221fadd3360e32d9dfe46842d78053528126e46363a258"),
            ("offensive", "test_text.txt", "25b08c3333c26190f1023961c4508ec9aab24d4722b1a3ea7a6040724c120547"),
            ("offensive", "test_labels.txt", "41d05a7aa0b01f5dafab21b95adb4f979cb4226c046ff315702774d10dac1605"))),
    ),
    DatasetEntry(
        name="hatexplain",
        title="HateXplain",
        description="about 20,000 posts from Twitter and Gab, each labelled hatespeech / offensive / normal by three "
                    "annotators, with the targeted groups and the annotators' rationales (one JSON file)",
        homepage="https://github.com/hate-alert/HateXplain",
        licence="MIT", licence_url="https://github.com/hate-alert/HateXplain/blob/master/LICENSE",
        citation="Mathew, Saha, Yimam, Biemann, Goyal, Mukherjee. HateXplain: A Benchmark Dataset for "
                 "Explainable Hate Speech Detection. AAAI 2021.",
        # pinned by its git blob id in the authors' repository at commit 01d742279dac941981f53806154481c0e15ee686
        # (the address names that commit): the file itself was too large for the copy of the repository read
        # where this was written, its tree was not. Its SHA-256 is recorded by the first fetch
        files=(RemoteFile("dataset.json", f"{GITHUB_RAW}/hate-alert/HateXplain/01d742279dac941981f53806154481c0e15ee686/"
                          "Data/dataset.json", git_blob="741bc082c38f4f8ee45cebdc868b3768e3901089"),),
    ),
    DatasetEntry(
        name="civil-comments",
        title="Jigsaw Civil Comments (Hugging Face mirror)",
        description="about 2 million public comments with crowd-sourced toxicity and identity labels, "
                    "as parquet (audit a shard by its path: `--label toxicity>=0.5`, streamed)",
        homepage="https://huggingface.co/datasets/google/civil_comments",
        licence="CC0 1.0 (the comments)", licence_url="https://creativecommons.org/publicdomain/zero/1.0/",
        citation="Borkan, Dixon, Sorensen, Thain, Vasserman. Nuanced Metrics for Measuring Unintended Bias "
                 "with Real Data for Text Classification. WWW 2019 Companion.",
        # UNVERIFIED: shard names of the hub's parquet files
        files=tuple(RemoteFile(f"{split}.parquet",
                               f"{HF}/google/civil_comments/resolve/main/data/{split}.parquet", verified=False)
                    for split in ("train-00000-of-00002", "train-00001-of-00002",
                                  "validation-00000-of-00001", "test-00000-of-00001")),
    ),
]}


def get(name: str) -> DatasetEntry:
    """The entry called `name`, or an error naming the close matches and every known name."""
    if name in CATALOG:
        return CATALOG[name]
    raise UnknownName("dataset", name, CATALOG)
