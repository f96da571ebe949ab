"""fit and list calibrations of the Perspective-compatible API's scores onto Perspective's scale

    modlens perspective calibrate --attribute TOXICITY --from noisyhate
    modlens perspective calibrate --from my-cached-responses.jsonl --text-column text --score-column response
    modlens perspective list
    modlens perspective drop-in


`calibrate` scores the recorded texts with the detector the attribute maps to (study.toml
`[perspective]`), fits a monotone (isotonic) map on part of the pairs, prints its agreement with
Perspective on the held-out part (Spearman, mean absolute difference, agreement at 0.5/0.7/0.8/0.9)
and stores it for that detector, version and label. The API applies it only when asked (`"calibrated": true`
in a request, or `[perspective] calibrate = true`). Serve the API with `modlens serve`
(or `--perspective-only`); docs/PERSPECTIVE.md.

`list` prints which detector answers each attribute, with the label's quality as measured on held-out
labelled data for that very detector version (recorded beside the model when it was measured), or
"not measured".

`drop-in` prints what to set in the shell of a client that hard-codes Google's address
(`https://commentanalyzer.googleapis.com`) so that it reaches `modlens serve --perspective-proxy`
unchanged: an HTTPS proxy on loopback and a CA file holding the local authority, which is made on
first use and can vouch for commentanalyzer.googleapis.com only (X.509 name constraints).
"""
from __future__ import annotations

import argparse
import json
from typing import TYPE_CHECKING, Any

import modlens.study
from modlens.cli.common import CliError, add_study_option

if TYPE_CHECKING:  # at run time imported in `run`, as the other subcommands import theirs
    from modlens.detectors.base import Detector
    from modlens.perspective.calibration import Calibration

DROP_IN_PORT = 8766  # `modlens serve --perspective-proxy` without a port


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.epilog = None
    sub = parser.add_subparsers(dest="action", metavar="ACTION", required=True)
    cal = sub.add_parser("calibrate", help="fit a calibration on recorded Perspective scores")
    add_study_option(cal)
    cal.add_argument("--attribute", default="TOXICITY", help="Perspective attribute (default: TOXICITY)")
    cal.add_argument("--from", dest="source", default="noisyhate", metavar="SOURCE",
                     help="noisyhate (shipped; TOXICITY only), sass (fetched), or a CSV/TSV/JSONL file of recorded scores")
    cal.add_argument("--text-column", help="the file's text column (default: text, comment, ...)")
    cal.add_argument("--score-column", help="the file's column of Perspective's scores of the attribute, or of whole "
                     "responses (default: perspective_ATTRIBUTE, for TOXICITY also perspective_avg_toxicity, then "
                     "perspective, score, response; never a column named like the attribute, as annotators' are)")
    cal.add_argument("--holdout", type=float, default=0.3, help="share of pairs kept for the agreement (default 0.3)")
    cal.add_argument("--seed", type=int, default=0, help="seed of the split (default 0)")
    cal.add_argument("--json", action="store_true", help="print the stored calibration as JSON")
    ls = sub.add_parser("list", help="which detector answers each attribute, its measured quality, and the stored calibrations")
    add_study_option(ls)
    ls.add_argument("--json", action="store_true", help="print them as JSON")
    drop = sub.add_parser("drop-in", help="the lines to set for clients that hard-code Google's address")
    drop.add_argument("--port", type=int, default=DROP_IN_PORT,
                      help=f"the port of `modlens serve --perspective-proxy` (default {DROP_IN_PORT})")


def _table(cals: list[Calibration]) -> str:
    head = ("attribute  detector@version:label  source  pairs fit/held out  spearman raw→cal  |diff| raw→cal  "
            "agree@0.5/0.7/0.8/0.9 raw→cal (held out)")
    lines = [head]
    for c in cals:
        agree = " ".join(f"{c.raw.at[t]:.2f}→{c.calibrated.at[t]:.2f}" for t in c.raw.at)
        label = c.label or "(label not recorded: never applied, refit)"
        lines.append(f"{c.attribute}  {c.detector}@{c.version}:{label}  {c.source}  "
                     f"{c.extra.get('train_pairs', '?')}/{c.calibrated.pairs}  "
                     f"{c.raw.spearman}→{c.calibrated.spearman}  {c.raw.mean_abs_diff:.3f}→"
                     f"{c.calibrated.mean_abs_diff:.3f}  {agree}")
    return "\n".join(lines)


def _attributes(config: str | None) -> tuple[list[dict[str, Any]], dict[str, str]]:
    """Each attribute Perspective's clients may ask for, and what answers it in this study (without
    --config: what `modlens serve --perspective-only` answers with). The detectors are loaded, since
    which attributes a model answers is in its labels."""
    from modlens.perspective.attributes import (KNOWN, mislabelled, resolve, resolve_languages,
                                                with_every_production_attribute)
    from modlens.services.detectors import load_detectors

    study = modlens.study.load(config)
    if config is None:
        study = with_every_production_attribute(study)
    loaded = load_detectors(study.detectors)
    sources = resolve(study.perspective, loaded.detectors)
    by_language = resolve_languages(study.perspective, loaded.detectors)
    wrong_label = mislabelled(study.perspective, loaded.detectors)  # why its own mapping does not answer
    out: list[dict[str, Any]] = []
    for attr in dict.fromkeys((*KNOWN, *study.perspective.attributes)):
        answers = [sources[attr]] if attr in sources else []
        answers += [a[attr] for a in by_language.answers.values() if attr in a]
        out.append({"attribute": attr, "answered_by": [
            {"detector": s.detector, "version": loaded.detectors[s.detector].version, "label": s.label,
             "languages": list(s.languages), **_quality(loaded.detectors[s.detector], s.label)} for s in answers],
            "mislabelled": wrong_label.get(attr)})
    return out, by_language.not_loaded


def _quality(detector: Detector, label: str) -> dict[str, Any]:
    """The label's measured quality as the detector's own metadata records it for its version
    (`Detector.quality`, shipped beside the model): `quality` lists the figures; when there are
    none, `not_measured` says so, and why when the metadata knows."""
    from dataclasses import asdict

    from modlens.detectors.quality import NOT_MEASURED

    measured = detector.quality.of(label) if detector.quality else ()
    why = None if measured else (detector.quality.why_not(label) if detector.quality else NOT_MEASURED)
    return {"quality": [asdict(m) for m in measured], "not_measured": why}


def _attribute_table(rows: list[dict[str, Any]], not_loaded: dict[str, str]) -> str:
    from modlens.detectors.quality import Measurement

    lines = ["attribute  detector@version  label  languages"]
    refused, label_problems = [], []
    for row in rows:
        if row["mislabelled"]:  # a detector is there, its mapped label is not: said, with the detector's labels
            label_problems.append(f"refused {row['attribute']}: {row['mislabelled']}" if not row["answered_by"] else
                                  f"{row['attribute']}: its study.toml mapping is not used: {row['mislabelled']}")
        elif not row["answered_by"]:
            refused.append(row["attribute"])
        for a in row["answered_by"]:
            lines.append(f"{row['attribute']}  {a['detector']}@{a['version']}  {a['label']}  {','.join(a['languages'])}")
            lines += [f"    quality: {Measurement(**m).line()}" for m in a["quality"]] or [f"    quality: {a['not_measured']}"]
    lines.append(f"refused (no detector of this study answers them; docs/PERSPECTIVE.md): {', '.join(refused) or 'none'}")
    lines += label_problems
    lines += [f"language {lang}: mapped to detector {key}, which did not load" for lang, key in not_loaded.items()]
    return "\n".join(lines)


def run(args: argparse.Namespace) -> int:
    from modlens.perspective import calibration

    if args.action == "drop-in":
        from modlens.perspective import tls

        material = tls.ensure()
        print(f"# for clients that call https://{tls.GOOGLE_HOST} (start `modlens serve --perspective-only "
              f"--perspective-proxy {args.port}`);\n# the authority in {material.ca_cert} can vouch for "
              f"{tls.GOOGLE_HOST} only (name-constrained)")
        print("\n".join(tls.export_lines(material, f"http://127.0.0.1:{args.port}")))
        return 0
    if args.action == "list":
        answered, not_loaded = _attributes(args.config)
        cals = calibration.stored()
        if args.json:
            print(json.dumps({"attributes": answered, "languages_not_loaded": not_loaded,
                              "calibrations": [c.to_dict() for c in cals]}, indent=2))
            return 0
        print(_attribute_table(answered, not_loaded))
        print()
        print(_table(cals) if cals else "no calibrations yet: `modlens perspective calibrate`")
        return 0
    study = modlens.study.load(args.config)
    try:
        cal = calibration.fit_recorded(study, args.attribute.upper(), args.source, holdout=args.holdout, seed=args.seed,
                                       text_column=args.text_column, score_column=args.score_column)
    except calibration.CalibrationError as err:
        raise CliError(str(err)) from None
    path = calibration.save(cal)
    print(json.dumps(cal.to_dict(), indent=2) if args.json else f"{_table([cal])}\nstored in {path}")
    return 0
