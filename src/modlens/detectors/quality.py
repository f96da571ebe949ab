"""A detector's measured quality: what it scored on held-out labelled data, per label, shipped beside
the model it was measured on and read when the detector loads (`Detector.quality`).

A head file `minilm-toxicity.json` has `minilm-toxicity.quality.json` beside it, written by
`modlens train-head` when it measures the head. Each measurement names the metric, its value, the
held-out data set, how many rows, who labelled them (people, or a teacher model) and the day it
was measured. The file names the detector version it was measured with, and it is read only
when the loaded detector has that version: another encoder, head or max_length is "not measured",
never another version's figure. It is a file of its own, not part of the head, because the head's
bytes are part of the detector version (a date in it would change every retrained version) and
the head stays byte-identical from the same data and seed.

A label with no figure says why (`not_measured`), e.g. no held-out row of that class.
"""
from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from modlens.errors import ErrorKind, ModlensError
from modlens.trainingdata import KNOWN_POOLS

FORMAT = "modlens-quality/1"
QUALITY_SUFFIX = ".quality.json"  # beside a head file: `minilm-toxicity.json` -> `minilm-toxicity.quality.json`
NOT_MEASURED = "not measured"


class QualityFileError(ModlensError, ValueError):
    """A quality file that cannot be read (the detector that ships it does not load: it never
    shows a figure it cannot read)."""
    kind = ErrorKind.FAILED
    fix: str


@dataclass(frozen=True)
class Measurement:
    """One figure of one label on one held-out data set."""
    metric: str        # "ROC AUC"
    value: float
    dataset: str       # the data set by name
    split: str         # how its rows were kept out of the fit
    n: int             # its rows
    labelled_by: str   # people, or a teacher model (then the figure is agreement with it)
    measured_on: str   # ISO date, UTC

    def line(self) -> str:
        return (f"{self.metric} {self.value:.4f} on {self.dataset}, {self.n:,} rows {self.split}; labels: "
                f"{self.labelled_by}; measured {self.measured_on}")


@dataclass(frozen=True)
class Quality:
    """The measured quality of one detector version, per label."""
    detector_version: str
    labels: dict[str, tuple[Measurement, ...]] = field(default_factory=dict)
    not_measured: dict[str, str] = field(default_factory=dict)  # label -> why it has no figure

    def of(self, label: str) -> tuple[Measurement, ...]:
        return self.labels.get(label, ())

    def why_not(self, label: str) -> str:
        """What to print for a label without a figure."""
        reason = self.not_measured.get(label)
        return f"{NOT_MEASURED} ({reason})" if reason else NOT_MEASURED

    def to_dict(self) -> dict[str, Any]:
        return {"format": FORMAT, "detector_version": self.detector_version,
                "labels": {lab: [asdict(m) for m in ms] for lab, ms in self.labels.items()},
                "not_measured": dict(self.not_measured)}


def path_beside(head_path: Path) -> Path:
    return head_path.with_name(head_path.name.removesuffix(".json") + QUALITY_SUFFIX)


def write(head_path: Path, quality: Quality) -> Path:
    path = path_beside(head_path)
    path.write_text(json.dumps(quality.to_dict(), indent=1) + "\n")
    return path


def read(path: Path) -> Quality:
    """A quality file, refused with a fix line when it is not one."""
    fix = f"measure the head again with `modlens train-head`, or remove {path}"
    try:
        raw = json.loads(path.read_text())
        if not isinstance(raw, dict) or raw.get("format") != FORMAT:
            raise ValueError(f"not a {FORMAT} file")
        labels = {str(lab): tuple(Measurement(str(m["metric"]), float(m["value"]), str(m["dataset"]),
                                              str(m["split"]), int(m["n"]),
                                              str(m["labelled_by"]), str(m["measured_on"])) for m in ms)
                  for lab, ms in raw["labels"].items()}
        return Quality(str(raw["detector_version"]), labels, {str(k): str(v) for k, v in raw.get("not_measured", {}).items()})
    except (ValueError, KeyError, TypeError, AttributeError) as err:  # JSONDecodeError is a ValueError
        raise QualityFileError(f"quality file {path} is unreadable: {err}", fix) from err


def for_head(head_path: Path, version: str) -> Quality | None:
    """The quality measured for this detector version, from the file beside its head; None when
    there is none, or when it was measured with another version."""
    path = path_beside(head_path)
    if not path.is_file():
        return None
    quality = read(path)
    return quality if quality.detector_version == version else None


def _auc(metric_value: Any) -> float | None:
    return None if metric_value is None else float(metric_value)


def _pool(rec: dict[str, Any]) -> str:
    """A training pool by name: its file and the datasets in it (trainingdata.DATASETS' keys)."""
    known = KNOWN_POOLS.get(str(rec.get("data_sha256", "")))
    name = known[1].split(":")[0] if known else str(rec.get("data", "an undeclared pool"))
    datasets = rec.get("datasets") or (known[0] if known else ())
    return f"{name} ({' + '.join(datasets)})" if datasets else name


def from_head_metrics(meta: dict[str, Any], version: str, measured_on: str, positive_label: str = "toxic") -> Quality:
    """The figures a head's training recorded (`head.train` / `head_multi.train_six` metrics), as
    measurements of `version`: the one translation from a head's metrics to its shipped quality,
    used by `modlens train-head` when it writes a head."""
    rec, metrics = meta.get("training", {}), meta.get("metrics", {})
    labels: dict[str, list[Measurement]] = {}
    not_measured: dict[str, str] = {}
    n = int(rec.get("n_test", 0))
    if "heldout_auc_vs_teacher" in metrics:  # the six-label head
        pool = f"{_pool(rec)}, benchmark texts removed"
        split = (f"held out ({rec.get('test_size', 0):.0%} of a stratified seeded sample of {rec.get('sample', 0):,}, "
                 f"seed {rec.get('seed', '?')}, never fit)")
        teacher = str(rec.get("teacher", {}).get("name", "an undeclared teacher")).split(" (")[0]
        gold = _auc(metrics.get("heldout_auc_toxicity_vs_gold"))
        if gold is not None:  # TOXICITY's target mixes gold and teacher: measured against the people's labels
            labels["toxicity"] = [Measurement("ROC AUC", gold, pool, split, n, "people (the Jigsaw annotators' binary gold)",
                                              measured_on)]
        for label, value in metrics["heldout_auc_vs_teacher"].items():
            auc = _auc(value)
            if label in labels:
                continue
            if auc is None:
                not_measured[label] = "the held-out rows hold one class only at 0.5, so ROC AUC is undefined"
                continue
            labels[label] = [Measurement("ROC AUC", auc, pool, split, n,
                                         f"a model, not people: the teacher {teacher} at 0.5", measured_on)]
    elif "heldout_auc" in metrics:  # the one-label head
        split = (f"held out ({rec.get('test_size', 0):.0%} of a balanced seeded sample of {rec.get('sample', 0):,}, "
                 f"seed {rec.get('seed', '?')}, never fit)")
        auc = _auc(metrics["heldout_auc"])
        if auc is not None:
            labels[positive_label] = [Measurement("ROC AUC", auc, _pool(rec), split, n,
                                                  "people (the pool's is_offensive column)", measured_on)]
        hatecheck = metrics.get("hatecheck") or {}
        if hatecheck.get("auc") is not None:
            labels.setdefault(positive_label, []).append(Measurement(
                "ROC AUC", float(hatecheck["auc"]), "HateCheck (Röttger et al. 2021)",
                "of test cases, hateful vs non-hateful (none in the training pool)", int(hatecheck.get("n", 0)),
                "people (HateCheck's gold labels)", measured_on))
    return Quality(version, {lab: tuple(ms) for lab, ms in labels.items()}, not_measured)
