"""list every registered detector and whether it can load here, with a one-line fix

hf-classifier is listed once per preset too, checked against the local cache only (no
network), so the listing stays fast offline and says which presets need downloading. Each
line says what the detector reads (text, image, audio, video): a loaded detector its own
modalities, one that did not load what its plugin can read. A loaded detector's line is followed
by what it declares it was trained on (docs/DETECTORS.md#training-data).

A status other than `loaded` says what is missing: something from outside modlens it needs
(missing_dependency: a package, a program such as tesseract or ffmpeg or its language data, or
perspective's API key in the environment), model files (missing_weights), options it cannot be
built without (needs_options, e.g. cached's file, http's URL, the model of hf-classifier and
hf-image). Only `error` is a failure to load; the listing exits 1 when a detector has one (it is
named on stderr), 0 otherwise.
"""
from __future__ import annotations

import argparse
import json
import sys
from dataclasses import asdict

from modlens.detectors import registry
from modlens.cli.common import EXIT_CODES, EXIT_OK
from modlens.detectors.base import DetectorStatus
from modlens.errors import ErrorKind


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--json", action="store_true", help="one JSON object per detector")
    parser.add_argument("--no-presets", action="store_true", help="skip the per-preset hf-classifier lines")


def collect(presets: bool = True) -> list[DetectorStatus]:
    statuses = []
    for name in registry.available():
        st = registry.status(name)
        try:
            st.extra["description"] = registry.describe(name)
            st.extra.setdefault("modalities", list(registry.modalities(name)))
        except Exception:  # a plugin that cannot even import is already reported by status()
            st.extra.setdefault("modalities", [])
        statuses.append(st)
        if name == "hf-classifier" and presets and st.status != "missing_dependency":
            from modlens.detectors.hf_presets import PRESETS
            for preset in PRESETS:
                pst = registry.status(name, preset=preset, local_files_only=True)
                pst.name = f"hf-classifier[preset={preset}]"
                pst.extra.setdefault("modalities", ["text"])
                statuses.append(pst)
    return statuses


def run(args: argparse.Namespace) -> int:
    statuses = collect(presets=not args.no_presets)
    _print(statuses, args.json)
    failed = [st.name for st in statuses if st.status == "error"]
    if failed:  # listed with the rest; the exit code says one is broken
        print(f"modlens detectors: {len(failed)} detector{'s' * (len(failed) > 1)} failed to load: {', '.join(failed)}",
              file=sys.stderr)
        return EXIT_CODES[ErrorKind.FAILED]
    return EXIT_OK


def _print(statuses: list[DetectorStatus], as_json: bool) -> None:
    if as_json:
        for st in statuses:
            print(json.dumps(asdict(st)))
        return
    width = max(len(st.name) for st in statuses)
    reads = {st.name: ",".join(st.extra.get("modalities", [])) or "?" for st in statuses}
    mwidth = max(len(r) for r in reads.values())
    for st in statuses:
        detail = st.version if st.status == "loaded" else st.message
        print(f"{st.name:<{width}}  {st.status:<18}  {reads[st.name]:<{mwidth}}  {detail}")
        if st.status != "loaded" and st.fix:
            print(f"{'':<{width}}  {'':<18}  {'':<{mwidth}}  fix: {st.fix}")
        if st.extra.get("training"):  # what its figures on a dataset can be in-sample for
            print(f"{'':<{width}}  {'':<18}  {'':<{mwidth}}  trained on: {st.extra['training']}")
        for label, declared in st.extra.get("labels", {}).items():  # a multi-label head: per label
            print(f"{'':<{width}}  {'':<18}  {'':<{mwidth}}  label {label}: {declared}")
